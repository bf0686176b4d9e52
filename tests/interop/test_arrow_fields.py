"""Arrow fields that go back out as they came in (interop/arrow_fields.py)."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.interop.arrow_fields import FIELD_ATTR

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("bcolz_store.converters.arrow")


def _round_trip(tmp_path, table):
    pq.write_table(table, tmp_path / "in.parquet")
    arrow.from_parquet(tmp_path / "in.parquet", tmp_path / "t")
    back = bcolz.open(str(tmp_path / "t"))
    arrow.to_parquet(back, tmp_path / "out.parquet")
    return back, pq.read_table(tmp_path / "in.parquet"), pq.read_table(tmp_path / "out.parquet")


def test_types_numpy_cannot_say_come_back(tmp_path):
    table = pa.table({
        "t32": pa.array([0, 1000, None, 86_399_999], pa.time32("ms")),
        "t64": pa.array([0, 5, 86_399_999_999_999, None], pa.time64("ns")),
        "ls": pa.array(["a", None, "", "bc"], pa.large_string()),
        "dict32": pa.array(["x", "y", None, "x"]).dictionary_encode(),
        "plain": pa.array([1, 2, 3, 4], pa.int64()),
    }, schema=pa.schema([
        pa.field("t32", pa.time32("ms")), pa.field("t64", pa.time64("ns")),
        pa.field("ls", pa.large_string(), metadata={b"unit": b"none"}),
        pa.field("dict32", pa.dictionary(pa.int32(), pa.string())),
        pa.field("plain", pa.int64(), nullable=False)]))
    back, before, after = _round_trip(tmp_path, table)
    assert after.schema.remove_metadata().equals(before.schema.remove_metadata(),
                                                 check_metadata=True)
    assert after.equals(before.replace_schema_metadata(after.schema.metadata))
    # numpy sees times of day as timedelta64 since midnight
    assert back.cols["t32"].dtype == np.dtype("m8[ms]")
    assert back["t32"][1] == np.timedelta64(1000, "ms")
    # each differs from its default field (the last one only by being non-nullable)
    assert all(FIELD_ATTR in back.cols[name].attrs for name in back.names)


def test_default_fields_record_nothing(tmp_path):
    table = pa.table({"i": pa.array([1, 2], pa.int32()), "s": pa.array(["a", None]),
                      "b": pa.array([b"x", b"yz"])})
    back, before, after = _round_trip(tmp_path, table)
    assert all(FIELD_ATTR not in back.cols[name].attrs for name in back.names)
    assert after.schema.remove_metadata().equals(before.schema.remove_metadata())


def test_a_damaged_record_is_ignored_and_a_value_that_no_longer_fits_is_named(tmp_path):
    table = pa.table({"t": pa.array([1, 2], pa.time32("ms")),
                      "u": pa.array([1, 2], pa.time32("ms"))})
    pq.write_table(table, tmp_path / "in.parquet")
    t = arrow.from_parquet(tmp_path / "in.parquet", tmp_path / "t")
    t.cols["u"].attrs[FIELD_ATTR] = "not base64 at all!"
    t.flush()
    out = arrow.to_arrow(bcolz.open(str(tmp_path / "t")))
    assert out.schema.field("t").type == pa.time32("ms")
    assert out.schema.field("u").type == pa.duration("ms")    # its default type
    t = bcolz.open(str(tmp_path / "t"), mode="a")
    t.cols["t"][0] = np.timedelta64(2**40, "ms")              # past time32's range
    t.flush()
    with pytest.raises(ValueError, match=r"column 't'.*bcolz_store\.arrow"):
        arrow.to_arrow(t)
