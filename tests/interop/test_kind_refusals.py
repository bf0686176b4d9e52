"""Formats other than Arrow and Parquet refuse the column kinds they cannot keep
(nullable, list, struct, decimal), naming the column, before writing anything."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.converters.hub import convert

KINDS = {
    "nullable": lambda: bcolz.carray(np.ma.masked_array([1, 2, 3], mask=[0, 1, 0])),
    "list": lambda: bcolz.carray([[1, 2], None, []], dtype=bcolz.list_("int64")),
    "struct": lambda: bcolz.carray([{"a": 1}, {"a": 2}, {"a": 3}],
                                   dtype=bcolz.struct([("a", "int32")])),
    "decimal": lambda: bcolz.carray(["1.5", "2", "3"], dtype=bcolz.decimal(5, 1)),
}
FORMATS = {"zarr": "zarr", "npz": "numpy", "h5": "tables", "msgpack": "msgpack"}


@pytest.mark.parametrize("suffix", sorted(FORMATS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_refused_naming_the_column_and_nothing_written(tmp_path, kind, suffix):
    pytest.importorskip(FORMATS[suffix])
    src = str(tmp_path / "t.bcolz")
    bcolz.ctable([np.arange(3), KINDS[kind]()], names=["i", "col"], rootdir=src)
    with pytest.raises(TypeError, match=r"column 'col': .* Parquet or Arrow IPC"):
        convert(src, str(tmp_path / f"out.{suffix}"))
    assert not (tmp_path / f"out.{suffix}").exists()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_parquet_keeps_each_kind(tmp_path, kind):
    pytest.importorskip("pyarrow")
    col = KINDS[kind]()
    src = str(tmp_path / "t.bcolz")
    bcolz.ctable([np.arange(3), col], names=["i", "col"], rootdir=src)
    convert(src, str(tmp_path / "t.parquet"))
    convert(str(tmp_path / "t.parquet"), str(tmp_path / "back.bcolz"))
    back = bcolz.open(str(tmp_path / "back.bcolz"))["col"]
    got, want = back[:], col[:]
    assert [repr(v) for v in got.tolist()] == [repr(v) for v in want.tolist()]
