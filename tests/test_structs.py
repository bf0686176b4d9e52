"""Struct carrays and columns: fields as sub-folders, dict items, Arrow and pandas."""

import json
import os
from decimal import Decimal

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import FormatError

KIND = bcolz.struct([("a", "int32"), ("b", "str"), ("x.y", bcolz.decimal(5, 2)),
                     ("meta", bcolz.struct([("k", "float64")])),
                     ("c", bcolz.category(["lo", "hi"]))], nullable=True)


def item(i):
    return {"a": i, "b": f"s{i}" if i % 3 else None, "x.y": Decimal(i) / 4,
            "meta": {"k": i / 2}, "c": "hi" if i % 2 else "lo"}


def test_layout_and_round_trip(tmp_path):
    root = str(tmp_path / "s")
    items = [item(i) if i != 2 else None for i in range(5)]
    c = bcolz.carray(items, dtype=KIND, rootdir=root, chunklen=2)
    assert c.column_type == KIND
    assert sorted(os.listdir(root)) == sorted(
        [".bcolz_store-journal", "__attrs__", "__f0_x_y", "__f1_meta", "__valid-", "a", "b",
         "bcolz_store.json", "bcolz_store.md5", "c", "data", "meta"])
    storage = json.loads((tmp_path / "s" / "meta" / "storage").read_text())
    assert storage["struct"] == {
        "fields": [{"name": "a", "nullable": False}, {"name": "b", "nullable": True},
                   {"name": "x.y", "nullable": False}, {"name": "meta", "nullable": False},
                   {"name": "c", "nullable": True}],
        "dirs": {"x.y": "__f0_x_y", "meta": "__f1_meta"}, "nullable": True}
    assert storage["dtype"].startswith("struct: column 's'")
    c = bcolz.open(root, mode="a")
    assert c[:].tolist() == items
    assert c[1] == items[1] and c[2] is None and c[[4, 0]].tolist() == [items[4], items[0]]
    assert c.field("a")[:].tolist() == [0, 1, 0, 3, 4]
    assert c.field("meta").field("k")[:].tolist() == [0.0, 0.5, 0.0, 1.5, 2.0]
    assert c["meta"]["k"][:].tolist() == [0.0, 0.5, 0.0, 1.5, 2.0]
    with pytest.raises(KeyError, match="no field named 'zz'"):
        c["zz"]
    c.append([item(7)])
    c[0] = item(9)
    c[1:3] = [None, item(8)]
    c.flush()
    want = [item(9), None, item(8), item(3), item(4), item(7)]
    assert bcolz.open(root)[:].tolist() == want
    c.resize(8)
    assert c[7] is None
    c.trim(2)
    assert [len(b) for b in c._iterblocks(4)] == [4, 2]
    assert c.copy(rootdir=str(tmp_path / "copy"))[:].tolist() == want
    assert bcolz.open(str(tmp_path / "copy")).column_type == KIND
    assert bcolz.verify(root).damaged == []


def test_writes_are_checked_before_anything_changes():
    c = bcolz.carray([item(1)], dtype=KIND)
    bad = [({"a": 1}, ValueError, "missing"), (dict(item(1), z=1), ValueError, "unknown 'z'"),
           ([1], TypeError, "not a dict"), (dict(item(1), a="x"), ValueError, "field 'a'"),
           (dict(item(1), c="mid"), ValueError, "field 'c'"),
           (dict(item(1), **{"x.y": "0.001"}), ValueError, "digits after the point")]
    for value, error, match in bad:
        with pytest.raises(error, match=match):
            c.append([item(2), value])
        assert c[:].tolist() == [item(1)]
    plain = bcolz.carray([{"a": 1}], dtype=bcolz.struct([("a", "int8")]))
    with pytest.raises(ValueError, match="no missing items"):
        plain.append(None)
    with pytest.raises(ValueError, match="unique"):
        bcolz.struct([("a", "i4"), ("a", "f8")])
    with pytest.raises(TypeError, match="cannot be of dtype"):
        bcolz.struct([("a", object)])


def test_struct_ctable_column(tmp_path):
    kind = bcolz.struct([("a", "int32"), ("b", "str")])
    t = bcolz.ctable([np.arange(3), bcolz.carray([{"a": i, "b": str(i)} for i in range(3)],
                                                dtype=kind)],
                     names=["i", "s t"], rootdir=str(tmp_path / "t"))
    t.append((3, {"a": 3, "b": "three"}))
    t[0] = (7, {"a": 7, "b": "seven"})
    t.flush()
    t = bcolz.open(str(tmp_path / "t"))
    assert t["s t"][:].tolist()[::3] == [{"a": 7, "b": "seven"}, {"a": 3, "b": "three"}]
    assert t[0]["s t"] == {"a": 7, "b": "seven"}
    assert bcolz.verify(str(tmp_path / "t")).damaged == []


