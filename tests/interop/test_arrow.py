"""Arrow tables, Parquet and Arrow IPC files: types, metadata, foreign data."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import DatasetExistsError, FormatError

from .samples import CHUNKLEN, TABLE_ATTRS, assert_same, make

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("bcolz_store.converters.arrow")


def test_to_arrow_maps_types_column_by_column_and_records_metadata():
    t = make("ctable", 2 * CHUNKLEN + 1)
    t.cols["x"].attrs["unit"] = "m"
    at = arrow.to_arrow(t)
    types = {f.name: f.type for f in at.schema}
    assert types == {"i": pa.int32(), "x": pa.float64(), "b": pa.bool_(),
                     "t": pa.timestamp("ns"), "h": pa.int64(), "s": pa.binary(),
                     "w": pa.string()}
    assert at.column("i").num_chunks == 1 and at.column("t").null_count == 1
    meta = json.loads(at.schema.metadata[b"bcolz_store"])
    assert meta["kind"] == "ctable" and meta["attrs"] == TABLE_ATTRS
    assert meta["columns"]["h"] == {"dtype": "<M8[h]"}
    assert meta["columns"]["x"] == {"dtype": "<f8", "attrs": {"unit": "m"}}
    assert at.column("w").to_pylist()[:2] == ["\u00fc0", "\u00fc1"]
    back = arrow.from_arrow(at)
    assert_same(back, t)
    assert back.cols["x"].attrs.getall() == {"unit": "m"}


def test_rows_of_arrays_are_fixed_size_lists():
    ca = make("carray2d", 5)
    at = arrow.to_arrow(ca)
    assert at.schema.field("data").type == pa.list_(pa.list_(pa.int16(), 3), 2)
    assert at.column("data").to_pylist()[1] == [[6, 7, 8], [9, 10, 11]]
    assert arrow.arrow_type(np.dtype(("<i2", (2, 3)))) == at.schema.field("data").type


@pytest.mark.parametrize("dtype, arrow_type", [
    ("M8[s]", "timestamp[s]"), ("M8[D]", "date32[day]"), ("M8[M]", "int64"),
    ("m8[ms]", "duration[ms]"), ("m8[D]", "int64"), ("f2", "halffloat"), ("u8", "uint64"),
    (">i4", "int32"), ("c16", "fixed_size_binary[16]")])
def test_every_dtype_round_trips_through_parquet(tmp_path, dtype, arrow_type):
    values = np.arange(-3, 4).astype(dtype) if dtype[0] not in "Mm" else \
        np.array([0, 5, -2, np.iinfo("i8").min], dtype="i8").view(dtype)     # with a NaT
    ca = bcolz.carray(values)
    assert str(arrow.arrow_type(ca.dtype)) == arrow_type
    arrow.to_parquet(ca, tmp_path / "a.parquet")
    back = arrow.from_parquet(tmp_path / "a.parquet")
    assert back.dtype == ca.dtype
    assert_array_equal(back[:], values)


def test_pyarrow_reads_our_files(tmp_path):
    t = make("ctable", 40)
    arrow.to_parquet(t, tmp_path / "a.parquet", row_group_size=CHUNKLEN)
    arrow.to_feather(t, tmp_path / "a.feather", compression="zstd")
    pf = pq.ParquetFile(tmp_path / "a.parquet")
    assert pf.metadata.num_row_groups == 3 and pf.metadata.num_rows == 40
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.column("i").to_pylist() == t.cols["i"][:].tolist()
    import pyarrow.feather as feather
    assert feather.read_table(tmp_path / "a.feather").column("s").to_pylist()[3] == b"b3"


def test_parquet_is_read_batch_by_batch(tmp_path):
    t = make("ctable", 40)
    arrow.to_parquet(t, tmp_path / "a.parquet", row_group_size=7)
    back = arrow.from_parquet(tmp_path / "a.parquet", rootdir=tmp_path / "b", batch_size=5,
                              chunklen=4)
    assert back.cols["i"].chunklen == 4
    assert_same(bcolz.open(str(tmp_path / "b")), t)


def test_writers_refuse_to_overwrite(tmp_path):
    (tmp_path / "a.parquet").write_bytes(b"x")
    with pytest.raises(DatasetExistsError):
        arrow.to_parquet(make("carray", 3), tmp_path / "a.parquet")
    with pytest.raises(DatasetExistsError):
        arrow.to_feather(make("carray", 3), tmp_path / "a.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == b"x"


def test_object_columns_are_refused_and_leave_no_file(tmp_path):
    ca = bcolz.carray(np.array([1, "a"], dtype=object))
    with pytest.raises(TypeError, match="object"):
        arrow.to_parquet(ca, tmp_path / "a.parquet")
    assert not (tmp_path / "a.parquet").exists()


# --- tables written by others ----------------------------------------------------

def test_foreign_strings_get_the_width_of_their_longest_value():
    at = pa.table({"s": pa.array(["a", "bb"] * 70_000 + ["a much longer value"]),
                   "b": pa.array([b"x"] * 140_001, type=pa.large_binary())})
    t = arrow.from_arrow(at)
    assert t.cols["s"].dtype == np.dtype("U19") and t.cols["b"].dtype == np.dtype("S1")
    assert t["s"][-1] == "a much longer value"


def test_foreign_types_map_to_bcolz_dtypes():
    at = pa.table({
        "d": pa.array([0, 1], type=pa.date32()),
        "d64": pa.array([0, 86_400_000], type=pa.date64()),
        "z": pa.array([0, 1], type=pa.timestamp("ms", tz="Europe/Paris")),
        "c": pa.array(["a", "b"]).dictionary_encode(),
        "f": pa.array([b"ab", b"cd"], type=pa.binary(2)),
        "n": pa.array([1.5, None]),
    })
    t = arrow.from_arrow(at)
    assert [str(t.cols[c].dtype) for c in t.names if c != "c"] == [
        "datetime64[D]", "datetime64[ms]", "datetime64[ms]", "|V2", "float64"]
    # an Arrow dictionary is a categorical column, its dictionary the categories
    assert t.cols["c"].category == bcolz.category(["a", "b"])
    assert t.cols["z"].attrs.getall() == {"timezone": "Europe/Paris"}
    # a float null stays a null (a nullable column), apart from NaN
    assert t.cols["n"].nullable and t["n"][1] is np.ma.masked and t["c"][1] == "b"


@pytest.mark.parametrize("column, error, match", [
    # (integer nulls make a nullable column: tests/test_nullable.py; string nulls vlen ones)
    (pa.array([b"a\x00", b"b"]), ValueError, "ending in NUL"),
])
def test_what_bcolz_cannot_hold_is_refused_not_cut(column, error, match):
    with pytest.raises(error, match=match):
        arrow.from_arrow(pa.table({"c": column}))


def test_recorded_widths_that_foreign_edits_outgrow_are_refused():
    at = arrow.to_arrow(bcolz.ctable(columns=[np.array(["ab"], dtype="U2")], names=["s"]))
    edited = pa.table({"s": pa.array(["abc"])}).replace_schema_metadata(at.schema.metadata)
    with pytest.raises(ValueError, match="would cut"):
        arrow.from_arrow(edited)


def test_non_identifier_names_are_kept():
    assert arrow.from_arrow(pa.table({"not a name": [1, 2]})).names == ["not a name"]


def test_arrow_ipc_stream_is_read(tmp_path):
    at = pa.table({"i": [1, 2, 3]})
    with pa.OSFile(str(tmp_path / "s.arrow"), "wb") as sink, \
            pa.ipc.new_stream(sink, at.schema) as writer:
        writer.write_table(at)
    assert arrow.from_feather(tmp_path / "s.arrow")["i"][:].tolist() == [1, 2, 3]


@pytest.mark.parametrize("reader", ["from_parquet", "from_feather"])
def test_files_that_are_not_arrow_raise_format_error(tmp_path, reader):
    (tmp_path / "junk").write_bytes(b"PAR1 this is not parquet at all PAR1")
    with pytest.raises(FormatError, match="junk"):
        getattr(arrow, reader)(tmp_path / "junk")


def test_malformed_metadata_raises_format_error():
    at = pa.table({"i": [1]}).replace_schema_metadata({b"bcolz_store": b"{not json"})
    with pytest.raises(FormatError, match="metadata"):
        arrow.from_arrow(at)
    at = pa.table({"i": [1]}).replace_schema_metadata(
        {b"bcolz_store": json.dumps({"columns": {"i": {"dtype": "|O"}}}).encode()})
    with pytest.raises(FormatError, match="objects"):
        arrow.from_arrow(at)


def test_kind_can_be_forced(tmp_path):
    at = arrow.to_arrow(make("carray", 5))
    assert isinstance(arrow.from_arrow(at), bcolz.carray)
    t = arrow.from_arrow(at, kind="ctable")
    assert isinstance(t, bcolz.ctable) and t.names == ["data"]


def test_foreign_lists_of_strings_get_a_row_shape_and_a_scanned_width():
    strings = pa.FixedSizeListArray.from_arrays(pa.array(["a", "bbb", "c", "dd"]), 2)
    t = arrow.from_arrow(pa.table({"s": strings}))
    assert t.cols["s"].dtype == np.dtype("U3") and t.cols["s"].shape == (2, 2)
    assert t["s"][:].tolist() == [["a", "bbb"], ["c", "dd"]]
