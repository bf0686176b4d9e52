"""Categorical carrays and columns: codes of the smallest int dtype plus their
categories (a vlen carray), items in between; pandas category round trips."""

import json
import os

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import BcolzStoreError, FormatError, KindMismatchError
from bcolz_store.kinds.vlen.meta import vlen_result_dtype

COLORS = ["red", "green", None, "red", "blue", "red", None, "green"] * 5


def test_items_codes_and_categories(tmp_path):
    c = bcolz_store.carray(COLORS, dtype=bcolz_store.category(), chunklen=4,
                           rootdir=str(tmp_path / "c"), mode="w")
    assert c.category == bcolz_store.category(["blue", "green", "red"])
    assert c.codes[:8].tolist() == [2, 1, -1, 2, 0, 2, -1, 1]
    assert c.codes[-1] == 1 and c.codes[[0, 4]].tolist() == [2, 0]
    code = {"blue": 0, "green": 1, "red": 2, None: -1}
    assert c.codes[::3].tolist() == [code[v] for v in COLORS[::3]]
    back = bcolz_store.open(str(tmp_path / "c"), mode="r")
    assert back[:].tolist() == COLORS and back[4] == "blue" and back[2] is None
    assert back.dtype == vlen_result_dtype("str", True)     # StringDType(na_object=None)
    assert back[[7, 0]].tolist() == ["green", "red"]
    storage = json.loads((tmp_path / "c" / "meta" / "storage").read_text())
    assert storage["categorical"] == {"codes": "int8", "ordered": False}
    assert storage["dtype"].startswith("category-int8: column 'c' holds the codes")
    assert sorted(os.listdir(tmp_path / "c" / "categories" / "data")) == ["__0.vlen"]
    assert bcolz_store.verify(str(tmp_path / "c")).ok
    assert "category := category(['blue', 'green', 'red'], ordered=False)" in repr(back)


def test_writes_map_items_to_codes_and_refuse_new_categories(tmp_path):
    c = bcolz_store.carray(COLORS, dtype=bcolz_store.category(["red", "green", "blue"]),
                           chunklen=4, rootdir=str(tmp_path / "c"), mode="w")
    c.append(["blue", None])
    c[0] = "green"
    c[1:3] = ["red", "red"]
    c.resize(len(c) + 2)              # grows with missing items
    with pytest.raises(ValueError, match="'pink' is not one of the 3 categories"):
        c.append(["pink"])
    with pytest.raises(TypeError, match="int is neither an item"):
        c[5] = 7
    back = bcolz_store.open(str(tmp_path / "c"))
    expected = ["green", "red", "red"] + COLORS[3:] + ["blue", None, None, None]
    assert back[:].tolist() == expected
    back.trim(3)
    assert bcolz_store.open(str(tmp_path / "c"))[:].tolist() == expected[:-3]


def test_codes_dtype_is_the_smallest_that_fits():
    many = ["c%d" % i for i in range(300)]
    c = bcolz_store.carray(many, dtype="category")
    assert c._meta.kind.categorical.codes == np.dtype("int16") and c[299] == "c299"
    b = bcolz_store.carray([b"x", b"y", None], dtype="category")
    assert b.category.kind == "bytes" and b[:].tolist() == [b"x", b"y", None]


def test_where_on_category_values_in_a_ctable(tmp_path):
    t = bcolz_store.ctable([np.arange(len(COLORS)),
                            bcolz_store.carray(COLORS, dtype=bcolz_store.category())],
                           names=["i", "color"], rootdir=str(tmp_path / "t"), mode="w")
    assert [r.i for r in t.where("color == 'blue'")] == [4, 12, 20, 28, 36]
    assert [r.i for r in t.where("isnull(color) & (i < 10)")] == [2, 6]
    assert [r.i for r in t.where("startswith(color, 'g') & (i < 10)")] == [1, 7, 9]
    found = t.fetchwhere("color != 'red'")
    assert found.cols["color"].category == t.cols["color"].category
    assert t[4].tolist() == (4, "blue")


def test_pandas_category_columns_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({
        "color": pd.Categorical(COLORS, categories=["red", "green", "blue", "unused"],
                                ordered=True),
        "raw": pd.Categorical([b"a", None] * 20),
        "n": np.arange(40),
    })
    t = bcolz_store.ctable.fromdataframe(df, strings="vlen", rootdir=str(tmp_path / "t"),
                                         mode="w")
    assert t.cols["color"].category.categories == ["red", "green", "blue", "unused"]
    pd.testing.assert_frame_equal(bcolz_store.open(str(tmp_path / "t")).todataframe(), df)
    # strings='fixed' is about str and bytes columns: a category column stays one
    # (bcolz stored it as pickled objects, a missing value as NaN)
    fixed = bcolz_store.ctable.fromdataframe(df, rootdir=str(tmp_path / "f"), mode="w")
    assert fixed.cols["color"].category == t.cols["color"].category
    pd.testing.assert_frame_equal(bcolz_store.open(str(tmp_path / "f")).todataframe(), df)


