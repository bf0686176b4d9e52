"""Categorical carrays and columns: codes of the smallest int dtype plus their
categories (a vlen carray), items in between; pandas category round trips."""

import json
import os

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError
from bcolz_store.format.vlen_meta import vlen_result_dtype

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
    assert c._meta.categorical.codes == np.dtype("int16") and c[299] == "c299"
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
