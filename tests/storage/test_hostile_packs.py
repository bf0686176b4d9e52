"""Hostile ``.zip`` packs: every way a zip can lie is a bcolz_store error naming
the pack (and the entry), reads stay within what the pack holds, and unpack
writes nothing outside its destination and leaves no temporary folder."""

import os
import random
import struct
import zipfile
import zlib

import numpy as np
import pytest

import bcolz_store
from bcolz_store import cli
from bcolz_store.errors import BcolzStoreError, DatasetExistsError, FormatError, LimitError
from bcolz_store.storage.packs import pack, unpack
from bcolz_store.storage.zip import ZipStore


def make_zip(entries, comment=b"", cd_cut=None):
    """A zip file written field by field, so that each field can lie.

    ``entries``: dicts with ``name`` (str or bytes) and ``data``; optional
    ``flags``, ``method``, ``version``, ``crc``, ``csize``, ``usize``,
    ``extra``, ``attr`` (external attributes), ``offset`` (the local header a
    central record points at), ``local_name``, ``local_sizes`` and ``after``
    (bytes after the data, e.g. a data descriptor).
    """
    out, central = bytearray(), bytearray()
    for e in entries:
        name = e["name"] if isinstance(e["name"], bytes) else e["name"].encode()
        data = e.get("data", b"")
        crc = e.get("crc", zlib.crc32(data))
        csize, usize = e.get("csize", len(data)), e.get("usize", len(data))
        flags, method, version = e.get("flags", 0), e.get("method", 0), e.get("version", 20)
        extra, attr = e.get("extra", b""), e.get("attr", 0o100644 << 16)
        offset = e.get("offset", len(out))
        local_name = e.get("local_name", name)
        lcrc, lcsize, lusize = e.get("local_sizes", (crc, csize, usize))
        if e.get("no_local"):           # a central record only, pointing at another's data
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0314, version, flags,
                                   method, 0, 0x21, crc, csize, usize, len(name), len(extra), 0,
                                   0, 0, attr, offset) + name + extra
            continue
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, flags, method, 0, 0x21, lcrc,
                           lcsize, lusize, len(local_name), len(extra))
        out += local_name + extra + data + e.get("after", b"")
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0314, version, flags, method,
                               0, 0x21, crc, csize, usize, len(name), len(extra), 0, 0, 0, attr,
                               offset)
        central += name + extra
    cd_offset = len(out)
    if cd_cut is not None:
        central = central[:cd_cut]
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                       cd_offset, len(comment)) + comment
    return bytes(out)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """(entries of a real pack of a small carray, its values)."""
    where = tmp_path_factory.mktemp("good")
    values = np.arange(2_000, dtype="i8")
    bcolz_store.carray(values, chunklen=500, rootdir=str(where / "a"), mode="w")
    pack(str(where / "a"), str(where / "a.zip"))
    with zipfile.ZipFile(where / "a.zip") as zf:
        entries = [{"name": i.filename, "data": zf.read(i)} for i in zf.infolist()]
    return entries, values


def _changed(entries, name, **fields):
    return [dict(e, **fields) if e["name"] == name else e for e in entries]


def _write(tmp_path, raw, name="bad.zip"):
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def _open_and_read(path):
    obj = bcolz_store.open(str(path), mode="r")
    return obj[:]


def _assert_unpack_fails(tmp_path, path, error=FormatError, match=None):
    """unpack raises ``error`` naming the pack, and leaves nothing in tmp_path
    but what was there."""
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(error, match=match) as info:
        unpack(str(path), str(tmp_path / "out"))
    assert str(path) in str(info.value) or error is DatasetExistsError
    assert sorted(os.listdir(tmp_path)) == before          # no out, no out.tmp-*
    return info.value


# --- what the tester found: each raised a raw exception -------------------------------------

def test_encrypted_entry_is_a_format_error_naming_it(tmp_path, good):
    entries, _ = good
    path = _write(tmp_path, make_zip(_changed(entries, "meta/sizes", flags=0x1)))
    with pytest.raises(FormatError, match=r"bad\.zip!meta/sizes: an encrypted entry"):
        _open_and_read(path)
    _assert_unpack_fails(tmp_path, path, match="encrypted")


def test_empty_entry_name_is_a_format_error(tmp_path, good):
    entries, _ = good
    path = _write(tmp_path, make_zip(entries + [{"name": "", "data": b"x"}]))
    with pytest.raises(FormatError, match="entry '' could leave the dataset"):
        ZipStore(path)
    _assert_unpack_fails(tmp_path, path, match="entry ''")


