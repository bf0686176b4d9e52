"""Every dtype persists on disk and reads back exactly; the real bcolz reads what we write.

Each case is a dtype, values covering its corners (extremes, NaN, NaT, empty
and full-width strings) and a non-zero ``dflt``.  The values are compared as
bytes, so NaN payloads, -0.0 and NaT are checked too.  Where the real bcolz is
importable it opens our carrays and ctables (it cannot open structured
dtypes, which we still do).
"""

import os

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store

DATETIME_UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
TIMEDELTA_UNITS = ["Y", "D", "h", "s", "ms", "us", "ns", "as"]

NESTED = np.dtype([("a", "<i2", (2, 3)), ("b", [("x", "<f4"), ("y", "S2")]), ("c", "<U2")])

def _ints(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 7, 42], dtype=dtype)

def _floats(dtype):
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, np.nan, np.inf, -np.inf, info.max, info.min, info.tiny,
                     info.smallest_subnormal, 1 / 3, -2.5], dtype=dtype)

def _complex(dtype):
    return np.array([0, 1 + 2j, complex(np.nan, 1), complex(-np.inf, np.inf), -0.5j, 1e30],
                    dtype=dtype)

def _datetimes(unit):
    dtype = np.dtype(f"M8[{unit}]")
    values = np.array([0, 1, -1, 12345, -98765, 2 ** 40, -(2 ** 40)], dtype="i8").view(dtype)
    return np.concatenate([values, np.array(["NaT"], dtype=dtype)])

def _timedeltas(unit):
    dtype = np.dtype(f"m8[{unit}]")
    return np.concatenate([np.array([0, 1, -1, 2 ** 50, -7], dtype="i8").view(dtype),
                           np.array(["NaT"], dtype=dtype)])

def _strings(kind, width):
    words = ["", "a", "é" if kind == "U" else "b", "\U0001f600" if kind == "U" else "c",
             "xyz" * 20, "a b\tc", "a\x00b"]
    values = np.array([w[:width] for w in words], dtype=f"{kind}{width}")
    values[-2] = "z" * width  # full width
    return values

def case(dtype, values, dflt, marks=()):
    dtype = np.dtype(dtype)
    values = np.asarray(values, dtype=dtype)
    return pytest.param(dtype, values, dflt, id=str(dtype) if dtype.names is None
                        else "structured-" + "-".join(dtype.names), marks=marks)

SIMPLE_CASES = (
    [case(d, _ints(d), np.iinfo(d).max) for d in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]]
    + [case(d, _floats(d), -2.5) for d in ["f2", "f4", "f8"]]
    + [case("f8", _floats("f8"), np.nan), case("f4", _floats("f4"), -np.inf)]
    + [case(d, _complex(d), 1 - 2j) for d in ["c8", "c16"]]
    + [case("?", [True, False, False, True], True)]
    + [case(f"S{w}", _strings("S", w), b"q" * min(w, 2)) for w in [1, 3, 8, 64]]
    + [case(f"U{w}", _strings("U", w), "\u00e9" * min(w, 2)) for w in [1, 2, 7, 40]]
    + [case(f"M8[{u}]", _datetimes(u), np.array(3, f"M8[{u}]")) for u in DATETIME_UNITS]
    + [case("M8[s]", _datetimes("s"), np.datetime64("NaT", "s"))]
    + [case(f"m8[{u}]", _timedeltas(u), np.array(-5, f"m8[{u}]")) for u in TIMEDELTA_UNITS]
    + [case("m8[ns]", _timedeltas("ns"), np.timedelta64("NaT", "ns"))]
)
LONGDOUBLE_CASE = case("g", _floats("g"), 1.5)

STRUCTURED_CASES = [
    case("i4,f8", [(1, 2.5), (-3, np.nan), (0, -0.0)], (7, 1.5)),
    case("i2,S3,?", [(1, b"abc", True), (2, b"", False)], (9, b"zz", True)),
    case(NESTED, [(np.arange(6).reshape(2, 3), (1.5, b"ab"), "\u00e9x"),
                  (-np.ones((2, 3)), (np.nan, b""), "")],
         (np.full((2, 3), 4), (2.0, b"d"), "f")),
]

ATOM_CASES = [
    case("(3,)f8", np.arange(12.0).reshape(4, 3), 0.25),
    case("(2,2)i2", np.arange(16).reshape(4, 2, 2), -1),
    case("(2,)S4", [[b"ab", b"cdef"], [b"", b"x"]], b"q"),
    case("(2,3)M8[s]", np.arange(24).reshape(4, 2, 3), np.datetime64(9, "s")),
    case("(2,)c8", [[1j, 2], [3, np.nan]], 1 + 1j),
]

ALL_CASES = SIMPLE_CASES + [LONGDOUBLE_CASE] + STRUCTURED_CASES + ATOM_CASES

