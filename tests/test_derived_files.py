"""Derived files (chunk statistics ``meta/stats``, an index ``index/meta`` and its
segments) that do not match their checksums are rebuilt by the next writer, never
carried over into its commit with a fresh checksum."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

import bcolz_store
from bcolz_store.chunks.index import build_segment
from bcolz_store.format.index_meta import dump_index_meta, load_index_meta
from bcolz_store.format.stats_meta import dump_stats, load_stats

N, CHUNKLEN = 65536, 4096


def make_table(root: Path):
    t = bcolz_store.ctable([np.arange(N), np.arange(N) * 0.5], names=["a", "b"],
                           chunklen=CHUNKLEN, rootdir=str(root), mode="w")
    t.flush()
    return t


def forge_stats(root: Path) -> None:
    """Rewrite a/meta/stats as a well-formed file saying no chunk holds an item below 10**9."""
    path = root / "a" / "meta" / "stats"
    stats = load_stats(path.read_bytes(), str(path))
    chunks = [[10 ** 9, 2 * 10 ** 9, 0] for _ in stats["written"]]
    path.write_bytes(dump_stats(stats["kind"], stats["chunklen"], stats["length"], chunks))


def forge_index(root: Path) -> None:
    """Rewrite a's index as a well-formed one of other values (every item + 10**9)."""
    meta_path = root / "a" / "index" / "meta"
    meta = load_index_meta(meta_path.read_bytes(), str(meta_path))
    spans = []
    for first, stop, _md5 in meta["segments"]:
        data = build_segment(np.arange(first, stop) + 10 ** 9, first, meta["kind"], "<i8")
        (root / "a" / "index" / f"__{first}.idx").write_bytes(data)
        size = 8 + int.from_bytes(data[4:8], "little")
        spans.append((first, stop, hashlib.md5(data[:size]).hexdigest()))
    meta_path.write_bytes(dump_index_meta(meta["kind"], meta["dtype"], meta["length"], spans))


def test_forged_stats_are_rebuilt_by_the_next_writer(tmp_path):
    root = tmp_path / "t"
    make_table(root)
    forge_stats(root)
    assert bcolz_store.verify(str(root)).damaged == ["a/meta/stats"]
    t = bcolz_store.open(str(root), mode="a")
    t.append(([N], [N * 0.5]))
    t.flush()
    report = bcolz_store.verify(str(root))
    assert report.ok, report
    t = bcolz_store.open(str(root), mode="r", verify=True)
    assert len(t.fetchwhere("a < 10")) == 10
    assert "skipped: 0 chunks" not in str(t.explain("a >= 60000"))


def test_forged_stats_are_repaired_by_a_flush_without_changes(tmp_path):
    root = tmp_path / "t"
    make_table(root)
    good = (root / "a" / "meta" / "stats").read_bytes()
    forge_stats(root)
    bcolz_store.open(str(root), mode="a").flush()
    assert (root / "a" / "meta" / "stats").read_bytes() == good
    assert bcolz_store.verify(str(root)).ok


def test_forged_index_is_rebuilt_by_the_next_writer(tmp_path):
    root = tmp_path / "t"
    make_table(root).create_index("a")
    forge_index(root)
    assert "a/index/meta" in bcolz_store.verify(str(root)).damaged
    t = bcolz_store.open(str(root), mode="a")
    t.append(([N], [N * 0.5]))
    t.flush()
    report = bcolz_store.verify(str(root))
    assert report.ok, report
    t = bcolz_store.open(str(root), mode="r", verify=True)
    assert t.fetchwhere("a == 5")["a"][:].tolist() == [5]
    assert t.indexes == {"a": "sorted"}


def test_stats_without_a_checksum_file_are_rebuilt(tmp_path):
    root = tmp_path / "t"
    make_table(root)
    forge_stats(root)
    (root / "bcolz_store.md5").unlink()
    (root / "bcolz_store.json").unlink()
    t = bcolz_store.open(str(root), mode="a")
    t.append(([N], [N * 0.5]))
    t.flush()
    assert bcolz_store.verify(str(root)).ok
    assert len(bcolz_store.open(str(root), mode="r").fetchwhere("a < 10")) == 10


def _moved_column(tmp_path, forge=None):
    t = make_table(tmp_path / "t")
    src = tmp_path / "c"
    bcolz_store.carray(np.arange(N) * 2, chunklen=CHUNKLEN, rootdir=str(src), mode="w").flush()
    if forge is not None:
        forge(src)
    return t, src


def test_a_column_moved_in_keeps_only_checked_statistics(tmp_path):
    def forge(src):
        path = src / "meta" / "stats"
        stats = load_stats(path.read_bytes(), str(path))
        path.write_bytes(dump_stats(stats["kind"], stats["chunklen"], stats["length"],
                                    [[10 ** 9, 2 * 10 ** 9, 0] for _ in stats["written"]]))
    t, src = _moved_column(tmp_path, forge)
    t.addcol(bcolz_store.carray(rootdir=str(src), mode="a"), "c", move=True)
    t.flush()
    assert bcolz_store.verify(str(tmp_path / "t")).ok
    t = bcolz_store.open(str(tmp_path / "t"), mode="r", verify=True)
    assert len(t.fetchwhere("c < 20")) == 10


def test_a_column_moved_in_with_a_damaged_chunk_is_refused(tmp_path):
    import pytest
    from bcolz_store.errors import IntegrityError

    def forge(src):
        chunk = src / "data" / "__3.blp"
        data = bytearray(chunk.read_bytes())
        data[-1] ^= 1
        chunk.write_bytes(bytes(data))
    t, src = _moved_column(tmp_path, forge)
    with pytest.raises(IntegrityError, match=r"__3\.blp"):
        t.addcol(bcolz_store.carray(rootdir=str(src), mode="a"), "c", move=True)
