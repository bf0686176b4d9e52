"""vlen columns through pandas, the fixed-width copy the real bcolz reads, and the
conversion hub (Parquet, Arrow, zarr; the others refuse them by name)."""

import numpy as np
import pytest

import bcolz_store
from bcolz_store import cli
from bcolz_store.converters import convert

pd = pytest.importorskip("pandas")

try:
    import bcolz as real_bcolz
except ImportError:
    real_bcolz = None
needs_bcolz = pytest.mark.skipif(real_bcolz is None, reason="the real bcolz is not importable")


def frame():
    return pd.DataFrame({
        "obj": pd.Series(["a", None, "ccc", "", "é"], dtype=object),
        "string": pd.Series(["x", None, "yy", "", "z"], dtype="string"),
        "str": pd.Series(["p", None, "q", "", "r"], dtype="str"),
        "raw": pd.Series([b"\x00", b"", None, b"b", b"c"], dtype=object),
        "n": np.arange(5),
        "when": pd.to_datetime(["2020-01-01", None, "2021-06-30", "1999-12-31", "2000-01-01"]),
    })


def test_fromdataframe_strings_vlen_round_trips_exactly(tmp_path):
    df = frame()
    t = bcolz_store.ctable.fromdataframe(df, strings="vlen", rootdir=str(tmp_path / "t"),
                                         mode="w")
    assert [t.cols[n].vlen is not None for n in t.names] == [True] * 4 + [False] * 2
    assert t.cols["raw"].vlen.kind == "bytes" and t.cols["obj"].vlen.nullable
    pd.testing.assert_frame_equal(t.todataframe(), df)
    back = bcolz_store.open(str(tmp_path / "t"), mode="r").todataframe()
    pd.testing.assert_frame_equal(back, df)
    assert back["string"].dtype == df["string"].dtype and back["str"].dtype == df["str"].dtype


def _string_dtypes():
    """``(storage, na_value, dtype)`` of each pandas string dtype this pandas has:
    NA strings on every version, NaN strings as ``na_value=`` (2.3 on) or
    ``'pyarrow_numpy'`` (2.1, 2.2)."""
    out = []
    for storage in ("python", "pyarrow"):
        for na in ("NA", "nan"):
            try:
                dtype = pd.StringDtype(storage, na_value=pd.NA if na == "NA" else np.nan)
            except TypeError:           # pandas < 2.3
                dtype = pd.StringDtype(storage) if na == "NA" else None
                if dtype is None and storage == "pyarrow":
                    try:
                        dtype = pd.StringDtype("pyarrow_numpy")
                    except (TypeError, ValueError):
                        dtype = None
            except ImportError:         # pyarrow storage without pyarrow
                dtype = None
            if dtype is not None:
                out.append((storage, na, dtype))
    return out


@pytest.mark.parametrize("storage, na, dtype", _string_dtypes(),
                         ids=[f"{s}-{n}" for s, n, _ in _string_dtypes()])
def test_pandas_string_columns_come_back_on_every_pandas_version(tmp_path, storage, na, dtype):
    df = pd.DataFrame({"s": pd.array(["a", None, "", "\u00e9"], dtype=dtype)})
    t = bcolz_store.ctable.fromdataframe(df, strings="vlen", rootdir=str(tmp_path / "t"),
                                         mode="w")
    record = t.cols["s"].attrs["bcolz_store.pandas"]
    assert record == {"dtype": "string", "storage": storage, "na_value": na}
    back = bcolz_store.open(str(tmp_path / "t"), mode="r").todataframe()
    assert back["s"].dtype == dtype
    pd.testing.assert_frame_equal(back, df)


@pytest.mark.parametrize("storage, na", [("python", "nan"), ("pyarrow", "nan"),
                                         ("pyarrow", "NA"), ("python", "NA")])
def test_a_recorded_string_dtype_this_pandas_lacks_comes_back_as_objects(storage, na):
    t = bcolz_store.ctable([np.array(["a", None], dtype=object)], names=["s"],
                           dtype={"s": bcolz_store.vlen()})
    t.cols["s"].attrs["bcolz_store.pandas"] = {"dtype": "string", "storage": storage,
                                                "na_value": na}
    got = t.todataframe()["s"]
    has = {(s, n) for s, n, _ in _string_dtypes()}
    if (storage, na) in has:
        assert type(got.dtype).__name__ == "StringDtype"
        assert got.isna().tolist() == [False, True]
    elif na == "NA":                     # pyarrow storage without pyarrow: python storage
        assert got.dtype == pd.StringDtype("python")
    else:
        assert got.dtype == np.dtype(object)
        assert got[0] == "a" and isinstance(got[1], float) and np.isnan(got[1])


def test_fixed_strings_stay_the_default():
    t = bcolz_store.ctable.fromdataframe(pd.DataFrame({"s": ["ab", "c"]}))
    assert t.cols["s"].dtype == np.dtype("<U2") and t.cols["s"].vlen is None


