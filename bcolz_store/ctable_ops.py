"""Opening and reading a ctable: where it is, row indexing, rows as records.

Plain functions over the table's parts, given as their first arguments: its
columns (a :class:`~bcolz_store.columns.cols`), its length in rows, the
caller's frame (the variables an expression sees), the class that makes new
tables; then the method's arguments.  A function that is the work of a ctable
method says which; the method's own docstring
documents its arguments.  Row queries are in :mod:`bcolz_store.ctable_query`, changes in
:mod:`bcolz_store.ctable_edit`.

Source: bcolz 1.x ``ctable`` (``__getitem__`` keys and results, the errors
of opening).
"""

from __future__ import annotations

import builtins
import keyword
import os

import numpy as np

from .carray import carray
from .carray_ops import copy_dflt
from .columns import make_rows, masked_row_dtype, row_dtype
from .ctable_query import matching, table_variables
from .ctable_select import Selection
from .errors import DatasetExistsError, DatasetNotFoundError, TableNotFoundError
from .storage.urls import describe_rootdir, is_url, open_store

__all__ = ["as_rows", "check_found", "check_mode", "check_not_empty",
           "copy_table", "get_item", "locate", "resolve", "same_root"]

MODES = ("r", "w", "a")


def check_mode(mode) -> None:
    """Refuse a mode other than 'r', 'w', 'a' (ValueError)."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'r', 'w' or 'a', not {mode!r}")


def locate(root_arg, dataset, mode, storage_options) -> tuple:
    """Where a table is: ``(store, root_state)``.

    Parameters
    ----------
    root_arg : str, os.PathLike, Store or None
        The ``rootdir`` given (None: in memory).
    dataset : DatasetStore or None
        The dataset ``open()`` prepared, if any (it holds a table).
    mode : str or None
        The mode asked for ('r' opens the store read-only).
    storage_options : dict or None
        fsspec options for a URL.

    Returns
    -------
    tuple
        The :class:`~bcolz_store.storage.base.Store` (None in memory) and
        what is at the root: 'folder', 'other' or 'missing'.
    """
    if dataset is not None:
        return dataset.store, "folder"
    if root_arg is not None:
        store = open_store(root_arg, mode == "r", storage_options)
        return store, store.root_state()
    return None, "missing"


def check_found(rootdir, mode, root_state) -> None:
    """Refuse to open a table where there is none.

    Raises
    ------
    TableNotFoundError
        In mode 'r' (also a ``KeyError``, as in bcolz).
    DatasetNotFoundError
        In the other modes.
    """
    if root_state == "folder":
        return
    if mode == "r":
        raise TableNotFoundError("Disk-based ctable opened with `r`ead mode yet "
                                 f"`rootdir='{rootdir}'` does not exist")
    raise DatasetNotFoundError(f"{rootdir}: no ctable here (directory does not exist)")


def same_root(a, b) -> bool:
    """Whether the rootdirs ``a`` and ``b`` name the same place."""
    a, b = describe_rootdir(a), describe_rootdir(b)
    if is_url(a) or is_url(b):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.abspath(a) == os.path.abspath(b)


# ------------------------------------------------------------------ reading

def check_not_empty(names, what: str) -> None:
    """Refuse (KeyError) to ``what`` a table with no columns (``names`` empty)."""
    if not names:
        raise KeyError(f"cannot {what} a ctable with no columns")


def _rows(cols, values, n) -> np.ndarray:
    """A structured array of the columns' row dtype from per-column arrays."""
    return make_rows(row_dtype(cols), n, cols.names, values)


def _unknown_name(cols, frame, name: str) -> bool:
    """Whether ``name`` is a bare name that is neither a column nor a variable
    an expression could see (bcolz evaluated it, failing with NameError)."""
    return name.isidentifier() and not keyword.iskeyword(name) and name not in cols and \
        name not in table_variables(cols, {}, frame) and not hasattr(builtins, name)


