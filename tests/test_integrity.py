"""Checksums and failed writes: ``bcolz_store.md5``, ``verify()``, ``verify=True`` reads, ENOSPC.

Every commit rewrites ``ROOT/bcolz_store.md5`` (md5sum's format) so that
``cd ROOT && md5sum -c bcolz_store.md5`` checks a dataset without this
library.  The expected checksums here are computed independently with
hashlib over the files on disk.
"""

from __future__ import annotations

import errno
import builtins
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import BcolzStoreError, IntegrityError
from tests.conftest import bcolz_files

CHECKSUM_FILE = "bcolz_store.md5"
LINE = re.compile(r"^([0-9a-f]{32})  (\S.*)$")

pytestmark = pytest.mark.skipif(not hasattr(bcolz_store, "verify"),
                                reason="checksums not available yet")


# --- helpers -----------------------------------------------------------------------

def read_checksum_file(root: Path) -> dict:
    text = (root / CHECKSUM_FILE).read_text()
    sums = {}
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, f"not an md5sum line: {line!r}"
        assert m.group(2) not in sums, f"listed twice: {m.group(2)}"
        sums[m.group(2)] = m.group(1)
    return sums


def assert_checksums_current(root: Path) -> None:
    """The checksum file lists exactly the bcolz files, each with its md5."""
    assert (root / CHECKSUM_FILE).is_file(), f"{root}: no {CHECKSUM_FILE}"
    listed, actual = read_checksum_file(root), bcolz_files(root)
    assert sorted(listed) == sorted(actual), (sorted(set(listed) ^ set(actual)))
    wrong = [k for k in listed if listed[k] != actual[k]]
    assert not wrong, f"stale checksums for {wrong}"
    report = bcolz_store.verify(str(root))
    assert report.ok and not (report.missing or report.extra or report.damaged), report


def md5sum_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["md5sum", "--quiet", "-c", CHECKSUM_FILE], cwd=root,
                          capture_output=True, text=True)


needs_md5sum = pytest.mark.skipif(shutil.which("md5sum") is None, reason="md5sum not installed")


def make_carray(root: Path, n=35, chunklen=10, **kwargs):
    return bcolz_store.carray(np.arange(n, dtype="i8"), chunklen=chunklen, rootdir=str(root),
                              mode="w", **kwargs)


def make_ctable(root: Path, n=25, chunklen=10):
    return bcolz_store.ctable([np.arange(n), np.arange(n) * 0.5], names=["a", "b"],
                              chunklen=chunklen, rootdir=str(root), mode="w")


def state(obj) -> dict:
    if isinstance(obj, bcolz_store.ctable):
        return {"names": list(obj.names), "attrs": obj.attrs.getall(),
                "cols": {n: obj.cols[n][:].tolist() for n in obj.names}}
    return {"data": obj[:].tolist(), "attrs": obj.attrs.getall()}


def reopen_state(root: Path, mode="a") -> dict:
    return state(bcolz_store.open(str(root), mode=mode))


# --- the checksum file ---------------------------------------------------------------

def test_checksum_file_written_at_creation(tmp_path):
    make_carray(tmp_path / "a")
    assert_checksums_current(tmp_path / "a")
    listed = read_checksum_file(tmp_path / "a")
    assert {"meta/sizes", "meta/storage", "__attrs__", "data/__0.blp", "data/__3.blp"} <= set(listed)
    make_ctable(tmp_path / "t")
    assert_checksums_current(tmp_path / "t")
    assert {"__rootdirs__", "__attrs__", "a/meta/sizes", "b/data/__2.blp"} <= set(
        read_checksum_file(tmp_path / "t"))


def test_checksum_file_is_sorted_md5sum_text(tmp_path):
    make_ctable(tmp_path / "t")
    text = (tmp_path / "t" / CHECKSUM_FILE).read_text()
    lines = text.splitlines()
    assert text.endswith("\n")
    assert [LINE.match(x).group(2) for x in lines] == sorted(LINE.match(x).group(2) for x in lines)


def carray_steps():
    return [
        ("append+flush", lambda c: (c.append(np.arange(17)), c.flush())),
        ("append across chunks", lambda c: (c.append(np.arange(45)), c.flush())),
        ("trim into a chunk", lambda c: c.trim(13)),
        ("trim to a chunk edge", lambda c: c.trim(len(c) - 20)),
        ("resize grow", lambda c: c.resize(len(c) + 33)),
        ("resize shrink", lambda c: c.resize(7)),
        ("setitem int", lambda c: c.__setitem__(3, -1)),
        ("setitem slice", lambda c: c.__setitem__(slice(2, 30, 3), -2)),
        ("setitem mask", lambda c: c.__setitem__(np.arange(len(c)) % 4 == 0, -3)),
        ("attrs set", lambda c: c.attrs.__setitem__("unit", "m")),
        ("attrs delete", lambda c: c.attrs.__delitem__("unit")),
        ("resize to 0", lambda c: c.resize(0)),
        ("append after empty", lambda c: (c.append(np.arange(25)), c.flush())),
    ]


