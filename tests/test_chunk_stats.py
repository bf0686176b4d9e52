"""Chunk statistics (``meta/stats``): kept right by every write path, ignored
when damaged, checked by ``verify=True`` and :func:`bcolz_store.verify`, read
past by the real bcolz.

Every check compares what a carray's statistics say with statistics
recomputed from the items it reads (``tests/stats_check.py``); a reader of a
dataset bcolz_store committed must know every chunk's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.carray_ops import chunk_stats
from bcolz_store.chunks import stats as stats_mod
from bcolz_store.errors import FormatError, IntegrityError
from bcolz_store.format.stats_meta import (MAX_STATS_TEXT, NOT_KEPT, dump_stats, load_stats)
from tests.conftest import FIXTURES
from tests.stats_check import check_stats, stats_lies

STATS = "meta/stats"


def reader(path):
    return bcolz_store.open(str(path), mode="r")


def committed_ok(path, what=""):
    """A reader knows every chunk's statistics, and they are right."""
    check_stats(reader(path), complete=True, what=what or str(path))


def _stats_of(obj):
    engine = obj._engine
    return getattr(engine, "codes", engine).stats


# --- kinds ---------------------------------------------------------------------------------

def _floats(n):
    v = np.linspace(-5, 5, n)
    v[::7] = np.nan
    v[3] = -0.0
    v[5] = np.inf
    return v


