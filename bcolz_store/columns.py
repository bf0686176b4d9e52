"""The columns of a ctable: the ``cols`` accessor and the parsing of column input.

:class:`cols` keeps the names (``__rootdirs__``) and one carray per column,
each in the sub-folder named after the column and sharing the table's
dataset (its :class:`~bcolz_store.storage.dataset.DatasetStore`), so a
change to several columns is one commit.  The functions turn what a user
passes to ``ctable(...)`` or ``append`` into one value per column, and give
the row dtype of columns.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md for the layout
(``__rootdirs__`` as ``{"names": [...]}``, one carray rootdir per column).
"""

from __future__ import annotations

import contextlib

import numpy as np

from .carray import carray
from .errors import ColumnNotFoundError, DatasetNotFoundError, FormatError, ReadOnlyError
from .format.layout import ROOTDIRS_FILE
from .format.meta import load_json
from .format.names import assign_folders, check_name, dump_names, load_names
from .interop.pandas import fixed_columns
from .interop.pandas_columns import vlen_values
from .kinds.buffers import ArrowBuffers
from .options import OpenOptions

__all__ = ["cols", "column_field", "column_sources", "columns_of", "is_table", "row_dtype"]


def is_table(obj) -> bool:
    """Whether ``obj`` is a ctable (anything with a :class:`cols` accessor)."""
    return isinstance(getattr(obj, "cols", None), cols)


def is_dataframe(obj) -> bool:
    """Whether ``obj`` is a pandas DataFrame (checked without importing pandas)."""
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "columns")


