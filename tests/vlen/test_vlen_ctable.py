"""ctables with columns of variable-length str and bytes items: rows, appends,
queries, column changes and stores (local, memory, S3 on moto, zip packs)."""

import collections

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds.vlen.meta import vlen_result_dtype
from bcolz_store import cli

NSTR = vlen_result_dtype("str", True)      # StringDType(na_object=None) on numpy 2
TICKERS = ["AAPL", "MSFT", None, "", "GOOG", "AMZN", "ABC", "XYZ", "A"]


def table(rootdir=None, n=3, **kwargs):
    names = (TICKERS * n)[:len(TICKERS) * n]
    return bcolz_store.ctable([np.arange(len(names)), bcolz_store.carray(names, dtype="vlen-str"),
                               bcolz_store.carray([s.encode() if s else None for s in names],
                                                  dtype="vlen-bytes")],
                              names=["i", "ticker", "raw"], rootdir=rootdir, chunklen=4,
                              **kwargs)


def test_rows_hold_the_items_in_object_fields(tmp_path):
    t = table(str(tmp_path / "t"), mode="w")
    assert t.dtype == np.dtype([("i", "<i8"), ("ticker", "O"), ("raw", "O")])
    assert t[1].tolist() == (1, "MSFT", b"MSFT") and t[2].tolist() == (2, None, None)
    assert t[3].tolist() == (3, "", None)
    rows = t[5:8]
    assert rows["ticker"].tolist() == ["AMZN", "ABC", "XYZ"]
    back = bcolz_store.open(str(tmp_path / "t"), mode="r")
    assert back.cols["ticker"].dtype == NSTR
    assert back["ticker"][:].tolist() == TICKERS * 3
    assert [r.raw for r in back.iter(0, 4)] == [b"AAPL", b"MSFT", None, None]


def test_every_kind_of_append(tmp_path):
    t = table(str(tmp_path / "t"), n=1, mode="w")
    t.append((100, "row", b"r"))
    t.append([[101, 102], ["c1", None], [b"c1", b""]])
    t.append([(103, "t1", b"t1"), (104, None, None)])
    rows = np.array([(105, "s1", b"s1")], dtype=t.dtype)
    t.append(rows)
    pd = pytest.importorskip("pandas")
    t.append(pd.DataFrame({"i": [106], "ticker": ["df"], "raw": [b"df"]}))
    back = bcolz_store.open(str(tmp_path / "t"), mode="r")
    assert back["ticker"][len(TICKERS):].tolist() == ["row", "c1", None, "t1", None, "s1", "df"]
    assert back["raw"][len(TICKERS):].tolist() == [b"r", b"c1", b"", b"t1", None, b"s1", b"df"]
    with pytest.raises(TypeError, match="int is neither an item nor a sequence"):
        t.append((107, 5, b""))
    with pytest.raises(TypeError, match="item 1 is 5"):
        t.append([[107, 108], ["ok", 5], [b"", b""]])
    assert len(bcolz_store.open(str(tmp_path / "t"))) == len(TICKERS) + 7


def test_where_with_equality_startswith_and_missing_items():
    t = table(n=2)
    hits = [r.i for r in t.where("ticker == 'MSFT'")]
    assert hits == [1, 10]
    assert [r.i for r in t.where("ticker == ''")] == [3, 12]          # not the missing ones
    assert [r.ticker for r in t.where("startswith(ticker, 'A') & (i < 9)")] == [
        "AAPL", "AMZN", "ABC", "A"]
    assert [r.i for r in t.where("isnull(ticker)")] == [2, 11]
    assert len(list(t.where("ticker != 'MSFT'"))) == 18 - 2 - 2       # None matches nothing
    assert [r.ticker for r in t.where("contains(ticker, 'Z') & (i > 9)")] == ["AMZN", "XYZ"]
    assert [r.i for r in t.where("isin(ticker, ['GOOG', 'XYZ'])", limit=3)] == [4, 7, 13]
    assert [r.raw for r in t.where("raw == b'GOOG'")] == [b"GOOG"] * 2
    assert [r.i for r in t.where("startswith(raw, b'AM')")] == [5, 14]
    blocks = list(t.whereblocks("i % 2 == 0", blen=3, outcols="ticker"))
    assert [b["ticker"].tolist() for b in blocks][0] == ["AAPL", None, "GOOG"]


