"""Decimal carrays and columns: exact items, Arrow's bytes, checks on every write."""

import json
from decimal import Decimal

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import FormatError


def test_items_are_exact_and_checked(tmp_path):
    root = str(tmp_path / "d")
    c = bcolz.carray(["1.50", 2, Decimal("-0.25")], dtype=bcolz.decimal(12, 2), rootdir=root,
                     chunklen=2)
    assert c[:].tolist() == [Decimal("1.50"), Decimal("2.00"), Decimal("-0.25")]
    assert str(c[0]) == "1.50" and c.column_type == bcolz.decimal(12, 2)
    for bad, error, match in [("1.005", ValueError, "more than 2 digits after the point"),
                              (10 ** 10, ValueError, "does not fit decimal"),
                              (1.5, TypeError, "float"), ("x", ValueError, "not a decimal"),
                              ("nan", ValueError, "finite"), (None, ValueError, "missing")]:
        with pytest.raises(error, match=match):
            c.append(bad)
        with pytest.raises(error, match=match):
            c[0] = bad
    assert len(c) == 3 and c[0] == Decimal("1.50")
    c.append(["9999999999.99", "-9999999999.99"])
    c[1:3] = "0.01"
    c.flush()
    c = bcolz.open(root, mode="a")
    assert c[:].tolist() == [Decimal(v) for v in
                             ["1.50", "0.01", "0.01", "9999999999.99", "-9999999999.99"]]
    c.resize(7)
    assert c[-1] == Decimal("0.00")
    c.trim(3)
    assert len(bcolz.open(root)) == 4
    assert [len(b) for b in c._iterblocks(3)] == [3, 1]
    assert c.copy()[:].tolist() == c[:].tolist()
    raw = (tmp_path / "d" / "data" / "__0.blp").read_bytes()
    assert len(raw) > 16
    storage = json.loads((tmp_path / "d" / "meta" / "storage").read_text())
    assert storage["decimal"] == {"precision": 12, "scale": 2, "bits": 128}
    assert storage["dtype"].startswith("decimal128-p12-s2: column 'd'") and \
        "," not in storage["dtype"]


def test_wide_decimals_use_32_bytes():
    c = bcolz.carray(["1" * 70 + ".5"], dtype=bcolz.decimal(76, 1))
    assert c[0] == Decimal("1" * 70 + ".5") and c.column_type.bits == 256
    assert bcolz.decimal(38, 0).bits == 128
    for bad in [(0, 0), (77, 0), (5, 6)]:
        with pytest.raises(ValueError):
            bcolz.decimal(*bad)


def test_decimal_ctable_column(tmp_path):
    t = bcolz.ctable([np.arange(3), bcolz.carray(["1", "2.5", "3"], dtype=bcolz.decimal(5, 1))],
                     names=["i", "price"], rootdir=str(tmp_path / "t"))
    t.append((3, Decimal("4.5")))
    t[0] = (9, "0.1")
    t.flush()
    t = bcolz.open(str(tmp_path / "t"))
    assert t["price"][:].tolist() == [Decimal(v) for v in ["0.1", "2.5", "3.0", "4.5"]]
    assert t[1]["price"] == Decimal("2.5")
    with pytest.warns(UserWarning):        # numexpr cannot; Python compares the Decimals
        assert [r.i for r in t.where("price > 2.6")] == [2, 3]
    stats = json.loads((tmp_path / "t" / "price" / "meta" / "stats").read_text())
    assert stats["stats"] == 2 and stats["kind"] == "decimal:1"     # unscaled integers
    assert stats["chunks"] == [[1, 45, 0]]