KINDS = {
    "f8": lambda n: _floats(n),
    "f4": lambda n: _floats(n).astype("f4"),
    "f8-all-nan": lambda n: np.full(n, np.nan),
    ">f8": lambda n: _floats(n).astype(">f8"),
    "i8": lambda n: np.arange(n, dtype="i8")[::-1] * 3 - 100,
    "u8-large": lambda n: np.arange(n, dtype="u8") + np.uint64(2 ** 64 - 1000),
    "i1": lambda n: (np.arange(n) % 256 - 128).astype("i1"),
    "bool": lambda n: np.arange(n) % 5 == 0,
    "bool-false": lambda n: np.zeros(n, dtype=bool),
    "M8[ns]": lambda n: np.where(np.arange(n) % 6 == 1, np.datetime64("NaT"),
                                 np.arange(n).astype("M8[s]")).astype("M8[ns]"),
    "m8[D]": lambda n: (np.arange(n) - 20).astype("m8[D]"),
    "S4": lambda n: np.array([b"k%03d" % (i * 37 % 100) for i in range(n)]),
    "S3-nul": lambda n: np.array([b"a\x00" if i % 3 else b"" for i in range(n)], dtype="S3"),
    "U3": lambda n: np.array(["é%d" % (i % 50) for i in range(n)], dtype="U3"),
    "vlen-str": lambda n: bcolz_store.carray([None if i % 9 == 2 else "w%d" % (i * 7 % 31)
                                              for i in range(n)], dtype="vlen-str"),
    "vlen-bytes": lambda n: bcolz_store.carray([b"\xff%d" % i for i in range(n)],
                                               dtype="vlen-bytes"),
    "category": lambda n: bcolz_store.carray([["buy", "sell", None][i % 3] for i in range(n)],
                                             dtype=bcolz_store.category(["sell", "buy"])),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_keeps_right_statistics(tmp_path, kind):
    data = KINDS[kind](45)
    c = bcolz_store.carray(data, chunklen=8, rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    assert (tmp_path / "c" / STATS).is_file()
    check_stats(c, what="writer")
    committed_ok(tmp_path / "c")
    stats = chunk_stats(reader(tmp_path / "c"))
    assert stats.known.all() and len(stats.starts) == 6
    # appended, assigned, trimmed, grown, reopened: still right
    c = bcolz_store.open(str(tmp_path / "c"), mode="a")
    c.append(c[:13])
    c[2:30:3] = c[40:30:-1][:10]
    c.flush()
    committed_ok(tmp_path / "c", "after append and assign")
    c.trim(11)
    committed_ok(tmp_path / "c", "after trim")
    c.resize(70)
    committed_ok(tmp_path / "c", "after resize")


@pytest.mark.parametrize("dtype", ["c16", "(2,)i4", "i4,f8"])
def test_kinds_without_statistics_keep_none(tmp_path, dtype):
    dtype = np.dtype(dtype)
    data = np.zeros((10,) + dtype.shape, dtype=dtype.base)
    c = bcolz_store.carray(data, chunklen=4, rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    assert not (tmp_path / STATS).exists() and not (tmp_path / "c" / STATS).exists()
    assert chunk_stats(reader(tmp_path / "c")) is None


def test_object_carray_keeps_none(tmp_path):
    c = bcolz_store.carray(np.array([{"a": 1}, 2, "x"], dtype=object),
                           rootdir=str(tmp_path / "o"), mode="w")
    c.flush()
    assert not (tmp_path / "o" / STATS).exists()


def test_statistics_are_those_of_the_quantized_items(tmp_path):
    data = np.random.default_rng(3).standard_normal(500)
    c = bcolz_store.carray(data, chunklen=64, rootdir=str(tmp_path / "q"), mode="w",
                           cparams=bcolz_store.cparams(quantize=2))
    c.append(data[:33] * 7)
    c.flush()
    back = reader(tmp_path / "q")
    assert not np.array_equal(back[:64], data[:64])        # the items were rounded
    committed_ok(tmp_path / "q")
    check_stats(c, what="writer")


def test_a_reader_knows_the_leftover_a_writer_does_not(tmp_path):
    c = bcolz_store.carray(np.arange(10.0), chunklen=4, rootdir=str(tmp_path / "c"), mode="w")
    assert chunk_stats(c).known.tolist() == [True, True, False]
    assert chunk_stats(reader(tmp_path / "c")).known.tolist() == [True, True, True]
    assert chunk_stats(bcolz_store.carray(np.arange(3.0))) is None       # in memory


# --- write paths ---------------------------------------------------------------------------

def test_copies_addcol_delcol_and_replaced_columns(tmp_path):
    c = bcolz_store.carray(_floats(100), chunklen=16, rootdir=str(tmp_path / "a"), mode="w")
    c.copy(rootdir=str(tmp_path / "b"), mode="w")
    c.copy(rootdir=str(tmp_path / "c"), mode="w", chunklen=7)
    committed_ok(tmp_path / "b")
    committed_ok(tmp_path / "c")
    t = bcolz_store.ctable([np.arange(50), _floats(50)], names=["a", "b"], chunklen=8,
                           rootdir=str(tmp_path / "t"), mode="w")
    t.addcol(np.arange(50) * 2, name="c")
    t.addcol(bcolz_store.carray(_floats(50)[::-1], chunklen=13), name="d", pos=0)
    t.addcol(["x%d" % i for i in range(50)], name="e", dtype="vlen-str")
    t.delcol("a")
    committed_ok(tmp_path / "t", "addcol/delcol")
    assert not (tmp_path / "t" / "a").exists()
    t.cols["b"] = np.arange(50)[::-1] * 1.5
    t["c"][10:20] = -5
    committed_ok(tmp_path / "t", "replaced column")
    t2 = t.copy(rootdir=str(tmp_path / "t2"), mode="w")
    committed_ok(tmp_path / "t2", "ctable copy")
    assert t2.names == t.names


def test_appends_rebased_on_another_writers_commit(tmp_path):
    path = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(25), np.arange(25.0)], names=["a", "b"], chunklen=10,
                       rootdir=path, mode="w").flush()
    first, second = bcolz_store.open(path, mode="a"), bcolz_store.open(path, mode="a")
    first.append([np.arange(7) + 100, np.arange(7.0) + 100])
    second.append([np.arange(13) - 50, np.arange(13.0) - 50])
    first.flush()
    second.flush()                  # its append follows first's, one commit later
    assert len(reader(path)) == 45
    committed_ok(path, "rebased")
    check_stats(second, what="rebased writer")
    first.append([np.arange(3) + 1000, np.arange(3.0) + 1000])
    first.flush()
    committed_ok(path, "after both")


def test_from_dask(tmp_path, monkeypatch):
    """The tasks compute the statistics of the chunks they write: the writer
    reads none of their chunk files back."""
    da = pytest.importorskip("dask.array")
    monkeypatch.setattr(stats_mod, "_read_stats", None)     # (called: a TypeError)
    x = da.from_array(_floats(1000), chunks=130)
    bcolz_store.from_dask(x, rootdir=str(tmp_path / "d"), mode="w", chunklen=100)
    committed_ok(tmp_path / "d")
    q = da.from_array(_floats(1000) * 1.2345678, chunks=333)
    bcolz_store.from_dask(q, rootdir=str(tmp_path / "q"), mode="w", chunklen=100,
                          cparams=bcolz_store.cparams(quantize=1))
    committed_ok(tmp_path / "q", "quantized")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"i": np.arange(300) * 7 % 101, "f": _floats(300),
                          "s": ["w%d" % (i % 37) for i in range(300)]})
    bcolz_store.from_dask(dd.from_pandas(frame, npartitions=4), rootdir=str(tmp_path / "t"),
                          mode="w", chunklen=32)
    committed_ok(tmp_path / "t", "dataframe")


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="reference fixtures absent")
@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
                         if FIXTURES.is_dir() else [])