class cols:
    """The columns of a ctable: ``t.cols['x']``, ``t.cols.x``, ``t.cols.names``.

    Iteration yields the names in column order.  Assigning ``t.cols[name] =
    data`` replaces a column (keeping its dtype and cparams) or adds one at
    the end; on disk ``__rootdirs__`` is rewritten after each change.

    Parameters
    ----------
    rootdir : str or None
        The table's rootdir (None in memory).
    mode : {'r', 'w', 'a'}
        The table's mode.
    store : DatasetStore, optional
        The table's dataset (None in memory): each column's store is its
        sub-folder of it.
    options : OpenOptions, optional
        The table's open options; the columns are opened with them, without
        the writer lock (the table holds it).

    Notes
    -----
    Compatibility: bcolz's ``cols`` accessor; attribute access
    (``t.cols.x``) is an addition.
    """

    def __init__(self, rootdir, mode, store=None, options=None):
        self.rootdir = rootdir
        self.mode = mode
        self.names = []
        self.dirs = {}          # name -> made-up folder (format/names.py)
        self._cols = {}
        self._store = store
        options = OpenOptions() if options is None else options
        self.options = options.replace(lock=False) if options.lock else options

    @property
    def allow_pickle(self) -> bool:
        """Whether the columns read pickled objects (the table's ``allow_pickle``)."""
        return self.options.allow_pickle

    # -- on-disk metadata
    def read_meta_and_open(self, reuse=None):
        """Read ``__rootdirs__`` and open every column.

        Parameters
        ----------
        reuse : dict, optional
            Open carrays by name; a column still listed is reloaded in place
            (callers may hold it) instead of opened anew.

        Raises
        ------
        DatasetNotFoundError
            When ``__rootdirs__`` or a column directory is missing.
        FormatError
            When ``__rootdirs__`` is malformed, names an unsafe column, or a
            column leads outside the rootdir (symlink).
        """
        store = self._store
        if not store.exists(ROOTDIRS_FILE):
            raise DatasetNotFoundError(
                f"{store.path(ROOTDIRS_FILE)}: missing, {self.rootdir} is not a ctable")
        where = store.path(ROOTDIRS_FILE)
        names, dirs = load_names(load_json(store.get(ROOTDIRS_FILE), where), where)
        reuse = reuse or {}
        self._cols = {}
        for name in names:
            folder = dirs.get(name, name)
            path = store.path(folder)
            store.check_column(folder)
            old = reuse.get(name)
            dataset = old.dataset if isinstance(old, carray) else None
            if dataset is not None and dataset.shares_commits_with(store) and \
                    dataset.prefix == folder + "/":
                old._read_meta()
                self._cols[name] = old
            else:
                # mode 'w' empties a carray on open: the table is already made
                column = carray(rootdir=path, mode="a" if self.mode == "w" else self.mode,
                                _store=store.sub(folder), options=self.options)
                column.mode = self.mode
                self._cols[name] = column
        self.names = list(names)
        self.dirs = dirs

    def as_dict(self):
        """``{name: carray}`` of every column (a new dict)."""
        return dict(self._cols)

    def folder(self, name) -> str:
        """The folder of column ``name``: the name itself, or a made-up one
        (format/names.py), given now to a new name and kept from then on."""
        name = check_name(name)
        if name not in self.dirs and name not in self.names:
            made = assign_folders(self.names + [name], self.dirs).get(name)
            if made is not None:
                self.dirs[name] = made
        return self.dirs.get(name, name)

    def column_store(self, name):
        """The store of column ``name`` (None in memory): it shares the table's journal."""
        return self._store.sub(self.folder(name)) if self._store is not None else None

    def column_rootdir(self, name):
        """Where column ``name`` is stored (None in memory)."""
        return self._store.path(self.folder(name)) if self._store is not None else None

    def common_length(self) -> int:
        """The length of every column (0 without columns).

        Raises
        ------
        FormatError
            When the columns have different lengths (a damaged table).
        """
        lengths = {name: len(self._cols[name]) for name in self.names}
        if len(set(lengths.values())) > 1:
            raise FormatError(f"{self.rootdir}: columns have different lengths {lengths}")
        return next(iter(lengths.values()), 0)

    def update_meta(self):
        """Stage ``__rootdirs__`` and commit (on-disk tables only)."""
        if self.rootdir:
            self.dirs = {n: self.dirs[n] for n in self.names if n in self.dirs}
            self._store.set(ROOTDIRS_FILE, dump_names(self.names, self.dirs))
            self._store.commit()

    # -- mapping interface
    def __getitem__(self, name):
        try:
            return self._cols[name]
        except KeyError:
            raise ColumnNotFoundError(f"{self.rootdir or 'ctable'}: column {name!r} does not "
                                      f"exist; the columns are {self.names}") from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.__dict__["_cols"][name]
        except KeyError:
            raise AttributeError(f"no column named {name!r}") from None

    def __contains__(self, name):
        return name in self._cols

    def __setitem__(self, name, value):
        if self.mode == "r":
            raise ReadOnlyError(f"{self.rootdir}: cannot set column {name!r} in mode 'r'")
        if self.names and len(value) != len(self._cols[self.names[0]]):
            raise ValueError(f"new column {name!r} has length {len(value)}, the ctable "
                             f"has {len(self._cols[self.names[0]])} rows")
        rootdir = self.column_rootdir(check_name(name)) if self.rootdir else None
        old = self._cols.get(name)
        if not isinstance(value, carray) and (old is None or old.vlen is None):
            dtype = None if old is None else old.dtype   # (the atom's shape comes with value)
            try:
                value = np.asarray(value, dtype=dtype)
            except (TypeError, ValueError) as err:
                raise ValueError(f"`{value!r}` cannot be converted into a column of "
                                 f"dtype {dtype}") from err
            if value.ndim == 0 or value.dtype.kind == "V" and value.dtype.names:
                raise ValueError(f"`{value!r}` cannot be converted into a carray column")
        # One operation, so one commit: the new column's files are written
        # where the old one's were, and the old column's appends not yet
        # staged are replaced too: the commit, deferred to the end of the
        # batch, stages the pending appends of the table's columns then, the
        # new column's (the old one's would be written over the new column's
        # leftover and ``meta/sizes``).
        with self._writing("setitem" if old is not None else "addcol"), self._batch():
            where = {"rootdir": rootdir, "mode": "w", "_store": self.column_store(name),
                     "options": self.options}
            if isinstance(value, carray):
                if rootdir and value.rootdir != rootdir:
                    value = value.copy(cparams=value.cparams, **where)
            elif old is not None and old.vlen is not None:   # items of any length, as before
                value = carray(value, dtype=old.category or old.vlen, cparams=old.cparams,
                               dflt=old.dflt, **where)
            else:                       # the old column's cparams and dflt are kept
                kept = {} if old is None else {"cparams": old.cparams, "dflt": old.dflt}
                value = carray(value, **where, **kept)
            if name not in self._cols:
                self.names.append(name)
            self._cols[name] = value
            self.update_meta()

    def _writing(self, op=None):
        if self._store is None:
            return contextlib.nullcontext()
        return self._store.operation(op)

    def _batch(self):
        if self._store is None:
            return contextlib.nullcontext()
        return self._store.batch()

    def __iter__(self):
        return iter(list(self.names))

    def __len__(self):
        return len(self.names)

    def insert(self, name, pos, column):
        """Put ``column`` (a carray) at position ``pos`` under ``name``."""
        self.names.insert(pos, name)
        self._cols[name] = column
        self.update_meta()

    def pop(self, name):
        """Remove the column ``name`` and return it."""
        self.names.remove(name)
        column = self._cols.pop(name)
        self.update_meta()
        return column

    def __str__(self):
        return "".join(f"{name} : {self._cols[name]}" for name in self.names)

    def __repr__(self):
        return "".join(f"{name} : {self._cols[name]!r}\n" for name in self.names)