def test_arrow_structs_exactly():
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters.arrow import from_arrow, to_arrow
    typ = pa.struct([pa.field("p", pa.int64(), nullable=False),
                     ("q", pa.struct([("r", pa.large_string()),
                                      ("d", pa.decimal128(7, 3))]))])
    values = [{"p": 1, "q": {"r": "z", "d": Decimal("1.500")}}, None,
              {"p": 2, "q": {"r": None, "d": Decimal("-2.000")}}]
    table = pa.table({"s": pa.array(values, type=typ)})
    t = from_arrow(table)
    assert t["s"][:].tolist() == values
    back = to_arrow(t)
    assert back.schema.field("s").type == typ and back.column("s").to_pylist() == values


def test_pandas_round_trips():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    typ = pa.struct([("a", pa.int64()), ("b", pa.string())])
    df = pd.DataFrame({"o": [{"a": 1, "b": "x"}, None],
                       "s": pd.array([{"a": 1, "b": "x"}, None], dtype=pd.ArrowDtype(typ))})
    back = bcolz.ctable.fromdataframe(df).todataframe()
    assert back.dtypes.tolist() == df.dtypes.tolist()
    assert back["o"].tolist() == df["o"].tolist()
    assert back["s"].tolist()[0] == {"a": 1, "b": "x"}


def test_real_bcolz_refuses_naming_the_column(tmp_path):
    real = pytest.importorskip("bcolz")
    bcolz.ctable([np.arange(2), bcolz.carray([{"a": 1}, {"a": 2}],
                                             dtype=bcolz.struct([("a", "int8")]))],
                 names=["id", "point"], rootdir=str(tmp_path / "t"))
    with pytest.raises(TypeError, match="column 'point'"):
        real.open(str(tmp_path / "t"))


def test_damaged_struct_is_refused(tmp_path):
    root = tmp_path / "s"
    bcolz.carray([{"a": 1, "b": 2}], dtype=bcolz.struct([("a", "int8"), ("b", "int8")]),
                 rootdir=str(root))
    sizes = root / "b" / "meta" / "sizes"
    sizes.write_text(sizes.read_text().replace("[1]", "[2]"))
    with pytest.raises(FormatError):
        bcolz.open(str(root))


def test_fields_that_are_lists_and_nullable_numbers(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters.arrow import from_arrow, to_arrow
    typ = pa.struct([("a", pa.int32()), ("B", pa.list_(pa.int32())),
                     ("m", pa.map_(pa.string(), pa.float64()))])
    table = pa.table({"s": pa.array([
        {"a": 1, "B": [1, 2], "m": [("k", 1.5)]}, None,
        {"a": None, "B": [None], "m": None}, {"a": 3, "B": None, "m": []}], typ)})
    from_arrow(table, rootdir=str(tmp_path / "t"))
    t = bcolz.open(str(tmp_path / "t"))
    got = t["s"][:]
    assert got[1] is None and got[2]["a"] is None and got[0]["B"].tolist() == [1, 2]
    assert t.cols["s"].field("a").nullable
    back = to_arrow(t)
    assert back.schema.field("s").type == typ
    assert back.column("s").to_pylist() == table.column("s").to_pylist()


@pytest.mark.parametrize("kind, good, bad", [
    (bcolz.struct([("a", "int32"), ("b", "str")]), {"a": 1, "b": "s"}, {"a": "x", "b": "y"}),
    (bcolz.decimal(5, 1), "1.5", "0.001")])
def test_a_refused_append_keeps_the_rows_appended_before_it(kind, good, bad):
    c = bcolz.carray([good] * 5, dtype=kind, rootdir="memory://refused/c", chunklen=3, mode="w")
    c.flush()
    c = bcolz.open("memory://refused/c", mode="a")
    c.append(bcolz.carray([good] * 4, dtype=kind))          # not flushed yet
    with pytest.raises(ValueError):
        c.append([bad] * 3)                                 # refused before any write
    assert len(c) == 9
    c.flush()
    assert len(bcolz.open("memory://refused/c")) == 9


def test_fields_that_may_hold_nulls_are_nullable_in_arrow(tmp_path):
    pa = pytest.importorskip("pyarrow")
    typ = bcolz.struct([("a", "int32"), ("l", bcolz.list_("int32")),
                        ("m", bcolz.map_("str", "int8")),
                        ("d", bcolz.decimal(5, 1, nullable=True)),
                        ("k", bcolz.list_("int32"), False)])
    assert [f[2] for f in typ.fields] == [False, True, True, True, False]
    items = [{"a": 1, "l": [1], "m": {"x": 1}, "d": "1.5", "k": [2]},
             {"a": 2, "l": None, "m": None, "d": None, "k": None}]
    t = bcolz.ctable([bcolz.carray(items, dtype=typ)], names=["s"], rootdir=str(tmp_path / "t"))
    arrow = pa.table(t).schema.field("s").type
    assert [arrow.field(i).nullable for i in range(arrow.num_fields)] == \
        [False, True, True, True, True]             # k holds a None: nullable as its list type
    for back in (bcolz.ctable(pa.table(t)), bcolz.ctable(pa.RecordBatchReader.from_stream(t))):
        got = back["s"][:].tolist()
        assert got[1] == {"a": 2, "l": None, "m": None, "d": None, "k": None}
        assert got[0]["l"].tolist() == [1] and got[0]["d"] == Decimal("1.5")
