"""A pandas DataFrame holding every kind of column pandas and Arrow give it
round-trips exactly through disk, a reopen, and Parquet."""

from __future__ import annotations

import decimal

import numpy as np
import pytest

import bcolz_store as bcolz

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
arrow = pytest.importorskip("bcolz_store.converters.arrow")


def frame():
    dec = pd.ArrowDtype(pa.decimal128(12, 2))
    return pd.DataFrame({
        "i": pd.array([1, None, 3, -4], dtype="Int64"),
        "u8": pd.array([1, 2, None, 255], dtype="UInt8"),
        "b": pd.array([True, None, False, True], dtype="boolean"),
        "f": pd.array([1.5, None, np.nan, -0.0], dtype="Float64"),
        "s": pd.array(["a", None, "ccc", ""], dtype="string[pyarrow]"),
        "c": pd.Categorical(["x", "y", None, "x"], categories=["y", "x"], ordered=True),
        "d": pd.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.10"),
                       decimal.Decimal("99999.99")], dtype=dec),
        "l": pd.array([[1, 2], None, [], [4, None]], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        "st": pd.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "y"}, {"a": 4, "b": None}],
                       dtype=pd.ArrowDtype(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        "t": pd.to_datetime(["2024-01-01", None, "2024-03-01", "2024-04-01"]).tz_localize("UTC"),
        "plain": np.arange(4, dtype="int16"),
    })


def assert_same_frame(got, want):
    assert list(got.columns) == list(want.columns)
    for name in want.columns:
        assert got[name].dtype == want[name].dtype, name
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_through_disk_and_a_reopen(tmp_path):
    df = frame()
    bcolz.ctable.fromdataframe(df, rootdir=str(tmp_path / "t"), mode="w")
    assert_same_frame(bcolz.open(str(tmp_path / "t")).todataframe(), df)


def test_through_parquet_both_ways(tmp_path):
    df = frame()
    t = bcolz.ctable.fromdataframe(df, rootdir=str(tmp_path / "t"), mode="w")
    arrow.to_parquet(t, tmp_path / "f.parquet")
    # other readers see Arrow's own types, nulls as nulls
    import pyarrow.parquet as pq
    schema = pq.read_schema(tmp_path / "f.parquet")
    assert schema.field("i").type == pa.int64() and schema.field("b").type == pa.bool_()
    assert pa.types.is_dictionary(schema.field("c").type)
    assert schema.field("d").type == pa.decimal128(12, 2)
    assert pa.types.is_list(schema.field("l").type) and pa.types.is_struct(schema.field("st").type)
    assert pq.read_table(tmp_path / "f.parquet").column("i").null_count == 1
    back = arrow.from_parquet(tmp_path / "f.parquet", tmp_path / "back")
    assert_same_frame(bcolz.open(str(tmp_path / "back")).todataframe(), df)
    # and a Parquet file pandas wrote: pandas' own schema metadata is not read, so
    # the columns whose pandas dtype only that metadata says come back as objects
    # (str, Decimal, lists and dicts), the same values
    df.to_parquet(tmp_path / "pandas.parquet")
    arrow.from_parquet(tmp_path / "pandas.parquet", tmp_path / "from_pandas")
    got = bcolz.open(str(tmp_path / "from_pandas")).todataframe()
    as_objects = ["s", "d", "l", "st"]
    assert_same_frame(got.drop(columns=as_objects), df.drop(columns=as_objects))
    for name in as_objects:
        assert [_plain(v) for v in got[name]] == [_plain(v) for v in df[name]], name


def _plain(value):
    """A cell as plain Python (NA and None alike, arrays as lists)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_plain_columns_stay_plain(tmp_path):
    t = bcolz.ctable.fromdataframe(frame(), rootdir=str(tmp_path / "t"), mode="w")
    assert t.cols["plain"].dtype == np.dtype("int16")
    assert not getattr(t.cols["plain"], "nullable", False)
