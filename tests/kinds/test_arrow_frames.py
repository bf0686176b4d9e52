"""``ctable.todataframe(dtype_backend='pyarrow')``: every column an ``ArrowDtype``
column made from the columns' Arrow buffers, equal to what pyarrow makes of
the table's own Arrow stream."""

from __future__ import annotations

import decimal

import numpy as np
import pytest

import bcolz_store
from bcolz_store.testing.kinds import arrow_equal

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")


def _table(tmp_path, n=1200):
    source = pa.table({
        "s": pa.array(["a", None, "bé"] * (n // 3)),
        "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-2.00")] * (n // 3),
                      pa.decimal128(12, 2)),
        "l": pa.array([[1, 2], None, []] * (n // 3), pa.list_(pa.int32())),
        "c": pa.array(["x", "y", None] * (n // 3)).dictionary_encode(),
        "n": pa.array([1, None, 3] * (n // 3)),
        "f": pa.array(np.arange(n, dtype=np.float64)),
    })
    bcolz_store.ctable(source, rootdir=str(tmp_path / "t"), mode="w", chunklen=100).flush()
    return bcolz_store.open(str(tmp_path / "t"), mode="r"), source


def test_every_column_is_an_arrow_column_equal_to_the_source(tmp_path):
    t, source = _table(tmp_path)
    df = t.todataframe(dtype_backend="pyarrow")
    assert list(df.columns) == source.column_names
    assert all(isinstance(dtype, pd.ArrowDtype) for dtype in df.dtypes)
    back = pa.Table.from_pandas(df, preserve_index=False)
    for name in source.column_names:
        assert arrow_equal(back.column(name), source.column(name)), name


def test_a_condition_and_columns_select_rows_and_columns(tmp_path):
    t, source = _table(tmp_path)
    df = t.todataframe(dtype_backend="pyarrow", where="f >= 1190", columns=["s", "f"])
    assert list(df.columns) == ["s", "f"]
    assert df.index.tolist() == list(range(1190, 1200))
    assert [None if v is pd.NA else v for v in df["s"].tolist()] == \
        source.column("s").to_pylist()[1190:]
    assert df["f"].tolist() == [float(i) for i in range(1190, 1200)]


def test_the_numpy_backend_is_still_the_default(tmp_path):
    t, _ = _table(tmp_path)
    df = t.todataframe()
    assert not isinstance(df["f"].dtype, pd.ArrowDtype)


@pytest.mark.parametrize("kwargs, message", [
    ({"dtype_backend": "numpy_nullable"}, "dtype_backend"),
    ({"dtype_backend": "pyarrow", "orient": "index"}, "orient"),
])
def test_what_it_cannot_do_is_refused(tmp_path, kwargs, message):
    t, _ = _table(tmp_path, n=30)
    with pytest.raises(ValueError, match=message):
        t.todataframe(**kwargs)


def test_an_unknown_column_is_a_key_error(tmp_path):
    t, _ = _table(tmp_path, n=30)
    with pytest.raises(KeyError):
        t.todataframe(dtype_backend="pyarrow", columns=["nope"])
