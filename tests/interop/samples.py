"""Small datasets for the conversion tests, and how to compare them.

Lengths cover the edges with CHUNKLEN 16: 0, 1, and 2 * CHUNKLEN + 1 (two full
chunks and a leftover)."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_array_equal

import bcolz_store as bcolz

CHUNKLEN = 16
LENGTHS = (0, 1, 2 * CHUNKLEN + 1)
TABLE_ATTRS = {"source": "tests", "nested": {"a": [1, 2.5, None]}}
KINDS = ("carray", "carray2d", "ctable")


def table_columns(n: int) -> dict:
    """int/float/bool/datetime64/fixed-width string columns, with a NaT."""
    when = np.datetime64("2021-06-01T00", "h") + np.arange(n)
    stamps = np.datetime64("2021-06-01", "ns") + np.arange(n) * 3_600_000_000_123
    if n:
        stamps[0] = np.datetime64("NaT")
    return {
        "i": np.arange(n, dtype="i4") - 10,
        "x": np.linspace(-1.0, 1.0, n),
        "b": np.arange(n) % 3 == 0,
        "t": stamps,
        "h": when,
        "s": np.array([b"b%d" % i for i in range(n)], dtype="S7"),
        "w": np.array(["\u00fc%d" % i for i in range(n)], dtype="U5"),
    }


def make(kind: str, n: int, rootdir=None, columns=None):
    """A carray, a carray of (2, 3) int16 rows, or a ctable, with attrs."""
    where = {} if rootdir is None else {"rootdir": str(rootdir), "mode": "w"}
    if kind == "carray":
        obj = bcolz.carray(np.arange(n, dtype="f8") * 0.5, chunklen=CHUNKLEN, **where)
    elif kind == "carray2d":
        obj = bcolz.carray(np.arange(n * 6, dtype="i2").reshape(n, 2, 3), chunklen=CHUNKLEN,
                           **where)
    else:
        cols = table_columns(n)
        names = list(columns or cols)
        obj = bcolz.ctable(columns=[cols[c] for c in names], names=names, chunklen=CHUNKLEN,
                           **where)
    for key, value in TABLE_ATTRS.items():
        obj.attrs[key] = value
    obj.flush()
    return obj


def assert_same(back, orig, attrs=True, kind=True) -> None:
    """Same kind, dtype, shape, values (NaT included) and attrs."""
    if kind:
        assert type(back).__name__ == type(orig).__name__
    assert back.dtype == orig.dtype
    assert len(back) == len(orig)
    if isinstance(orig, bcolz.ctable):
        assert back.names == orig.names
        for name in orig.names:
            assert_array_equal(back.cols[name][:], orig.cols[name][:], err_msg=name)
    else:
        assert back.shape == orig.shape
        assert_array_equal(back[:], orig[:])
    if attrs:
        assert back.attrs.getall() == orig.attrs.getall()
