"""List and map columns: types, the item encoding, carrays, ctables, Arrow,
Parquet and pandas round trips, the real bcolz refusing them, damaged items."""

import base64
import decimal
import json
import os

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import FormatError, QueryError
from bcolz_store.kinds.list.meta_items import decode_item, decode_items, encode_item, encode_items
from bcolz_store.kinds.list.meta import (ListType, MapType, list_dtype_text, load_list,
                                          type_from_json, type_to_json)


def _same(got, want):
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, np.ndarray):
        if isinstance(want, np.ma.MaskedArray) != isinstance(got, np.ma.MaskedArray):
            return False
        if isinstance(want, np.ma.MaskedArray):
            return (np.ma.getmaskarray(got) == np.ma.getmaskarray(want)).all() and \
                got.data.tobytes() == want.data.tobytes()
        if want.dtype == object:
            return len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want))
        return got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want))
    return type(got) is type(want) and got == want


def _objects(*items):
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


# ------------------------------------------------------------------ types

def test_types_and_their_json():
    t = bcolz.list_(bcolz.struct_items([("x", "int16"), ("y", bcolz.list_("str"), False)]),
                    item_nullable=False, large=True, field="element")
    assert type_from_json(type_to_json(t)) == t
    m = bcolz.map_("str", bcolz.map_("int8", "decimal128(10,2)"), keys_sorted=True)
    assert type_from_json(json.loads(json.dumps(type_to_json(m)))) == m
    assert bcolz.list_(">f8").item == np.dtype("<f8")
    assert bcolz.list_(str).item == "str" and bcolz.list_(bytes).item == "bytes"
    for bad in ("O", [("a", "i4")], ("i4", (2,))):
        with pytest.raises(TypeError):
            bcolz.list_(bad)
    with pytest.raises(ValueError):
        bcolz.struct_items([])

    class OtherStruct:           # a struct type of another module: anything with ``fields``
        fields = [("a", "int32"), ("b", "str")]
    assert bcolz.list_(OtherStruct()).item == bcolz.struct_items([("a", "int32"), ("b", "str")])


def test_type_json_is_checked():
    good = {"version": 1, "level": 6, "type": type_to_json(bcolz.list_("int32"))}
    assert load_list(good) == (bcolz.list_("int32"), 6)
    bad = [None, {**good, "version": 2}, {**good, "level": 0},
           {**good, "type": {"type": "fixed", "dtype": ">i4"}},
           {**good, "type": {"type": "struct", "fields": []}},
           {**good, "type": {"type": "nope"}},
           {**good, "type": {**type_to_json(bcolz.list_("int32")), "size": "x"}}]
    deep = type_to_json(bcolz.list_("int8"))
    for _ in range(40):
        deep = {**type_to_json(bcolz.list_("int8")), "item": deep}
    bad.append({**good, "type": deep})
    for obj in bad:
        with pytest.raises(FormatError):
            load_list(obj)


# ------------------------------------------------------------------ the encoding

def test_fixed_items_are_exact():
    t = bcolz.list_("float64")
    value = np.array([-0.0, np.nan, np.inf, 1.5])
    value[1:2].view(np.uint64)[0] = 0x7FF8000000000123      # a NaN payload
    back = decode_item(encode_item(value, t), t)
    assert back.tobytes() == value.tobytes()
    nat = np.array(["NaT", "2020-01-01T00:00:00.000000001"], dtype="M8[ns]")
    tm = bcolz.list_("M8[ns]")
    assert decode_item(encode_item(nat, tm), tm).tobytes() == nat.tobytes()
    raw = encode_item([1, 2], bcolz.list_("<i4"))
    assert raw == b"\x02\x00\x00\x00\x00" + np.array([1, 2], "<i4").tobytes()


