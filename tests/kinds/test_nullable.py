"""The nullable column kind: numeric, bool and temporal values with a validity."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds.arrow import to_pyarrow
from bcolz_store.kinds.nullable.kind import NullableKind
from bcolz_store.testing.kinds import KindTests

pa = pytest.importorskip("pyarrow")

N = 1234


def _with_nulls(values, typ):
    mask = np.zeros(len(values), dtype=bool)
    mask[::7] = True
    mask[5] = True
    return pa.array(values, type=typ, mask=mask)


class TestNullableInt64Kind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return NullableKind

    @pytest.fixture
    def arrow_array(self):
        return _with_nulls(np.arange(N, dtype=np.int64) * 3 - 100, pa.int64())

    def test_an_empty_array_makes_an_empty_carray(self, kind_class, arrow_array):
        # (the Arrow reader makes a column nullable when it holds nulls: an
        # empty one is of the plain dtype)
        c = self.make(arrow_array.slice(0, 0))
        assert len(c) == 0 and c.kind is None
        assert c.dtype == kind_class.of_arrow(pa, arrow_array.type).dtype()
        c = bcolz_store.carray(arrow_array.slice(0, 0), nullable=True)
        assert isinstance(c.kind, kind_class) and len(c.to_buffers()) == 0


class TestNullableFloat32Kind(TestNullableInt64Kind):
    @pytest.fixture
    def arrow_array(self):
        values = np.linspace(-5, 5, N).astype(np.float32)
        return _with_nulls(values, pa.float32())


class TestNullableBoolKind(TestNullableInt64Kind):
    @pytest.fixture
    def arrow_array(self):
        return _with_nulls(np.arange(N) % 3 == 0, pa.bool_())


class TestNullableUint8Kind(TestNullableInt64Kind):
    @pytest.fixture
    def arrow_array(self):
        return _with_nulls((np.arange(N) % 256).astype(np.uint8), pa.uint8())


def test_null_slots_hold_the_fill():
    arr = pa.array([1.5, None, 3.0], type=pa.float64())
    c = bcolz_store.carray(arr)
    got = c[:]
    assert got.mask.tolist() == [False, True, False]
    assert np.isnan(got.data[1])
    ints = bcolz_store.carray(pa.array([7, None, 9], type=pa.int32()))
    assert ints[:].data.tolist() == [7, 0, 9] and ints.dtype == np.int32


def test_a_nan_value_stays_a_value():
    c = bcolz_store.carray(pa.array([np.nan, None, 1.0]))
    got = to_pyarrow(pa, c.to_buffers(), pa.float64())
    assert got.is_null().to_pylist() == [False, True, False]
    assert np.isnan(got[0].as_py()) and c[:].mask.tolist() == [False, True, False]


def test_rows_across_chunks_and_leftover_after_reopening(tmp_path):
    values = np.arange(1050, dtype=np.int16)
    mask = values % 11 == 0
    arr = pa.array(values, mask=mask)
    c = bcolz_store.carray(arr, chunklen=100, rootdir=str(tmp_path / "c"), mode="w")
    c.append(pa.array([1, None], type=pa.int16()))
    c.flush()
    c = bcolz_store.open(str(tmp_path / "c"))
    want = pa.concat_arrays([arr, pa.array([1, None], type=pa.int16())])
    for start, stop in ((0, 1052), (95, 205), (1000, 1052), (250, 250)):
        got = to_pyarrow(pa, c.to_buffers(start, stop), pa.int16())
        assert got.equals(want.slice(start, stop - start))
    assert np.array_equal(c[:].mask, ~want.is_valid().to_numpy(zero_copy_only=False))


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamps_with_a_zone_keep_their_unit_and_zone(unit, tmp_path):
    typ = pa.timestamp(unit, tz="Europe/Paris")
    arr = pa.array([0, None, 86_400, -5] * 60, type=typ)
    c = bcolz_store.carray(np.ma.MaskedArray(np.zeros(0, dtype=f"M8[{unit}]"), mask=[]),
                           rootdir=str(tmp_path / "t"), mode="w", chunklen=100)
    c.attrs["timezone"] = "Europe/Paris"
    assert c.kind == NullableKind(np.dtype(f"M8[{unit}]"))
    c.append(arr)
    c.flush()
    c = bcolz_store.open(str(tmp_path / "t"))
    got = pa.RecordBatchReader.from_stream(c).read_all().column(0).combine_chunks()
    assert got.type == typ
    assert got.equals(arr)
    assert c[1] is np.ma.masked and c[2] == np.datetime64(86_400, unit)


def test_dates_and_durations():
    dates = pa.array([0, None, 19_000, -3], type=pa.date32())
    kind = NullableKind.of_arrow(pa, pa.date32())
    assert kind.dtype() == np.dtype("M8[D]")
    c = bcolz_store.carray(np.ma.MaskedArray(np.zeros(0, dtype="M8[D]"), mask=[]))
    c.append(dates)
    assert c[:].mask.tolist() == [False, True, False, False]
    assert to_pyarrow(pa, c.to_buffers(), pa.date32()).equals(dates)
    durations = pa.array([5, None, -7], type=pa.duration("ms"))
    d = bcolz_store.carray(np.ma.MaskedArray(np.zeros(0, dtype="m8[ms]"), mask=[]))
    d.append(durations)
    assert to_pyarrow(pa, d.to_buffers(), pa.duration("ms")).equals(durations)
    assert d[:].tolist() == [np.timedelta64(5, "ms"), None, np.timedelta64(-7, "ms")]


def test_other_dtypes_keep_the_numpy_path():
    assert bcolz_store.carray([b"a", None], dtype="S3", nullable=True).kind is None
    assert bcolz_store.carray([1, None], dtype=">i4", nullable=True).kind is None
    assert bcolz_store.carray(np.zeros(3, dtype="M8[h]"), nullable=True).kind is None
    assert NullableKind.of_arrow(pa, pa.string()) is None


def test_an_arrow_array_of_another_type_appends_as_values():
    c = bcolz_store.carray([1, None], dtype="int64", nullable=True)
    c.append(pa.array([2, None], type=pa.int32()))       # not the kind's type: converted
    assert c[:].tolist() == [1, None, 2, None]


@pytest.mark.parametrize("dtype", ["int64", "uint16", "float64", "bool", "int8"])
def test_python_objects_with_none(dtype):
    n = 10_000
    items = [None if i % 9 == 0 else (i % 2 == 0 if dtype == "bool" else i % 100)
             for i in range(n)]
    c = bcolz_store.carray(items, dtype=dtype, nullable=True)
    got = c[:]
    assert got.dtype == np.dtype(dtype)
    assert got.mask.tolist() == [v is None for v in items]
    assert [None if m else v for v, m in zip(got.data.tolist(), got.mask.tolist())] == \
        [None if v is None else type(got.data.tolist()[1])(v) for v in items]


def test_python_objects_that_do_not_fit_are_refused():
    items = [None] + [1] * 9_998 + [2 ** 40]
    with pytest.raises(ValueError):
        bcolz_store.carray(items, dtype="int32", nullable=True)