def test_non_utf8_entry_name_is_a_format_error_naming_it(tmp_path, good):
    entries, _ = good
    path = _write(tmp_path, make_zip(entries + [{"name": b"meta/\xff\xfe", "data": b"x",
                                                 "flags": 0x800}]))
    with pytest.raises(FormatError, match=r"entry b'meta/\\xff\\xfe': a name that is not UTF-8"):
        _open_and_read(path)
    _assert_unpack_fails(tmp_path, path, match="not UTF-8")


def test_unknown_zip_version_is_a_format_error_naming_the_entry(tmp_path, good):
    entries, _ = good
    path = _write(tmp_path, make_zip(_changed(entries, "meta/sizes", version=99)))
    with pytest.raises(FormatError, match=r"entry b'meta/sizes' \(needs zip version 9.9\)"):
        _open_and_read(path)
    _assert_unpack_fails(tmp_path, path, match="zip version")


def test_unpack_of_deep_nesting_is_a_format_error_not_a_recursion_error(tmp_path, good):
    entries, _ = good
    deep = "/".join(["d"] * 3000)
    path = _write(tmp_path, make_zip(entries + [{"name": deep, "data": b"x"}]))
    with pytest.raises(FormatError, match="deeper than 32 folders"):
        ZipStore(path)
    _assert_unpack_fails(tmp_path, path, match="deeper than")


def test_unpack_of_a_file_named_like_a_folder_is_a_format_error(tmp_path, good):
    entries, _ = good
    for extra in ({"name": "meta/sizes/x", "data": b"x"}, {"name": "meta/sizes/", "data": b""}):
        path = _write(tmp_path, make_zip(entries + [extra]))
        with pytest.raises(FormatError, match="'meta/sizes' is a file and a folder"):
            ZipStore(path)
        _assert_unpack_fails(tmp_path, path, match="a file and a folder")


@pytest.mark.parametrize("entries", [[], [{"name": ".bcolz_store-journal/x", "data": b"x"}],
                                     [{"name": "notes.txt", "data": b"x"}]],
                         ids=["empty", "journal only", "no dataset"])
def test_unpack_of_a_pack_without_a_dataset_names_the_pack_not_a_temp_folder(tmp_path, entries):
    path = _write(tmp_path, make_zip(entries))
    err = _assert_unpack_fails(tmp_path, path, match="holds no dataset")
    assert ".tmp-" not in str(err)


def test_unpack_onto_an_existing_folder_is_dataset_exists(tmp_path, good):
    entries, values = good
    path = _write(tmp_path, make_zip(entries), "good.zip")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("mine")
    _assert_unpack_fails(tmp_path, path, DatasetExistsError, match="exists already")
    assert (tmp_path / "out" / "keep").read_text() == "mine"


def test_a_failed_unpack_with_overwrite_keeps_the_old_folder(tmp_path, good):
    entries, _ = good
    path = _write(tmp_path, make_zip(_changed(entries, "meta/sizes", crc=1)))
    (tmp_path / "out" / "meta").mkdir(parents=True)     # a dataset: overwrite may replace it
    (tmp_path / "out" / "meta" / "sizes").write_text("{}")
    (tmp_path / "out" / "keep").write_text("mine")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(FormatError, match="meta/sizes: cannot be read"):
        unpack(str(path), str(tmp_path / "out"), overwrite=True)
    assert sorted(os.listdir(tmp_path)) == before
    assert (tmp_path / "out" / "keep").read_text() == "mine"


def test_overwrite_replaces_only_a_dataset_folder_or_a_pack_file(tmp_path, good):
    """unpack(overwrite=True) replaces a bcolz dataset, never another folder or a
    file; pack(overwrite=True) replaces a file, never a folder."""
    entries, values = good
    path = _write(tmp_path, make_zip(entries), "good.zip")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep").write_text("mine")
    (tmp_path / "notes.txt").write_text("notes")
    for dst in ("mine", "notes.txt"):
        with pytest.raises(DatasetExistsError, match="not a bcolz dataset; not replacing"):
            unpack(str(path), str(tmp_path / dst), overwrite=True)
    assert (tmp_path / "mine" / "keep").read_text() == "mine"
    assert (tmp_path / "notes.txt").read_text() == "notes"
    unpack(str(path), str(tmp_path / "out"))
    (tmp_path / "folder.zip").mkdir()
    with pytest.raises(DatasetExistsError, match="not a file; not replacing"):
        pack(str(tmp_path / "out"), str(tmp_path / "folder.zip"), overwrite=True)
    assert (tmp_path / "folder.zip").is_dir()
    pack(str(tmp_path / "out"), str(tmp_path / "good.zip"), overwrite=True)
    np.testing.assert_array_equal(_open_and_read(tmp_path / "good.zip"), values)


