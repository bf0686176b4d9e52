"""HDF5 files (PyTables Tables) <-> carray/ctable: the hdf5 format of :func:`.hub.convert`.

The Table itself is written and read by :mod:`bcolz_store.interop.hdf5` (the code behind
``ctable.tohdf5`` and ``ctable.fromhdf5``); this module adds what a
conversion needs around it: a carray travels as a Table with one column
``data`` and the attribute ``bcolz_store_kind = 'carray'``, columns with
attrs are refused unless ``drop_attrs``, an existing file is replaced only
with ``overwrite``, and an HDF5 array (Array, CArray, EArray) written by
others is read as a carray.

Kept apart from :mod:`bcolz_store.interop.hdf5` because it builds carrays and ctables: the
ctable class imports :mod:`bcolz_store.interop.hdf5`, so that module must not import
``bcolz_store`` back.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import bcolz_store
from bcolz_store.errors import (DatasetExistsError, DatasetNotFoundError, FormatError,
                                NodeKindError)

from ..interop.columns import BLOCK_BYTES, columns_of, kind_of
from ._common import refuse_arrow_kinds, Sink, check_attrs_kept, progress_bar
from .base import Converter, register_converter, require
from ..interop.hdf5 import fromhdf5, hdf5_attrs, plain_attr, reading_hdf5, tohdf5

__all__ = ["HDF5_KIND_ATTR", "Hdf5Converter", "read_hdf5", "write_hdf5"]

HDF5_KIND_ATTR = "bcolz_store_kind"


def write_hdf5(obj, path, *, nodepath="/ctable", drop_attrs=False, overwrite=False,
               progress=None):
    """Write a carray or ctable as a PyTables Table (via :func:`bcolz_store.interop.hdf5.tohdf5`).

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
        When PyTables is not installed (``pip install 'bcolz_store[hdf5]'``).
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For unicode (U) columns (PyTables stores them as ASCII bytes,
        corrupting non-ASCII text) and for datetime64, timedelta64 and object
        columns (PyTables Tables cannot hold them).
    ValueError
        When columns have attrs and ``drop_attrs`` is False.
    """
    refuse_arrow_kinds(obj, "HDF5")
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
        table.attrs.update({**dict(obj.attrs), HDF5_KIND_ATTR: "carray"})
    tohdf5(table, path, nodepath=nodepath, mode="w")


_PROBE = ("import sys; from bcolz_store.converters.hdf5_io import probe_hdf5; "
          "probe_hdf5(sys.argv[1], sys.argv[2])")


def probe_hdf5(path, nodepath) -> None:
    """Read all of ``nodepath`` (attributes and rows, block by block) and
    nothing else: what :func:`read_hdf5` runs in a child process first, so
    that a file that crashes libhdf5 kills the child, not the caller.

    Raises
    ------
    Exception
        Whatever reading raises (the caller reads again and reports it).
    """
    tables = require("tables", "hdf5", "HDF5 conversions")
    with reading_hdf5(path, tables), tables.open_file(path, mode="r") as h5:
        node = h5.get_node(nodepath)
        for key in node.attrs._f_list("all"):
            node.attrs[key]
        nrows = int(node.shape[0]) if node.shape else 0
        rowbytes = max(int(np.prod(node.shape[1:], dtype=object)) * node.dtype.itemsize, 1) \
            if node.shape else 1
        blen = max(1, BLOCK_BYTES // rowbytes)
        for start in range(0, nrows, blen):
            node.read(start, min(start + blen, nrows))


def _isolated_check(path: str, nodepath: str) -> None:
    """Run :func:`probe_hdf5` in a child process; FormatError when the child
    dies of a signal (libhdf5 crashed on the file)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", _PROBE, path, nodepath], env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False)
    if proc.returncode < 0:
        raise FormatError(f"HDF5 file '{path}': reading node {nodepath!r} crashed the HDF5 "
                          f"library (signal {-proc.returncode}, in a child process); the file "
                          f"is damaged")


