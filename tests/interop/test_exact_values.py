"""Values that converters have changed silently before, checked in every format
both ways: bytes and text with NULs inside (and numpy's trailing NUL padding),
NaN bit patterns, -0.0, NaT, nanoseconds, big-endian columns, time zones.

"Exactly" means the same dtype and the same stored bytes (``tobytes()``), so
a NaN payload or a NUL pad byte that changed would show.  What a format
cannot keep is written down in docs/converting.md and checked here as such
(zarr and datadings make big-endian columns native, with the same values).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.converters import convert

from .test_convert import need

SUFFIX = {"parquet": "parquet", "arrow": "arrow", "zarr": "zarr", "npz": "npz",
          "hdf5": "h5", "datadings": "msgpack"}
# The S column of the task: a NUL inside, a NUL at the end (numpy's padding),
# NULs at the start, an empty item, and a full-width item without NULs.
NUL_BYTES = np.array([b"\x01\x00\x02", b"ab\x00", b"\x00\x00z", b"", b"xyz", b"\x00"],
                     dtype="S3")
NUL_TEXT = np.array(["a\x00b", "x\x00", "\x00q", "", "\u00e9\x00\U0001f600", "\x00"],
                    dtype="U3")
NAN_BITS = np.array([0x7FF8000000000001, 0x7FF0000000000001, 0xFFF8000000000000,
                     0x8000000000000000, 0x7FF8000000000000, 0x3FF0000000000000],
                    dtype="<u8").view("<f8")         # payloads, signalling, -nan, -0.0
F4_BITS = np.array([0x7FC00001, 0xFFC00000, 0x80000000, 0x7F800001, 0, 1],
                   dtype="<u4").view("<f4")
F2_BITS = np.array([0x7E01, 0xFE00, 0x8000, 0x7C01, 0, 1], dtype="<u2").view("<f2")
NANOS = np.array(["NaT", "2262-04-11T23:47:16.854775807", "1677-09-21T00:12:43.145224193",
                  "2000-01-01T00:00:00.000000001", "1970-01-01", "NaT"], dtype="M8[ns]")
DELTAS = np.array([-2 ** 63, 1, -1, 2 ** 63 - 1, 0, -2 ** 63], dtype="i8").view("m8[ns]")


@pytest.fixture(autouse=True)
def _quiet_zarr_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        yield


def assert_exact(back: np.ndarray, orig: np.ndarray, name: str, native=False) -> None:
    """Same dtype (in native byte order when ``native``) and the same bytes."""
    want = orig.astype(orig.dtype.newbyteorder("=")) if native else orig
    assert back.dtype == want.dtype, name
    assert back.tobytes() == want.tobytes(), (name, back.tolist(), want.tolist())


def through(tmp_path, fmt: str, columns: dict, carray=False):
    """``columns`` written as a bcolz ctable (or a carray of the one column),
    converted to ``fmt`` and back; the dataset read back."""
    src = str(tmp_path / "src")
    if carray:
        (values,) = columns.values()
        bcolz.carray(values, chunklen=4, rootdir=src, mode="w").flush()
    else:
        bcolz.ctable(columns=list(columns.values()), names=list(columns), chunklen=4,
                     rootdir=src, mode="w").flush()
    out = str(tmp_path / f"out.{SUFFIX[fmt]}")
    convert(src, out, drop_attrs=fmt == "datadings")
    convert(out, str(tmp_path / "back"))
    return bcolz.open(str(tmp_path / "back"), mode="r")


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "zarr", "npz", "hdf5", "datadings"])
def test_fixed_width_bytes_with_nuls_survive_every_format_exactly(tmp_path, fmt):
    need(fmt)
    back = through(tmp_path, fmt, {"raw": NUL_BYTES, "i": np.arange(6, dtype="i4")})
    assert_exact(back.cols["raw"][:], NUL_BYTES, "raw")
    assert back.cols["raw"][:].tolist()[:3] == [b"\x01\x00\x02", b"ab", b"\x00\x00z"]


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "zarr", "npz", "hdf5"])
def test_a_carray_of_bytes_with_nuls_survives_exactly(tmp_path, fmt):
    need(fmt)
    back = through(tmp_path, fmt, {"data": NUL_BYTES}, carray=True)
    assert isinstance(back, bcolz.carray)
    assert_exact(back[:], NUL_BYTES, "data")


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "zarr", "npz", "datadings"])
def test_text_with_nuls_survives_exactly(tmp_path, fmt):
    need(fmt)
    back = through(tmp_path, fmt, {"text": NUL_TEXT})
    assert_exact(back.cols["text"][:], NUL_TEXT, "text")


def test_other_readers_see_the_nuls_inside_and_not_the_padding(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from bcolz_store.converters import arrow
    t = bcolz.ctable(columns=[NUL_BYTES, NUL_TEXT], names=["raw", "text"])
    table = arrow.to_arrow(t)
    assert table.column("raw").type == pa.binary()
    assert table.column("raw").to_pylist() == NUL_BYTES.tolist()
    assert table.column("text").to_pylist() == NUL_TEXT.tolist()
    arrow.to_parquet(t, str(tmp_path / "t.parquet"))
    assert pq.read_table(str(tmp_path / "t.parquet")).column("raw").to_pylist()[0] == \
        b"\x01\x00\x02"


def test_foreign_binary_with_nuls_inside_is_read_and_a_trailing_nul_refused():
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters import arrow
    inside = arrow.from_arrow(pa.table({"b": pa.array([b"\x01\x00\x02", b"\x00z"])}))
    assert inside.cols["b"].dtype == np.dtype("S3")
    assert inside.cols["b"][:].tolist() == [b"\x01\x00\x02", b"\x00z"]
    with pytest.raises(ValueError, match="ending in NUL"):
        arrow.from_arrow(pa.table({"b": pa.array([b"ab\x00"])}))


FLOATS = {"f8": NAN_BITS, "f4": F4_BITS, "f2": F2_BITS,
          "c16": np.stack([NAN_BITS, NAN_BITS[::-1]], axis=1).copy().view("c16").ravel()}


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "zarr", "npz", "hdf5", "datadings"])
def test_nan_payloads_and_negative_zero_keep_their_bits(tmp_path, fmt):
    need(fmt)
    back = through(tmp_path, fmt, FLOATS)
    for name, values in FLOATS.items():
        assert_exact(back.cols[name][:], values, name)
    assert np.signbit(back.cols["f8"][3]) and back.cols["f8"][3] == 0


TIMES = {"ns": NANOS, "delta": DELTAS,
         "us": np.array(["NaT", "9999-12-31T23:59:59.999999", "0001-01-01", "2000-01-01",
                         "1969-12-31T23:59:59.999999", "NaT"], dtype="M8[us]"),
         "day": np.array(["NaT", "2000-01-01", "1970-01-01", "1900-01-01", "2100-02-28",
                          "NaT"], dtype="M8[D]"),
         "minute": np.array(["NaT", "2000-01-01T00:01", "1970-01-01", "1900-01-01", "NaT",
                             "2000-01-01"], dtype="M8[m]")}


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "zarr", "npz", "datadings"])
def test_nat_and_nanoseconds_keep_their_bits(tmp_path, fmt):
    need(fmt)
    back = through(tmp_path, fmt, TIMES)
    for name, values in TIMES.items():
        assert_exact(back.cols[name][:], values, name)


BIG = {"f8": NAN_BITS.astype(">f8"), "i4": np.arange(-3, 3, dtype=">i4"),
       "u2": np.arange(6, dtype=">u2") * 1000, "c8": np.arange(6, dtype=">c8") + 1j}
BIG_TIMES = {"ns": NANOS.astype(">M8[ns]"), "delta": DELTAS.astype(">m8[ns]")}


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "npz", "hdf5"])
def test_big_endian_columns_keep_their_byte_order(tmp_path, fmt):
    need(fmt)
    columns = {**BIG, **({} if fmt == "hdf5" else BIG_TIMES)}
    back = through(tmp_path, fmt, {**columns, "native": np.arange(6, dtype="<i8")})
    for name, values in columns.items():
        assert_exact(back.cols[name][:], values, name)


@pytest.mark.parametrize("fmt", ["zarr", "datadings"])
def test_big_endian_columns_come_back_native_with_the_same_values(tmp_path, fmt):
    need(fmt)
    back = through(tmp_path, fmt, {**BIG, **BIG_TIMES})
    for name, values in {**BIG, **BIG_TIMES}.items():
        assert_exact(back.cols[name][:], values, name, native=True)


def test_hdf5_stores_the_other_byte_order_natively_and_records_it(tmp_path):
    tables = pytest.importorskip("tables")
    from bcolz_store.interop.hdf5 import BYTEORDER_ATTR
    t = bcolz.ctable(columns=[BIG["f8"], np.arange(6, dtype="<i8")], names=["big", "little"])
    t.tohdf5(str(tmp_path / "t.h5"))
    with tables.open_file(str(tmp_path / "t.h5")) as h5:
        node = h5.get_node("/ctable")
        assert node.dtype["big"].isnative
        assert node.attrs[BYTEORDER_ATTR] == '{"big": ">f8"}'
        assert node.read()["big"].tobytes() == NAN_BITS.tobytes()
    back = bcolz.ctable.fromhdf5(str(tmp_path / "t.h5"))
    assert_exact(back.cols["big"][:], BIG["f8"], "big")
    assert "bcolz_store_byteorder" not in back.attrs


def test_zoned_arrow_timestamps_go_back_to_arrow_in_their_zone(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters import arrow
    table = pa.table({
        "paris": pa.array([0, None, 10 ** 18, -1], type=pa.timestamp("ns", tz="Europe/Paris")),
        "offset": pa.array([0, 1, 2, 3], type=pa.timestamp("s", tz="+05:30")),
        "naive": pa.array([0, 1, 2, 3], type=pa.timestamp("ms"))})
    t = arrow.from_arrow(table, rootdir=str(tmp_path / "t"))
    assert t.cols["paris"].attrs["timezone"] == "Europe/Paris"
    assert t.cols["paris"].dtype == np.dtype("M8[ns]")
    for back in (arrow.to_arrow(t), pa.ipc.open_file(str(
            convert(t.rootdir, str(tmp_path / "t.arrow")).paths[0])).read_all()):
        for name in table.column_names:
            assert back.schema.field(name).type == table.schema.field(name).type, name
            assert back.column(name).equals(table.column(name)), name


def test_zoned_pandas_columns_are_stored_in_utc_and_come_back_zoned():
    pd = pytest.importorskip("pandas")
    stamps = pd.to_datetime(["2000-01-01 12:00", None, "2262-04-11 00:00"]).as_unit("ns")
    df = pd.DataFrame({"paris": stamps.tz_localize("Europe/Paris"),
                       "minus3": stamps.tz_localize("-03:00"),
                       "utc": stamps.tz_localize("UTC")})
    t = bcolz.ctable.fromdataframe(df)
    assert t.cols["paris"].dtype == np.dtype("M8[ns]")
    assert t.cols["paris"].attrs["timezone"] == "Europe/Paris"
    assert t.cols["minus3"].attrs["timezone"] == "-03:00"
    assert t.cols["paris"][0] == np.datetime64("2000-01-01T11:00", "ns")     # UTC
    back = t.todataframe()
    for name in df.columns:
        assert str(back[name].dtype.tz) in (str(df[name].dtype.tz), "UTC-03:00"), name
        assert back[name].equals(df[name]) or back[name].tolist() == df[name].tolist(), name
    assert back["paris"].dtype == df["paris"].dtype
    assert back["paris"].isna().tolist() == [False, True, False]


def test_dataframe_round_trips_keep_units_and_byte_order_pandas_changes():
    pd = pytest.importorskip("pandas")
    columns = {"day": TIMES["day"], "big": BIG["f8"], "bigint": BIG["i4"], "ns": NANOS,
               "raw": NUL_BYTES, "text": NUL_TEXT, "f8": NAN_BITS}
    t = bcolz.ctable(columns=list(columns.values()), names=list(columns))
    back = bcolz.ctable.fromdataframe(t.todataframe())
    for name, values in columns.items():
        assert_exact(back.cols[name][:], values, name)


def test_a_recorded_dtype_the_values_no_longer_fit_is_not_forced():
    pd = pytest.importorskip("pandas")
    df = bcolz.ctable(columns=[TIMES["day"]], names=["day"]).todataframe()
    df.loc[0, "day"] = pd.Timestamp("2000-01-01 06:00")      # no longer whole days
    back = bcolz.ctable.fromdataframe(df)
    assert back.cols["day"].dtype.kind == "M" and back.cols["day"].dtype != np.dtype("M8[D]")
    assert back.cols["day"][0] == np.datetime64("2000-01-01T06:00")


@pytest.mark.parametrize("values", [[b"ok", b"ab\x00"], ["ok", "ab\x00"]])
def test_dataframe_values_ending_in_nul_are_refused_not_cut(values):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"v": pd.Series(values, dtype=object)})
    with pytest.raises(ValueError, match="column 'v': value 1 ends in NUL"):
        bcolz.ctable.fromdataframe(df)
    kept = bcolz.ctable.fromdataframe(df, strings="vlen")
    assert kept["v"][:].tolist() == values
    inside = bcolz.ctable.fromdataframe(pd.DataFrame({"v": [b"\x01\x00\x02", b""]}))
    assert inside["v"][:].tolist() == [b"\x01\x00\x02", b""]
