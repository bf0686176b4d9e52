"""The changes of a ctable: ``append``, ``trim``, ``resize``, ``addcol``,
``delcol`` and row assignment.

:class:`CtableEdits` is a mixin of :class:`bcolz_store.ctable.ctable`.  Each
method is one table operation: on disk its changes to every column and to
``__rootdirs__`` are one commit, and when it fails the table returns to its
last committed state (``ctable._writing``).

Source: bcolz 1.x ``ctable`` (the methods' signatures and checks).
"""

from __future__ import annotations

import shutil
import sys

import numpy as np

from .carray import carray
from .columns import columns_of
from .format.layout import check_column_name

__all__ = ["CtableEdits"]


class CtableEdits:
    """Appending, trimming, resizing, adding and removing columns, and
    assigning rows of a ctable (a mixin)."""

    def append(self, cols):
        """Append rows.

        Parameters
        ----------
        cols : tuple, list, numpy record/structured array, ctable or DataFrame
            One row as a tuple of scalars; columns as a tuple or list of
            arrays, carrays or lists (one per column, all of one length);
            rows as a list of tuples or a structured array (matched by field
            name, else by position); another ctable (by column name); or a
            pandas DataFrame (by column name).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Unsupported input, a wrong number of columns, values that do not
            convert, or columns of different lengths.  Nothing is appended
            then.

        Notes
        -----
        Compatibility: bcolz's inputs; a list of tuples, read here as rows,
        was read by bcolz as columns.
        """
        self._check_writable("append")
        values = columns_of(self, cols)
        lengths = {len(v) for v in values}
        if len(lengths) > 1:
            raise ValueError("all cols in `cols` must have the same length")
        prepared = [self.cols[name]._prepare_append(value)
                    for name, value in zip(self.names, values)]
        with self._writing("append"):
            for name, value in zip(self.names, prepared):
                self.cols[name]._append_prepared(value)
            if self.auto_flush:
                self.flush()

    def trim(self, nitems):
        """Remove the last ``nitems`` rows.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            If ``nitems`` exceeds the length.
        """
        self._check_writable("trim")
        if nitems > self.len:
            raise ValueError(f"cannot trim {nitems} rows from a ctable of {self.len}")
        with self._writing("trim"):
            for name in self.names:
                self.cols[name].trim(nitems)
        self._len -= nitems

    def resize(self, nitems):
        """Make the table ``nitems`` rows long, filling new rows with each column's dflt.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable("resize")
        with self._writing("resize"):
            for name in self.names:
                self.cols[name].resize(nitems)
        self._len = nitems

    def addcol(self, newcol, name=None, pos=None, move=False, **kwargs):
        """Add a column.

        Parameters
        ----------
        newcol : carray, ndarray, list or tuple
            The values, one per row.  A carray's values (and vlen or
            categorical type) are taken, not its ``dflt``, ``chunklen`` or
            cparams, as in bcolz: ``kwargs`` set those (an on-disk carray
            moved or copied into an on-disk table keeps them).
        name : str, optional
            Default ``'f<pos>'``.
        pos : int, optional
            Position among the columns (default: last).
        move : bool, default False
            For an on-disk carray added to an on-disk table: move its
            directory into the table instead of copying it.
        kwargs
            carray constructor parameters for the new column (default
            cparams: the table's).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            A bad ``pos`` or ``name``, an existing name, a length other than
            the table's, or an unsupported type.
        """
        self._check_writable("add a column")
        if pos is None:
            pos = len(self.names)
        elif not isinstance(pos, (int, np.integer)) or isinstance(pos, bool) \
                or not 0 <= pos <= len(self.names):
            raise ValueError(f"`pos` must be an int in 0..{len(self.names)}, not {pos!r}")
        pos = int(pos)
        name = f"f{pos}" if name is None else check_column_name(name)
        if name in self.names:
            raise ValueError(f"'{name}' column already exists")
        if not isinstance(newcol, (carray, np.ndarray, list, tuple)):
            raise ValueError(f"`newcol` type not supported: {type(newcol).__name__}")
        if len(newcol) != self.len:
            raise ValueError(f"`newcol` has length {len(newcol)}, the ctable {self.len}")
        col_rootdir = None
        if self.rootdir is not None:
            col_rootdir = self.cols.column_rootdir(name)
            kwargs.setdefault("rootdir", col_rootdir)
            kwargs.setdefault("mode", "w")
        kwargs.setdefault("cparams", self.cparams)
        store = self.cols.column_store(name)
        if store is not None and kwargs.get("rootdir") == col_rootdir:
            kwargs["_store"] = store
        with self._writing("addcol"):
            if isinstance(newcol, carray) and col_rootdir and newcol.rootdir is not None:
                if move and newcol._store.local_root and self._store.local_root:
                    if newcol.mode != "r":
                        newcol.flush()
                    shutil.move(newcol.rootdir, col_rootdir)
                    self._store.adopt(name + "/")
                    newcol = carray(rootdir=col_rootdir, mode="a", _store=store)
                else:
                    newcol = newcol.copy(rootdir=col_rootdir, mode="w", _store=store)
            else:
                newcol = carray(newcol, **kwargs)
            self.cols.insert(name, pos, newcol)
            if self.auto_flush:
                self.flush()

    def delcol(self, name=None, pos=None, keep=False):
        """Remove a column, by ``name`` or by ``pos`` (not both).

        Parameters
        ----------
        name : str, optional
        pos : int, optional
        keep : bool, default False
            For on-disk tables: leave the column's directory on disk.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Neither or both of ``name`` and ``pos``, an unknown name, or a
            position out of range.
        """
        self._check_writable("remove a column")
        if name is None and pos is None:
            raise ValueError("specify either a `name` or a `pos`")
        if name is not None and pos is not None:
            raise ValueError("you cannot specify both a `name` and a `pos`")
        if name is not None:
            if not isinstance(name, str):
                raise ValueError("`name` must be a string")
            if name not in self.names:
                raise ValueError(f"`name` {name!r} not found in columns {self.names}")
        else:
            if not isinstance(pos, (int, np.integer)) or isinstance(pos, bool) \
                    or not 0 <= pos < len(self.names):
                raise ValueError(f"`pos` must be an int in 0..{len(self.names) - 1}, "
                                 f"not {pos!r}")
            name = self.names[int(pos)]
        self._len = self.len
        with self._writing("delcol"):  # the column's files and __rootdirs__: one commit
            col = self.cols.pop(name)
            if self._store is None:
                pass
            elif keep:
                self._store.forget(name + "/")
            else:
                col.purge()
            if self.auto_flush:
                self.flush()
        if self._store is not None and not keep:
            self._store.store.delete_prefix(name + "/")

    def __setitem__(self, key, value):
        """t[key] = value: replace a column, or set rows.

        Parameters
        ----------
        key : str, int, slice, list, ndarray or carray
            A column name replaces that column's values (same length
            required; its dtype, cparams and dflt are kept, and the values
            converted to that dtype; a carray value is taken as it is).  A
            boolean expression string, int, slice, integer list/array or
            boolean array selects rows.
        value
            For rows: one row (tuple) broadcast to all selected rows, or as
            many rows as selected (list of tuples or structured array).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        KeyError
            When the table has no columns.
        ValueError
            Values that do not convert or do not match the selection.
        """
        self._check_writable("modify data")
        if isinstance(key, str) and key in self.cols:
            with self._writing("setitem"):
                self.cols[key] = value
            return
        self._empty_check("assign to")
        rows = self._as_rows(value)
        if isinstance(key, str):
            mask = self._eval_where(key, {}, None, sys._getframe(1))
            key = np.flatnonzero(mask[:] if isinstance(mask, carray) else mask)
        elif isinstance(key, list):
            key = np.asarray(key)
        with self._writing("setitem"):
            for name in self.names:
                self.cols[name][key] = rows[name]