def test_first_write_to_a_bcolz_dataset_computes_them_all(tmp_path, name):
    path = tmp_path / name
    shutil.copytree(FIXTURES / name, path)
    obj = bcolz_store.open(str(path), mode="a")
    n = len(obj)
    obj.append(obj[max(n - 3, 0):n] if n else np.zeros((1,) + obj.shape[1:], obj.dtype))
    obj.flush()
    committed_ok(path)
    assert bcolz_store.verify(str(path)).ok


# --- limits --------------------------------------------------------------------------------

def test_long_texts_are_not_kept(tmp_path):
    long = "x" * (MAX_STATS_TEXT + 1)
    items = ["a", "b", long, "c"] * 4 + ["d"] * 4
    c = bcolz_store.carray(items, dtype="vlen-str", chunklen=4, rootdir=str(tmp_path / "v"),
                           mode="w")
    c.flush()
    stats = chunk_stats(reader(tmp_path / "v"))
    assert stats.known.tolist() == [False] * 4 + [True]
    assert (tmp_path / "v" / STATS).stat().st_size < 1000
    committed_ok(tmp_path / "v")
    chunks = json.loads((tmp_path / "v" / STATS).read_text())["chunks"]
    assert chunks[0] == [None, None, NOT_KEPT] and chunks[4] == ["d", "d", 0]


def test_a_carray_whose_statistics_would_be_too_large_keeps_none(tmp_path, monkeypatch):
    c = bcolz_store.carray(np.arange(100.0), chunklen=10, rootdir=str(tmp_path / "c"),
                           mode="w")
    assert (tmp_path / "c" / STATS).is_file()
    monkeypatch.setattr(stats_mod, "MAX_STATS_BYTES", 300)
    c.append(np.arange(50.0))
    c.flush()
    assert not (tmp_path / "c" / STATS).exists()
    assert not chunk_stats(reader(tmp_path / "c")).known.any()
    assert bcolz_store.verify(str(tmp_path / "c")).ok
    monkeypatch.setattr(stats_mod, "MAX_STATS_CHUNKS", 3)
    monkeypatch.setattr(stats_mod, "MAX_STATS_BYTES", 1 << 20)
    c.append(np.arange(5.0))
    c.flush()
    assert not (tmp_path / "c" / STATS).exists()


# --- damaged, forged and hostile files -----------------------------------------------------

def _dataset(tmp_path):
    path = tmp_path / "t"
    bcolz_store.ctable([np.arange(100), _floats(100)], names=["a", "b"], chunklen=16,
                       rootdir=str(path), mode="w").flush()
    return path


def _forge(path: Path, edit) -> None:
    """Rewrite ``path`` (a meta/stats) with ``edit`` applied, its md5 field recomputed."""
    body = json.loads(path.read_text())
    edit(body)
    path.write_bytes(dump_stats(body["kind"], body["chunklen"], body["length"],
                                body["chunks"]))


def _reseal_checksums(root: Path, rel: str) -> None:
    """Make the checksum file agree with the file ``rel`` as it is now."""
    lines = (root / "bcolz_store.md5").read_text().splitlines()
    digest = hashlib.md5((root / rel).read_bytes()).hexdigest()
    lines = [f"{digest}  {rel}" if line.endswith(f"  {rel}") else line for line in lines]
    (root / "bcolz_store.md5").write_text("\n".join(lines) + "\n")


def _lie(body):
    body["chunks"][2][1] = 10 ** 6


