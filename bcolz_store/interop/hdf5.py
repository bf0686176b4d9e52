"""HDF5 (PyTables Table) <-> ctable.

PyTables is an optional extra (``pip install bcolz_store[hdf5]``); it is
imported only when these functions run, and its absence gives an
``ImportError`` that names the extra.

Rows travel in blocks (the Table's chunkshape when reading, the columns'
chunklen when writing), never one by one.  User attributes are copied both
ways.  PyTables limits what survives: unicode (``U``) columns come back as
ASCII bytes (``S``), and datetime64, timedelta64 and object columns cannot
be written at all.

Source: bcolz 1.x ``ctable.fromhdf5`` / ``tohdf5``.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import DatasetExistsError

__all__ = ["fromhdf5", "tohdf5"]

HDF5_EXTRA = "bcolz_store[hdf5]"


def _import_tables():
    try:
        import tables
    except ImportError as err:
        raise ImportError(f"PyTables is needed for HDF5 conversions; install it, "
                          f"e.g. `pip install {HDF5_EXTRA}`") from err
    return tables


def fromhdf5(table_class, filepath, nodepath="/ctable", **kwargs):
    """A ctable holding a PyTables Table (a compound HDF5 dataset).

    Parameters
    ----------
    table_class : type
        The ctable class to make (``ctable.fromhdf5`` passes its own).
    filepath : str
        The HDF5 file.
    nodepath : str, default '/ctable'
        The Table inside the file.
    names : list of str, optional
        Columns to take (default all, in the Table's order).
    kwargs
        Other ctable constructor parameters; ``expectedlen`` defaults to the
        number of rows.

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        When PyTables is not installed.
    OSError
        When the file cannot be opened.
    tables.NoSuchNodeError
        When ``nodepath`` is not in the file.
    """
    tb = _import_tables()
    with tb.open_file(os.fspath(filepath), mode="r") as h5:
        node = h5.get_node(nodepath)
        names = list(kwargs.pop("names", None) or node.colnames)
        kwargs.setdefault("expectedlen", max(len(node), 1))
        empty = [np.zeros(0, dtype=node.dtype.fields[name][0]) for name in names]
        table = table_class(empty, names, **kwargs)
        blen = node.chunkshape[0] if node.chunkshape else 65536
        for start in range(0, len(node), blen):
            block = node.read(start, min(start + blen, len(node)))
            table.append([block[name] for name in names])
        for key in node.attrs._f_list():
            table.attrs[key] = _jsonable(node.attrs[key])
    table.flush()
    return table


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def tohdf5(table, filepath, nodepath="/ctable", mode="w", cparams=None, cname=None):
    """Write ``table`` into an HDF5 file as a PyTables Table.

    Parameters
    ----------
    table : ctable
    filepath : str
        The HDF5 file.
    nodepath : str, default '/ctable'
        Where the Table goes (parent groups are created).
    mode : {'w', 'a'}, default 'w'
        'w' creates the file (refusing an existing one, as bcolz); 'a' adds
        the node to a file that may exist.
    cparams : cparams or dict, optional
        Compression level, shuffle and Blosc compressor (default
        ``bcolz_store.defaults.cparams``).
    cname : str, optional
        A PyTables compressor name (e.g. 'zlib'); default
        ``'blosc:' + cparams cname``.

    Raises
    ------
    ImportError
        When PyTables is not installed.
    DatasetExistsError
        With mode 'w' when ``filepath`` exists (an OSError, as bcolz's IOError).
    TypeError
        For datetime64, timedelta64 or object columns, which PyTables Tables
        cannot hold (nothing is written).

    Notes
    -----
    Compatibility: bcolz passed the compression level as the shuffle flag;
    the shuffle setting of ``cparams`` is used here.
    """
    tb = _import_tables()
    from ..chunks.cparams import cparams as cparams_cls
    filepath = os.fspath(filepath)
    unsupported = [n for n in table.names if table.cols[n].dtype.kind in "MmO"]
    if unsupported:
        raise TypeError(f"PyTables Tables cannot hold the datetime64/timedelta64/object "
                        f"columns {unsupported}; convert or drop them first")
    if mode == "w" and os.path.exists(filepath):
        raise DatasetExistsError(f"path '{filepath}' already exists")
    params = cparams_cls.from_any(cparams).to_dict() if not isinstance(cparams, dict) \
        else {**cparams_cls().to_dict(), **cparams}
    filters = tb.Filters(complevel=params["clevel"], shuffle=bool(params["shuffle"]),
                         complib=cname if cname is not None else "blosc:" + params["cname"])
    parent, name = os.path.split(nodepath.rstrip("/"))
    with tb.open_file(filepath, mode=mode) as h5:
        node = h5.create_table(parent or "/", name, table.dtype, filters=filters,
                               expectedrows=max(len(table), 1), createparents=True)
        for key, value in table.attrs:
            node.attrs[key] = value
        blen = min((table.cols[n].chunklen for n in table.names), default=65536)
        for start in range(0, len(table), blen):
            node.append(table[start:start + blen])
        node.flush()
