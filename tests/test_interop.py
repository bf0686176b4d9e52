"""pandas and HDF5 conversions of ctables."""

import importlib.util

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.ctable import ctable

pd = pytest.importorskip("pandas")

TABLES_HERE = importlib.util.find_spec("tables") is not None


def sample(n=50):
    ra = np.zeros(n, dtype=[("i", "i4"), ("x", "f8"), ("b", "?"), ("u8", "u1"),
                            ("t", "M8[ns]"), ("s", "S7"), ("w", "U5")])
    ra["i"] = np.arange(n) - 10
    ra["x"] = np.linspace(0, 1, n)
    ra["b"] = np.arange(n) % 2 == 0
    ra["u8"] = np.arange(n) % 256
    ra["t"] = np.datetime64("2021-06-01", "ns") + np.arange(n) * 3_600_000_000_000
    ra["s"] = [b"b%d" % i for i in range(n)]
    ra["w"] = ["\u00fc%d" % i for i in range(n)]
    return ra


@pytest.mark.parametrize("n", [0, 1, 50])
def test_dataframe_round_trip_keeps_dtypes_and_values(n):
    ra = sample(n)
    t = ctable(ra)
    df = t.todataframe()
    assert list(df.columns) == t.names
    assert len(df) == n
    back = ctable.fromdataframe(df)
    assert back.names == t.names
    for name in t.names:
        assert back[name].dtype == ra.dtype[name], name
        assert_array_equal(back[name][:], ra[name])


def test_string_width_is_inferred_without_todataframe_metadata():
    df = ctable(sample(5)).todataframe()
    df.attrs.clear()
    back = ctable.fromdataframe(df)
    assert back["s"].dtype == np.dtype("S2") and back["w"].dtype == np.dtype("U2")
    stale = ctable(sample(5)).todataframe()
    stale["s"] = [b"much longer than seven"] * 5
    assert ctable.fromdataframe(stale)["s"].dtype == np.dtype("S22")


def test_fromdataframe_string_columns_become_fixed_width():
    df = pd.DataFrame({"a": ["x", "yyy", "zz"], "b": [b"q", b"qqqq", b""],
                       "c": [1, "mixed", 2.5]})
    t = ctable.fromdataframe(df)
    assert t["a"].dtype == np.dtype("U3")
    assert t["b"].dtype == np.dtype("S4")
    assert t["c"].dtype == np.dtype(object)
    assert list(t["a"][:]) == ["x", "yyy", "zz"]


def test_fromdataframe_names_and_rootdir(tmp_path):
    df = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5, "c": np.arange(10)})
    rd = str(tmp_path / "t")
    t = ctable.fromdataframe(df, names=["c", "a"], rootdir=rd)
    assert t.names == ["c", "a"]
    again = ctable(rootdir=rd, mode="r")
    assert_array_equal(again["a"][:], np.arange(10))


def test_todataframe_columns_and_index_orientation():
    t = ctable(sample(4))
    df = t.todataframe(columns=["x", "i"])
    assert list(df.columns) == ["x", "i"]
    assert_array_equal(df["i"].to_numpy(), t["i"][:])
    labels = ["r0", "r1", "r2", "r3"]
    dfi = t[["i", "x"]].todataframe(columns=labels, orient="index")
    assert list(dfi.columns) == labels and list(dfi.index) == ["i", "x"]
    assert_array_equal(dfi.loc["i"].to_numpy(dtype="f8"), [-10, -9, -8, -7])
    with pytest.raises(ValueError):
        t.todataframe(orient="diagonal")


def test_append_dataframe_by_column_name(tmp_path):
    full = sample(6)
    t = ctable(full[:3], rootdir=str(tmp_path / "t"))
    more = pd.DataFrame.from_records(full[3:])
    t.append(more[list(reversed(t.names))])
    assert_array_equal(ctable(rootdir=str(tmp_path / "t"))[:], full)


@pytest.mark.skipif(TABLES_HERE, reason="PyTables is installed")
def test_hdf5_without_pytables_names_the_extra(tmp_path):
    t = ctable(sample(3))
    with pytest.raises(ImportError, match=r"bcolz_store\[hdf5\]"):
        t.tohdf5(str(tmp_path / "t.h5"))
    with pytest.raises(ImportError, match=r"bcolz_store\[hdf5\]"):
        ctable.fromhdf5(str(tmp_path / "t.h5"))


@pytest.mark.skipif(not TABLES_HERE, reason="PyTables is not installed")
def test_hdf5_round_trip(tmp_path):
    ra = np.fromiter(((i, i * 2.0, i * 3) for i in range(1000)), dtype="i4,f8,i8")
    t = ctable(ra)
    t.attrs["title"] = "numbers"
    path = str(tmp_path / "t.h5")
    t.tohdf5(path)
    with pytest.raises(OSError):
        t.tohdf5(path)
    back = ctable.fromhdf5(path)
    assert back.dtype == t.dtype
    assert_array_equal(back[:], ra)
    assert back.attrs["title"] == "numbers"
    t.tohdf5(path, nodepath="/group/inner", mode="a")
    assert ctable.fromhdf5(path, "/group/inner", names=["f2"]).names == ["f2"]
    with pytest.raises(TypeError, match="datetime64"):
        ctable(sample(3)).tohdf5(str(tmp_path / "dates.h5"))
    assert not (tmp_path / "dates.h5").exists()


def test_module_level_flags_report_optional_extras():
    assert bcolz.pandas_here is True
    assert bcolz.tables_here is TABLES_HERE