DAMAGE = {
    "bit flip": lambda p: p.write_bytes(bytes([p.read_bytes()[0] ^ 1]) + p.read_bytes()[1:]),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:40]),
    "wrong md5": lambda p: p.write_text(p.read_text().replace('"md5": "', '"md5": "0', 1)),
    "a lie, md5 left": lambda p: p.write_text(json.dumps(dict(json.loads(p.read_text()),
                                                              chunks=[[0, 10 ** 6, 0]] * 7))),
    "wrong count of chunks": lambda p: _forge(p, lambda b: b["chunks"].pop()),
    "wrong kind": lambda p: _forge(p, lambda b: b.update(kind="<i8")),
    "wrong length": lambda p: _forge(p, lambda b: b.update(length=97)),
    "wrong chunklen": lambda p: _forge(p, lambda b: b.update(chunklen=17)),
    "nulls over the count": lambda p: _forge(p, lambda b: b["chunks"][0].__setitem__(2, 17)),
    "min over max": lambda p: _forge(p, lambda b: b["chunks"][1].__setitem__(1, -100.0)),
    "huge numbers": lambda p: _forge(p, lambda b: b["chunks"][0].__setitem__(0, 10 ** 400)),
    "nested junk": lambda p: _forge(p, lambda b: b["chunks"][0].__setitem__(0, [[{"a": []}]])),
    "deep nesting": lambda p: p.write_text('{"chunks": ' + "[" * 100000 + "]" * 100000 + "}"),
    "non-ASCII": lambda p: p.write_bytes(p.read_bytes().replace(b'"<f8"', b'"<f\xc3\xa9"')),
    "version 2": lambda p: _forge(p, lambda b: None) or p.write_text(
        p.read_text().replace('"stats": 1', '"stats": 2')),
    "empty": lambda p: p.write_bytes(b""),
    "a folder": lambda p: (p.unlink(), p.mkdir()),
    "a FIFO": lambda p: (p.unlink(), os.mkfifo(p)),
    "a symlink outside": lambda p: (p.unlink(), p.symlink_to("/etc/hostname")),
    "a symlink loop": lambda p: (p.unlink(), p.symlink_to("stats")),
    "/dev/zero": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
}


NOT_A_FILE = ("a folder", "a FIFO", "a symlink outside", "a symlink loop", "/dev/zero")


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_file_is_ignored_and_verify_true_refuses_it(tmp_path, how):
    path = _dataset(tmp_path)
    DAMAGE[how](path / "b" / STATS)
    t = reader(path)
    assert np.array_equal(t["b"][:], _floats(100), equal_nan=True)
    stats = chunk_stats(t.cols["b"])
    assert not stats.known.any(), "a damaged file was used"
    assert "meta/stats" in _stats_of(t.cols["b"]).damaged
    assert chunk_stats(t.cols["a"]).known.all()
    with pytest.raises((IntegrityError, FormatError)) as info:
        bcolz_store.open(str(path), mode="r", verify=True)
    assert "b/meta/stats" in str(info.value)
    report = bcolz_store.verify(str(path))
    assert not report.ok and "b/meta/stats" in report.damaged + report.missing
    # a writer recomputes them: the next commit holds right ones; a writer refuses a
    # meta/stats that is not a plain file (it could not replace it), as any other file
    if how in NOT_A_FILE:
        with pytest.raises(FormatError, match="b/meta/stats"):
            bcolz_store.open(str(path), mode="a")
        return
    w = bcolz_store.open(str(path), mode="a")
    w.append([np.arange(3), np.arange(3.0)])
    committed_ok(path, f"rewritten after {how}")
    assert bcolz_store.verify(str(path)).ok


def test_a_forged_file_misleads_only_without_verify(tmp_path):
    """A well-formed file whose md5 field was recomputed but whose numbers lie:
    as any forged file, used without verify=True (docs/format.md); the
    checksum file tells it with verify=True, and bcolz_store.verify()
    recomputes the statistics."""
    path = _dataset(tmp_path)
    _forge(path / "b" / STATS, _lie)
    assert stats_lies(reader(path))               # used: a forgery looks right
    with pytest.raises(IntegrityError, match="b/meta/stats"):
        bcolz_store.open(str(path), mode="r", verify=True)
    report = bcolz_store.verify(str(path))
    assert report.damaged == ["b/meta/stats"]
    assert report.reasons["b/meta/stats"] == "content does not match its md5"
    # with the checksum file forged too, verify() still finds the lie in the numbers
    _reseal_checksums(path, "b/meta/stats")
    (path / "bcolz_store.json").unlink()
    report = bcolz_store.verify(str(path))
    assert report.damaged == ["b/meta/stats"], report.problems()
    assert "chunk 2" in report.reasons["b/meta/stats"]