def test_arrow_decimals_through_buffers(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters.arrow import from_arrow, to_arrow
    values = [Decimal("12345678901234567890.123456"), Decimal("-1.000001"), Decimal(0)]
    table = pa.table({"d": pa.array(values, type=pa.decimal128(38, 6)),
                      "w": pa.array(values, type=pa.decimal256(50, 6))})
    t = from_arrow(table)
    assert t["d"].column_type == bcolz.decimal(38, 6) and t["w"].column_type.bits == 256
    assert t["d"][:].tolist() == values
    back = to_arrow(t)
    assert back.column("d").type == pa.decimal128(38, 6)
    assert back.column("d").chunk(0).buffers()[1].to_pybytes() == \
        table.column("d").chunk(0).buffers()[1].to_pybytes()
    assert back.column("w").to_pylist() == values
    # nulls: a nullable decimal column (values plus a validity in valid/)
    nulls = pa.table({"n": pa.array([Decimal(1), None], type=pa.decimal128(3, 0))})
    t = from_arrow(nulls, rootdir=str(tmp_path / "t"))
    assert t["n"][:].tolist() == [Decimal(1), None] and t.cols["n"].nullable
    assert (tmp_path / "t" / "n" / "valid" / "meta" / "storage").exists()
    assert to_arrow(bcolz.open(str(tmp_path / "t"))).column("n").equals(nulls.column("n"))
    with pytest.raises(ValueError, match="no missing items"):
        bcolz.carray([Decimal(1)], dtype=bcolz.decimal(3, 0, nullable=False)).append([None])


def test_pandas_round_trips():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    df = pd.DataFrame({"o": [Decimal("1.5"), Decimal("-22.25")],
                       "a": pd.array([Decimal("1.1"), None],
                                     dtype=pd.ArrowDtype(pa.decimal128(10, 1)))})
    back = bcolz.ctable.fromdataframe(df).todataframe()     # nulls too
    assert back["a"].dtype == df["a"].dtype and back["a"].tolist() == df["a"].tolist()
    df = df.assign(a=pd.array([Decimal("1.1"), Decimal("7")],
                              dtype=pd.ArrowDtype(pa.decimal128(10, 1))))
    t = bcolz.ctable.fromdataframe(df)
    assert t["o"].column_type == bcolz.decimal(4, 2)
    back = t.todataframe()
    assert back.dtypes.tolist() == df.dtypes.tolist()
    assert back["o"].tolist() == df["o"].tolist() and back["a"].tolist() == df["a"].tolist()


def test_real_bcolz_refuses_naming_the_column(tmp_path):
    real = pytest.importorskip("bcolz")
    bcolz.ctable([np.arange(2), bcolz.carray(["1", "2"], dtype=bcolz.decimal(5, 0))],
                 names=["id", "price"], rootdir=str(tmp_path / "t"))
    with pytest.raises(TypeError, match="column 'price'"):
        real.open(str(tmp_path / "t"))
    assert real.open(str(tmp_path / "t" / "id"))[:].tolist() == [0, 1]


def test_damaged_metadata_is_refused(tmp_path):
    root = tmp_path / "d"
    bcolz.carray(["1"], dtype=bcolz.decimal(5, 0), rootdir=str(root))
    storage = json.loads((root / "meta" / "storage").read_text())
    storage["decimal"]["precision"] = 6
    (root / "meta" / "storage").write_text(json.dumps(storage))
    with pytest.raises(FormatError, match="disagrees"):
        bcolz.open(str(root))


def test_nullable_decimal_grows_by_nulls(tmp_path):
    root = str(tmp_path / "n")
    c = bcolz.carray(["1.50", None], dtype=bcolz.decimal(12, 2), rootdir=root)
    c.resize(4)
    assert c[:].tolist() == [Decimal("1.50"), None, None, None]
    c = bcolz.open(root, mode="a")          # what resize adds is stored
    c.resize(5)
    assert c[:].tolist() == [Decimal("1.50"), None, None, None, None]
    given = bcolz.carray([None], dtype=bcolz.decimal(12, 2), dflt="7.25",
                         rootdir=str(tmp_path / "g"))
    given.resize(2)
    assert bcolz.open(str(tmp_path / "g"), mode="a")[:].tolist() == [None, Decimal("7.25")]
    copied = c.copy()
    copied.resize(6)
    assert copied[-1] is None and given.copy(dflt="7.25").column_type.nullable
    plain = bcolz.carray(["1"], dtype=bcolz.decimal(5, 1))
    plain.resize(2)
    assert plain[:].tolist() == [Decimal("1.0"), Decimal("0.0")]


def test_nullable_argument_makes_a_nullable_decimal():
    c = bcolz.carray(["1.50"], dtype=bcolz.decimal(12, 2), nullable=True)
    assert c.nullable and c.column_type.nullable
    c.append([None, "2"])
    assert c[:].tolist() == [Decimal("1.50"), None, Decimal("2.00")]
    assert not bcolz.carray(["1"], dtype=bcolz.decimal(5, 0), nullable=False).nullable
    with pytest.raises(ValueError, match="None"):
        bcolz.carray([None], dtype=bcolz.decimal(5, 0), nullable=False)


def test_huge_items_are_refused_by_their_size():
    import time

    from bcolz_store.errors import LimitError
    c = bcolz.carray(["1.50"], dtype=bcolz.decimal(12, 2))
    began = time.perf_counter()
    for bad, error, match in [("1e9999999", ValueError, r"'1e9999999' does not fit"),
                              (Decimal("9e999999999"), ValueError, "does not fit"),
                              ("-1E+999999", ValueError, "does not fit"),
                              ("1e-9999999", ValueError, "more than 2 digits after"),
                              (10 ** 100000, ValueError, "an int of 332193 bits does not fit"),
                              (-(10 ** 5000), ValueError, "does not fit"),
                              ("1" * 10 ** 6, LimitError, "1000000 characters long"),
                              ("0." + "0" * 10 ** 7 + "1", LimitError, "characters long")]:
        with pytest.raises(error, match=match):
            c.append(bad)
    assert time.perf_counter() - began < 5      # (before any work as big as the item)
    c.append(["0e999999999", "12.5e-1", "0.00000000000e9", 10 ** 9, "-" + "0" * 4000 + "1"])
    assert c[:].tolist() == [Decimal(v) for v in
                             ["1.50", "0.00", "1.25", "0.00", "1000000000.00", "-1.00"]]
    wide = bcolz.carray([10 ** 80], dtype=bcolz.decimal(76, -5))
    assert wide[0] == Decimal(10 ** 80)


def test_a_masked_array_of_objects_keeps_its_nulls():
    items = np.ma.masked_array(np.array([Decimal("1.5"), Decimal("7")], dtype=object),
                               mask=[False, True])
    c = bcolz.carray(items, dtype=bcolz.decimal(5, 1))
    assert c[:].tolist() == [Decimal("1.5"), None] and c.isnull().tolist() == [False, True]
    c.append(items)
    assert c[:].tolist() == [Decimal("1.5"), None, Decimal("1.5"), None]
    point = bcolz.struct([("x", "int8")], nullable=True)
    rows = np.ma.masked_array(np.array([{"x": 1}, {"x": 2}], dtype=object), mask=[True, False])
    assert bcolz.carray(rows, dtype=point)[:].tolist() == [None, {"x": 2}]
    assert bcolz.carray(items)[:].tolist() == [Decimal("1.5"), None]     # objects: None


def test_a_table_is_made_again_from_its_masked_rows():
    t = bcolz.ctable([bcolz.carray(["1.5", None, "2"], dtype=bcolz.decimal(5, 1)),
                      np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]),
                      bcolz.carray([[1], None, []], dtype=bcolz.list_("int8"))],
                     names=["d", "n", "l"])
    again = bcolz.ctable(t[:])
    assert again["d"][:].tolist() == [Decimal("1.5"), None, Decimal("2.0")]
    assert again["n"][:].tolist() == [1, None, 3]
    assert [None if v is None else v.tolist() for v in again["l"][:]] == [[1], None, []]


def test_a_pandas_column_of_decimals_with_missing_items_is_a_nullable_decimal(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"d": [Decimal("1.5"), None, Decimal("-2.25")],
                          "n": [Decimal("1"), float("nan"), pd.NA]})
    bcolz.ctable.fromdataframe(frame, rootdir=str(tmp_path / "t"))
    t = bcolz.open(str(tmp_path / "t"))          # no pickles: opens without allow_pickle
    assert t["d"].column_type == bcolz.decimal(3, 2) and t["d"].nullable
    assert t["d"][:].tolist() == [Decimal("1.50"), None, Decimal("-2.25")]
    assert t["n"][:].tolist() == [Decimal("1"), None, None]
    again = bcolz.ctable.fromdataframe(t.todataframe())
    assert again["d"].column_type == bcolz.decimal(3, 2) and again["d"].nullable