def test_null_elements_and_nested_values():
    t = bcolz.list_("int64")
    got = decode_item(encode_item([1, None, 3], t), t)
    assert isinstance(got, np.ma.MaskedArray) and got.mask.tolist() == [False, True, False]
    with pytest.raises(ValueError, match="may not be missing"):
        encode_item([1, None], bcolz.list_("int64", item_nullable=False))
    nested = bcolz.list_(bcolz.list_("str"))
    value = [["a", None], None, []]
    got = decode_item(encode_item(value, nested), nested)
    assert _same(got, _objects(_objects("a", None), None, _objects()))
    m = bcolz.map_("str", bcolz.list_("int8"))
    got = decode_item(encode_item({"k": [1], "z": None}, m), m)
    assert got[0][0] == "k" and got[0][1].tolist() == [1] and got[1] == ("z", None)
    d = bcolz.list_("decimal128(5,2)")
    assert decode_item(encode_item([decimal.Decimal("1.5"), None], d), d).tolist() == \
        [decimal.Decimal("1.50"), None]
    with pytest.raises(ValueError):
        encode_item([decimal.Decimal("1.255")], d)
    with pytest.raises(ValueError):
        encode_item([1, 2], bcolz.list_("int8", size=3))


def test_many_short_lists_are_fast():
    import time
    t = bcolz.list_("int64")
    items = [np.arange(i % 5) for i in range(100_000)]
    start = time.perf_counter()
    back = decode_items(encode_items(items, t), t)
    assert time.perf_counter() - start < 10
    assert all(a.tobytes() == b.tobytes() for a, b in zip(items[:50], back[:50]))


@pytest.mark.parametrize("typ, value", [
    (bcolz.list_("int32"), [1, 2, 3]),
    (bcolz.list_("str"), ["ab", None, "c"]),
    (bcolz.list_(bcolz.list_("int16")), [[1], None, [2, 3]]),
    (bcolz.list_(bcolz.struct_items([("a", "int8"), ("b", "bytes")])),
     [{"a": 1, "b": b"x"}, None]),
    (bcolz.map_("str", "float32"), [("k", 1.0)]),
    (bcolz.list_("decimal128(5,2)"), [decimal.Decimal("1.25")]),
])
def test_damaged_items_raise_format_errors(typ, value):
    """Every truncation and every single-byte change of an item gives a value
    or a FormatError, never a crash or another error."""
    raw = encode_item(value, typ)
    for cut in range(len(raw)):
        with pytest.raises(FormatError):
            decode_item(raw[:cut], typ)
    with pytest.raises(FormatError):
        decode_item(raw + b"\x00", typ)
    rng = np.random.default_rng(0)
    for pos in range(len(raw)):
        for byte in (0, 0xFF, int(rng.integers(0, 256))):
            damaged = bytearray(raw)
            damaged[pos] = byte
            try:
                decode_item(bytes(damaged), typ)
            except FormatError:
                pass


def test_huge_counts_are_refused_before_allocating():
    t = bcolz.list_("str")
    raw = b"\xff\xff\xff\xff\x00"
    with pytest.raises(FormatError):
        decode_item(raw, t)
    s = bcolz.list_(bcolz.struct_items([("a", "int8")]))
    with pytest.raises(FormatError):
        decode_item(raw, s)
    calls = []
    decode_item(encode_item(["a"] * 3, t), t, check=lambda n, what: calls.append(n))
    assert calls


# ------------------------------------------------------------------ carrays

def test_carray_reads_and_writes(tmp_path):
    root = str(tmp_path / "c")
    c = bcolz.carray([[1, 2, 3], [], None], dtype=bcolz.list_("int32"), rootdir=root, mode="w",
                     chunklen=2)
    c.append([[4], [5, None]])
    c.append([6, 7])                    # one item
    c[0] = [9, 9, 9, 9]                 # another length
    c[1:3] = [[1], None]
    c.flush()
    c = bcolz.open(root, mode="a")
    assert c.listtype == bcolz.list_("int32") and c.dtype == np.dtype(object)
    want = _objects(np.array([9] * 4, "i4"), np.array([1], "i4"), None, np.array([4], "i4"),
                    np.ma.MaskedArray(np.array([5, 0], "i4"), mask=[False, True]),
                    np.array([6, 7], "i4"))
    assert _same(c[:], want)
    present = np.array([v is not None for v in want])
    assert _same(c[[5, 0]], want[[5, 0]]) and _same(c[present], want[present])
    assert _same(c[3], want[3]) and c[2] is None
    assert all(_same(a, b) for a, b in zip(c, want))
    blocks = [x for block in bcolz.iterblocks(c, blen=4) for x in block]
    assert all(_same(a, b) for a, b in zip(blocks, want)) and len(blocks) == len(want)
    c.resize(8)
    assert c[6] is None and c[7] is None
    c.trim(3)
    assert len(c) == 5
    copy = c.copy(rootdir=str(tmp_path / "copy"), mode="w")
    assert _same(bcolz.open(str(tmp_path / "copy"))[:], c[:])
    with pytest.raises(ValueError):
        c.append([["not a number"]])
    assert len(c) == 5
    storage = json.loads(open(f"{root}/meta/storage").read())
    assert storage["dtype"] == "<i8" and storage["list"]["version"] == 2
    assert storage["list"]["children"] == ["items"] and storage["list"]["validity"] == "valid"
    g = bcolz.carray([], dtype=bcolz.list_("str", nullable=False), dflt=["x"])
    g.resize(2)
    assert _same(g[:], _objects(_objects("x"), _objects("x")))
    with pytest.raises(ValueError):
        g.append([None])


