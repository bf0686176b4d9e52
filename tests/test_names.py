"""Any str names a ctable column: plain names keep bcolz's layout, others get made-up folders."""

import decimal
import json
import os

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import FormatError, QueryError
from bcolz_store.format.names import assign_folders, is_plain_name, load_names

ODD = ["a b", "x.y", "1st", "\u0394", "a/b", "", "__rootdirs__", "L" * 300, "A", "a", "class",
       "__c0_x", "id"]


def _cols(n, length=5):
    return [np.arange(length, dtype=np.int64) + i for i in range(n)]


def test_plain_names_write_bcolz_bytes(tmp_path):
    bcolz.ctable(_cols(2), names=["id", "x"], rootdir=str(tmp_path / "t"))
    assert (tmp_path / "t" / "__rootdirs__").read_bytes() == b'{"names": ["id", "x"]}\n'


def test_every_name_round_trips(tmp_path):
    root = str(tmp_path / "t")
    t = bcolz.ctable(_cols(len(ODD)), names=ODD, rootdir=root)
    assert t.names == ODD
    rootdirs = json.loads((tmp_path / "t" / "__rootdirs__").read_text())
    dirs = rootdirs["dirs"]
    assert set(dirs) == set(ODD) - {"\u0394", "A", "id"}
    for folder in dirs.values():
        assert folder.isascii() and len(folder) <= 48
    assert len({f.casefold() for f in list(dirs.values()) + ["a", "id", "\u0394"]}) == \
        len(dirs) + 3
    t = bcolz.open(root, mode="a")
    for i, name in enumerate(ODD):
        assert t[name][:].tolist() == list(range(i, i + 5))
        assert t.cols[name][0] == i
    assert t.dtype.names == tuple(ODD)
    assert t[1][""] == 6
    t.addcol(np.zeros(5), name="new col")
    t.delcol("x.y")
    t.append([np.arange(1)] * len(t.names))
    t.flush()
    t = bcolz.open(root)
    assert t.names[-1] == "new col" and "x.y" not in t.names and len(t) == 6
    assert not any(f.startswith("__c") and "x_y" in f for f in os.listdir(root))


def test_dataframe_arrow_copy_keep_names(tmp_path):
    names = ["a b", "", "x.y", "id"]
    t = bcolz.ctable(_cols(4), names=names, rootdir=str(tmp_path / "t"))
    df = t.todataframe()
    assert list(df.columns) == names
    assert bcolz.ctable.fromdataframe(df).names == names
    assert t.copy(rootdir=str(tmp_path / "c")).names == names
    from bcolz_store.converters.arrow import from_parquet, to_arrow, to_parquet
    assert to_arrow(t).column_names == names
    to_parquet(t, str(tmp_path / "t.parquet"))
    back = from_parquet(str(tmp_path / "t.parquet"), rootdir=str(tmp_path / "p"))
    assert back.names == names and back["a b"][:].tolist() == t["a b"][:].tolist()


def test_queries_refer_through_user_dict(tmp_path):
    t = bcolz.ctable(_cols(2), names=["a b", "id"], rootdir=str(tmp_path / "t"))
    assert [r.id for r in t.where("c > 2", user_dict={"c": t["a b"]})] == [4, 5]
    with pytest.raises(QueryError, match="'a b' cannot be named"):
        list(t.where("a b > 2"))
    t.create_index("a b")
    assert t.explain("c > 2", user_dict={"c": t["a b"]}) is not None


def test_duplicates_and_non_str_refused():
    with pytest.raises(ValueError, match="'a b' appears twice"):
        bcolz.ctable(_cols(2), names=["a b", "a b"])
    with pytest.raises(ValueError, match="must be str"):
        bcolz.ctable(_cols(1), names=[3])