def test_unpack_and_overwrite_of_a_good_pack(tmp_path, good):
    entries, values = good
    path = _write(tmp_path, make_zip(entries, comment=b"a zip comment"), "good.zip")
    np.testing.assert_array_equal(_open_and_read(path), values)
    done = unpack(str(path), str(tmp_path / "out"))
    assert done["files"] == len(entries)
    (tmp_path / "out" / "stale").write_text("x")
    unpack(str(path), str(tmp_path / "out"), overwrite=True)
    assert not (tmp_path / "out" / "stale").exists()
    np.testing.assert_array_equal(bcolz_store.open(str(tmp_path / "out"), mode="r")[:], values)
    assert sorted(os.listdir(tmp_path)) == ["good.zip", "out"]


# --- names ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../evil", "/etc/evil", "meta/../../evil", "a\\..\\evil",
                                  "./meta/x", "meta//x", "meta/\x00/../../x", "../", "C:/..//x"])
def test_names_that_could_leave_the_pack_are_refused(tmp_path, good, name):
    entries, _ = good
    path = _write(tmp_path, make_zip(entries + [{"name": name, "data": b"x"}]))
    with pytest.raises(FormatError, match="could leave the dataset|a NUL in its name"):
        ZipStore(path)
    _assert_unpack_fails(tmp_path, path, match="could leave|NUL")
    assert not (tmp_path.parent / "evil").exists()


def test_duplicate_names_are_refused(tmp_path, good):
    entries, _ = good
    first = next(e for e in entries if e["name"] == "meta/sizes")
    path = _write(tmp_path, make_zip(entries + [dict(first, data=b"{}")]))
    with pytest.raises(FormatError, match="'meta/sizes': two entries have this name"):
        ZipStore(path)
    _assert_unpack_fails(tmp_path, path, match="two entries")


def test_long_names_are_refused(tmp_path, good):
    entries, _ = good
    for name in ("x" * 300, "/".join(["y" * 200] * 6)):
        path = _write(tmp_path, make_zip(entries + [{"name": name, "data": b"x"}]))
        with pytest.raises(FormatError, match="longer than 1024 bytes"):
            ZipStore(path)


def test_symlink_entries_are_refused_and_never_followed(tmp_path, good):
    entries, _ = good
    secret = tmp_path / "secret"
    secret.write_bytes(b"outside the pack")
    link = _changed(entries, "meta/sizes", attr=0o120777 << 16, data=str(secret).encode())
    path = _write(tmp_path, make_zip(link))
    with pytest.raises(FormatError, match="meta/sizes: a symlink entry"):
        _open_and_read(path)
    _assert_unpack_fails(tmp_path, path, match="symlink")


# --- sizes: bombs and lies ------------------------------------------------------------------

def test_a_compressed_bomb_is_refused_before_inflating(tmp_path, good):
    entries, _ = good
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = bomb.compress(b"\0" * (64 << 20)) + bomb.flush()
    assert len(data) < 100_000
    path = _write(tmp_path, make_zip(_changed(entries, "__attrs__", data=data, method=8,
                                              csize=len(data), usize=10, crc=0)))
    store = ZipStore(path)
    with pytest.raises(FormatError, match="__attrs__: a compressed entry"):
        store.get("__attrs__", 1 << 30)
    _assert_unpack_fails(tmp_path, path, match="compressed")


@pytest.mark.parametrize("sizes", [(3, 10**9), (10**9, 3), (2**32 - 1, 2**32 - 1)],
                         ids=["usize huge", "csize huge", "both 4 GiB"])
def test_declared_sizes_larger_than_the_entry_are_refused(tmp_path, good, sizes):
    entries, _ = good
    csize, usize = sizes
    path = _write(tmp_path, make_zip(_changed(entries, "__attrs__", csize=csize, usize=usize)))
    with pytest.raises(FormatError, match="__attrs__|declare"):
        ZipStore(path).get("__attrs__", 1 << 31)
    _assert_unpack_fails(tmp_path, path)