def column_sources(columns, names):
    """The input columns of a new ctable, paired with validated names.

    Returns
    -------
    (list, list of str)
        The column values and their names.

    Raises
    ------
    ValueError
        Unsupported ``columns``, a non-structured or multidimensional
        array, names of another count, or bad or repeated names.
    """
    if is_table(columns):
        sources = [columns.cols[n] for n in columns.names]
        default = columns.names
    elif isinstance(columns, np.ndarray):
        if columns.dtype.names is None:
            raise ValueError("a numpy array as `columns` must be a structured array")
        if columns.ndim != 1:
            raise ValueError("only unidimensional shapes supported")
        sources = [columns[field] for field in columns.dtype.names]
        default = list(columns.dtype.names)
    elif isinstance(columns, (list, tuple)):
        sources = list(columns)
        default = [f"f{i}" for i in range(len(sources))]
    else:
        raise ValueError(f"`columns` input is not supported: {type(columns).__name__}")
    if names is None:
        names = default
    else:
        if isinstance(names, tuple):
            names = list(names)
        if not isinstance(names, list):
            raise ValueError("`names` can only be a list or tuple")
        if len(names) != len(sources):
            raise ValueError(f"`columns` and `names` must have the same length "
                             f"({len(sources)} columns, {len(names)} names)")
    names = [check_name(name) for name in names]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"column names must be unique: {twice!r} appears twice in {names}")
    return sources, names


def column_field(name, col) -> tuple:
    """The field of column ``col`` in a row: ``(name, dtype)``, with the atom's
    shape for a multidimensional column; items of variable length are
    ``object`` (or ``StringDType``) fields."""
    if col.ndim > 1:
        return (name, (col.dtype, col.shape[1:]))
    # (a vlen column's: object, as StringDType cannot be a field)
    return (name, np.dtype(object) if getattr(col, "vlen", None) is not None else col.dtype)


def make_rows(dtype: np.dtype, shape, names, values):
    """Rows of the structured ``dtype`` holding ``values`` (one array per field
    of ``names``): a ``numpy.ma.MaskedArray`` when any of them is masked (a
    nullable column's), its mask True in that field of a null item's row.

    numpy.ma names a field ``''`` ``f<i>`` (its position), so masked rows do
    too (``_f<i>`` where a column has that name already)."""
    masked = any(isinstance(column, np.ma.MaskedArray) for column in values)
    if masked:      # renamed before filling: rows of object fields cannot be viewed
        renamed = masked_row_dtype(dtype)
        field = dict(zip(dtype.names, renamed.names))
        dtype, names = renamed, [field[name] for name in names]
    out = np.empty(shape, dtype=dtype)
    for name, column in zip(names, values):
        out[name] = column.data if isinstance(column, np.ma.MaskedArray) else column
    if not masked:
        return out
    mask = np.zeros(shape, dtype=np.ma.make_mask_descr(out.dtype))
    for field, column in zip(out.dtype.names, values):
        if isinstance(column, np.ma.MaskedArray):
            mask[field] = np.ma.getmaskarray(column)
    return np.ma.MaskedArray(out, mask=mask)