def test_ctable_columns(tmp_path):
    root = str(tmp_path / "t")
    tags = bcolz.carray([["a"], []], dtype=bcolz.list_("str"))
    t = bcolz.ctable([np.arange(2), tags], names=["id", "tags"], rootdir=root, mode="w")
    t.append((2, ["b", None]))
    t.append([[3, 4], [None, ["c"]]])
    t.flush()
    t = bcolz.open(root)
    assert t["tags"][1].tolist() == [] and t["tags"][3] is None
    assert t[2]["tags"].tolist() == ["b", None]
    assert [r.id for r in t.where("id > 2")] == [3, 4]
    with pytest.raises(QueryError, match="not comparable"):
        t.where("tags == 1")
    assert [r.id for r in t.where("isnull(tags)")] == [3]
    assert [r.id for r in t.where("notnull(tags) & (id > 0)")] == [1, 2, 4]
    real = pytest.importorskip("bcolz")
    ends = real.open(root + "/tags")         # layout 2: bcolz reads the end offsets
    assert ends[:].tolist() == [1, 1, 3, 3, 4]
    with pytest.raises(TypeError, match="vlen-str"):      # the str elements: a vlen carray
        real.open(root + "/tags/items")


def test_real_bcolz_reads_the_offsets_and_items_of_a_layout_2_list(tmp_path):
    real = pytest.importorskip("bcolz")
    root = str(tmp_path / "c")
    rows = [[1, 2, 3], [], [4], [5, 6]] * 50
    c = bcolz.carray(rows, dtype=bcolz.list_("int32", item_nullable=False, nullable=False),
                     rootdir=root, mode="w", chunklen=16)
    c.append([[7]])
    c.flush()
    ends = real.open(root)[:]
    assert ends.dtype == np.dtype("int64") and len(ends) == 201
    items = real.open(root + "/items", mode="r")[:]
    assert items.dtype == np.dtype("int32")
    want = np.concatenate([np.asarray(r, "i4") for r in rows + [[7]]])
    assert np.array_equal(items, want)
    assert ends.tolist() == np.cumsum([len(r) for r in rows + [[7]]]).tolist()
    assert not os.path.exists(root + "/valid")
    back = bcolz.open(root)
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(back[:], rows + [[7]]))


@pytest.fixture
def layout_1(monkeypatch):
    """New list carrays written in layout version 1 (one vlen carray of encoded items)."""
    from bcolz_store.kinds.list.files import LIST_LAYOUT
    monkeypatch.setitem(LIST_LAYOUT, "new", 1)


def test_layout_1_switch_writes_version_1(tmp_path, layout_1):
    root = str(tmp_path / "c")
    c = bcolz.carray([[1, 2], None, []], dtype=bcolz.list_("int32"), rootdir=root, mode="w")
    c.append([[3]])
    c.flush()
    storage = json.loads(open(f"{root}/meta/storage").read())
    assert storage["dtype"].startswith("list: column 'c'") and storage["list"]["version"] == 1
    assert not os.path.exists(f"{root}/items")
    c = bcolz.open(root)
    assert _same(c[:], _objects(np.array([1, 2], "i4"), None, np.array([], "i4"),
                                np.array([3], "i4")))
    c[1] = [5, 6]
    assert c[1].tolist() == [5, 6] and len(c) == 4


def test_real_bcolz_refuses_a_list_carray_naming_it(tmp_path, layout_1):
    real = pytest.importorskip("bcolz")
    root = tmp_path / "t"
    bcolz.ctable([np.arange(2), bcolz.carray([[1], None], dtype=bcolz.list_("int8"))],
                 names=["id", "scores"], rootdir=str(root), mode="w")
    with pytest.raises(TypeError) as info:
        real.open(str(root))
    assert "list: column 'scores'" in str(info.value)
    assert real.open(str(root / "id"))[:].tolist() == [0, 1]
    assert list_dtype_text("x,y").count(",") == 0