def get_item(cols, length, frame, make_table, key, indexes=None):
    """t[key]: a column, rows, or the rows where an expression holds.  The work of
    :meth:`bcolz_store.ctable.__getitem__` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors.  A condition is planned (``indexes``: see
    :func:`bcolz_store.ctable_query.matching`)."""
    if isinstance(key, str) and key in cols:
        return cols[key]
    if isinstance(key, str):
        if _unknown_name(cols, frame, key.strip()):
            return cols[key.strip()]        # ColumnNotFoundError, listing the columns
        key = matching(cols, length, frame, key, {}, None, IndexError, indexes)
    check_not_empty(cols.names, "retrieve data from")
    if isinstance(key, Selection):
        return _rows(cols, [key.read(cols[name]) for name in cols.names], len(key))
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        values = [cols[name][key] for name in cols.names]
        if any(v is np.ma.masked for v in values):      # a null: a masked row
            i = int(key) + (length if key < 0 else 0)
            return _rows(cols, [cols[name][i:i + 1] for name in cols.names], 1)[0]
        dtype = row_dtype(cols)
        if any(cols[name].nullable for name in cols.names):    # (as a masked row's)
            dtype = masked_row_dtype(dtype)
        row = np.empty(1, dtype=dtype)
        row[0] = tuple(values)
        return row[0]
    if isinstance(key, slice):
        start, stop, step = key.indices(length)
        n = len(range(start, stop, step))
        return _rows(cols, [cols[name][key] for name in cols.names], n)
    if isinstance(key, tuple):
        if len(key) != 1:
            raise IndexError("multidimensional keys are not supported")
        return get_item(cols, length, frame, make_table, key[0], indexes)
    if isinstance(key, list):
        if not key:
            return np.empty(0, dtype=row_dtype(cols))
        if all(isinstance(k, str) for k in key):
            return make_table([cols[name] for name in key], list(key))
        try:
            key = np.array(key, dtype=np.int64)
        except (TypeError, ValueError) as err:
            raise IndexError("key cannot be converted to an array of indices") from err
    if hasattr(key, "dtype"):
        if key.dtype.type == np.bool_:
            return _take_mask(cols, length, key)
        if key.dtype.kind in "iu":
            idx = np.asarray(key[:] if isinstance(key, carray) else key)
            return _rows(cols, [cols[name][idx] for name in cols.names], idx.shape)
        raise IndexError("arrays used as indices must be integer (or boolean)")
    raise NotImplementedError(f"key not supported: {key!r}")


def _take_mask(cols, length, mask) -> np.ndarray:
    if len(mask) != length:
        raise IndexError(f"boolean array has length {len(mask)}, the ctable {length}")
    if isinstance(mask, carray):
        mask = mask[:]
    mask = np.asarray(mask)
    values = [cols[name][mask] for name in cols.names]
    return _rows(cols, values, int(np.count_nonzero(mask)))