def test_strings_by_column_and_with_a_vlen_type():
    df = pd.DataFrame({"a": ["t%d" % (i % 40) for i in range(4000)], "b": ["u"] * 4000})
    t = bcolz_store.ctable.fromdataframe(
        df, strings={"a": bcolz_store.vlen(level=19, dictionary=True, dict_size=1024)})
    assert t.cols["a"].vlen.level == 19 and isinstance(t.cols["a"].vlen.dictionary, bytes)
    assert t.cols["b"].dtype == np.dtype("<U1")
    pd.testing.assert_frame_equal(t.todataframe(), df.astype({"a": object}), check_dtype=False)
    with pytest.raises(ValueError, match="strings must be"):
        bcolz_store.ctable.fromdataframe(df, strings="other")


def test_strings_by_column_keep_the_recorded_widths_of_the_fixed_ones():
    t = bcolz_store.ctable([np.array(["ab", "c"], dtype="U10"), np.array(["x", "y"])],
                           names=["a", "s"])
    df = t.todataframe()
    back = bcolz_store.ctable.fromdataframe(df, strings={"s": "vlen"})
    assert back.cols["a"].dtype == np.dtype("<U10") and back.cols["s"].vlen is not None
    with pytest.raises(ValueError, match="lacks the columns"):
        bcolz_store.ctable.fromdataframe(df, names=["zz"], strings="vlen")


def test_appending_a_dataframe_keeps_missing_values(tmp_path):
    df = frame()
    t = bcolz_store.ctable.fromdataframe(df, strings="vlen", rootdir=str(tmp_path / "t"),
                                         mode="w")
    t.append(df)
    back = bcolz_store.open(str(tmp_path / "t")).todataframe()
    pd.testing.assert_frame_equal(back, pd.concat([df, df], ignore_index=True))


@needs_bcolz
def test_tofixed_makes_a_copy_the_real_bcolz_reads(tmp_path):
    t = bcolz_store.ctable.fromdataframe(frame(), strings="vlen")
    with pytest.raises(ValueError, match="column 'obj' has missing items"):
        t.tofixed(str(tmp_path / "f"))
    assert not (tmp_path / "f").exists()
    t.attrs["source"] = "frame"
    fixed = t.tofixed(str(tmp_path / "f"), missing="")
    assert fixed.cols["obj"].dtype == np.dtype("<U3") and fixed.cols["raw"].dtype == "S1"
    theirs = real_bcolz.open(str(tmp_path / "f"), mode="r")
    assert theirs["obj"][:].tolist() == ["a", "", "ccc", "", "é"]
    assert theirs["raw"][:].tolist() == [b"", b"", b"", b"b", b"c"]   # NUL bytes: S drops them
    assert theirs.attrs["source"] == "frame"
    c = bcolz_store.carray(["long item", "x"], dtype="vlen-str")
    assert c.tofixed()[:].tolist() == ["long item", "x"] and c.tofixed().dtype == "<U9"
    with pytest.raises(ValueError, match="ending in NUL"):
        bcolz_store.carray(["a\x00"], dtype="vlen-str").tofixed()


@needs_bcolz
def test_convert_strings_fixed_from_the_command_line(tmp_path, capsys):
    src = str(tmp_path / "src")
    bcolz_store.ctable([np.arange(3), bcolz_store.carray(["a", "bb", ""], dtype="vlen-str")],
                       names=["i", "s"], rootdir=src, mode="w")
    with pytest.raises(TypeError, match="vlen-str: column 's'"):
        real_bcolz.open(src)
    assert cli.main(["convert", src, str(tmp_path / "dst"), "--strings", "fixed"]) == 0
    assert real_bcolz.open(str(tmp_path / "dst"))["s"][:].tolist() == ["a", "bb", ""]
    assert cli.main(["convert", src, str(tmp_path / "bad"), "--strings", "vlen"]) == 1
    assert "strings must be 'keep' or 'fixed'" in capsys.readouterr().err


def test_parquet_and_arrow_round_trips_keep_the_vlen_type(tmp_path):
    pytest.importorskip("pyarrow")
    src = str(tmp_path / "t")
    t = bcolz_store.ctable.fromdataframe(frame(), strings="vlen", rootdir=src, mode="w")
    t.addcol(["k%d" % (i % 3) for i in range(5)], name="lvl", dtype=bcolz_store.vlen(level=12))
    for suffix in ("parquet", "arrow"):
        convert(src, str(tmp_path / f"t.{suffix}"))
        convert(str(tmp_path / f"t.{suffix}"), str(tmp_path / f"back-{suffix}"))
        back = bcolz_store.open(str(tmp_path / f"back-{suffix}"))
        assert [back.cols[n].vlen for n in back.names] == [t.cols[n].vlen for n in t.names]
        assert back["obj"][:].tolist() == ["a", None, "ccc", "", "é"]
        pd.testing.assert_frame_equal(back.todataframe(), t.todataframe())
    import pyarrow.parquet as pq
    theirs = pq.read_table(str(tmp_path / "t.parquet"))
    assert theirs.column("obj").to_pylist() == ["a", None, "ccc", "", "é"]