def test_a_damaged_item_on_disk_is_a_format_error(tmp_path, layout_1):
    root = str(tmp_path / "c")
    bcolz.carray([[1, 2]], dtype=bcolz.list_("int64"), rootdir=root, mode="w")
    raw = bcolz.carray([b"\x09\x00\x00\x00\x00\x01"], dtype=bcolz.vlen("bytes"))
    storage = json.loads(open(f"{root}/meta/storage").read())
    bad = bcolz.carray(raw, dtype=bcolz.vlen("bytes", nullable=True),
                       rootdir=str(tmp_path / "bad"), mode="w")
    bad.flush()
    # the vlen carray of the damaged bytes, relabelled as a list carray
    meta = json.loads(open(f"{tmp_path}/bad/meta/storage").read())
    meta["dtype"], meta["list"] = storage["dtype"], storage["list"]
    del meta["vlen"]
    import pathlib
    pathlib.Path(f"{tmp_path}/bad/meta/storage").write_text(json.dumps(meta) + "\n")
    for extra in ("bcolz_store.json", "bcolz_store.md5"):
        pathlib.Path(f"{tmp_path}/bad/{extra}").unlink(missing_ok=True)
    with pytest.raises(FormatError):
        bcolz.open(str(tmp_path / "bad"))[:]
    meta["dflt"] = base64.b64encode(b"\x01").decode()
    pathlib.Path(f"{tmp_path}/bad/meta/storage").write_text(json.dumps(meta) + "\n")
    with pytest.raises(FormatError):
        bcolz.open(str(tmp_path / "bad"))


# ------------------------------------------------------------------ Arrow, Parquet, pandas