def read_hdf5(path, rootdir=None, mode="w", *, nodepath="/ctable", drop_attrs=False,
              progress=None, isolate=True, **kwargs):
    """Read an HDF5 node into a ctable or a carray.

    A PyTables Table becomes a ctable (or the carray :func:`write_hdf5`
    wrote); an Array, CArray or EArray (an HDF5 dataset that is not a
    compound table) becomes a carray of its dtype and shape, read block by
    block along its first dimension.  The node's attributes become attrs.

    Parameters
    ----------
    path : str or os.PathLike
    rootdir : str or os.PathLike, optional
        Where to store the result (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    nodepath : str, default '/ctable'
        The node inside the file (``bcolz-store convert --node``).
    drop_attrs : bool, default False
        Leave the node's attributes behind (needed when one holds a value
        that attrs, which are JSON, cannot hold, such as bytes).
    progress : bool or None
        A progress bar on stderr for an array (None: when stderr is a
        terminal).
    isolate : bool, default True
        Read the node once in a child process first, so that a damaged file
        that crashes libhdf5 (a segmentation fault) is a FormatError, not
        the end of this process.  It costs a second read of the node and a
        Python start (docs/converting.md gives figures); pass False for
        files you trust.
    kwargs
        Other ctable/carray constructor parameters.

    Returns
    -------
    ctable, or carray for an array node or a Table with
    ``bcolz_store_kind = 'carray'``.

    Raises
    ------
    ImportError
        When PyTables is not installed.
    DatasetNotFoundError
        When ``path`` is not a file, or the file has no node ``nodepath``
        (the message lists the nodes it has).
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    NodeKindError
        When the node is a group (a TypeError).
    TypeError
        When the node is an array of a type a carray cannot hold
        (variable-length arrays, objects).
    ValueError
        A 0-d array node, or an attribute that attrs cannot hold (named in
        the message) without ``drop_attrs``.
    FormatError
        A file that is not HDF5, is damaged (a read that crashes libhdf5
        included, with ``isolate``), or holds a pickled attribute (never
        unpickled; see :func:`bcolz_store.interop.hdf5.fromhdf5`).
    OSError
        As :func:`bcolz_store.interop.hdf5.fromhdf5`.
    """
    tables = require("tables", "hdf5", "HDF5 conversions")
    if rootdir is not None and mode == "a" and os.path.lexists(rootdir):
        raise DatasetExistsError(f"{rootdir}: exists; use mode 'w' to replace it")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DatasetNotFoundError(f"{path}: no such file")
    if isolate:
        _isolated_check(path, nodepath)
    with reading_hdf5(path, tables), tables.open_file(path, mode="r") as h5:
        node = _node(tables, h5, path, nodepath)
        if isinstance(node, tables.Array):
            return _read_array(node, path, rootdir, mode, drop_attrs, progress, kwargs)
        kind = plain_attr(node, HDF5_KIND_ATTR, path) if HDF5_KIND_ATTR in node.attrs._f_list() \
            else None
    target = {} if rootdir is None else {"rootdir": os.fspath(rootdir), "mode": "w"}
    if kind != "carray":
        return fromhdf5(bcolz_store.ctable, path, nodepath, **target, drop_attrs=drop_attrs,
                        **kwargs)
    table = fromhdf5(bcolz_store.ctable, path, nodepath, drop_attrs=drop_attrs)
    data = table.cols["data"]
    out = data.copy(**target, **kwargs)
    out.attrs.update({key: value for key, value in table.attrs if key != HDF5_KIND_ATTR})
    out.flush()
    return out


def _node(tables, h5, path: str, nodepath: str):
    """The node ``nodepath`` of an open file: a Table or an Array."""
    try:
        node = h5.get_node(nodepath)
    except tables.NoSuchNodeError:
        leaves = [n._v_pathname for n in h5.walk_nodes("/")
                  if isinstance(n, (tables.Table, tables.Array))]
        shown = ", ".join(leaves[:20]) + (", ..." if len(leaves) > 20 else "")
        raise DatasetNotFoundError(f"{path}: no node {nodepath!r} in the HDF5 file (it holds "
                                   f"{shown or 'no table or array'}; pick one with nodepath=, "
                                   f"bcolz-store convert --node PATH)") from None
    if isinstance(node, (tables.Table, tables.Array)):
        return node
    raise NodeKindError(f"{path}: node {nodepath!r} is a {type(node).__name__}, not a Table or "
                        f"an array (Array, CArray, EArray); name one of its children")


def _read_array(node, path, rootdir, mode, drop_attrs, progress, kwargs):
    """An Array/CArray/EArray node as a carray, block by block along the first axis."""
    where = f"{path}: node {node._v_pathname!r}"
    dtype = np.dtype(node.dtype)
    order = {"big": ">", "little": "<"}.get(getattr(node, "byteorder", None))
    if order is not None and dtype.byteorder not in "|":
        dtype = dtype.newbyteorder(order)        # the file's order (PyTables reads native)
    if dtype.hasobject or node.shape is None:
        raise TypeError(f"{where}: a {type(node).__name__} of {dtype} (objects) has no carray "
                        f"dtype")
    if len(node.shape) == 0:
        raise ValueError(f"{where}: a 0-d array has no rows")
    atom = np.dtype((dtype, tuple(node.shape[1:]))) if len(node.shape) > 1 else dtype
    attrs = {} if drop_attrs else hdf5_attrs(node, path)
    nrows = int(node.shape[0])
    rowbytes = max(atom.itemsize, 1)
    unit = int(node.chunkshape[0]) if node.chunkshape else 1
    blen = max(unit, BLOCK_BYTES // rowbytes // unit * unit)
    with Sink("carray", {"data": atom}, rootdir, mode, expectedlen=nrows, **kwargs) as sink, \
            progress_bar(progress, nrows, f"from {os.path.basename(path)}") as bar:
        for start in range(0, nrows, blen):
            block = np.asarray(node[start:min(start + blen, nrows)], dtype=dtype)
            sink.append([block])
            bar.update(len(block))
        return sink.finish(attrs)


@register_converter
class Hdf5Converter(Converter):
    """HDF5 files, a PyTables Table (:func:`read_hdf5`, :func:`write_hdf5`);
    column attrs are refused unless ``drop_attrs``."""

    name = "hdf5"
    suffixes = (".h5", ".hdf5")
    description = "HDF5 (a PyTables Table)"
    extra = "hdf5"
    requires = "tables"
    keeps_column_attrs = False
    read = staticmethod(read_hdf5)
    write = staticmethod(write_hdf5)
