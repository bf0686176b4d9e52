"""What a ctable does besides keeping its columns: row indexing, queries,
conversions to pandas and HDF5, printing.

:class:`CtableOps` is a mixin of :class:`bcolz_store.ctable.ctable`; its
methods read the table through ``cols``, ``names``, ``dtype`` and ``len``.
Row queries are carried out by :mod:`bcolz_store.query.tablequery`.

Source: bcolz 1.x ``ctable`` (the methods' signatures and results).
"""

from __future__ import annotations

import sys
from collections import namedtuple

import numpy as np

from .carray import carray
from .errors import QueryError
from .interop.fixed_width import tofixed
from .interop.hdf5 import fromhdf5, tohdf5
from .interop.pandas import fromdataframe, todataframe
from .printing import format_ctable_repr, format_ctable_str
from .query.tablequery import (condition, evaluate, fetch_where, iter_rows, where_blocks,
                               where_rows)

__all__ = ["CtableOps"]


class CtableOps:
    """Row indexing, queries, conversions and printing of a ctable (a mixin)."""

    def _empty_check(self, what):
        if not self.names:
            raise KeyError(f"cannot {what} a ctable with no columns")

    def _rows(self, columns, n) -> np.ndarray:
        """A structured array of this table's dtype from per-column arrays."""
        out = np.empty(n, dtype=self.dtype)
        for name, values in zip(self.names, columns):
            out[name] = values
        return out

    def __getitem__(self, key):
        """t[key]: a column, rows, or rows where an expression holds.

        Parameters
        ----------
        key : str, int, slice, list, ndarray or carray
            A column name gives the carray; a list of names a new in-memory
            ctable of those columns; another string is a boolean expression
            over the columns.  An int gives one row (a ``numpy.void``);
            slices, integer lists/arrays and boolean arrays give a structured
            ndarray of this table's dtype.

        Raises
        ------
        KeyError
            When the table has no columns.
        IndexError
            Out-of-range rows, a boolean array of the wrong length, a
            non-integer array, an expression that is not boolean, or a
            multidimensional key.
        NotImplementedError
            Other key types.

        Notes
        -----
        Opened in mode 'r', a table serves reads from the committed state it
        opened (or last refreshed to); when a writer has since replaced files a
        read needs, the read raises ``DatasetChangedError`` rather than mix two
        states, and ``refresh()`` moves to the new state.
        """
        if isinstance(key, str) and key in self.cols:
            return self.cols[key]
        if isinstance(key, str):
            key = self._eval_where(key, {}, None, sys._getframe(1), error=IndexError)
        return self._getitem(key)

    def _getitem(self, key):
        self._empty_check("retrieve data from")
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            row = np.empty(1, dtype=self.dtype)
            row[0] = tuple(self.cols[name][key] for name in self.names)
            return row[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(self.len)
            n = len(range(start, stop, step))
            return self._rows([self.cols[name][key] for name in self.names], n)
        if isinstance(key, tuple):
            if len(key) != 1:
                raise IndexError("multidimensional keys are not supported")
            return self[key[0]]
        if isinstance(key, list):
            if not key:
                return np.empty(0, dtype=self.dtype)
            if all(isinstance(k, str) for k in key):
                return type(self)([self.cols[name] for name in key], list(key))
            try:
                key = np.array(key, dtype=np.int64)
            except (TypeError, ValueError) as err:
                raise IndexError("key cannot be converted to an array of indices") from err
        if hasattr(key, "dtype"):
            if key.dtype.type == np.bool_:
                return self._take_mask(key)
            if key.dtype.kind in "iu":
                idx = np.asarray(key[:] if isinstance(key, carray) else key)
                return self._rows([self.cols[name][idx] for name in self.names], idx.shape)
            raise IndexError("arrays used as indices must be integer (or boolean)")
        raise NotImplementedError(f"key not supported: {key!r}")

    def _take_mask(self, mask) -> np.ndarray:
        if len(mask) != self.len:
            raise IndexError(f"boolean array has length {len(mask)}, the ctable {self.len}")
        if isinstance(mask, carray):
            mask = mask[:]
        mask = np.asarray(mask)
        columns = [self.cols[name][mask] for name in self.names]
        return self._rows(columns, int(np.count_nonzero(mask)))

    def _as_rows(self, value) -> np.ndarray:
        """``value`` as a structured array (or 0-d record) of this table's dtype."""
        dtype = self.dtype
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

    def __iter__(self):
        return self.iter(0, self.len, 1)

    # -------------------------------------------------------------- queries

    def _eval_where(self, expression, user_dict, vm, frame, error=QueryError):
        return condition(self, expression, user_dict, vm, frame, error)

    def eval(self, expression, **kwargs):
        """Evaluate ``expression`` over the columns; return its result.

        Parameters
        ----------
        expression : str
            E.g. ``'2*a + b'``: column names, the caller's variables (scalars,
            ndarrays, carrays) and the functions of the chosen engine.
        kwargs
            As the top-level :func:`bcolz_store.eval`: ``user_dict``, ``vm``,
            ``out_flavor``, ``blen`` and carray parameters.

        Returns
        -------
        carray, ndarray or scalar

        Raises
        ------
        NameError
            An unknown variable.
        QueryError, ValueError
            As :func:`bcolz_store.eval`.
        """
        user_dict = kwargs.pop("user_dict", None)
        return evaluate(self, expression, user_dict, sys._getframe(1), **kwargs)

    def iter(self, start=0, stop=None, step=1, outcols=None, limit=None, skip=0,
             out_flavor=namedtuple):
        """Iterate over rows ``start:stop:step``.

        Parameters
        ----------
        start, stop, step : int
            As a slice; ``step`` must be positive.
        outcols : str or sequence of str, optional
            Columns to return (``'a, b'`` or ``['a', 'b']``); the name
            ``nrow__`` adds the row number.  Default all.
        limit : int, optional
            Return at most this many rows.
        skip : int, default 0
            Skip this many rows first.
        out_flavor : namedtuple, tuple or numpy.ndarray
            Row type: namedtuples (default), tuples, or length-1 structured
            arrays.

        Returns
        -------
        iterator

        Raises
        ------
        NotImplementedError
            A step <= 0.
        ValueError
            Unknown or invalid ``outcols``.
        """
        return iter_rows(self, start, stop, step, outcols, limit, skip, out_flavor)

    def where(self, expression, outcols=None, limit=None, skip=0, out_flavor=namedtuple,
              user_dict=None, vm=None):
        """Iterate over the rows where ``expression`` is true.

        Parameters
        ----------
        expression : str, carray or ndarray
            A boolean expression over the columns (evaluated now, with the
            caller's variables) or a boolean array of the table's length.
        outcols, limit, skip, out_flavor
            As :meth:`iter`.
        user_dict : dict, optional
            Extra variables for the expression.
        vm : {'numexpr', 'python', 'dask'}, optional
            The engine (default ``bcolz_store.defaults.vm``).

        Returns
        -------
        iterator

        Raises
        ------
        ValueError
            A non-boolean condition, or bad ``outcols``.
        NameError
            An unknown variable in the expression.
        """
        mask = self._eval_where(expression, user_dict, vm, sys._getframe(1))
        return where_rows(self, mask, outcols, limit, skip, out_flavor)

    def whereblocks(self, expression, blen=None, outcols=None, limit=None, skip=0,
                    user_dict=None, vm=None):
        """Iterate over the rows where ``expression`` is true, in structured arrays.

        Parameters
        ----------
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.
        blen : int, optional
            Rows per block (the last one may be shorter); default the
            smallest chunklen of the columns.

        Returns
        -------
        iterator of numpy.ndarray
            Structured arrays with the ``outcols`` fields.

        Raises
        ------
        As :meth:`where`.
        """
        mask = self._eval_where(expression, user_dict, vm, sys._getframe(1))
        return where_blocks(self, mask, blen, outcols, limit, skip)

    def fetchwhere(self, expression, outcols=None, limit=None, skip=0, out_flavor=None,
                   user_dict=None, vm=None, **kwargs):
        """Return the rows where ``expression`` is true, all at once.

        Parameters
        ----------
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.
        out_flavor : {'bcolz', 'carray', 'numpy'}, optional
            A new ctable ('bcolz'/'carray') or a structured ndarray
            ('numpy'); default ``bcolz_store.defaults.out_flavor``.
        kwargs
            ctable constructor parameters for the result.

        Returns
        -------
        ctable or numpy.ndarray

        Raises
        ------
        ValueError
            An unknown ``out_flavor``, and as :meth:`where`.
        """
        mask = self._eval_where(expression, user_dict, vm, sys._getframe(1))
        return fetch_where(self, mask, outcols, limit, skip, out_flavor, kwargs)

    # --------------------------------------------------------------- interop

    @classmethod
    def fromdataframe(cls, df, **kwargs):
        """A ctable from a pandas DataFrame, column by column.

        Object columns of strings become fixed-width unicode ('U') columns,
        of bytes fixed-width 'S' columns, unless ``strings='vlen'`` (columns
        of items of any length, which bcolz cannot read).  See
        :func:`bcolz_store.interop.pandas.fromdataframe`.

        Raises
        ------
        ImportError
            When pandas is not installed.
        """
        return fromdataframe(cls, df, **kwargs)

    def todataframe(self, columns=None, orient="columns"):
        """This table as a pandas DataFrame.

        See :func:`bcolz_store.interop.pandas.todataframe`.

        Raises
        ------
        ImportError
            When pandas is not installed.
        """
        return todataframe(self, columns=columns, orient=orient)

    def tofixed(self, rootdir=None, mode="w", *, missing=None, **kwargs):
        """A copy the real bcolz reads: vlen columns become fixed-width ``U``
        (str) or ``S`` (bytes), as wide as their longest item.

        See :func:`bcolz_store.interop.fixed_width.tofixed`.

        Parameters
        ----------
        rootdir : str, optional
            Where to write the copy (None: in memory).
        mode : {'w', 'a'}, default 'w'
        missing : str or bytes, optional
            Written for a missing item (default: missing items are refused).
        **kwargs
            Other ctable parameters (``cparams``, ``chunklen``...).

        Raises
        ------
        ValueError
            Missing items without ``missing``, or a str item ending in NUL.
        """
        return tofixed(self, rootdir, mode, missing=missing, **kwargs)

    def to_dask(self, blen=None, columns=None):
        """This table as a dask DataFrame, read partition by partition.

        Partitions are whole chunks of rows; each task reads its rows from
        this table (a stored table travels to other processes as its rootdir
        and is read there in mode 'r').  See
        :func:`bcolz_store.interop.dask.ctable_to_dask`.

        Parameters
        ----------
        blen : int, optional
            Rows per partition, a multiple of the largest chunklen (default:
            about 64 MiB of rows).
        columns : sequence of str, optional
            The columns to take (default all).

        Returns
        -------
        dask.dataframe.DataFrame
            Indexed by row number.

        Raises
        ------
        ImportError
            When dask or pandas is not installed (extra ``bcolz_store[dask]``).
        KeyError
            An unknown column.
        ValueError
            A column of multidimensional items, or a bad ``blen``.
        """
        from .interop.dask import ctable_to_dask
        return ctable_to_dask(self, blen=blen, columns=columns)

    @classmethod
    def fromhdf5(cls, filepath, nodepath="/ctable", **kwargs):
        """A ctable from a PyTables Table node.

        See :func:`bcolz_store.interop.hdf5.fromhdf5` (``drop_attrs=True``
        leaves out the node's attributes).

        Raises
        ------
        ImportError
            When PyTables is not installed (extra ``bcolz_store[hdf5]``).
        OSError
            When the file cannot be opened.
        TypeError
            When the node is not a Table.
        ValueError
            When an attribute holds a value JSON cannot hold (named), unless
            ``drop_attrs``.
        FormatError
            When an attribute bcolz_store wrote is malformed.
        """
        return fromhdf5(cls, filepath, nodepath, **kwargs)

    def tohdf5(self, filepath, nodepath="/ctable", mode="w", cparams=None, cname=None):
        """Write this table as a PyTables Table node.

        See :func:`bcolz_store.interop.hdf5.tohdf5`.

        Raises
        ------
        ImportError
            When PyTables is not installed (extra ``bcolz_store[hdf5]``).
        DatasetExistsError
            With mode 'w' when ``filepath`` exists.
        TypeError
            For datetime64, timedelta64 or object columns (nothing is written).
        ValueError
            For unicode past U+10FFFF, or an attribute name bcolz_store uses
            itself (nothing is written).
        """
        return tohdf5(self, filepath, nodepath, mode=mode, cparams=cparams, cname=cname)

    # ---------------------------------------------------------------- misc

    def __str__(self):
        return format_ctable_str(self)

    def __repr__(self):
        return format_ctable_repr(self)