def test_verify_finds_stale_statistics_and_names_them(tmp_path):
    path = _dataset(tmp_path)
    _forge(path / "a" / STATS, lambda b: b["chunks"][-1].__setitem__(2, 1))
    _reseal_checksums(path, "a/meta/stats")
    (path / "bcolz_store.json").unlink()
    report = bcolz_store.verify(str(path))
    assert report.problems() == [("damaged", "a/meta/stats")]
    assert "stats" in report.reasons["a/meta/stats"]
    assert "chunk 6" in report.reasons["a/meta/stats"]


def test_verify_of_a_clean_dataset_of_every_kind(tmp_path):
    cols = [KINDS[k](40) for k in ("f8", "S4", "vlen-str", "category", "M8[ns]", "bool")]
    bcolz_store.ctable(cols, names=list("abcdef"), chunklen=6, rootdir=str(tmp_path / "t"),
                       mode="w").flush()
    report = bcolz_store.verify(str(tmp_path / "t"))
    assert report.ok, report.problems()


def test_load_rejects_what_the_format_forbids():
    good = dump_stats("<i4", 4, 6, [[1, 3, 0], [None, None, 2]])
    assert load_stats(good, "x")["chunks"] == [(1, 3, 0), (None, None, 2)]
    for chunks in ([[1, 3, 0], [None, None, 1]], [[1, 3, 0], [5, None, 0]],
                   [[1, 3, 0], [2 ** 31, 2 ** 31, 0]], [[1, 3, 0], [1.5, 2, 0]],
                   [[1, 3, 0], [None, None, -2]], [[1, 3, -1], [None, None, 2]],
                   [[1, 3, 0]], [[True, 3, 0], [None, None, 2]]):
        with pytest.raises(FormatError):
            load_stats(dump_stats("<i4", 4, 6, chunks), "x")
    assert load_stats(dump_stats("<i4", 4, 6, [[None, None, NOT_KEPT], [None, None, 2]]),
                      "x")["chunks"][0] == (None, None, NOT_KEPT)


# --- the real bcolz ------------------------------------------------------------------------

def test_real_bcolz_ignores_them_and_its_changes_make_them_unused(tmp_path):
    """bcolz reads a dataset with statistics, and may write to it: an append
    changes the length, so the statistics are no longer used; a change that
    keeps the length is found by verify(), as any file bcolz changed, and
    the statistics describe the items bcolz_store committed until ``bcolz-store
    index --stats`` recomputes them (docs/format.md)."""
    bcolz = pytest.importorskip("bcolz")
    path = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(40, dtype="i4"), _floats(40)], names=["a", "b"],
                       chunklen=8, rootdir=path, mode="w").flush()
    theirs = bcolz.open(path, mode="a")
    assert np.array_equal(theirs["b"][:], _floats(40), equal_nan=True)
    theirs.append([np.arange(5, dtype="i4") + 1000, np.arange(5.0)])
    theirs.flush()
    t = reader(path)
    assert len(t) == 45 and not chunk_stats(t.cols["a"]).known.any()
    assert "describes 40 items" in _stats_of(t.cols["a"]).damaged
    w = bcolz_store.open(path, mode="a")
    w.flush()                       # the next commit by this library recomputes them
    committed_ok(path, "after bcolz appended")
    theirs = bcolz.open(path, mode="a")
    theirs["a"][3] = 999_999        # the length stays: only verify() tells, naming the chunk
    theirs.flush()
    assert bcolz_store.verify(path).damaged == ["a/data/__0.blp"]
    assert stats_lies(reader(path))
    from bcolz_store.cli import main
    assert main(["index", "--stats", path]) == 0
    committed_ok(path, "after index --stats")


def test_a_leftover_that_grew_without_changing_its_statistics(tmp_path):
    """Appended items inside the leftover's min and max: the statistics of its
    chunk are the same, the file's length is not (a flush must rewrite it)."""
    c = bcolz_store.carray(np.array([5, 1], dtype="i4"), chunklen=4, rootdir=str(tmp_path / "c"),
                           mode="w")
    c[0] = 4                                    # committed: [4, 1]
    c.append(np.array([2], dtype="i4"))         # into the leftover, [4, 1, 2]
    c.flush()
    committed_ok(tmp_path / "c")
    assert json.loads((tmp_path / "c" / STATS).read_text())["length"] == 3
    c.append(np.array([3, 3], dtype="i4"))      # a full chunk, then one more
    c.flush()

    def generation():
        return json.loads((tmp_path / "c" / "bcolz_store.json").read_text())["generation"]
    before = generation()
    c.flush()                                   # nothing new: no commit
    assert generation() == before
    committed_ok(tmp_path / "c")