def test_checksums_current_after_every_carray_operation(tmp_path):
    root = tmp_path / "a"
    c = make_carray(root)
    for name, step in carray_steps():
        step(c)
        assert_checksums_current(root)
        assert reopen_state(root, "r") == state(c), name


@needs_md5sum
def test_md5sum_checks_a_carray_after_operations(tmp_path):
    root = tmp_path / "a"
    c = make_carray(root)
    for name, step in carray_steps():
        step(c)
        result = md5sum_check(root)
        assert result.returncode == 0, f"after {name}: {result.stdout}{result.stderr}"


def ctable_steps():
    return [
        ("append+flush", lambda t: (t.append([np.arange(12), np.arange(12) * 1.0]), t.flush())),
        ("trim", lambda t: t.trim(5)),
        ("resize", lambda t: t.resize(len(t) + 14)),
        ("setitem rows", lambda t: t.__setitem__(slice(0, 12), (7, 7.5))),
        ("addcol", lambda t: t.addcol(np.arange(len(t)) * 3, name="c")),
        ("addcol at 0", lambda t: t.addcol(np.arange(len(t), dtype="i4"), name="d", pos=0)),
        ("delcol", lambda t: t.delcol("a")),
        ("attrs", lambda t: t.attrs.__setitem__("source", "test")),
        ("column attrs", lambda t: t.cols["b"].attrs.__setitem__("unit", "s")),
    ]


@needs_md5sum
def test_checksums_current_after_every_ctable_operation(tmp_path):
    root = tmp_path / "t"
    t = make_ctable(root)
    for name, step in ctable_steps():
        step(t)
        assert_checksums_current(root)
        result = md5sum_check(root)
        assert result.returncode == 0, f"after {name}: {result.stdout}{result.stderr}"
        assert reopen_state(root, "r") == state(t), name
    assert "a" not in read_checksum_file(root) and not (root / "a").exists()


def test_pending_appends_leave_the_committed_files_and_checksums_alone(tmp_path):
    root = tmp_path / "a"
    c = make_carray(root)
    before = bcolz_files(root)
    c.append(np.arange(100))            # several chunks' worth, not flushed
    assert bcolz_files(root) == before
    assert_checksums_current(root)
    assert reopen_state(root, "r")["data"] == list(range(35))
    c.flush()
    assert_checksums_current(root)
    assert reopen_state(root, "r")["data"] == list(range(35)) + list(range(100))


# --- verify() --------------------------------------------------------------------------

def test_verify_clean_dataset(tmp_path):
    make_carray(tmp_path / "a")
    report = bcolz_store.verify(str(tmp_path / "a"))
    assert report.ok
    assert (report.missing, report.extra, report.damaged) == ([], [], [])


CARRAY_FILES = ["data/__0.blp", "data/__3.blp", "meta/sizes", "meta/storage", "__attrs__"]
CTABLE_FILES = ["__rootdirs__", "__attrs__", "a/data/__0.blp", "a/data/__2.blp", "b/meta/sizes",
                "b/meta/storage", "b/__attrs__"]