def as_rows(dtype, values):
    """The array to store: ``values`` as rows, atoms split off for subarray dtypes."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return np.asarray(values, dtype=base).reshape((-1,) + shape)
    return np.asarray(values, dtype=dtype)

def repeated(rows, n):
    """``rows`` cycled up to length ``n`` (several chunks plus a leftover)."""
    return rows[np.arange(n) % len(rows)]

def assert_exact(got, expected):
    """Same dtype, shape and bytes (NaN payloads, -0.0 and NaT included).

    Python scalars (bcolz returns ints and bools as such) take ``expected``'s dtype.
    """
    if isinstance(got, (int, float, bool)):
        got = np.asarray(got, dtype=expected.dtype)
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if expected.dtype.kind == "f" and expected.dtype.itemsize > 8:
        # x87 long doubles: 10 bytes of value, then padding numpy leaves as it finds it
        assert np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(expected))
        return
    assert got.tobytes() == expected.tobytes()

def dflt_rows(rows, dflt, n):
    fill = np.empty((n,) + rows.shape[1:], dtype=rows.dtype)
    fill[...] = np.asarray(dflt, dtype=rows.dtype) if rows.dtype.names is None else dflt
    return fill

@pytest.mark.parametrize("dtype,values,dflt", ALL_CASES)
def test_dtype_persists_exactly_and_grows_with_dflt(tmp_path, dtype, values, dflt):
    path = str(tmp_path / "a")
    rows = repeated(as_rows(dtype, values), 17)
    c = bcolz_store.carray(rows, chunklen=5, dflt=dflt, rootdir=path)
    assert_exact(c[:], rows)

    back = bcolz_store.carray(rootdir=path, mode="r")
    assert_exact(back[:], rows)
    assert back.dtype == rows.dtype and back.shape == rows.shape
    assert_exact(back.dflt, np.array(dflt, dtype=rows.dtype))
    assert_exact(np.asarray(back[3], dtype=rows.dtype), np.asarray(rows[3], dtype=rows.dtype))
    assert_exact(back[-1:], rows[-1:])

    again = bcolz_store.carray(rootdir=path, mode="a")
    again.resize(25)  # grows with dflt read back from meta/storage
    again.append(rows[:2])
    expected = np.concatenate([rows, dflt_rows(rows, dflt, 8), rows[:2]])
    again.flush()
    assert_exact(bcolz_store.carray(rootdir=path, mode="r")[:], expected)

@pytest.mark.parametrize("dtype,values,dflt", SIMPLE_CASES[::3] + STRUCTURED_CASES + ATOM_CASES)
def test_dtype_in_memory_grows_with_dflt(dtype, values, dflt):
    rows = as_rows(dtype, values)
    c = bcolz_store.carray(rows, chunklen=2, dflt=dflt)
    c.resize(len(rows) + 3)
    assert_exact(c[:], np.concatenate([rows, dflt_rows(rows, dflt, 3)]))

@pytest.mark.parametrize("dtype,values,dflt", SIMPLE_CASES[::4] + STRUCTURED_CASES[1:])
def test_dtype_setitem_persists(tmp_path, dtype, values, dflt):
    path = str(tmp_path / "a")
    rows = repeated(as_rows(dtype, values), 12)
    c = bcolz_store.carray(rows, chunklen=5, rootdir=path)
    expected = rows.copy()
    for key in [0, slice(3, 11, 2), np.array([11, 4])]:
        value = dflt_rows(rows, dflt, len(expected[key]) if not isinstance(key, int) else 1)
        value = value[0] if isinstance(key, int) else value
        c[key] = value
        expected[key] = value
    c.flush()
    assert_exact(bcolz_store.carray(rootdir=path)[:], expected)

def test_structured_fields_readable_by_name(tmp_path):
    path = str(tmp_path / "a")
    rows = np.array([(1, b"abc", True), (2, b"", False)], dtype="i2,S3,?")
    bcolz_store.carray(rows, rootdir=path)
    back = bcolz_store.carray(rootdir=path)
    assert back.dtype.names == ("f0", "f1", "f2")
    assert_array_equal(back[:]["f1"], [b"abc", b""])

# ------------------------------------------------------------ bcolz oracle

OTHER_CPARAMS = [
    dict(clevel=9, shuffle=bcolz_store.BITSHUFFLE, cname="zstd"),
    dict(clevel=0, shuffle=bcolz_store.NOSHUFFLE, cname="blosclz"),
    dict(clevel=3, shuffle=bcolz_store.SHUFFLE, cname="zlib"),
    dict(clevel=1, shuffle=bcolz_store.SHUFFLE, cname="lz4hc"),
]
#: every dtype with the default cparams; every codec with a few dtypes
ORACLE_CASES = (
    [pytest.param(*p.values, {}, id=p.id) for p in SIMPLE_CASES + ATOM_CASES]
    + [pytest.param(*p.values, cp, id=f"{p.id}-{cp['cname']}-{cp['shuffle']}-{cp['clevel']}")
       for cp in OTHER_CPARAMS for p in SIMPLE_CASES + ATOM_CASES
       if p.values[0].kind in "iSc" and p.values[0].itemsize in (1, 8)]
)

@pytest.mark.parametrize("dtype,values,dflt,cparams", ORACLE_CASES)
def test_bcolz_opens_what_we_wrote(tmp_path, dtype, values, dflt, cparams):
    bcolz = pytest.importorskip("bcolz")
    path = str(tmp_path / "a")
    rows = repeated(as_rows(dtype, values), 23)
    ours = bcolz_store.carray(rows, chunklen=6, dflt=dflt, rootdir=path,
                              cparams=bcolz_store.cparams(**cparams))
    # our chunk statistics sit beside bcolz's files, for every kind that has them
    has_stats = not dtype.shape and (dtype.kind in "biuMmSU" or
                                     dtype.kind == "f" and dtype.itemsize <= 8)
    assert os.path.isfile(os.path.join(path, "meta", "stats")) == has_stats
    theirs = bcolz.carray(rootdir=path, mode="r")
    assert_exact(theirs[:], rows)
    assert theirs.dtype == ours.dtype
    assert theirs.shape == ours.shape
    assert theirs.chunklen == ours.chunklen == 6
    assert (theirs.cparams.clevel, theirs.cparams.shuffle, theirs.cparams.cname) == \
        (ours.cparams.clevel, ours.cparams.shuffle, ours.cparams.cname)
    # bcolz keeps the JSON value of dflt; as an array of the dtype it must be ours
    assert_exact(np.asarray(theirs.dflt, dtype=rows.dtype.base), np.asarray(ours.dflt))
    assert (theirs.nbytes, theirs.cbytes) == (ours.nbytes, ours.cbytes)

@pytest.mark.parametrize("dtype,values,dflt", STRUCTURED_CASES)
def test_structured_dtypes_open_here_though_bcolz_cannot(tmp_path, dtype, values, dflt):
    bcolz = pytest.importorskip("bcolz")
    path = str(tmp_path / "a")
    rows = repeated(as_rows(dtype, values), 9)
    bcolz_store.carray(rows, chunklen=4, dflt=dflt, rootdir=path)
    with pytest.raises(TypeError):  # meta/storage holds a dtype string np.dtype() rejects
        bcolz.carray(rootdir=path, mode="r")
    assert_exact(bcolz_store.carray(rootdir=path, mode="r")[:], rows)

@pytest.mark.parametrize("dtype", ["i4", "f8", "S3", "U2", "?", "M8[ns]"])
def test_we_open_what_bcolz_wrote(tmp_path, dtype):
    bcolz = pytest.importorskip("bcolz")
    path = str(tmp_path / "a")
    rows = repeated(as_rows(np.dtype(dtype), SIMPLE_CASES_BY_DTYPE[np.dtype(dtype)]), 20)
    bcolz.carray(rows, chunklen=6, rootdir=path, mode="w").flush()
    ours = bcolz_store.carray(rootdir=path, mode="r")
    assert_exact(ours[:], rows)
    assert ours.chunklen == 6

SIMPLE_CASES_BY_DTYPE = {p.values[0]: p.values[1] for p in SIMPLE_CASES}

def test_bcolz_opens_our_ctable(tmp_path):
    bcolz = pytest.importorskip("bcolz")
    n = 30
    columns = {
        "i": np.arange(n, dtype="i4") - 7,
        "f": np.linspace(-1, 1, n),
        "b": np.arange(n) % 3 == 0,
        "s": np.array([b"s%d" % i for i in range(n)], dtype="S4"),
        "u": np.array(["\u00fc%d" % i for i in range(n)], dtype="U4"),
        "t": (np.arange(n) * 10 ** 9).astype("M8[ns]"),
        "a": np.arange(2 * n, dtype="u2").reshape(n, 2),
    }
    path = str(tmp_path / "t")
    t = bcolz_store.ctable(list(columns.values()), names=list(columns), rootdir=path,
                           chunklen=7)
    t.attrs["origin"] = "bcolz_store"
    t.flush()
    theirs = bcolz.ctable(rootdir=path, mode="r")
    assert list(theirs.names) == list(columns)
    assert len(theirs) == n
    assert theirs.attrs["origin"] == "bcolz_store"
    for name, values in columns.items():
        col = theirs[name]
        assert_exact(col[:], values)
        assert col.chunklen == 7
    assert set(columns) | {"__attrs__", "__rootdirs__"} <= set(os.listdir(path))
    # every column but the one of 2-d atoms carries our chunk statistics, which bcolz ignores
    assert {name for name in columns if os.path.isfile(os.path.join(path, name, "meta",
                                                                    "stats"))} == \
        set(columns) - {"a"}