def test_categorical_hostile_metadata_is_refused(tmp_path):
    root = tmp_path / "c"
    bcolz_store.carray(COLORS, dtype="category", chunklen=8, rootdir=str(root), mode="w")
    storage = json.loads((root / "meta" / "storage").read_text())
    bad = dict(storage, categorical={"codes": "int16", "ordered": False})
    (root / "meta" / "storage").write_text(json.dumps(bad) + "\n")
    with pytest.raises(FormatError, match="disagree"):
        bcolz_store.open(str(root))
    (root / "meta" / "storage").write_text(json.dumps(storage) + "\n")
    categories = bcolz_store.open(str(root / "categories"))
    categories[0] = "red"                   # now a repeated category
    with pytest.raises(FormatError, match="repeat"):
        bcolz_store.open(str(root))[:]


def test_real_bcolz_refuses_a_categorical_column_by_name(tmp_path):
    real_bcolz = pytest.importorskip("bcolz")
    bcolz_store.ctable([np.arange(3), bcolz_store.carray(["a", "b", "a"], dtype="category")],
                       names=["i", "kind"], rootdir=str(tmp_path / "t"), mode="w")
    with pytest.raises(TypeError, match="category-int8: column 'kind'"):
        real_bcolz.open(str(tmp_path / "t"))
    fixed = bcolz_store.open(str(tmp_path / "t")).tofixed(str(tmp_path / "f"))
    assert fixed.cols["kind"].dtype == np.dtype("<U1")
    assert real_bcolz.open(str(tmp_path / "f"))["kind"][:].tolist() == ["a", "b", "a"]


# ------------------------------------------------------------ appending a carray

def _cats(kind, *names):
    return [n if kind == "str" else n.encode() for n in names]


@pytest.fixture(params=["memory", "disk"])
def stored(request, tmp_path):
    """Keyword arguments that put a new carray in memory or on disk."""
    counter = iter(range(100))
    if request.param == "memory":
        return lambda: {}
    return lambda: {"rootdir": str(tmp_path / f"c{next(counter)}"), "mode": "w"}


@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_append_a_categorical_carray_translates_its_codes(stored, kind):
    """The codes of another categorical carray are translated into this one's:
    other categories, another order, no item decoded, blocks of many chunks."""
    buy, sell, hold = _cats(kind, "buy", "sell", "hold")
    c = bcolz_store.carray([buy, None], dtype=bcolz_store.category([buy, sell, hold]),
                           chunklen=3, **stored())
    items = [sell, None, buy, sell] * 50
    source = bcolz_store.carray(items, dtype=bcolz_store.category([sell, buy]), chunklen=4)
    c.append(source)
    assert c[:].tolist() == [buy, None] + items
    assert c.codes[2:6].tolist() == [1, -1, 0, 1] and c.category.kind == kind
    c.append(c)                       # itself: what it held when the append began
    assert c[:].tolist() == ([buy, None] + items) * 2
    if c.rootdir is not None:
        c.flush()
        assert bcolz_store.open(c.rootdir, mode="r")[:].tolist() == ([buy, None] + items) * 2


@pytest.mark.parametrize("kind", ["str", "bytes"])
@pytest.mark.parametrize("source_kind", ["str", "bytes"])
def test_append_a_carray_of_missing_items_only_fits_either_kind(stored, kind, source_kind):
    """A categorical carray made of missing items only has no categories, so no
    kind (its items are read as str); appending it to a categorical carray of
    bytes raised 'StringDType cannot be stored as bytes items'."""
    item = _cats(kind, "x")[0]
    for dtype in (bcolz_store.category(), bcolz_store.vlen(kind)):
        c = bcolz_store.carray([item], dtype=dtype, chunklen=1, **stored())
        missing = bcolz_store.carray([None, None], dtype=bcolz_store.category())
        assert missing.category.kind is None
        c.append(missing)
        c.append(bcolz_store.carray(_cats(source_kind, "y")[:0] + [None],
                                    dtype=bcolz_store.category()))
        assert c[:].tolist() == [item, None, None, None]


def test_append_a_vlen_carray_to_a_categorical_carray(stored):
    c = bcolz_store.carray(["a", "b"], dtype=bcolz_store.category(), chunklen=2, **stored())
    c.append(bcolz_store.carray(["b", None, "a"] * 30, dtype="vlen-str", chunklen=4))
    c.append(bcolz_store.carray(np.array(["a", "b"])))      # a fixed-width U carray
    assert c[:].tolist() == ["a", "b"] + ["b", None, "a"] * 30 + ["a", "b"]
    assert c.codes[-3:].tolist() == [0, 0, 1]