def as_rows(dtype, value) -> np.ndarray:
    """``value`` as a structured array (or 0-d record) of ``dtype``.

    Raises
    ------
    ValueError
        When ``value`` does not convert.
    """
    if isinstance(value, (np.ndarray, np.void)) and value.dtype.names:
        value = np.asarray(value)
        out = np.empty(value.shape, dtype=dtype)
        out[...] = value
        return out
    try:
        if isinstance(value, list):
            value = [tuple(v) if isinstance(v, (list, np.void)) else v for v in value]
        return np.array(value, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot convert {value!r} to rows of {dtype}: {err}") from err


def resolve(root_arg, rootdir, dataset, columns, mode, storage_options) -> tuple:
    """Where a table is and the mode it gets: ``(store, root_state, mode)``.

    ``mode`` None: 'a' when something is at the rootdir, else 'w'; 'a' on a
    read-only store (a pack) with no ``columns`` becomes 'r'.

    Raises
    ------
    ValueError
        Neither ``columns`` nor a rootdir; a bad mode; ``columns`` with mode
        'a' or 'r' on an existing rootdir; ``columns`` with mode 'r'.
    """
    if rootdir is None and columns is None:
        raise ValueError("You should pass either a `columns` or a `rootdir` param"
                         " at very least")
    if mode is not None:
        check_mode(mode)
    store, root_state = locate(root_arg, dataset, mode, storage_options)
    exists = root_state != "missing"
    if mode is None:
        mode = "a" if exists else "w"
    if store is not None and store.readonly and exists and mode == "a" and columns is None:
        mode = "r"        # a pack: read-only, and says so
    if columns is not None and exists and mode != "w":
        raise ValueError(f"You cannot pass a `columns` param in '{mode}' mode: "
                         f"{rootdir} exists already (use mode 'w' to overwrite it)")
    if columns is not None and rootdir is not None and mode == "r":
        raise ValueError(f"{rootdir}: cannot create a ctable in mode 'r'")
    if columns is None and mode == "w":
        raise ValueError("You cannot open a ctable in 'w'rite mode without a `columns` param")
    return store, root_state, mode


def copy_table(cols, table_rootdir, make_table, **kwargs):
    """A copy of this table.  The work of :meth:`bcolz_store.ctable.copy` over the
    table's parts; its docstring (on the method) gives the
    arguments after the parts, the result and the errors."""
    target = kwargs.get("rootdir")
    if target and table_rootdir and same_root(target, table_rootdir):
        raise DatasetExistsError(f"rootdir cannot be the same during copies: {target}")
    names = kwargs.pop("names", cols.names)
    sortby = kwargs.pop("sortby", None)
    if sortby is not None:
        return make_table(sorted_columns(cols, sortby), names, **kwargs)
    if target:
        columns = [cols[n] for n in cols.names]
    else:
        ckwargs = {k: v for k, v in kwargs.items() if k not in ("rootdir", "mode")}
        columns = [cols[n].copy(**ckwargs) for n in cols.names]
    return make_table(columns, names, **kwargs)


def _sort_order(values: np.ndarray) -> np.ndarray:
    """The stable order that sorts ``values``, missing items (NaN, NaT, None)
    last."""
    if values.dtype.kind == "O" or getattr(values.dtype, "na_object", 0) is None:
        items = values.tolist()
        present = [i for i, v in enumerate(items) if v is not None]
        try:
            present.sort(key=items.__getitem__)
        except TypeError as err:
            raise TypeError(f"items of mixed types ({err})") from err
        return np.array(present + [i for i, v in enumerate(items) if v is None], dtype=np.int64)
    if values.ndim != 1 or values.dtype.kind in "cV":
        raise TypeError(f"cannot sort by a column of {values.dtype} items")
    return np.argsort(values, kind="stable")


def sorted_columns(cols, sortby) -> list:
    """The columns of ``cols`` as new carrays in memory, rows ordered by the
    column ``sortby`` (stably; missing items last); each column is read whole
    in its turn (see :meth:`bcolz_store.ctable.copy`).

    Raises
    ------
    KeyError
        ``sortby`` is not a column.
    TypeError
        A column of objects, complex numbers or structured items.
    """
    if not isinstance(sortby, str) or sortby not in cols:
        raise KeyError(f"sortby {sortby!r} is not a column of the ctable {cols.names}")
    key = cols[sortby]
    if not key._column.ordered_items:
        raise TypeError(f"cannot sort by column {sortby!r}: its items (lists, maps or structs) "
                        f"have no order")
    try:
        order = _sort_order(key[:])
    except TypeError as err:
        raise TypeError(f"cannot sort by column {sortby!r}: its items have no order "
                        f"({err})") from err
    out = []
    for name in cols.names:
        col = cols[name]
        text = col.category or col.vlen
        kind = text or col.column_type or col.listtype     # decimal, struct, list, map
        out.append(type(col)(col[:][order], dtype=kind if kind is not None else col.dtype,
                             cparams=col.cparams, chunklen=col.chunklen,
                             dflt=None if text is not None else copy_dflt(col)))
    return out