def masked_row_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` with a field named ``''`` renamed ``f<i>`` as numpy.ma names it
    (``_f<i>``... where another field has that name): the dtype of rows that
    may be masked."""
    if "" not in dtype.names:
        return dtype
    names = list(dtype.names)
    for i, name in enumerate(names):
        if name == "":
            found = f"f{i}"
            while found in names:
                found = "_" + found
            names[i] = found
    return np.dtype({"names": names, "formats": [dtype.fields[n][0] for n in dtype.names],
                     "offsets": [dtype.fields[n][1] for n in dtype.names],
                     "itemsize": dtype.itemsize})


def row_dtype(columns, names=None) -> np.dtype:
    """The structured dtype of one row of ``columns`` (a :class:`cols`): the
    fields of ``names`` (default all columns), in that order."""
    fields = [column_field(name, columns[name])
              for name in (columns.names if names is None else names)]
    # the dict form keeps any name (the list form renames '' to 'f<i>')
    return np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields]})


def columns_of(columns, data) -> list:
    """The values of ``data`` for each of ``columns`` (a :class:`cols`), in
    column order (for ``append``).

    Raises
    ------
    ValueError
        Unsupported input, a wrong number of columns or values that do not
        convert to their column's dtype.
    """
    names = columns.names
    if is_table(data):
        source = data.names if all(n in data.cols for n in names) else None
        if source is None and len(data.names) != len(names):
            raise ValueError(f"cannot append a ctable with columns {data.names} "
                             f"to one with {names}")
        return [data.cols[n] for n in (names if source else data.names)]
    if is_dataframe(data):
        fixed = fixed_columns(data, names)
        values = []
        for name in names:                   # missing values of vlen columns: None
            if columns[name].nullable:      # the column's own conversion (NA: null)
                values.append(columns[name]._to_ndarray(data[name], None))
                continue
            found = vlen_values(data[name]) if columns[name].vlen is not None else None
            values.append(found[0] if found is not None else fixed(name))
        return values
    if isinstance(data, np.void) or (isinstance(data, np.ndarray) and data.dtype.names):
        arr = (data if isinstance(data, np.ma.MaskedArray) else np.asarray(data)).reshape(-1)
        fields = arr.dtype.names
        if not all(n in fields for n in names):
            if len(fields) != len(names):
                raise ValueError(f"cannot append fields {list(fields)} to columns {names}")
            return [arr[f] for f in fields]
        return [arr[n] for n in names]
    if isinstance(data, list) and data and all(isinstance(r, (tuple, np.void)) for r in data):
        if any(columns[n].nullable for n in names) and all(len(r) == len(names) for r in data):
            return [[r[i] for r in data] for i in range(len(names))]   # each column converts
        dtype = row_dtype(columns)
        try:
            rows = np.array([tuple(r) for r in data], dtype=dtype)
        except (TypeError, ValueError) as err:
            raise ValueError(f"rows cannot be converted to {dtype}: {err}") from err
        return [rows[n] for n in names]
    if isinstance(data, (list, tuple)):
        if len(data) != len(names):
            raise ValueError(f"expected {len(names)} column values, got {len(data)}")
        out = []
        row = isinstance(data, tuple) and all(   # one row: a list column's value is one item
            np.ndim(v) == len(columns[n].shape) - 1 for n, v in zip(names, data)
            if columns[n].listtype is None)
        for name, value in zip(names, data):
            col = columns[name]
            if row and col.listtype is not None:
                value, one = np.empty((), dtype=object), value
                value[()] = one
            if isinstance(value, (carray, ArrowBuffers)):      # (Arrow rows: the column's kind)
                out.append(value)
                continue
            if col.vlen is not None or col.nullable or col.listtype is not None:   # its own
                out.append(col._to_ndarray(value, None))
                continue
            if isinstance(value, np.ndarray) and value.dtype.kind == "V" and \
                    value.dtype.names:
                raise ValueError("`cols` elements cannot be of type void")
            atom = np.dtype((col.dtype, col.shape[1:]))
            try:
                arr = np.asarray(value, dtype=atom.base) if col.dtype.kind != "O" else \
                    _object_array(value)
            except (TypeError, ValueError) as err:
                raise ValueError(f"value for column {name!r} cannot be converted to "
                                 f"{atom}: {err}") from err
            if arr.shape == atom.shape:
                arr = arr.reshape((1,) + atom.shape)
            out.append(arr)
        return out
    raise ValueError(f"`cols` input is not supported: {type(data).__name__}")


def _object_array(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value.astype(object)
    if isinstance(value, (list, tuple)):
        out = np.empty(len(value), dtype=object)
        out[:] = list(value)
        return out
    out = np.empty(1, dtype=object)
    out[0] = value
    return out