@pytest.mark.parametrize("target, source", [
    ("category-str", "category-bytes"), ("category-bytes", "category-str"),
    ("category-str", "vlen-bytes"), ("category-bytes", "vlen-str"),
    ("vlen-str", "category-bytes"), ("vlen-bytes", "category-str"),
    ("category-str", "fixed-bytes"), ("category-bytes", "fixed-str"),
    ("category-str", "int64"),
])
def test_append_a_carray_of_the_other_kind_is_refused(tmp_path, target, source):
    """Before anything changes, pending appends included."""
    def make(spec, rootdir=None):
        family, _, kind = spec.partition("-")
        if family == "int64":
            return bcolz_store.carray(np.arange(3))
        items = _cats(kind, "a", "b")
        if family == "fixed":
            return bcolz_store.carray(np.array(items))
        dtype = bcolz_store.category() if family == "category" else bcolz_store.vlen(kind)
        return bcolz_store.carray(items + [None], dtype=dtype, chunklen=2, rootdir=rootdir,
                                  mode="w" if rootdir else "a")

    c = make(target, str(tmp_path / "c"))
    before = c[:].tolist()
    c.append(before[:1])                          # pending: not committed yet
    with pytest.raises(KindMismatchError, match="cannot be appended to this carray") as err:
        c.append(make(source))
    assert isinstance(err.value, TypeError) and isinstance(err.value, BcolzStoreError)
    assert c[:].tolist() == before + before[:1]
    c.flush()
    assert bcolz_store.open(str(tmp_path / "c"), mode="r")[:].tolist() == before + before[:1]


def test_items_of_the_other_kind_are_a_kind_mismatch():
    c = bcolz_store.carray(["a", None], dtype=bcolz_store.category())
    b = bcolz_store.carray([b"a", None], dtype=bcolz_store.category())
    with pytest.raises(KindMismatchError, match="b'a' is bytes, and this categorical"):
        c.append([b"a"])
    with pytest.raises(KindMismatchError, match=r"item 0 is 'a' \(str\)"):
        b[0] = "a"
    with pytest.raises(KindMismatchError, match="str .* array cannot be stored as bytes"):
        b.append(np.array(["a"]))
    with pytest.raises(ValueError, match="'z' is not one of the 1 categories"):
        c.append(["z"])
    empty = bcolz_store.carray([None], dtype=bcolz_store.category())   # no categories
    with pytest.raises(ValueError, match="not one of the 0 categories"):
        empty.append([b"a"])
    assert c[:].tolist() == ["a", None] and b[:].tolist() == [b"a", None]


@pytest.mark.parametrize("family", ["category", "vlen"])
def test_append_refused_late_in_a_carray_changes_nothing(stored, family):
    """An item that is not a category, many chunks into the carray appended:
    refused before the first block is written (in memory the blocks before it
    stayed appended; on disk the failed write dropped the pending appends)."""
    c = bcolz_store.carray(["a", "b"], dtype=bcolz_store.category(), chunklen=4, **stored())
    c.append(["b"])
    dtype = bcolz_store.category() if family == "category" else "vlen-str"
    unused = bcolz_store.carray(["a"] * 99 + [None], dtype=bcolz_store.category(["zz", "a"]))
    c.append(unused)                  # a category not used is no refusal
    source = bcolz_store.carray(["a"] * 300 + ["zz"], dtype=dtype, chunklen=8)
    match = "item 300 of the appended carray: 'zz'" if family == "category" else "'zz'"
    with pytest.raises(ValueError, match=match):
        c.append(source)
    expected = ["a", "b", "b"] + ["a"] * 99 + [None]
    assert c[:].tolist() == expected
    if c.rootdir is not None:
        c.flush()
        assert bcolz_store.open(c.rootdir, mode="r")[:].tolist() == expected


def test_ctable_append_of_categorical_carrays_of_either_kind(tmp_path):
    t = bcolz_store.ctable([np.arange(2), bcolz_store.carray([b"x", None], dtype="category"),
                            bcolz_store.carray(["p", "q"], dtype="category")],
                           names=["i", "b", "s"], rootdir=str(tmp_path / "t"), mode="w")
    t.append([np.arange(2, 4), bcolz_store.carray([None, None], dtype="category"),
              bcolz_store.carray(["q", None], dtype="category")])
    with pytest.raises(KindMismatchError):
        t.append([np.arange(1), bcolz_store.carray(["x"], dtype="category"),
                  bcolz_store.carray(["p"], dtype="category")])
    t.flush()
    back = bcolz_store.open(str(tmp_path / "t"), mode="r")
    assert back["b"][:].tolist() == [b"x", None, None, None]
    assert back["s"][:].tolist() == ["p", "q", "q", None] and len(back) == 4
