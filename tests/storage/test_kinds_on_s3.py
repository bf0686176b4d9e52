"""Every column kind in one ctable on S3 (moto on 127.0.0.1, through s3fs):
two writers append after each other, a fresh open reads every row through
Arrow, conditions on the kinds select the rows pyarrow selects, and
``verify`` finds nothing wrong."""

from __future__ import annotations

import decimal
import uuid

import numpy as np
import pytest

import bcolz_store

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")

N = 600


def _source() -> "pa.Table":
    columns = {
        "s": pa.array(["a", None, "bé", "zz"] * (N // 4)),
        "c": pa.array(["x", "y", None] * (N // 3)).dictionary_encode(),
        "n": pa.array([1, None, 3, -7] * (N // 4)),
        "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-2.00")] * (N // 3),
                      pa.decimal128(12, 2)),
        "l": pa.array([[1, 2], None, []] * (N // 3), pa.list_(pa.int32())),
        "st": pa.array([{"a": 1, "b": "q"}, None, {"a": None, "b": "r"}] * (N // 3),
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "m": pa.array([[("k", 1)], None, []] * (N // 3), pa.map_(pa.string(), pa.int64())),
        "fb": pa.array([b"abcd", None, b"\0\0\0\1"] * (N // 3), pa.binary(4)),
        "f": pa.array(np.arange(N, dtype=np.float64)),
    }
    if hasattr(pa, "uuid"):                     # pyarrow >= 18
        columns["u"] = pa.array([uuid.UUID(int=i) if i % 7 else None for i in range(N)],
                                pa.uuid())
    return pa.table(columns)


def _equal(got: "pa.Table", want: "pa.Table") -> bool:
    from bcolz_store.testing.kinds import arrow_equal
    return got.column_names == want.column_names and all(
        arrow_equal(got.column(name), want.column(name)) for name in want.column_names)


@pytest.fixture
def table_url(s3_bucket):
    url, options = s3_bucket
    source = _source()
    path = f"{url}/kinds.bcolz"
    bcolz_store.ctable(source.slice(0, 400), rootdir=path, mode="w", chunklen=100,
                       storage_options=options).flush()
    return path, options, source


def test_two_writers_append_every_kind_and_a_fresh_open_reads_it(table_url):
    path, options, source = table_url
    first = bcolz_store.open(path, mode="a", storage_options=options)
    second = bcolz_store.open(path, mode="a", storage_options=options)
    first.append(source.slice(400, 50))
    first.flush()
    second.append(source.slice(450))           # rebased: after the first writer's rows
    second.flush()
    back = bcolz_store.open(path, mode="r", storage_options=options)
    assert len(back) == N
    assert _equal(pa.table(back).replace_schema_metadata(None), source)
    assert back["fb"][:3].tolist() == [b"abcd", None, b"\0\0\0\1"]
    assert bcolz_store.verify(path, storage_options=options).ok


@pytest.mark.parametrize("expression, mask", [
    ("n > 0", lambda t: pc.greater(t["n"], 0)),
    ("c == 'x'", lambda t: pc.equal(t["c"].cast(pa.string()), "x")),
    ("s == 'bé'", lambda t: pc.equal(t["s"], "bé")),
    ("d < 0", lambda t: pc.less(t["d"], pa.scalar(decimal.Decimal("0.00"),
                                                    pa.decimal128(12, 2)))),
    ("(n < 0) & (f >= 300)", lambda t: pc.and_(pc.less(t["n"], 0), pc.greater_equal(t["f"], 300))),
])
def test_conditions_on_the_kinds_select_what_pyarrow_selects(table_url, expression, mask):
    path, options, source = table_url
    t = bcolz_store.open(path, mode="a", storage_options=options)
    t.append(source.slice(400))
    t.flush()
    back = bcolz_store.open(path, mode="r", storage_options=options)
    want = np.flatnonzero(pc.fill_null(mask(source), False).to_numpy(zero_copy_only=False))
    assert want.size                            # (the condition selects something)
    got = back.fetchwhere(expression, outcols=["f"], out_flavor="numpy")["f"]
    assert got.astype(np.int64).tolist() == want.tolist()
