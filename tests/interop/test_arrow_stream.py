"""The Arrow PyCapsule interface both ways: pyarrow, DuckDB and polars."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.interop import arrow_stream

pa = pytest.importorskip("pyarrow")

N = 3000
SYMS = ["ibm", "aapl", "msft"]


def _table(rootdir=None, n=N):
    rng = np.random.default_rng(5)
    codes = rng.integers(0, len(SYMS), n)
    sym = bcolz.carray(np.array(SYMS, dtype=object)[codes],
                       dtype=bcolz.category(SYMS, ordered=True))
    price = rng.random(n) * 100
    ts = (np.arange(n) * 1_000_000).astype("M8[us]")
    t = bcolz.ctable([np.arange(n), price, sym, ts], names=["i", "price", "sym", "ts"],
                     rootdir=rootdir, chunklen=512)
    t.cols["ts"].attrs["timezone"] = "Europe/Paris"
    return t, codes, price


def test_pyarrow_reads_the_table_and_the_stream():
    t, codes, price = _table()
    at = pa.table(t)
    assert at.num_rows == N and at.column_names == ["i", "price", "sym", "ts"]
    assert at.schema.field("sym").type == pa.dictionary(pa.int8(), pa.string(), ordered=True)
    assert at.schema.field("ts").type == pa.timestamp("us", tz="Europe/Paris")
    assert_array_equal(at.column("price").to_numpy(), price)
    assert at.column("sym").to_pylist() == [SYMS[c] for c in codes]
    reader = pa.RecordBatchReader.from_stream(t)
    assert reader.schema.equals(at.schema)
    assert sum(b.num_rows for b in reader) == N
    df = at.to_pandas()         # pandas reads a category with the same categories and order
    assert list(df["sym"].cat.categories) == SYMS and df["sym"].cat.ordered


def test_carray_streams_one_column_named_data():
    c = bcolz.carray(np.arange(10_000, dtype="i4"), chunklen=1000)
    at = pa.table(c)
    assert at.column_names == ["data"] and at.column("data").to_pylist() == list(range(10_000))
    assert pa.schema(c).field("data").type == pa.int32()
    assert pa.chunked_array(c).type == pa.struct([("data", pa.int32())])
    ca = pa.chunked_array(c, type=pa.int32())      # plain arrays when asked for a plain type
    assert ca.type == pa.int32() and ca.to_pylist() == list(range(10_000))
    cat = bcolz.carray(["b", None, "a"], dtype=bcolz.category(["b", "a"]))
    assert pa.table(cat).column("data").to_pylist() == ["b", None, "a"]
    back = bcolz.carray(pa.RecordBatchReader.from_stream(cat))      # a carray again
    assert back[:].tolist() == ["b", None, "a"] and back.dtype == cat.dtype


def test_duckdb_queries_a_carray():
    duckdb = pytest.importorskip("duckdb")
    c = bcolz.carray(np.arange(10, dtype="i8"), chunklen=4)
    assert duckdb.sql("select count(*), sum(data) from c").fetchall() == [(10, 45)]


def test_requested_schema_casts_or_raises():
    t, _, price = _table(n=100)
    wanted = pa.schema([("i", pa.float64()), ("price", pa.float32()),
                        ("sym", pa.string()), ("ts", pa.timestamp("us", tz="Europe/Paris"))])
    got = pa.RecordBatchReader._import_from_c_capsule(
        t.__arrow_c_stream__(wanted.__arrow_c_schema__())).read_all()
    assert got.schema.field("price").type == pa.float32()
    assert got.column("sym").to_pylist()[:1] == [t["sym"][0]]
    with pytest.raises(ValueError, match="requested schema"):
        t.__arrow_c_stream__(pa.schema([("i", pa.int64())]).__arrow_c_schema__())
    c = bcolz.carray(np.arange(5))
    got = pa.ChunkedArray._import_from_c_capsule(
        c.__arrow_c_stream__(pa.field("", pa.float64()).__arrow_c_schema__()))
    assert got.type == pa.float64() and got.to_pylist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="cannot be cast"):
        c.__arrow_c_stream__(pa.field("", pa.list_(pa.int8())).__arrow_c_schema__())


def test_stream_reads_one_block_at_a_time(monkeypatch):
    """The first batch decodes the first block only, never the whole table."""
    c = bcolz.carray(np.arange(200_000, dtype="i8"), chunklen=1000)
    t = bcolz.ctable([c], names=["x"])
    monkeypatch.setattr(arrow_stream, "STREAM_BLOCK_BYTES", 8 * 4000)   # 4 chunks a batch
    reads = []
    col = t.cols["x"]
    original = type(col).__getitem__
    monkeypatch.setattr(type(col), "__getitem__",
                        lambda self, key: reads.append(key) or original(self, key))
    reader = pa.RecordBatchReader.from_stream(t)
    first = reader.read_next_batch()
    assert first.num_rows == 4000 and len(reads) == 1 and reads[0] == slice(0, 4000)
    assert first.column(0).to_pylist()[-1] == 3999
    rest = sum(b.num_rows for b in reader)
    assert rest == 196_000 and len(reads) == 50


def test_duckdb_queries_the_ctable():
    duckdb = pytest.importorskip("duckdb")
    t, codes, price = _table()
    got = duckdb.sql("select sym, avg(price) from t group by sym order by sym").fetchall()
    want = sorted((SYMS[k], price[codes == k].mean()) for k in range(len(SYMS)))
    assert [s for s, _ in got] == [s for s, _ in want]
    assert np.allclose([v for _, v in got], [v for _, v in want])


def test_duckdb_relation_builds_a_ctable(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql("select range as i, (range * 2)::DOUBLE as f, 'k' || (range % 3)::VARCHAR "
                     "as s from range(70000)")
    b = bcolz.ctable(rel, rootdir=str(tmp_path / "d"))
    assert len(b) == 70000 and b.names == ["i", "f", "s"]
    assert_array_equal(b["f"][:], np.arange(70000) * 2.0)
    assert b["s"][:3].tolist() == ["k0", "k1", "k2"] and b.cols["s"].vlen is not None
    assert len(bcolz.open(str(tmp_path / "d"))) == 70000


def test_polars_both_ways():
    pl = pytest.importorskip("polars")
    t, codes, price = _table()
    df = pl.DataFrame(t)
    assert df.height == N and np.allclose(df["price"].to_numpy(), price)
    assert df["sym"].dtype in (pl.Categorical, pl.Enum)
    assert df["sym"].cast(pl.String).to_list() == [SYMS[c] for c in codes]
    assert df["ts"].dtype == pl.Datetime("us", "Europe/Paris")
    back = bcolz.ctable(df)
    assert back.names == t.names and back["sym"][:].tolist() == t["sym"][:].tolist()
    assert back.cols["ts"].attrs["timezone"] == "Europe/Paris"
    assert_array_equal(back["ts"][:], t["ts"][:])
    enum = pl.Series("e", ["y", "x", None], dtype=pl.Enum(["y", "x"]))
    e = bcolz.ctable(pl.DataFrame([enum]))
    assert e.cols["e"].category == bcolz.category(["y", "x"], ordered=True)
    s = bcolz.carray(pl.Series("v", [1.5, 2.5, 3.5]))
    assert_array_equal(s[:], [1.5, 2.5, 3.5])
    assert pl.DataFrame(bcolz.carray(np.arange(5)))["data"].to_list() == [0, 1, 2, 3, 4]


def test_pyarrow_sources_build_carrays_and_ctables(tmp_path):
    t, codes, price = _table(n=500)
    at = pa.table(t)
    for source in (at, pa.RecordBatchReader.from_stream(at), at.to_batches()[0]):
        b = bcolz.ctable(source)
        assert b.cols["sym"].category == bcolz.category(SYMS, ordered=True)
        assert_array_equal(b["price"][:], price)
    c = bcolz.carray(pa.chunked_array([[1, 2], [3]]), rootdir=str(tmp_path / "c"))
    assert_array_equal(bcolz.open(str(tmp_path / "c"))[:], [1, 2, 3])
    assert_array_equal(bcolz.carray(pa.array([4, 5]))[:], [4, 5])
    with pytest.raises(ValueError, match="dtype cannot be given"):
        bcolz.ctable(at, dtype={"i": "f8"})


def test_from_arrow_reads_a_stream():
    from bcolz_store.converters.arrow import from_arrow
    t, _, price = _table(n=300)
    b = from_arrow(pa.RecordBatchReader.from_stream(t))
    assert b.names == t.names and b.cols["ts"].attrs["timezone"] == "Europe/Paris"
    assert_array_equal(b["price"][:], price)


def test_old_files_with_plain_strings_and_categories_in_the_metadata(tmp_path):
    """A categorical column written as plain strings (the categories in the
    schema metadata only) still reads back as the same categorical."""
    from bcolz_store.converters.arrow import from_arrow
    t, _, _ = _table(n=50)
    at = pa.table(t)
    old = at.set_column(2, "sym", at.column("sym").cast(pa.large_string()))
    b = from_arrow(old)
    assert b.cols["sym"].category == bcolz.category(SYMS, ordered=True)
    assert b["sym"][:].tolist() == t["sym"][:].tolist()


def test_without_pyarrow_the_error_names_the_extra(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.split(".")[0] == "pyarrow":
            raise ImportError("no pyarrow")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    monkeypatch.delitem(__import__("sys").modules, "pyarrow")
    with pytest.raises(ImportError, match=r"bcolz_store\[arrow\]"):
        bcolz.carray(np.arange(3)).__arrow_c_stream__()


def test_nulls_of_every_kind_cross_the_stream_both_ways(tmp_path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    df = pl.DataFrame({"a": [1, None, 3], "s": ["x", None, "z"], "l": [[1, 2], None, []],
                       "f": [1.5, None, float("nan")], "b": [True, None, False]})
    t = bcolz.ctable(df, rootdir=str(tmp_path / "t"))
    assert t.cols["a"].nullable and t.cols["b"].nullable and t.cols["f"].nullable
    assert t["a"][:].tolist() == [1, None, 3] and t["l"][1] is None
    back = pl.DataFrame(bcolz.open(str(tmp_path / "t")))
    assert back.equals(df, null_equal=True) and back.schema == df.schema
    assert duckdb.sql("select count(a), sum(a), count(*) from t").fetchall() == [(2, 4, 3)]
    built = bcolz.ctable(duckdb.sql("select * from (values (1), (null), (7)) v(x)"))
    assert built["x"][:].tolist() == [1, None, 7]


def test_nulls_that_appear_after_the_first_batch_of_a_stream_are_named():
    pa = pytest.importorskip("pyarrow")
    schema = pa.schema([("x", pa.int64())])
    batches = [pa.record_batch([pa.array([1, 2])], schema=schema),
               pa.record_batch([pa.array([None, 4])], schema=schema)]
    reader = pa.RecordBatchReader.from_batches(schema, iter(batches))
    with pytest.raises(ValueError, match=r"column 'x': nulls first appear after the first"):
        bcolz.ctable(reader)
    # a Table's nulls are counted first: the column is nullable from the start
    t = bcolz.ctable(pa.Table.from_batches(batches))
    assert t["x"][:].tolist() == [1, 2, None, 4]


@pytest.mark.parametrize("nbatches", [0, 1, 3])
def test_a_stream_of_no_rows_gives_an_empty_table_of_its_schema(tmp_path, nbatches):
    from bcolz_store.converters.arrow import from_arrow
    schema = pa.schema([("a", pa.int32()), ("s", pa.string()), ("d", pa.decimal128(9, 2)),
                        ("l", pa.list_(pa.int64())),
                        ("r", pa.struct([("x", pa.float64())])),
                        ("c", pa.dictionary(pa.int8(), pa.string()))])
    empty = pa.record_batch([pa.array([], f.type) for f in schema], schema=schema)

    def stream(s=schema, batch=empty):
        return pa.RecordBatchReader.from_batches(s, [batch] * nbatches)

    for i, make in enumerate((bcolz.ctable, from_arrow)):
        t = make(stream())
        assert len(t) == 0 and t.names == schema.names
        back = pa.table(t).select(["a", "s", "d", "l", "r"] + ["c"] * (make is bcolz.ctable))
        assert back.num_rows == 0 and back.schema.remove_metadata().equals(
            pa.schema(list(schema)[:len(back.schema)])), i
    one = pa.schema([("a", pa.int32())])
    c = bcolz.carray(stream(one, pa.record_batch([pa.array([], pa.int32())], schema=one)))
    assert len(c) == 0 and c.dtype == np.dtype("i4")
    saved = bcolz.ctable(stream(), rootdir=str(tmp_path / "t"))
    assert len(bcolz.open(str(tmp_path / "t"))) == 0 and saved.names == schema.names


@pytest.mark.parametrize("nbatches", [0, 1])
def test_an_empty_stream_keeps_the_columns_recorded_nullable(nbatches):
    nums = bcolz.carray(np.ma.masked_array([1, 2], mask=[0, 1]), dtype="i4")
    dates = bcolz.carray(np.ma.masked_array(np.arange(2).astype("M8[s]"), mask=[1, 0]))
    source = pa.table(bcolz.ctable([nums, dates], names=["n", "t"]))
    batches = [source.to_batches()[0].slice(0, 0)] * nbatches
    t = bcolz.ctable(pa.RecordBatchReader.from_batches(source.schema, batches))
    assert len(t) == 0 and t["n"].nullable and t["t"].nullable
    t.append([(None, None), (3, np.datetime64(5, "s"))])
    assert t["n"][:].tolist() == [None, 3] and t["t"].isnull().tolist() == [True, False]
    one = source.select(["n"])
    c = bcolz.carray(pa.RecordBatchReader.from_batches(
        one.schema, [one.to_batches()[0].slice(0, 0)] * nbatches))
    assert c.nullable and c.dtype == np.dtype("i4")


def test_fixed_width_text_keeps_its_recorded_dtype_through_the_stream():
    t = bcolz.ctable([np.array([b"a", b"bb"]), np.array(["x", "yz"]),
                      np.ma.masked_array([b"c", b"dd"], mask=[0, 1]),
                      np.ma.masked_array(["u", "vw"], mask=[1, 0])], names=["s", "u", "ns", "nu"])
    back = bcolz.ctable(pa.table(t))
    for name in t.names:
        assert back[name].dtype == t[name].dtype and back[name].nullable == t[name].nullable
        assert back[name][:].tolist() == t[name][:].tolist()
    assert bcolz.carray(bcolz.carray(np.array(["ab", "c"]))).dtype == np.dtype("U2")
    c = bcolz.carray(pa.table(bcolz.carray(np.ma.masked_array(["ab", "c"], mask=[0, 1]))))
    assert c.dtype == np.dtype("U2") and c[:].tolist() == ["ab", None]
    plain = bcolz.ctable(pa.table({"s": ["abc", None]}))        # no record: vlen, as before
    assert plain["s"].vlen is not None and plain["s"][:].tolist() == ["abc", None]


def test_binary_views_with_nulls_are_vlen_bytes():
    # polars exports binary columns as binary_view
    c = bcolz.carray(pa.array([b"a", None, b""], pa.binary_view()))
    assert c.vlen is not None and c.vlen.kind == "bytes" and c[:].tolist() == [b"a", None, b""]
    t = bcolz.ctable(pa.table({"b": pa.array([b"\xff", None], pa.binary_view())}))
    assert t["b"][:].tolist() == [b"\xff", None]
    pl = pytest.importorskip("polars")
    assert bcolz.ctable(pl.DataFrame({"b": [b"x", None]}))["b"][:].tolist() == [b"x", None]


def test_struct_fields_of_string_and_binary_views():
    typ = pa.struct([("s", pa.string_view()), ("b", pa.binary_view())])
    arr = pa.array([{"s": "a", "b": b"x"}, None, {"s": None, "b": b""}], typ)
    c = bcolz.carray(arr)
    assert c[:].tolist() == [{"s": "a", "b": b"x"}, None, {"s": None, "b": b""}]
    pl = pytest.importorskip("polars")
    series = pl.Series("p", [{"x": 1, "y": "a"}, None, {"x": 2, "y": None}])
    assert bcolz.carray(series)[:].tolist() == series.to_list()


def test_decimal_and_struct_columns_keep_their_nullability_through_arrow(tmp_path):
    from decimal import Decimal

    from bcolz_store.converters.arrow import from_arrow, from_parquet, to_parquet
    point = bcolz.struct([("x", "int8")])
    t = bcolz.ctable([bcolz.carray(["1.5"], dtype=bcolz.decimal(5, 1)),
                      bcolz.carray(["2.5"], dtype=bcolz.decimal(5, 1), nullable=True),
                      bcolz.carray([{"x": 1}], dtype=point),
                      bcolz.carray([{"x": 2}], dtype=bcolz.struct([("x", "int8")],
                                                                  nullable=True))],
                     names=["d", "nd", "s", "ns"])
    to_parquet(t, str(tmp_path / "t.parquet"))
    for back in (bcolz.ctable(pa.table(t)), from_arrow(pa.table(t)),
                 from_parquet(str(tmp_path / "t.parquet"))):
        assert [back[n].nullable for n in back.names] == [False, True, False, True]
        back.resize(2)          # grows with the defaults, or with nulls where nullable
        assert back["d"][:].tolist() == [Decimal("1.5"), Decimal("0.0")]
        assert back["nd"][1] is None and back["ns"][1] is None
        assert back["s"][:].tolist() == [{"x": 1}, {"x": 0}]


def test_errors_name_the_column_and_what_it_cannot_hold():
    objects = bcolz.ctable([np.arange(2), np.array([object(), 1], dtype=object)],
                           names=["i", "obj"])
    with pytest.raises(TypeError, match="column 'obj': object values have no Arrow type"):
        pa.table(objects)
    rows = pa.table({"f": pa.array([[1, 2], None], pa.list_(pa.int32(), 2))})
    with pytest.raises(ValueError, match=r"column 'f' has 1 nulls.*rows of shape \(2,\)") as err:
        bcolz.ctable(rows)
    assert "after the first batch" not in str(err.value)


def test_categorical_struct_fields_take_their_categories_from_arrow(tmp_path):
    from bcolz_store.converters.arrow import from_arrow, from_parquet, to_parquet
    inner = bcolz.struct([("c", bcolz.category())], nullable=True)
    kind = bcolz.struct([("c", bcolz.category(ordered=True)), ("in", inner)], nullable=True)
    items = [{"c": "u", "in": {"c": "x"}}, None, {"c": None, "in": None},
             {"c": "v", "in": {"c": None}}]
    t = bcolz.ctable([bcolz.carray(items, dtype=kind)], names=["s"])
    to_parquet(t, str(tmp_path / "t.parquet"))
    for back in (bcolz.ctable(pa.table(t)), from_arrow(pa.table(t)),
                 from_parquet(str(tmp_path / "t.parquet"))):
        assert back["s"][:].tolist() == items
        assert back["s"].column_type["c"].categories == ["u", "v"]
        assert back["s"].column_type["c"].ordered


def test_arrow_values_append_and_assign_with_their_nulls():
    ints = bcolz.carray([1, None], dtype="i4")
    ints.append(pa.chunked_array([pa.array([3, None], pa.int32())]))
    assert ints[:].tolist() == [1, None, 3, None]
    ints[0:2] = pa.array([None, 7], pa.int32())
    assert ints[:].tolist() == [None, 7, 3, None]
    data = bcolz.carray(np.ma.masked_array([b"a"], mask=[False]))
    data.append(pa.array([None, b"b"], pa.binary()))
    assert data[:].tolist() == [b"a", None, b"b"]
    text = bcolz.carray(["x", None], dtype=bcolz.vlen(str))
    text.append(pa.array(["y", None]))
    assert text[:].tolist() == ["x", None, "y", None]
    cats = bcolz.carray(["u", "v"], dtype=bcolz.category())
    cats.append(pa.array(["v", None]).dictionary_encode())
    assert cats[:].tolist() == ["u", "v", "v", None]
    plain = bcolz.carray(np.arange(2, dtype="i8"))
    with pytest.raises(ValueError, match="not nullable"):
        plain.append(pa.array([1, None]))
    assert plain[:].tolist() == [0, 1]


def test_a_ctable_appends_an_arrow_table_or_a_polars_frame():
    t = bcolz.ctable([np.ma.masked_array([1], mask=[False]),
                      bcolz.carray(["a"], dtype=bcolz.vlen(str)),
                      bcolz.carray([[1]], dtype=bcolz.list_("int64"))], names=["n", "s", "l"])
    t.append(pa.table({"s": ["b", None], "n": pa.array([None, 3]), "l": [None, [2, 3]]}))
    assert t["n"][:].tolist() == [1, None, 3] and t["s"][:].tolist() == ["a", "b", None]
    assert [None if v is None else v.tolist() for v in t["l"][:]] == [[1], None, [2, 3]]
    pl = pytest.importorskip("polars")
    t.append(pl.DataFrame({"n": pl.Series([None], dtype=pl.Int64), "s": ["c"], "l": [[4]]}))
    assert t["n"][:].tolist() == [1, None, 3, None] and t["s"][3] == "c"


def test_pandas_arrow_backed_values_keep_their_nulls():
    pd = pytest.importorskip("pandas")
    raw = pd.Series([b"x", None], dtype=pd.ArrowDtype(pa.binary()))
    assert bcolz.carray(raw)[:].tolist() == [b"x", None]
    fixed = bcolz.carray(raw, dtype="S3")
    assert fixed.nullable and fixed[:].tolist() == [b"x", None]
    ints = bcolz.carray(pd.Series([5, None], dtype="int32[pyarrow]"))
    assert ints.dtype == np.dtype("i4") and ints[:].tolist() == [5, None]
    ints.append(pd.Series([None, 6], dtype="int32[pyarrow]"))
    ints[0] = pd.array([None], dtype="int32[pyarrow]")
    assert ints[:].tolist() == [None, None, None, 6]
    data = bcolz.carray(np.ma.masked_array([b"a"], mask=[False]))
    data.append(raw)
    assert data[:].tolist() == [b"a", b"x", None]


def test_addcol_takes_arrow_and_pandas_columns(tmp_path):
    pd = pytest.importorskip("pandas")
    t = bcolz.ctable([np.arange(3)], names=["i"], rootdir=str(tmp_path / "t"))
    t.addcol(pa.array([1, None, 3]), name="a")
    t.addcol(pd.Series([1, None, 3], dtype="Int64"), name="p")
    t.addcol(pa.chunked_array([pa.array([["x"], None]), pa.array([[]], pa.list_(pa.string()))]),
             name="l")
    t.flush()
    back = bcolz.open(str(tmp_path / "t"))
    assert back["a"][:].tolist() == [1, None, 3] and back["p"][:].tolist() == [1, None, 3]
    assert [None if v is None else v.tolist() for v in back["l"][:]] == [["x"], None, []]
    with pytest.raises(ValueError, match="has length 1, the ctable 3"):
        t.addcol(pa.array([1]), name="short")


def test_a_struct_array_is_a_struct_carray():
    one = pa.StructArray.from_arrays([pa.array([1, 2])], names=["x"])
    two = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array(["a", None])],
                                     names=["x", "y"])
    for source, items in [(one, [{"x": 1}, {"x": 2}]),
                          (pa.chunked_array([one, one]), [{"x": 1}, {"x": 2}] * 2),
                          (two, [{"x": 1, "y": "a"}, {"x": 2, "y": None}])]:
        c = bcolz.carray(source)
        assert isinstance(c.column_type, bcolz.struct) and c[:].tolist() == items
    assert bcolz.carray(one).column_type.names == ["x"]
    assert bcolz.ctable(two).names == ["x", "y"]           # a table: a batch of its fields
    pl = pytest.importorskip("polars")
    assert bcolz.carray(pl.Series("s", [{"x": 1}, None]))[:].tolist() == [{"x": 1}, None]
