"""Every write refused in mode 'r' says which dataset refused it."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import ReadOnlyError


@pytest.fixture
def stored(tmp_path):
    c = bcolz.carray(np.arange(10), rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    t = bcolz.ctable([np.arange(3), np.arange(3.0)], names=["a", "b"],
                     rootdir=str(tmp_path / "t"), mode="w")
    t.flush()
    return str(tmp_path / "c"), str(tmp_path / "t")


CARRAY_WRITES = {
    "resize": lambda c: c.resize(20),
    "append": lambda c: c.append([1, 2]),
    "setitem": lambda c: c.__setitem__(0, 5),
    "trim": lambda c: c.trim(1),
    "set attr": lambda c: c.attrs.__setitem__("x", 1),
    "del attr": lambda c: c.attrs.__delitem__("x"),
    "flush": lambda c: c.flush(),
    "purge": lambda c: c.purge(),
    "reshape": lambda c: c.reshape((5, 2)),
}

CTABLE_WRITES = {
    "resize": lambda t: t.resize(5),
    "append": lambda t: t.append((1, 2.0)),
    "setitem": lambda t: t.__setitem__(0, (5, 5.0)),
    "trim": lambda t: t.trim(1),
    "set attr": lambda t: t.attrs.__setitem__("x", 1),
    "addcol": lambda t: t.addcol(np.arange(3), "z"),
    "delcol": lambda t: t.delcol("a"),
    "column append": lambda t: t.cols["a"].append([3]),
    "column resize": lambda t: t.cols["a"].resize(1),
    "column attr": lambda t: t.cols["a"].attrs.__setitem__("x", 1),
}


@pytest.mark.parametrize("write", sorted(CARRAY_WRITES))
def test_carray_refusal_names_the_rootdir(stored, write):
    rootdir = stored[0]
    c = bcolz.open(rootdir, mode="r")
    with pytest.raises(ReadOnlyError) as info:
        CARRAY_WRITES[write](c)
    assert rootdir in str(info.value)
    assert "'r'" in str(info.value)
    assert bcolz.open(rootdir, mode="r")[:].tolist() == list(range(10))


@pytest.mark.parametrize("write", sorted(CTABLE_WRITES))
def test_ctable_refusal_names_the_rootdir(stored, write):
    rootdir = stored[1]
    t = bcolz.open(rootdir, mode="r")
    with pytest.raises(ReadOnlyError) as info:
        CTABLE_WRITES[write](t)
    assert rootdir in str(info.value)
    assert bcolz.open(rootdir, mode="r")["a"][:].tolist() == [0, 1, 2]


def test_in_memory_refusal_says_in_memory():
    c = bcolz.carray(np.arange(3), mode="r")
    with pytest.raises(ReadOnlyError, match="in-memory carray"):
        c.append([1])