def test_parquet_round_trip_is_exact(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from bcolz_store.converters.arrow import from_parquet, to_parquet
    schema = pa.schema([
        pa.field("a", pa.list_(pa.int32())),
        pa.field("b", pa.large_list(pa.field("element", pa.string(), nullable=False)),
                 nullable=False),
        pa.field("c", pa.list_(pa.list_(pa.list_(pa.float64())))),
        pa.field("m", pa.map_(pa.string(), pa.list_(pa.int64()), keys_sorted=True)),
        pa.field("s", pa.list_(pa.struct([("x", pa.int16()), ("y", pa.string())]))),
        pa.field("t", pa.list_(pa.timestamp("ns", tz="Europe/Paris"))),
        pa.field("d", pa.list_(pa.decimal128(10, 2))),
        pa.field("f", pa.list_(pa.struct([("q", pa.int8())]), 1)),
        pa.field("mm", pa.map_(pa.string(), pa.map_(pa.string(), pa.list_(pa.int8())))),
    ])
    tbl = pa.table({
        "a": [[1, 2], None, [3, None]], "b": [["x"], [], ["y", "z"]],
        "c": [[[[1.5]]], [[None], []], None],
        "m": [[("k", [1])], None, [("z", None)]],
        "s": [[{"x": 1, "y": "a"}], [None], []], "t": [[1, 2], [3], []],
        "d": [[decimal.Decimal("1.25")], [None], None], "f": [[{"q": 1}], [{"q": 2}], None],
        "mm": [[("a", [("b", [1])])], [], None]}, schema=schema)
    pq.write_table(tbl, tmp_path / "in.parquet")
    from_parquet(str(tmp_path / "in.parquet"), str(tmp_path / "t"))
    to_parquet(bcolz.open(str(tmp_path / "t")), str(tmp_path / "out.parquet"))
    a, b = pq.read_table(tmp_path / "in.parquet"), pq.read_table(tmp_path / "out.parquet")
    assert a.schema.remove_metadata() == b.schema.remove_metadata()
    assert a.select(a.column_names).equals(b.select(a.column_names))


def test_own_list_columns_to_arrow():
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters.arrow import to_arrow
    t = bcolz.ctable([bcolz.carray([[1.5, None], None], dtype=bcolz.list_("float32")),
                      bcolz.carray([{"a": 1}, None], dtype=bcolz.map_("str", "int8"))],
                     names=["f", "m"])
    out = to_arrow(t)
    assert out.schema.field("f").type == pa.list_(pa.float32())
    assert out.column("f").to_pylist() == [[1.5, None], None]
    assert out.column("m").to_pylist() == [[("a", 1)], None]


def test_pandas_round_trips(tmp_path):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    df = pd.DataFrame({
        "x": [1, 2, 3], "l": [[1, 2], None, [3]],
        "a": [np.array([1.5]), np.array([], dtype=float), np.array([np.nan])],
        "s": [["a"], ["b", None], []],
        "p": pd.Series([[1, None], None, []], dtype=pd.ArrowDtype(pa.list_(pa.int16()))),
        "m": pd.Series([[("a", 1)], None, []],
                       dtype=pd.ArrowDtype(pa.map_(pa.string(), pa.int64())))})
    bcolz.ctable.fromdataframe(df, rootdir=str(tmp_path / "t"), mode="w")
    back = bcolz.open(str(tmp_path / "t")).todataframe()
    assert (back.dtypes == df.dtypes).all()
    assert back["l"].tolist() == df["l"].tolist() and back["s"].tolist() == df["s"].tolist()
    assert isinstance(back["a"][0], np.ndarray)
    assert back["p"].equals(df["p"]) and back["m"].equals(df["m"])
    mixed = pd.DataFrame({"o": [[1], ["a"]]})       # no one element type: objects, as before
    t = bcolz.ctable.fromdataframe(mixed)
    assert t["o"].listtype is None


def test_pickles_keep_the_list_type():
    import pickle
    c = bcolz.carray([[1, 2], None], dtype=bcolz.list_("int8"), dflt=[3])
    d = pickle.loads(pickle.dumps(c))
    assert d.listtype == c.listtype and _same(d[:], c[:]) and d.dflt[()] == [3]


def test_pandas_and_arrow_inputs():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    want = _objects(np.ma.MaskedArray(np.array([1, 0], "i2"), mask=[False, True]), None,
                    np.array([], "i2"))
    s = pd.Series([[1, None], None, []], dtype=pd.ArrowDtype(pa.list_(pa.int16())))
    assert _same(bcolz.carray(s, dtype=bcolz.list_("int16"))[:], want)
    assert _same(bcolz.carray(pa.array([[1, None], None, []]), dtype=bcolz.list_("int16"))[:],
                 want)
    got = bcolz.carray(pd.Series([[1, 2], np.nan]), dtype=bcolz.list_("int8"))[:]
    assert _same(got, _objects(np.array([1, 2], "i1"), None))
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.arange(3), np.arange(1)
    assert _same(bcolz.carray(ragged, dtype=bcolz.list_("int64"))[:], ragged)


def test_types_that_are_not_nullable_grow_with_empty_lists():
    c = bcolz.carray([], dtype=bcolz.list_("str", nullable=False, size=2))
    c.resize(1)
    assert c[0].tolist() == ["", ""]
    m = bcolz.carray([], dtype=bcolz.map_("str", "int8", nullable=False))
    m.resize(1)
    assert m[0] == []
    with pytest.raises(ValueError, match="not nullable"):
        m.append([None])


def _nested(levels, make=None):
    typ, value = "int32", 1
    for _ in range(levels):
        typ, value = (make or bcolz.list_)(typ), [value]
    return typ, value


def test_list_nesting_is_refused_where_the_reader_would_refuse_it(tmp_path):
    from bcolz_store.kinds.list.meta import MAX_LIST_DEPTH
    deepest, value = _nested(MAX_LIST_DEPTH)
    c = bcolz.carray([value, None], dtype=deepest, rootdir=str(tmp_path / "ok"))
    c.flush()
    assert bcolz.open(str(tmp_path / "ok"))[:].tolist()[1] is None
    for make in (bcolz.list_, lambda t: bcolz.map_("str", t),
                 lambda t: bcolz.struct_items([("f", t)])):
        with pytest.raises(bcolz.LimitError, match=f"at most {MAX_LIST_DEPTH}"):
            make(deepest)
    with pytest.raises(bcolz.LimitError, match="at most 32"):
        bcolz.list_(bcolz.list_(deepest.item))
    pa = pytest.importorskip("pyarrow")
    typ = pa.int32()
    for _ in range(MAX_LIST_DEPTH + 1):
        typ = pa.list_(typ)
    with pytest.raises(bcolz.LimitError, match=f"at most {MAX_LIST_DEPTH}"):
        bcolz.carray(pa.array([[value]], type=typ), rootdir=str(tmp_path / "deep"))
    assert not (tmp_path / "deep").exists()


@pytest.mark.parametrize("data, typ, expected", [
    ([[], [["x"]]], bcolz.list_(bcolz.list_("str")), [[], [["x"]]]),
    ([[], []], bcolz.list_(bcolz.list_("str")), [[], []]),
    ([[], []], bcolz.list_("int32"), [[], []]),
    ([[]], bcolz.list_("int32"), [[]]),
    ([[]], bcolz.list_(bcolz.list_("int32")), [[]]),
    ([[], [[]]], bcolz.list_(bcolz.list_("int32")), [[], [[]]]),
    ([[[]], []], bcolz.list_(bcolz.list_("int32")), [[[]], []]),
    ([[1], [2]], bcolz.list_("int32"), [[1], [2]]),
    ([None, [], [[None, 3]]], bcolz.list_(bcolz.list_("int32")), [None, [], [[None, 3]]]),
    ([[], [[[1]]]], bcolz.list_(bcolz.list_(bcolz.list_("int8"))), [[], [[[1]]]]),
    ([[], {"k": 1}], bcolz.map_("str", "int32"), [[], [("k", 1)]]),
    ([[], [("k", 1)]], bcolz.map_("str", "int32"), [[], [("k", 1)]]),
    ([[], [{"a": 1}]], bcolz.list_(bcolz.struct_items([("a", "int32")])), [[], [{"a": 1}]]),
    ([1, 2], bcolz.list_("int32"), [[1, 2]]),           # one list of scalars: one item
    ([[1, 2], [3]], bcolz.list_(bcolz.list_("int32")), [[[1, 2], [3]]]),
])
def test_ragged_nested_input_is_a_sequence_of_items(data, typ, expected):
    def plain(v):
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, (list, tuple)):
            return [plain(e) for e in v]
        return v
    c = bcolz.carray(data, dtype=typ)
    assert [plain(v) for v in c[:].tolist()] == [plain(v) for v in expected]
    c.append(data)
    assert len(c) == 2 * len(expected)


