"""The decimal column kind: Arrow's decimal128/decimal256 buffers as the stored items."""

from __future__ import annotations

import decimal as dec

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds.arrow import to_pyarrow
from bcolz_store.kinds.decimal.kind import DecimalKind
from bcolz_store.testing.kinds import KindTests

pa = pytest.importorskip("pyarrow")

N = 1234


def _decimals(typ, n=N):
    scale = typ.scale
    items = [None if i % 7 == 3 else dec.Decimal(f"{i * 12345 - 500_000}E{-scale}")
             for i in range(n)]
    items[10] = dec.Decimal(f"{10 ** typ.precision - 1}E{-scale}")       # the widest
    items[11] = items[10].copy_negate()
    return pa.array(items, type=typ)


class TestDecimal128Kind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return DecimalKind

    @pytest.fixture
    def arrow_array(self):
        return _decimals(pa.decimal128(12, 2))


class TestDecimal256Kind(TestDecimal128Kind):
    @pytest.fixture
    def arrow_array(self):
        return _decimals(pa.decimal256(60, 10))


class TestDecimal128WideKind(TestDecimal128Kind):
    @pytest.fixture
    def arrow_array(self):
        return _decimals(pa.decimal128(38, 0))


def test_arrow_rows_across_chunks_after_reopening(tmp_path):
    arr = _decimals(pa.decimal128(20, 4), 1050)
    c = bcolz_store.carray(arr, chunklen=100, rootdir=str(tmp_path / "d"), mode="w")
    c.append(arr.slice(0, 30))
    c.flush()
    c = bcolz_store.open(str(tmp_path / "d"))
    want = pa.concat_arrays([arr, arr.slice(0, 30)])
    for start, stop in ((0, 1080), (95, 205), (1000, 1080), (7, 7)):
        got = to_pyarrow(pa, c.to_buffers(start, stop), pa.decimal128(20, 4))
        assert got.equals(want.slice(start, stop - start))
    assert c[:].tolist() == want.to_pylist()


def test_items_over_the_precision_are_refused():
    c = bcolz_store.carray([dec.Decimal("1.00")], dtype=bcolz_store.decimal(5, 2,
                                                                            nullable=True))
    wide = pa.array([dec.Decimal("1.00"), dec.Decimal("-1000.00")], type=pa.decimal128(7, 2))
    raw = pa.Array.from_buffers(pa.decimal128(5, 2), 2, wide.buffers())  # (unchecked by Arrow)
    with pytest.raises(ValueError, match="item 1 does not fit decimal"):
        c.append(raw)
    assert len(c) == 1                  # nothing written


def test_nulls_are_refused_by_a_carray_without_missing_items():
    c = bcolz_store.carray([dec.Decimal("1.5")], dtype=bcolz_store.decimal(4, 1,
                                                                           nullable=False))
    with pytest.raises(ValueError, match="item 1 is None"):
        c.append(pa.array([dec.Decimal("2.5"), None], type=pa.decimal128(4, 1)))
    c.append(pa.array([dec.Decimal("2.5")], type=pa.decimal128(4, 1)))
    assert c[:].tolist() == [dec.Decimal("1.5"), dec.Decimal("2.5")]


def test_another_decimal_type_appends_as_items():
    c = bcolz_store.carray([dec.Decimal("1.5")], dtype=bcolz_store.decimal(4, 1))
    c.append(pa.array([dec.Decimal("2.50")], type=pa.decimal128(6, 2)))
    assert c[:].tolist() == [dec.Decimal("1.5"), dec.Decimal("2.5")]


def test_null_slots_are_zeros():
    arr = pa.array([dec.Decimal("1.5"), dec.Decimal("7.0")], type=pa.decimal128(4, 1))
    masked = pa.Array.from_buffers(arr.type, 2, [pa.array([True, False]).buffers()[1],
                                                 arr.buffers()[1]], 1)
    c = bcolz_store.carray(masked)
    assert c[:].tolist() == [dec.Decimal("1.5"), None]
    assert bytes(np.asarray(c.to_buffers().values[1]).tobytes()) == bytes(16)


@pytest.mark.parametrize("nulls", [True, False])
def test_python_items(nulls):
    items = [dec.Decimal(i).scaleb(-2) if i % 5 or not nulls else None for i in range(9000)]
    items[1] = 17
    c = bcolz_store.carray(items, dtype=bcolz_store.decimal(12, 2))
    assert c[:].tolist() == [None if v is None else dec.Decimal(v).quantize(dec.Decimal("0.01"))
                             for v in items]
    assert [str(v) for v in c[:3]] == [str(v) for v in
                                       (None if nulls else dec.Decimal("0.00"),
                                        dec.Decimal("17.00"), dec.Decimal("0.02"))]


@pytest.mark.parametrize("bad, error", [(1.5, TypeError), ("1.005", ValueError),
                                        (True, TypeError), (dec.Decimal("1.005"), ValueError),
                                        (dec.Decimal("1E+12"), ValueError)])
def test_python_items_that_do_not_fit_are_refused(bad, error):
    items = [dec.Decimal("1.25")] * 9000 + [bad]
    with pytest.raises(error):
        bcolz_store.carray(items, dtype=bcolz_store.decimal(12, 2))