def test_foreign_parquet_strings_become_vlen_on_request_or_when_they_hold_nulls(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"s": ["a", None, "ccc"], "b": [b"x", None, b""], "f": ["x", "yy", ""]}),
                   str(tmp_path / "f.parquet"))
    # a fixed width has no missing item: the columns with nulls become vlen columns
    convert(str(tmp_path / "f.parquet"), str(tmp_path / "fixed"))
    back = bcolz_store.open(str(tmp_path / "fixed"))
    assert back["s"][:].tolist() == ["a", None, "ccc"] and back.cols["b"].vlen.kind == "bytes"
    assert back.cols["f"].dtype == np.dtype("U2") and back.cols["f"].vlen is None
    convert(str(tmp_path / "f.parquet"), str(tmp_path / "v"), strings="vlen")
    back = bcolz_store.open(str(tmp_path / "v"))
    assert back["s"][:].tolist() == ["a", None, "ccc"] and back.cols["b"].vlen.kind == "bytes"
    assert back.cols["f"].vlen.kind == "str"
    # written back, they are Arrow strings and binary again, not their large types
    convert(str(tmp_path / "fixed"), str(tmp_path / "back.parquet"))
    assert pq.read_table(str(tmp_path / "back.parquet")).schema.remove_metadata() == \
        pq.read_table(str(tmp_path / "f.parquet")).schema.remove_metadata()


def test_zarr_round_trip_uses_zarr_vlen_types(tmp_path):
    zarr = pytest.importorskip("zarr")
    src = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(3), bcolz_store.carray(["a", "bé", ""], dtype="vlen-str"),
                        bcolz_store.carray([b"x", b"", b"\x00"], dtype="vlen-bytes")],
                       names=["i", "s", "b"], rootdir=src, mode="w")
    convert(src, str(tmp_path / "t.zarr"))
    group = zarr.open(str(tmp_path / "t.zarr"), mode="r")
    assert str(group["s"].metadata.data_type) == "VariableLengthUTF8()"
    assert group["b"][:].tolist() == [b"x", b"", b"\x00"]
    convert(str(tmp_path / "t.zarr"), str(tmp_path / "back"))
    back = bcolz_store.open(str(tmp_path / "back"))
    assert back["s"][:].tolist() == ["a", "bé", ""] and back.cols["b"].vlen.kind == "bytes"
    with_missing = bcolz_store.carray(["a", None], dtype="vlen-str", rootdir=str(tmp_path / "m"),
                                      mode="w")
    with pytest.raises(ValueError, match="missing items"):
        convert(with_missing.rootdir, str(tmp_path / "m.zarr"))


@pytest.mark.parametrize("suffix", ["h5", "msgpack"])
def test_formats_without_vlen_types_refuse_them_by_column(tmp_path, suffix):
    if suffix == "h5":
        pytest.importorskip("tables")
    src = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(2), bcolz_store.carray(["a", "b"], dtype="vlen-str")],
                       names=["i", "name"], rootdir=src, mode="w")
    with pytest.raises(TypeError, match="name"):
        convert(src, str(tmp_path / f"t.{suffix}"), drop_attrs=True)
    assert not (tmp_path / f"t.{suffix}").exists()


def test_a_new_users_dataframe_round_trips_through_disk_and_parquet(tmp_path):
    """object, string, categorical and datetime columns: fromdataframe(strings='vlen'),
    todataframe(), a reopen, and a convert to Parquet and back, all exact."""
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({
        "name": pd.Series(["Ann", None, "", "Zoë", "李"] * 200, dtype=object),
        "city": pd.Series(["Oslo", pd.NA, "Lyon", "", "Rome"] * 200, dtype="string"),
        "tag": pd.Series(["x", None, "y", "x", "z"] * 200, dtype="str"),
        "level": pd.Categorical(["low", "high", None, "mid", "low"] * 200,
                                categories=["low", "mid", "high"], ordered=True),
        "when": pd.date_range("2024-01-01", periods=1000, freq="h"),
        "n": np.arange(1000, dtype="i2"),
    })
    df.loc[3, "when"] = pd.NaT
    root = str(tmp_path / "people.bcolz")
    t = bcolz_store.ctable.fromdataframe(df, strings="vlen", rootdir=root, mode="w")
    pd.testing.assert_frame_equal(t.todataframe(), df)
    pd.testing.assert_frame_equal(bcolz_store.open(root, mode="r").todataframe(), df)
    assert cli.main(["convert", root, str(tmp_path / "people.parquet"), "--no-progress"]) == 0
    assert cli.main(["convert", str(tmp_path / "people.parquet"), str(tmp_path / "back.bcolz"),
                     "--no-progress"]) == 0
    pd.testing.assert_frame_equal(bcolz_store.open(str(tmp_path / "back.bcolz")).todataframe(),
                                  df)
    import pyarrow.parquet as pq
    assert pq.read_table(str(tmp_path / "people.parquet")).num_rows == 1000
