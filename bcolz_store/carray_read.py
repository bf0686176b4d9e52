"""Reading a carray: ``x[key]`` for ints, slices of any step, tuples, integer
and boolean arrays, boolean carrays and expressions.

:class:`CarrayReads` is a base class of :class:`bcolz_store.carray`: every
read goes to the chunk engine (``_engine``: ``read_range``, ``gather``,
``chunk_array``); object carrays read from a store need ``allow_pickle``.
A carray is a ``CarrayReads``, which is what the ``isinstance`` checks here
test.

Source: bcolz 1.x ``carray.__getitem__`` (results and errors), with negative
slice steps and integer arrays of any integer dtype added.
"""

from __future__ import annotations

import sys

import numpy as np

from .errors import UnsafeDataError
from .indexing import PYTHON_SCALAR_KINDS, is_int, positions, within_rows
from .query.eval import evaluate

__all__ = ["CarrayReads"]


class CarrayReads:
    """Indexing of :class:`bcolz_store.carray` (a base class)."""

    @property
    def _pickled(self) -> bool:
        """Whether items are Python objects stored as pickles (bcolz's object carrays)."""
        return self._meta.atom.kind == "O" and self._meta.vlen is None

    def _check_pickle(self):
        if not self._allow_pickle:
            raise UnsafeDataError(
                f"{self._rootdir}: object arrays are stored as pickles, and unpickling can "
                f"run code; open with allow_pickle=True if you trust this dataset")

    def _read_range(self, start: int, stop: int) -> np.ndarray:
        """Atoms ``start:stop`` (0 <= start <= stop <= len) as a new array."""
        if self._pickled:
            self._check_pickle()
        return self._engine.read_range(start, stop)

    def _gather(self, idx: np.ndarray) -> np.ndarray:
        """Atoms at positions ``idx`` (int64, in range; any order, repeats allowed)."""
        if self._pickled and idx.size:
            self._check_pickle()
        return self._engine.gather(idx)

    def _where_mask(self, mask) -> np.ndarray:
        """Values where a boolean mask (ndarray or carray) is true."""
        if len(mask) != self.len:
            raise IndexError("boolean array length must match len(self)")
        if isinstance(mask, CarrayReads):
            parts = []
            for start, block in mask._iter_blocks(self._meta.chunklen):
                hits = np.flatnonzero(block)
                if hits.size:
                    parts.append(self._gather(hits + start))
            if parts:
                return np.concatenate(parts, dtype=parts[0].dtype)
            return np.empty((0,) + self._meta.atom.shape, dtype=self._meta.atom.base)
        return self._gather(np.flatnonzero(np.asarray(mask)))

    def __getitem__(self, key):
        """x[key]: ints, slices (any step), tuples, int and boolean arrays, expressions.

        Opened in mode 'r', a carray serves reads from the committed state it
        opened (or last refreshed to); when a writer has since replaced files
        that a read needs, the read raises ``DatasetChangedError`` instead of
        mixing two states, and ``refresh()`` moves to the new state.

        Returns
        -------
        numpy scalar or numpy.ndarray
            An int gives one element (a Python int/bool for integer and
            boolean dtypes, as bcolz; a numpy scalar for other dtypes; an
            array for multidimensional atoms); anything else a new ndarray.

        Raises
        ------
        IndexError
            Out-of-range ints, a mask of the wrong length, non-integer arrays.
        ValueError
            An empty tuple, or a zero slice step.
        DatasetChangedError
            In mode 'r', when a writer committed since this reader opened
            (call ``refresh()``).
        UnsafeDataError
            Reading an object carray from a store without ``allow_pickle``.
        """
        if isinstance(key, str):
            key = self._eval_expression(key, sys._getframe(1))
        return self._getitem(key)

    def _getitem(self, key):
        length = self.len
        atom = self._meta.atom
        if is_int(key):
            i = int(key)
            if i < 0:
                i += length
            if not 0 <= i < length:
                raise IndexError("index out of range")
            if self._pickled:
                self._check_pickle()
                return self._engine.item(i)
            nchunk, pos = divmod(i, self._meta.chunklen)
            value = self._engine.point(nchunk, pos)
            if isinstance(value, np.ndarray):
                return value.copy()
            return value.item() if atom.kind in PYTHON_SCALAR_KINDS else value
        if isinstance(key, slice):
            start, stop, step = key.indices(length)
            if step == 1:
                return self._read_range(start, max(start, stop))
            if step > 1:
                n = len(range(start, stop, step))
                if n == 0:
                    return np.empty((0,) + atom.shape, dtype=atom.base)
                last = start + (n - 1) * step
                if n * 8 >= (last - start) and atom.kind != "O":   # dense: read the span once
                    return self._read_range(start, last + 1)[::step].copy()
                return self._gather(np.arange(start, last + 1, step, dtype=np.int64))
            return self._gather(np.arange(start, stop, step, dtype=np.int64))
        if isinstance(key, tuple):
            if len(key) == 0:
                raise ValueError("empty tuple not supported")
            if len(key) == 1:
                return self[key[0]]
            arr = self[key[0]]
            arr = arr[within_rows(key, key[0][:] if isinstance(key[0], CarrayReads) else None)]
            return np.ascontiguousarray(arr) if isinstance(arr, np.ndarray) else arr
        if isinstance(key, CarrayReads):
            if key.dtype != np.bool_:
                key = key[:]
            else:
                return self._where_mask(key)
        if isinstance(key, (list, range)) or hasattr(key, "dtype") or hasattr(key, "__array__"):
            try:
                idx = np.asarray(key)
                if isinstance(key, list) and idx.dtype.kind == "f":
                    idx = idx.astype(np.int64)  # bcolz truncates float lists
            except (TypeError, ValueError) as err:
                raise IndexError("key cannot be converted to an array of indices") from err
            if idx.dtype == np.bool_:
                return self._where_mask(idx)
            if idx.size == 0:
                idx = idx.astype(np.int64)
            if idx.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be integer (or boolean)")
            return self._gather(positions(idx, length))
        raise IndexError(f"key not supported: {key!r}")

    def _eval_expression(self, expression: str, frame):
        user_dict = dict(frame.f_globals)
        user_dict.update(frame.f_locals)
        result = evaluate(expression, user_dict, make_result=type(self))
        if result.dtype.type != np.bool_:
            raise IndexError("only boolean expressions supported")
        if len(result) != self.len:
            raise IndexError("boolean expression outcome must match len(self)")
        return result