def test_entries_overlapping_to_declare_more_than_the_pack_holds(tmp_path, good):
    entries, _ = good
    big = {"name": "data/__0.blp", "data": b"x" * 50_000}
    copies = [big] + [dict(big, name=f"data/__{i}.blp", offset=0, no_local=True)
                      for i in range(1, 40)]
    path = _write(tmp_path, make_zip(copies))
    with pytest.raises(FormatError, match="more than the .* the pack holds"):
        ZipStore(path)


def test_a_stored_entry_smaller_than_declared_is_refused(tmp_path, good):
    entries, _ = good
    # the central directory says 20 bytes; the file ends before
    raw = make_zip(_changed(entries, "meta/sizes", usize=10**6, csize=10**6))
    path = _write(tmp_path, raw)
    with pytest.raises(FormatError):
        ZipStore(path).get("meta/sizes", 1 << 30)


def test_reads_are_bounded_by_check_alloc(tmp_path, good, monkeypatch):
    entries, _ = good
    path = _write(tmp_path, make_zip(entries), "good.zip")
    import bcolz_store.limits
    monkeypatch.setattr(bcolz_store.limits, "memory_ceiling", lambda: 4)
    with pytest.raises(LimitError, match=r"good\.zip!meta/sizes"):
        ZipStore(path).get("meta/sizes", 1 << 20)


# --- damaged structure ----------------------------------------------------------------------