def test_real_bcolz_reads_plain_and_fails_on_made_up_folders(tmp_path):
    real = pytest.importorskip("bcolz")
    bcolz.ctable(_cols(2), names=["id", "x"], rootdir=str(tmp_path / "p"))
    assert real.open(str(tmp_path / "p"))["x"][:].tolist() == list(range(1, 6))
    bcolz.ctable(_cols(2), names=["id", "a b"], rootdir=str(tmp_path / "m"))
    with pytest.raises(FileNotFoundError, match="a b"):
        real.open(str(tmp_path / "m"))


def test_folder_rules():
    assert is_plain_name("x") and not is_plain_name("class") and not is_plain_name("__c3_y")
    assert assign_folders(["a", "A", "b c"]) == {"A": "__c0_A", "b c": "__c1_b_c"}
    assert assign_folders(["a", "new"], {"a": "__c5_a"}) == {"a": "__c5_a"}
    with pytest.raises(FormatError, match="not a made-up folder"):
        load_names({"names": ["a b"], "dirs": {"a b": "../x"}})
    with pytest.raises(FormatError, match="two columns"):
        load_names({"names": ["a b", "c"], "dirs": {"a b": "__c0_x", "c": "__c0_x"}})
    with pytest.raises(FormatError, match="not a column"):
        load_names({"names": ["a"], "dirs": {"b": "__c0_b"}})


def test_an_empty_name_holding_nulls_reads_as_rows(tmp_path):
    x = np.ma.masked_array([1, 2, 3], mask=[0, 1, 0])
    t = bcolz.ctable([x, np.arange(3.0), np.arange(3)], names=["", "y", "f0"],
                     rootdir=str(tmp_path / "t"))
    rows = t[:]
    assert isinstance(rows, np.ma.MaskedArray)
    assert rows.dtype.names == ("_f0", "y", "f0")     # numpy.ma's name for '' (f<i>), kept apart
    assert rows["_f0"].tolist() == [1, None, 3] and rows["f0"].tolist() == [0, 1, 2]
    assert t[1]["_f0"] is np.ma.masked and t[0]["_f0"] == 1
    assert t[[0, 1]].mask["_f0"].tolist() == [False, True]
    # a null of a nullable fixed column is numpy.ma.masked in rows (docs/nulls.md)
    assert [r[0] for r in t] == [1, np.ma.masked, 3]
    assert [r[0] for r in t.iter()] == [1, np.ma.masked, 3]
    assert "--" in repr(rows) and len(list(bcolz.iterblocks(t, 2))) == 2
    assert t[""][:].tolist() == [1, None, 3]                # the column keeps its name
    plain = bcolz.ctable([np.arange(2), np.arange(2.0)], names=["", "y"])
    assert plain[:].dtype.names == ("", "y")                # no null: '' as it is


def test_an_empty_name_holding_nulls_beside_object_columns_reads_as_rows():
    # rows of object fields (str, lists, structs, decimals) cannot be viewed as another dtype
    x = np.ma.masked_array([1, 2, 3], mask=[0, 1, 0])
    t = bcolz.ctable([x, bcolz.carray(["a", None, "c"], dtype=bcolz.vlen(str)),
                      bcolz.carray([[1], None, []], dtype=bcolz.list_("int8")),
                      bcolz.carray(["1.5", None, "2"], dtype=bcolz.decimal(5, 1))],
                     names=["", "s", "l", "d"])
    rows = t[:]
    assert rows.dtype.names == ("f0", "s", "l", "d")
    assert rows["f0"].tolist() == [1, None, 3] and rows["s"].tolist() == ["a", None, "c"]
    assert rows["d"].tolist() == [decimal.Decimal("1.5"), None, decimal.Decimal("2.0")]
    assert t[1]["f0"] is np.ma.masked and t[2]["l"].tolist() == []
    assert [r[0] for r in t] == [1, np.ma.masked, 3] and len(list(bcolz.iterblocks(t, 2))) == 2
    assert [r[1] for r in t] == ["a", None, "c"]         # a missing object item is None
