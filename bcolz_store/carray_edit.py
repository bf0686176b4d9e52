"""Changing a carray: ``append``, ``trim``, ``resize``, ``x[key] = value`` and
``flush``.

:class:`CarrayEdits` is a base class of :class:`bcolz_store.carray`.  Each
method is one write operation (``_writing``): the chunk engine stages the
chunk files, :mod:`bcolz_store.datasets.carray_files` the metadata, and on any
failure the dataset returns to its last committed state.

Source: bcolz 1.x carray methods (signatures, conversions and errors).
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

from .carray_read import CarrayReads
from .chunks.category_engine import CategoryEngine
from .chunks.vlen_items import as_items
from .datasets.carray_files import stage_sizes
from .indexing import as_nitems, is_int, positions, within_rows
from .storage.dataset import DatasetOwner

__all__ = ["CarrayEdits"]


class CarrayEdits:
    """Appending, trimming, resizing, assignment and flushing of
    :class:`bcolz_store.carray` (a base class)."""

    def _to_ndarray(self, value, dtype, arrlen=None) -> np.ndarray:
        """Convert ``value`` to a contiguous array of ``dtype``; scalars become length 1."""
        vlen = self._meta.vlen if hasattr(self, "_meta") else None
        if isinstance(value, (list, tuple)) and isinstance(getattr(self, "_engine", None),
                                                          CategoryEngine):
            # references to the items, no copies: each becomes a code (one
            # long category repeated is not repeated in memory)
            items = np.fromiter(value, dtype=object, count=len(value))
            if arrlen is not None and len(items) != arrlen:
                if len(items) != 1:
                    raise ValueError(f"{self._rootdir or 'carray'}: cannot assign "
                                     f"{len(items)} items to {arrlen} positions")
                items = np.full(arrlen, items[0], dtype=object)
            return items
        if vlen is not None:        # items of any length: one strict conversion
            return as_items(value, vlen.kind, self._meta.atom, vlen.nullable, arrlen,
                            self._rootdir or "carray")
        if dtype is None:
            array = np.asarray(value)
        else:
            try:
                if dtype.kind == "O":
                    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
                        array = value
                    else:
                        array = np.empty(len(value), dtype=object)
                        array[:] = list(value)
                else:
                    array = np.asarray(value, dtype=dtype)
            except (TypeError, ValueError) as err:
                raise ValueError(f"cannot convert to an ndarray of dtype {dtype}: {err}") from err
        array = np.ascontiguousarray(array)
        if array.ndim == 0:
            array = array.reshape(1)
        atom = self._meta.atom if hasattr(self, "_meta") else None
        if arrlen is not None and array.shape != (arrlen,) + atom.shape:
            full = np.empty((arrlen,) + atom.shape, dtype=atom.base)
            try:
                full[...] = array.reshape(full.shape) if array.size == full.size else array
            except ValueError as err:
                raise ValueError(f"cannot assign values of shape {array.shape} to "
                                 f"{arrlen} items of shape {atom.shape}") from err
            array = full
        return array

    def append(self, array):
        """Append ``array`` (atoms, one atom, a scalar, or another carray).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            If the data cannot be converted, or its trailing dimensions differ
            from the atom's.
        """
        engine = self._engine
        if (type(array) is np.ndarray and array.dtype is self._meta.atom and array.ndim == 1
                and self._mode != "r" and array.dtype.kind != "O" and self._meta.vlen is None):
            # The common case, as cheap as bcolz's: 1-d data of the carray's
            # own dtype that fits in the leftover is just copied there.
            end = engine.nleft + array.shape[0]
            if end < self._meta.chunklen:
                engine.leftover[engine.nleft:end] = array
                engine.nleft = end
                self._unstaged = True
                return
        self._check_writable()
        prepared = self._prepare_append(array)
        with self._writing("append"):
            self._append_prepared(prepared)

    def _prepare_append(self, array):
        """``array`` converted for :meth:`_append_prepared`, changing nothing.

        Raises
        ------
        ValueError
            As :meth:`append`.
        """
        atom = self._meta.atom
        if self._meta.vlen is not None:     # carrays stream block by block
            if isinstance(array, CarrayReads):
                return array
            return self._engine.prepare(self._to_ndarray(array, atom))
        if isinstance(array, CarrayReads):
            if array.dtype.kind == "O" or atom.kind == "O":
                return array[:] if atom.kind == "O" else self._prepare_append(array[:])
            if array.shape[1:] != atom.shape:
                raise ValueError("array trailing dimensions do not match with self")
            return array
        if atom.kind == "O":
            return self._to_ndarray(array, atom)
        arr = self._to_ndarray(array, atom.base) if self._safe else array
        if arr.shape == atom.shape or (atom.shape and arr.shape == (1,) and atom.shape != (1,)):
            arr = arr.reshape((1,) + atom.shape) if arr.size == int(np.prod(atom.shape)) \
                else arr
        if arr.shape == (0,) and atom.shape:      # an empty list: nothing to append
            arr = arr.reshape((0,) + atom.shape)
        if arr.shape[1:] != atom.shape:
            raise ValueError("array trailing dimensions do not match with self")
        return arr

    def _append_prepared(self, prepared):
        """Append what :meth:`_prepare_append` returned."""
        self._unstaged = True
        if isinstance(prepared, CarrayReads):
            for block in prepared._copy_blocks():
                self._engine.append(self._to_ndarray(block, self._meta.atom.base))
        else:
            self._engine.append(prepared)

    def trim(self, nitems):
        """Remove the trailing ``nitems`` atoms; a negative number grows the array.

        Raises
        ------
        TypeError
            If ``nitems`` is not a number.
        ValueError
            If ``nitems`` exceeds the length.
        ReadOnlyError
            In mode 'r'.
        """
        nitems = as_nitems(nitems)
        if nitems > self.len:
            raise ValueError("`nitems` must be less than total length")
        if nitems <= 0:
            self.resize(self.len - nitems)
            return
        self._check_writable()
        with self._writing("trim"):
            self._engine.trim_to(self.len - nitems)
            self.flush()

    def resize(self, nitems):
        """Make the length ``nitems``, growing with ``dflt`` or trimming.

        Raises
        ------
        TypeError
            If ``nitems`` is not a number.
        ValueError
            If ``nitems`` is negative.
        ReadOnlyError
            In mode 'r'.
        """
        nitems = as_nitems(nitems)
        if nitems == self.len:
            if self._store is not None and self._mode != "r":
                self.flush()  # still one commit: it includes pending appends
            return
        if nitems < 0:
            raise ValueError("`nitems` cannot be negative")
        self._check_writable()
        with self._writing("resize"):
            if nitems < self.len:
                self._engine.trim_to(nitems)
                self.flush()
                return
            grow = nitems - self.len
            atom = self._meta.atom
            if self._pickled:
                self._engine.append([self._dflt[()]] * grow)
            block = max(self._meta.chunklen, 1)
            while grow and not self._pickled:
                n = min(grow, block)
                filler = np.empty((n,) + atom.shape, dtype=atom.base)
                filler[...] = self._dflt
                self._engine.append(filler)
                grow -= n
            self.flush()

    def __setitem__(self, key, value):
        """x[key] = value for ints, slices (any step), tuples, int/bool arrays, expressions.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        IndexError
            Out-of-range ints, unsupported keys.
        ValueError
            A boolean mask of the wrong length, values that cannot broadcast.
        NotImplementedError
            On an object carray.
        """
        self._check_writable()
        length = self.len
        if self._pickled:
            raise NotImplementedError("assignment into object carrays is not supported")
        if is_int(key):
            i = int(key)
            if i < 0:
                i += length
            if not 0 <= i < length:
                raise IndexError("index out of range")
            self._set_slice(i, i + 1, 1, value)
        elif isinstance(key, slice):
            start, stop, step = key.indices(length)
            if step < 0:
                n = len(range(start, stop, step))
                if n:
                    vals = self._to_ndarray(value, self._meta.atom.base, arrlen=n)
                    self._set_slice(start + (n - 1) * step, start + 1, -step, vals[::-1])
            else:
                self._set_slice(start, stop, step, value)
        elif isinstance(key, tuple):
            if len(key) == 0:
                raise ValueError("empty tuple not supported")
            if len(key) == 1:
                self[key[0]] = value
                return
            arr = self[key[0]]
            arr[within_rows(key, key[0][:] if isinstance(key[0], CarrayReads) else None)] = value
            self[key[0]] = arr
        elif isinstance(key, str):
            self[self._eval_expression(key, sys._getframe(1))] = value
        else:
            if isinstance(key, CarrayReads):
                key = key[:]
            try:
                idx = np.asarray(key)
            except (TypeError, ValueError) as err:
                raise IndexError("key cannot be converted to an array of indices") from err
            if idx.dtype == np.bool_:
                if len(idx) != length:
                    raise ValueError("boolean array length must match len(self)")
                idx = np.flatnonzero(idx)
            elif idx.size == 0:
                idx = np.zeros(0, dtype=np.int64)
            elif idx.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            else:
                idx = positions(idx, length).ravel()
            if idx.size:
                self._set_positions(idx, value)
        if self._store is not None:
            self.flush()  # on disk each assignment is one commit

    def _set_slice(self, start, stop, step, value):
        n = len(range(start, stop, step))
        if n == 0:
            return
        atom = self._meta.atom
        vals = self._to_ndarray(value, atom.base, arrlen=n).reshape((n,) + atom.shape)
        vals = self._engine.prepare(vals)      # refused items change nothing
        with self._writing("setitem"):
            self._engine.set_slice(start, stop, step, vals)

    def _set_positions(self, idx, value):
        vals = self._to_ndarray(value, self._meta.atom.base, arrlen=len(idx))
        if len(vals) != len(idx):
            raise ValueError(f"cannot assign {len(vals)} values to {len(idx)} positions")
        vals = self._engine.prepare(vals)
        with self._writing("setitem"):
            self._engine.set_positions(idx, vals)

    def flush(self):
        """Write the leftover and ``meta/sizes`` of a stored carray (one commit).

        Raises
        ------
        ReadOnlyError
            In mode 'r' (nothing is written).
        """
        if self._store is None:
            return
        self._check_writable()
        with self._writing():
            self._flush()

    def _flush(self, commit=True):
        if self._unstaged:
            self._store.note("append")
        self._engine.stage_leftover()
        stage_sizes(self._store, self.shape, self.nbytes, self._engine.cbytes)
        self._unstaged = False
        if commit:
            self._store.commit()

    def stage_chunk(self, nchunk: int, rows) -> int:
        """Compress ``rows`` (``chunklen`` items of the atom) as full chunk
        ``nchunk`` of a stored carray and stage its file; return its
        compressed size.  With :meth:`adopt_chunks`, how
        :func:`bcolz_store.from_dask` completes a carray whose other chunk
        files dask's tasks wrote (staged through :attr:`dataset`)."""
        made = self._engine.new_chunk(rows)
        self._engine.chunks.write(nchunk, made)
        return made.cbytes

    def adopt_chunks(self, nchunks: int, cbytes: int, leftover) -> None:
        """Count ``nchunks`` full chunk files in all, of which those staged by
        others (not through :meth:`stage_chunk`) hold ``cbytes`` compressed
        bytes, and append the ``leftover`` items after them (already of the
        atom's dtype and shape); nothing is noted as an append."""
        self._engine.adopt_chunks(nchunks, cbytes)
        if len(leftover):
            self._engine.append(leftover)

    def _own_dataset(self):
        """Attach this standalone carray to its dataset's commits: a failed
        write returns it to its last committed state, every commit includes
        its pending appends, and an append that another writer's commit
        overtook is appended again on the new state."""
        self._store.attach(DatasetOwner(reload=self._read_meta,
                                        stage_pending=self._stage_pending,
                                        capture_appends=self._capture_appends,
                                        committed=self._note_committed))
        self._committed_len = self.len

    def _note_committed(self):
        self._committed_len = self.len

    def _capture_appends(self):
        """The rows appended since the last commit, read now, as a function
        that appends them again (run once the newer committed state is
        loaded)."""
        rows = self._pending_rows(self._committed_len)

        def replay():
            self._append_prepared(self._prepare_append(rows))
        return replay

    def _pending_rows(self, start: int):
        """Items ``start:`` as :meth:`append` takes them; pickled items are
        this writer's own, appended but not committed, so they are read back
        even without ``allow_pickle``."""
        allowed = self._allow_pickle
        self._allow_pickle = True
        # (not checked against other writers' commits)
        reading = contextlib.nullcontext() if self._store is None else \
            self._store.reading_own_rows()
        try:
            with reading:
                return self[start:self.len]
        finally:
            self._allow_pickle = allowed

    def _stage_pending(self):
        """Stage the leftover and ``meta/sizes`` of appends not yet staged: every
        commit of the dataset (an attrs change, another column's assignment)
        includes them, so that no commit holds chunk files that its
        ``meta/sizes`` does not count."""
        if self._unstaged:
            self._flush(commit=False)