@pytest.mark.parametrize("kind", ["bytes", "str"])
def test_comparisons_are_false_at_missing_items_of_object_blocks(kind):
    """Object blocks (bytes items; str items on numpy 1.x) compared as Python
    does: ``None != b'a'`` was true and ``None < b'Z'`` raised TypeError."""
    def item(text):
        return text.encode() if kind == "bytes" else text
    t = bcolz_store.ctable([np.arange(4), bcolz_store.carray(
        [item("a"), None, item("M"), item("")], dtype=bcolz_store.vlen(kind))], names=["i", "v"])
    lit = repr(item("a"))
    assert [r.i for r in t.where(f"v != {lit}")] == [2, 3]
    assert [r.i for r in t.where(f"v < {repr(item('Z'))}")] == [2, 3]
    assert [r.i for r in t.where(f"{repr(item('Z'))} > v")] == [2, 3]
    assert [r.i for r in t.where("v == v")] == [0, 2, 3]
    assert [r.i for r in t.where(f"(v >= {lit}) | (i == 1)")] == [0, 1]


def test_fetchwhere_keeps_the_columns_vlen(tmp_path):
    t = table(str(tmp_path / "t"), mode="w")
    found = t.fetchwhere("i >= 20", outcols="i, ticker")
    assert found.cols["ticker"].vlen is not None
    assert found["ticker"][:].tolist() == (TICKERS * 3)[20:]
    assert t.fetchwhere("i >= 20", out_flavor="numpy")["ticker"].tolist() == (TICKERS * 3)[20:]


def test_row_assignment_addcol_delcol_and_column_replacement(tmp_path):
    t = table(str(tmp_path / "t"), mode="w")
    t[0] = (0, "new", b"new")
    t[[1, 2]] = [(1, None, None), (2, "two", b"2")]
    t["ticker == 'GOOG'"] = (-1, "gone", b"")
    t.addcol(["n%d" % i for i in range(len(t))], name="note", dtype="vlen-str")
    t.addcol(np.array(["u"] * len(t)), name="fixed")
    t.cols["note"] = ["m%d" % i for i in range(len(t))]
    t.delcol("fixed")
    back = bcolz_store.open(str(tmp_path / "t"), mode="r")
    assert back["ticker"][:5].tolist() == ["new", None, "two", "", "gone"]
    assert back.cols["note"].vlen is not None and back["note"][26] == "m26"
    assert back.names == ["i", "ticker", "raw", "note"]
    t.trim(7)
    t.resize(25)
    assert bcolz_store.open(str(tmp_path / "t"))["ticker"][-6:].tolist() == ["MSFT"] + [""] * 5


@pytest.mark.parametrize("kwargs", [{"dtype": "vlen-str"}, {"dtype": bcolz_store.vlen()}])
def test_a_dtype_for_every_column_makes_them_all_vlen(kwargs):
    t = bcolz_store.ctable([["a", "b"], ["c", None]], names=["x", "y"], **kwargs)
    assert t.cols["x"].vlen is not None and t["y"][:].tolist() == ["c", None]


def test_memory_url_and_zip_pack(tmp_path):
    table("memory://vlen/t.bcolz", mode="w")
    assert bcolz_store.open("memory://vlen/t.bcolz")["ticker"][:].tolist() == TICKERS * 3
    src = str(tmp_path / "t.bcolz")
    table(src, mode="w")
    assert cli.main(["pack", src, str(tmp_path / "t.zip")]) == 0
    packed = bcolz_store.open(str(tmp_path / "t.zip"))
    assert packed["raw"][:4].tolist() == [b"AAPL", b"MSFT", None, None]
    assert bcolz_store.verify(str(tmp_path / "t.zip")).ok


def test_on_s3_reads_writes_and_opens_with_few_requests(s3_bucket):
    url, options = s3_bucket
    path = f"{url}/vlen.bcolz"
    t = table(path, n=50, mode="w", storage_options=options)
    t.append((999, "last", b"l"))
    t.cols["ticker"][0] = "first"
    back = bcolz_store.open(path, mode="r", storage_options=options)
    seen = collections.Counter()
    back.dataset.store.fs.s3.meta.events.register(
        "before-send.s3", lambda **kw: seen.update([kw["event_name"]]))
    expected = ["first"] + (TICKERS * 50)[1:] + ["last"]
    assert back["ticker"][:].tolist() == expected
    assert back["ticker"][[3, 400]].tolist() == [expected[3], expected[400]]
    nfiles = -(-len(expected) // 4)
    assert sum(seen.values()) <= nfiles + 4, seen      # one GET per chunk file, at most
    assert bcolz_store.verify(path, storage_options=options).ok