def test_lists_of_string_and_binary_views_read_as_str_and_bytes():
    # polars exports lists of str and bytes with string_view / binary_view elements
    pa = pytest.importorskip("pyarrow")
    if not hasattr(pa, "string_view"):
        pytest.skip("pyarrow without view types")
    table = pa.table({
        "s": pa.array([["a", None], None, [], ["bcdefghijklmnopqrstuvwxyz"]],
                      pa.large_list(pa.string_view())),
        "b": pa.array([[b"x"], [None], None, []], pa.list_(pa.binary_view())),
        "m": pa.array([[("k", "v")], None, [], [("l", None)]],
                      pa.map_(pa.string_view(), pa.string_view()))})
    t = bcolz.ctable(table)
    assert t["s"].listtype.item == "str" and t["b"].listtype.item == "bytes"
    assert [None if v is None else list(v) for v in t["s"][:]] == \
        [["a", None], None, [], ["bcdefghijklmnopqrstuvwxyz"]]
    assert [None if v is None else list(v) for v in t["b"][:]] == [[b"x"], [None], None, []]
    assert t["m"][:].tolist() == [[("k", "v")], None, [], [("l", None)]]
    assert pa.table(t).to_pylist() == table.to_pylist()


def test_a_polars_frame_of_list_columns_round_trips():
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"s": [["a", None], None, [], ["b"]],
                       "b": [[b"x"], None, [b""], []]})
    t = bcolz.ctable(df)
    assert pl.DataFrame(t).to_dicts() == df.to_dicts()


@pytest.mark.parametrize("item, message", [
    ([300], "item 0: .*300 out of bounds for int8"),
    (["a"], "item 0: .*invalid literal"),
    ([1, [2]], "item 0: "),
])
def test_elements_a_fixed_dtype_cannot_take_are_refused_naming_the_item(item, message):
    c = bcolz.carray([[1]], dtype=bcolz.list_("int8"))
    with pytest.raises(ValueError, match=message):
        c.append([item])
    with pytest.raises(ValueError, match=message):
        bcolz.carray([item], dtype=bcolz.list_("int8"))
    assert [v.tolist() for v in c[:]] == [[1]]
