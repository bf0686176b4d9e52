"""HDF5 files (PyTables Tables) <-> carray/ctable: the hdf5 format of :func:`.convert.convert`.

The Table itself is written and read by :mod:`.hdf5` (the code behind
``ctable.tohdf5`` and ``ctable.fromhdf5``); this module adds what a
conversion needs around it: a carray travels as a Table with one column
``data`` and the attribute ``bcolz_store_kind = 'carray'``, columns with
attrs are refused unless ``drop_attrs``, and an existing file is replaced
only with ``overwrite``.

Kept apart from :mod:`.hdf5` because it builds carrays and ctables: the
ctable class imports :mod:`.hdf5`, so that module must not import
``bcolz_store`` back.
"""

from __future__ import annotations

import os

import bcolz_store
from bcolz_store.errors import DatasetExistsError

from ._common import check_attrs_kept, columns_of, kind_of, require
from .hdf5 import fromhdf5, tohdf5

__all__ = ["HDF5_KIND_ATTR", "read_hdf5", "write_hdf5"]

HDF5_KIND_ATTR = "bcolz_store_kind"


def write_hdf5(obj, path, *, nodepath="/ctable", drop_attrs=False, overwrite=False,
               progress=None):
    """Write a carray or ctable as a PyTables Table (via :func:`.hdf5.tohdf5`).

    Parameters
    ----------
    obj : carray or ctable
        A carray becomes a Table with one column ``data`` and the attribute
        ``bcolz_store_kind = 'carray'``, which :func:`read_hdf5` reads back.
    path : str or os.PathLike
    nodepath : str, default '/ctable'
    drop_attrs : bool, default False
        Convert even when columns have attrs (a Table column has none).
    overwrite : bool, default False
        Replace an existing file.
    progress : bool or None
        Ignored (PyTables writes in one call).

    Raises
    ------
    ImportError
        When PyTables is not installed (``pip install bcolz_store[hdf5]``).
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For unicode (U) columns (PyTables stores them as ASCII bytes,
        corrupting non-ASCII text) and for datetime64, timedelta64 and object
        columns (PyTables Tables cannot hold them).
    ValueError
        When columns have attrs and ``drop_attrs`` is False.
    """
    path = os.fspath(path)
    unicode = [name for name, col in columns_of(obj) if col.dtype.kind == "U"]
    if unicode:
        raise TypeError(f"HDF5 (PyTables) cannot hold the unicode columns {unicode}: it "
                        f"stores them as ASCII bytes and corrupts other text; convert them "
                        f"to bytes (S) first")
    check_attrs_kept(obj, drop_attrs, "HDF5 (a PyTables Table column)", table=False)
    if overwrite and os.path.isfile(path):
        os.unlink(path)
    table = obj
    if kind_of(obj) == "carray":
        table = bcolz_store.ctable(columns=[obj], names=["data"])
        for key, value in obj.attrs:
            table.attrs[key] = value
        table.attrs[HDF5_KIND_ATTR] = "carray"
    tohdf5(table, path, nodepath=nodepath, mode="w")


def read_hdf5(path, rootdir=None, mode="w", *, nodepath="/ctable", progress=None, **kwargs):
    """Read a PyTables Table into a ctable (or the carray :func:`write_hdf5` wrote).

    Parameters
    ----------
    path : str or os.PathLike
    rootdir : str or os.PathLike, optional
        Where to store the result (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    nodepath : str, default '/ctable'
    progress : bool or None
        Ignored.
    kwargs
        Other ctable/carray constructor parameters.

    Returns
    -------
    ctable, or carray when the Table has ``bcolz_store_kind = 'carray'``.

    Raises
    ------
    ImportError
        When PyTables is not installed.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    OSError, tables.NoSuchNodeError
        As :func:`.hdf5.fromhdf5`.
    """
    tables = require("tables", "hdf5", "HDF5 conversions")
    if rootdir is not None and mode == "a" and os.path.lexists(rootdir):
        raise DatasetExistsError(f"{rootdir}: exists; use mode 'w' to replace it")
    with tables.open_file(os.fspath(path), mode="r") as h5:
        node = h5.get_node(nodepath)
        kind = node.attrs[HDF5_KIND_ATTR] if HDF5_KIND_ATTR in node.attrs._f_list() else None
    if kind != "carray":
        target = {} if rootdir is None else {"rootdir": os.fspath(rootdir), "mode": "w"}
        return fromhdf5(bcolz_store.ctable, path, nodepath, **target, **kwargs)
    table = fromhdf5(bcolz_store.ctable, path, nodepath)      # in memory, compressed
    data = table.cols["data"]
    target = {} if rootdir is None else {"rootdir": os.fspath(rootdir), "mode": "w"}
    out = data.copy(**target, **kwargs)
    for key, value in table.attrs:
        if key != HDF5_KIND_ATTR:
            out.attrs[key] = value
    out.flush()
    return out