def _damage(f: Path) -> None:
    raw = bytearray(f.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    f.write_bytes(bytes(raw))


@pytest.mark.parametrize("kind,rel", [("carray", r) for r in CARRAY_FILES] +
                         [("ctable", r) for r in CTABLE_FILES])
@pytest.mark.parametrize("how", ["damaged", "missing"])
def test_verify_finds_each_damaged_or_missing_file(tmp_path, kind, rel, how):
    root = tmp_path / "d"
    (make_carray if kind == "carray" else make_ctable)(root)
    f = root / rel
    if how == "damaged":
        _damage(f)
    else:
        f.unlink()
    report = bcolz_store.verify(str(root))
    assert not report.ok
    assert getattr(report, how) == [rel]
    others = {"damaged", "missing", "extra"} - {how}
    assert all(getattr(report, o) == [] for o in others), report


@pytest.mark.parametrize("rel", ["data/__9.blp", "junk.txt", "meta/extra", "c/meta/sizes",
                                 "a/data/__7.blp"])
def test_verify_finds_extra_files(tmp_path, rel):
    root = tmp_path / "t"
    make_ctable(root)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(b"x")
    report = bcolz_store.verify(str(root))
    assert not report.ok
    assert report.extra == [rel] and report.missing == [] and report.damaged == []


def test_verify_finds_everything_at_once(tmp_path):
    root = tmp_path / "t"
    make_ctable(root, n=45)
    _damage(root / "a" / "data" / "__1.blp")
    _damage(root / "__rootdirs__")
    (root / "b" / "data" / "__0.blp").unlink()
    (root / "b" / "meta" / "storage").unlink()
    (root / "a" / "data" / "__11.blp").write_bytes(b"")
    (root / "stray").write_bytes(b"?")
    report = bcolz_store.verify(str(root))
    assert not report.ok
    assert sorted(report.damaged) == ["__rootdirs__", "a/data/__1.blp"]
    assert sorted(report.missing) == ["b/data/__0.blp", "b/meta/storage"]
    assert sorted(report.extra) == ["a/data/__11.blp", "stray"]


def test_verify_ignores_a_journal_of_an_unfinished_writer(tmp_path):
    root = tmp_path / "a"
    make_carray(root)
    (root / ".bcolz_store-journal").mkdir(exist_ok=True)
    (root / ".bcolz_store-journal" / "000001.blob").write_bytes(b"partial")
    assert bcolz_store.verify(str(root)).ok


def test_verify_missing_dataset(tmp_path):
    with pytest.raises(BcolzStoreError):
        bcolz_store.verify(str(tmp_path / "nothing"))


# --- bcolz-written datasets have no checksum file ----------------------------------------

def _fixture_names(fixtures_dir):
    return sorted(p.name for p in fixtures_dir.iterdir() if p.is_dir())


def test_bcolz_fixtures_without_checksums_open_and_read(tmp_path, fixtures_dir):
    for name in _fixture_names(fixtures_dir):
        root = tmp_path / name
        shutil.copytree(fixtures_dir / name, root)
        expected = np.load(fixtures_dir / f"{name}.expected.npz", allow_pickle=False)
        for mode in ("r", "a"):
            obj = bcolz_store.open(str(root), mode=mode)
            if isinstance(obj, bcolz_store.ctable):
                for col in expected["__names__"]:
                    np.testing.assert_array_equal(obj.cols[str(col)][:], expected[str(col)])
            else:
                np.testing.assert_array_equal(obj[:], expected["data"])
        # opening did not write anything into the dataset
        assert bcolz_files(root) == bcolz_files(fixtures_dir / name), name


def test_first_commit_on_a_bcolz_dataset_writes_checksums(tmp_path, fixtures_dir):
    root = tmp_path / "t"
    shutil.copytree(fixtures_dir / "ctable_small_chunks", root)
    t = bcolz_store.open(str(root), mode="a")
    t.attrs["touched"] = True
    assert_checksums_current(root)
    root2 = tmp_path / "c"
    shutil.copytree(fixtures_dir / "S12_codes", root2)
    c = bcolz_store.open(str(root2), mode="a")
    c.append([b"x"] * 5000)
    c.flush()
    assert_checksums_current(root2)


# --- reads with verify=True ---------------------------------------------------------------

def _flip_payload(f: Path) -> None:
    raw = bytearray(f.read_bytes())
    raw[-5] ^= 0x40                     # inside the payload of a clevel-0 chunk
    f.write_bytes(bytes(raw))


@pytest.mark.parametrize("rel", ["data/__0.blp", "data/__2.blp", "data/__3.blp"])
def test_verify_true_read_of_a_silently_damaged_chunk(tmp_path, rel):
    root = tmp_path / "a"
    make_carray(root, cparams=bcolz_store.cparams(clevel=0))
    _flip_payload(root / rel)
    plain = bcolz_store.open(str(root), mode="r")[:]      # Blosc cannot tell
    assert not np.array_equal(plain, np.arange(35))
    with pytest.raises(IntegrityError) as info:
        bcolz_store.open(str(root), mode="r", verify=True)[:]
    assert rel in str(info.value)
    assert bcolz_store.verify(str(root)).damaged == [rel]


def test_verify_true_read_of_a_damaged_ctable_column(tmp_path):
    root = tmp_path / "t"
    bcolz_store.ctable([np.arange(25), np.arange(25) * 0.5], names=["a", "b"], chunklen=10,
                       rootdir=str(root), mode="w", cparams=bcolz_store.cparams(clevel=0))
    _flip_payload(root / "b" / "data" / "__1.blp")
    t = bcolz_store.open(str(root), mode="r", verify=True)
    np.testing.assert_array_equal(t.cols["a"][:], np.arange(25))
    with pytest.raises(IntegrityError) as info:
        t.cols["b"][:]
    assert "b/data/__1.blp" in str(info.value)
    with pytest.raises(IntegrityError):
        t[:]


def test_verify_true_reads_a_clean_dataset(tmp_path):
    root = tmp_path / "a"
    make_carray(root)
    np.testing.assert_array_equal(bcolz_store.open(str(root), mode="r", verify=True)[:],
                                  np.arange(35))
    c = bcolz_store.open(str(root), mode="a", verify=True)
    c.append(np.arange(10))
    c[3] = 99
    c.flush()
    assert c[:].tolist() == list(range(35))[:3] + [99] + list(range(4, 35)) + list(range(10))
    assert_checksums_current(root)


# --- a full disk ------------------------------------------------------------------------

class FullDisk:
    """Make the ``fail_at``-th write-open under ``root`` (and every later one) fail."""

    def __init__(self, monkeypatch, root: Path, fail_at: int, err=errno.ENOSPC):
        self.root = str(root.resolve())
        self.fail_at = fail_at
        self.err = err
        self.count = 0
        self.hit = False
        real_open, real_os_open, real_write = builtins.open, os.open, os.write

        def under(path) -> bool:
            try:
                return os.path.abspath(os.fspath(path)).startswith(self.root)
            except TypeError:
                return False            # a file descriptor

        def check(path):
            if under(path):
                self.count += 1
                if self.count >= self.fail_at:
                    self.hit = True
                    raise OSError(self.err, os.strerror(self.err), os.fspath(path))

        def fake_open(file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+"):
                check(file)
            return real_open(file, mode, *args, **kwargs)

        def fake_os_open(path, flags, *args, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                check(path)
            return real_os_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(os, "open", fake_os_open)
        self._undo = monkeypatch


def _carray_op(name):
    ops = {
        "flush": lambda c: (c.append(np.arange(100, 160)), c.flush()),
        "trim": lambda c: c.trim(12),
        "resize": lambda c: c.resize(70),
        "setitem": lambda c: c.__setitem__(slice(5, 25), -7),
        "attrs": lambda c: c.attrs.__setitem__("x", 1),
    }
    return ops[name]


@pytest.mark.parametrize("opname", ["flush", "trim", "resize", "setitem", "attrs"])
@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_failed_writes_leave_the_last_commit(tmp_path, monkeypatch, opname, err):
    op = _carray_op(opname)
    ref = tmp_path / "ref"
    c = make_carray(ref)
    before = state(c)
    op(c)
    after = state(c)
    assert after != before
    for fail_at in range(1, 200):
        root = tmp_path / f"a{fail_at}"
        c = make_carray(root)
        with monkeypatch.context() as m:
            disk = FullDisk(m, root, fail_at, err)
            try:
                op(c)
            except (OSError, BcolzStoreError):
                assert disk.hit
        if not disk.hit:
            break                       # the operation needed fewer writes
        got = reopen_state(root, "a")   # recovery, with a working disk again
        assert got in (before, after), f"{opname}: write {fail_at} failed, left {got}"
        assert_checksums_current(root)
    assert fail_at > 1


@pytest.mark.parametrize("opname", ["addcol", "delcol", "trim", "setitem", "flush"])
def test_failed_ctable_writes_leave_the_last_commit(tmp_path, monkeypatch, opname):
    ops = {
        "addcol": lambda t: t.addcol(np.arange(len(t)) * 2, name="c"),
        "delcol": lambda t: t.delcol("b"),
        "trim": lambda t: t.trim(7),
        "setitem": lambda t: t.__setitem__(slice(0, 20), (1, 2.0)),
        "flush": lambda t: (t.append([np.arange(30), np.arange(30) * 1.0]), t.flush()),
    }
    op = ops[opname]
    t = make_ctable(tmp_path / "ref")
    before = state(t)
    op(t)
    after = state(t)
    for fail_at in range(1, 200):
        root = tmp_path / f"t{fail_at}"
        t = make_ctable(root)
        with monkeypatch.context() as m:
            disk = FullDisk(m, root, fail_at)
            try:
                op(t)
            except (OSError, BcolzStoreError):
                assert disk.hit
        if not disk.hit:
            break
        got = reopen_state(root, "a")
        assert got in (before, after), f"{opname}: write {fail_at} failed, left {got}"
        assert_checksums_current(root)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_folder(tmp_path):
    root = tmp_path / "a"
    c = make_carray(root)
    before = state(c)
    for folder in (root, root / "data", root / "meta"):
        folder.chmod(0o555)
    try:
        with pytest.raises((OSError, BcolzStoreError)):
            c.append(np.arange(50))
            c.flush()
    finally:
        for folder in (root, root / "data", root / "meta"):
            folder.chmod(0o755)
    assert reopen_state(root) == before
    assert_checksums_current(root)


def test_open_with_verify_flag_is_accepted_for_ctable_and_carray(tmp_path):
    make_ctable(tmp_path / "t")
    make_carray(tmp_path / "a")
    assert len(bcolz_store.open(str(tmp_path / "t"), mode="r", verify=True)) == 25
    assert len(bcolz_store.open(str(tmp_path / "a"), mode="a", verify=True)) == 35
    json.dumps(bcolz_store.verify(str(tmp_path / "t")).ok)