def test_a_truncated_central_directory_or_file(tmp_path, good):
    entries, _ = good
    with pytest.raises(FormatError, match="not a zip pack"):
        ZipStore(_write(tmp_path, make_zip(entries, cd_cut=60)))
    raw = make_zip(entries)
    with pytest.raises(FormatError, match="not a zip pack"):
        ZipStore(_write(tmp_path, raw[:len(raw) // 2], "half.zip"))


def test_a_wrong_crc_or_local_name_is_a_format_error(tmp_path, good):
    entries, _ = good
    for fields in ({"crc": 12345}, {"local_name": b"meta/sizex"}):
        path = _write(tmp_path, make_zip(_changed(entries, "meta/sizes", **fields)))
        with pytest.raises(FormatError, match="meta/sizes: cannot be read"):
            _open_and_read(path)


def test_verify_of_a_pack_without_checksums_still_checks_each_crc(capsys, tmp_path, good):
    """A pack without bcolz_store.md5 (bcolz wrote the dataset, or its name was
    damaged) is not verified (exit 3), but zip's own CRC-32 is still checked:
    an entry that cannot be read is reported damaged, exit 1."""
    entries, _ = good
    bare = [e for e in entries if e["name"] != "bcolz_store.md5"]
    clean = _write(tmp_path, make_zip(bare), "clean.zip")
    report = bcolz_store.verify(str(clean))
    assert report.no_checksums and not report.ok and report.damaged == []
    assert cli.main(["verify", str(clean)]) == 3
    assert "not verified" in capsys.readouterr().out
    hurt = _write(tmp_path, make_zip(_changed(bare, "meta/sizes", crc=12345)), "hurt.zip")
    report = bcolz_store.verify(str(hurt))
    assert report.no_checksums and report.damaged == ["meta/sizes"]
    assert "cannot be read" in report.reasons["meta/sizes"]
    renamed = [dict(e, name="bcomz_store.md5", local_name=b"bcolz_store.md5")
               if e["name"] == "bcolz_store.md5" else e for e in entries]
    renamed = _write(tmp_path, make_zip(renamed), "md5.zip")
    assert bcolz_store.verify(str(renamed)).damaged == ["bcomz_store.md5"]
    for path, what in ((hurt, "meta/sizes"), (renamed, "bcomz_store.md5")):
        assert cli.main(["verify", str(path)]) == 1
        out, err = capsys.readouterr()
        assert err == "" and f"damaged {what}" in out and "1 pack entry cannot be read" in out


def test_a_data_descriptor_that_disagrees_is_not_believed(tmp_path, good):
    entries, values = good
    # local header sizes 0 with bit 3 set, a data descriptor after the data that lies;
    # the central directory is what is read, and the CRC is checked against it.
    lying = [dict(e, flags=0x8, local_sizes=(0, 0, 0),
                  after=struct.pack("<IIII", 0x08074B50, 1, 2, 3)) for e in entries]
    path = _write(tmp_path, make_zip(lying))
    np.testing.assert_array_equal(_open_and_read(path), values)


def test_zip64_fields(tmp_path, good):
    entries, values = good
    path = tmp_path / "z64.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for e in entries:
            with zf.open(e["name"], "w", force_zip64=True) as fh:
                fh.write(e["data"])
    np.testing.assert_array_equal(_open_and_read(path), values)
    # a ZIP64 extra field whose sizes are cut short, and one declaring 2**63 bytes
    short = struct.pack("<HH", 1, 4) + b"\xff" * 4
    path = _write(tmp_path, make_zip(_changed(entries, "meta/sizes", extra=short,
                                              csize=0xFFFFFFFF, usize=0xFFFFFFFF)))
    with pytest.raises(FormatError, match="not a zip pack"):
        ZipStore(path)
    huge = struct.pack("<HHQQ", 1, 16, 2**63, 2**63)
    path = _write(tmp_path, make_zip(_changed(entries, "meta/sizes", extra=huge,
                                              csize=0xFFFFFFFF, usize=0xFFFFFFFF)), "huge.zip")
    with pytest.raises(FormatError, match="declare"):
        ZipStore(path)


def test_random_damage_only_ever_raises_bcolz_store_errors(tmp_path, good):
    entries, values = good
    raw = make_zip(entries, comment=b"c")
    rng = random.Random(1234)
    outcomes = {}
    for i in range(300):
        damaged = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(damaged))
            damaged[at] = rng.randrange(256)
        if rng.random() < 0.2:
            damaged = damaged[:rng.randrange(len(damaged))]
        path = _write(tmp_path, bytes(damaged), "fuzz.zip")
        for what, action in (("read", lambda: _open_and_read(path)),
                             ("unpack", lambda: unpack(str(path), str(tmp_path / "out")))):
            try:
                action()
                outcome = "ok"
            except BcolzStoreError as err:
                outcome = type(err).__name__
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if what == "unpack" and outcome == "ok":
                import shutil
                shutil.rmtree(tmp_path / "out")
            assert sorted(os.listdir(tmp_path)) == ["fuzz.zip"], (i, what, outcome)
    assert "FormatError" in outcomes


# --- the command line -----------------------------------------------------------------------

HOSTILE = {
    "encrypted": lambda e: _changed(e, "meta/sizes", flags=0x1),
    "empty name": lambda e: e + [{"name": "", "data": b"x"}],
    "non-utf8 name": lambda e: e + [{"name": b"\xff", "data": b"x", "flags": 0x800}],
    "zip version": lambda e: _changed(e, "meta/sizes", version=99),
    "deep": lambda e: e + [{"name": "/".join("d" * 2000), "data": b"x"}],
    "file and folder": lambda e: e + [{"name": "meta/sizes/x", "data": b"x"}],
    "duplicate": lambda e: e + [e[0]],
    "dotdot": lambda e: e + [{"name": "../x", "data": b"x"}],
    "symlink": lambda e: _changed(e, "meta/sizes", attr=0o120777 << 16),
    "huge": lambda e: _changed(e, "meta/sizes", usize=2**32 - 1, csize=2**32 - 1),
    "bad crc": lambda e: _changed(e, "meta/sizes", crc=7),
    "empty": lambda e: [],
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_the_cli_reports_hostile_packs_in_one_line(capsys, tmp_path, good, kind):
    entries, _ = good
    path = _write(tmp_path, make_zip(HOSTILE[kind](list(entries))))
    for argv in (["info", str(path)], ["verify", str(path)],
                 ["unpack", str(path), str(tmp_path / "out")],
                 ["convert", str(path), str(tmp_path / "out.npz")]):
        capsys.readouterr()
        status = cli.main(argv)
        out, err = capsys.readouterr()
        assert status == 1, (argv, out, err)
        if argv[0] == "verify" and not err:         # a damaged entry is verify's finding
            assert f"{path}: 1 problem (1 damaged)" in out, out
            continue
        assert len(err.strip().splitlines()) == 1, err
        assert "unexpected error" not in err and "Traceback" not in err, err
        assert str(path) in err, err
    assert sorted(os.listdir(tmp_path)) == ["bad.zip"]


@pytest.mark.parametrize("error", [FormatError("x.zip!meta/sizes: lies"),
                                   LimitError("x.zip!meta/sizes: too big"),
                                   DatasetExistsError("out: exists already")])
def test_the_cli_reports_any_bcolz_store_error_in_one_line(capsys, monkeypatch, tmp_path, error):
    def fails(args):
        raise error
    monkeypatch.setattr(cli, "cmd_unpack", fails)      # a command that lets one through
    status = cli.main(["unpack", str(tmp_path / "x.zip"), str(tmp_path / "out")])
    assert status == 1
    assert capsys.readouterr().err == f"bcolz-store: error: {error}\n"
