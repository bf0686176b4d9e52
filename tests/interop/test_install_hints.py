"""The install hint of a missing optional library: one a shell runs as it is
(the extra quoted, since zsh expands ``[...]``), from a library error."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import MissingDependencyError
from bcolz_store.interop.optional import require


def test_require_quotes_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr", None)      # import now raises ImportError
    with pytest.raises(MissingDependencyError) as info:
        require("zarr", "zarr", "zarr conversions")
    assert "`pip install 'bcolz_store[zarr]'`" in str(info.value)
    monkeypatch.setitem(sys.modules, "somelib", None)
    with pytest.raises(MissingDependencyError, match="`pip install somelib`"):
        require("somelib.sub", None, "something")


def test_hdf5_without_pytables_names_the_quoted_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tables", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'bcolz_store\[hdf5\]'"):
        bcolz.ctable.fromhdf5(str(tmp_path / "x.h5"))
    t = bcolz.ctable([np.arange(3)], names=["a"])
    with pytest.raises(MissingDependencyError, match=r"pip install 'bcolz_store\[hdf5\]'"):
        t.tohdf5(str(tmp_path / "y.h5"))


def test_pandas_missing_names_the_quoted_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    t = bcolz.ctable([np.arange(3)], names=["a"])
    with pytest.raises(MissingDependencyError, match=r"pip install 'bcolz_store\[pandas\]'"):
        t.todataframe()


def test_dask_and_fsspec_missing_are_library_errors_naming_the_quoted_extra(monkeypatch):
    from bcolz_store.interop.dask import import_dask
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'bcolz_store\[dask\]'"):
        import_dask("dask.array")
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'bcolz_store\[s3\]'"):
        bcolz.open("memory://nothing/here")


def test_numexpr_missing_names_the_quoted_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "numexpr", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'bcolz_store\[query\]'"):
        bcolz.eval("a + 1", vm="numexpr", user_dict={"a": np.arange(3)})
