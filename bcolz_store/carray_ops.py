"""The carray methods built on reading and appending: iteration, ``where``,
``wheretrue``, ``copy``, ``view``, ``reshape``, ``sum`` and the Python protocols.

:class:`CarrayOps` is a base class of :class:`bcolz_store.carray`; it uses
only the carray's reads (``self[...]``, ``_gather``), its chunk engine and its
constructor (``type(self)``).

Source: bcolz 1.x's carray methods (signatures, defaults and behaviour).
"""

from __future__ import annotations

import numpy as np

from . import threads
from .indexing import PYTHON_SCALAR_KINDS, is_int, matching_positions
from .interop.fixed_width import tofixed

__all__ = ["CarrayOps"]


class CarrayOps:
    """Iteration, queries and utilities of :class:`bcolz_store.carray`."""

    # ------------------------------------------------------------ iteration

    def _iter_blocks(self, blen=None, start=0, stop=None):
        """Yield ``(offset, block)`` over atoms start:stop in blocks of ``blen``."""
        length = self.len
        stop = length if stop is None else min(stop, length)
        blen = blen or self._chunklen
        pos = start
        while pos < stop:
            end = min(pos + blen, stop)
            yield pos, self[pos:end]
            pos = end

    def _copy_blocks(self):
        """Consecutive blocks of as many chunks as the thread pool works on at
        once, so that a copy decodes them, and encodes its own, in parallel."""
        return self.iterblocks_(self._chunklen * threads.chunks_per_block())

    def iterblocks_(self, blen=None, start=0, stop=None):
        """Yield consecutive ndarray blocks of ``blen`` atoms."""
        for _, block in self._iter_blocks(blen, start, stop):
            yield block

    def __iter__(self):
        if self._iterator is not None:
            return self
        return self.iter()

    def __next__(self):
        if self._iterator is None:
            self._iterator = self._iter_gen(0, self.len, 1, None, 0)
        try:
            return next(self._iterator)
        except StopIteration:
            # An iterator view stays exhausted (as in bcolz); the carray
            # itself can be iterated again.
            self._iterator = iter(()) if self._is_iter_view else None
            raise

    next = __next__

    def _iterating(self, generator):
        """A view of this carray that iterates over ``generator``.

        Compatibility: bcolz's iterators are carray views, so ``iter(b)``,
        ``b.iter()``, ``b.where()`` and ``b.wheretrue()`` return objects with
        the carray API that also work with ``next()``.
        """
        view = self.view()
        view._iterator = generator
        view._is_iter_view = True
        return view

    def iter(self, start=0, stop=None, step=1, limit=None, skip=0, _next=False):
        """Iterate over elements ``start:stop:step``, skipping ``skip`` and yielding at most ``limit``.

        Returns
        -------
        carray
            A view that is also an iterator.

        Raises
        ------
        NotImplementedError
            For a step <= 0 (as bcolz).
        """
        if step is None:
            step = 1
        if step <= 0:
            raise NotImplementedError("step param can only be positive")
        start, stop, step = slice(start, stop, step).indices(self.len)
        return self._iterating(self._iter_gen(start, stop, step, limit, skip))

    def _iter_gen(self, start, stop, step, limit, skip):
        if limit is not None and limit <= 0:
            return
        emitted = 0
        skipped = 0
        blen = max(self._chunklen, 1)
        pos = start
        while pos < stop:
            end = min(stop, pos + blen * step)
            block = self[pos:end:step]
            if skipped < skip:
                drop = min(skip - skipped, len(block))
                skipped += drop
                block = block[drop:]
            items = block if self._dtype.shape or self._dtype.kind not in PYTHON_SCALAR_KINDS \
                else block.tolist()
            for item in items:
                yield item
                emitted += 1
                if limit is not None and emitted >= limit:
                    return
            pos = end
            if (pos - start) % step:
                pos += step - (pos - start) % step

    def wheretrue(self, limit=None, skip=0):
        """Iterate over the indices where this boolean carray is true.

        Raises
        ------
        ValueError
            If the carray is not boolean.
        NotImplementedError
            If it is multidimensional.
        """
        if self._dtype.base.type != np.bool_:
            raise ValueError("`self` is not an array of booleans")
        if self.ndim > 1:
            raise NotImplementedError("`self` is not unidimensional")
        return self._iterating(self._wheretrue_gen(limit, skip))

    def _wheretrue_gen(self, limit, skip):
        for found in matching_positions(self, limit, skip, self._chunklen):
            yield from found.tolist()

    def where(self, boolarr, limit=None, skip=0):
        """Iterate over the values where ``boolarr`` (ndarray or carray) is true.

        Raises
        ------
        NotImplementedError
            If this carray is multidimensional.
        ValueError
            If ``boolarr`` is not a boolean array of the same length.
        """
        if self.ndim > 1:
            raise NotImplementedError("`self` is not unidimensional")
        if not hasattr(boolarr, "dtype"):
            raise ValueError("`boolarr` is not an array")
        if boolarr.dtype.type != np.bool_:
            raise ValueError("`boolarr` is not an array of booleans")
        if len(boolarr) != self.len:
            raise ValueError("`boolarr` must be of the same length than ``self``")
        return self._iterating(self._where_gen(boolarr, limit, skip))

    def _where_gen(self, boolarr, limit, skip):
        blen = boolarr.chunklen if isinstance(boolarr, CarrayOps) else self._chunklen
        for found in matching_positions(boolarr, limit, skip, blen):
            yield from self._gather(found)

    # ------------------------------------------------------------ utilities

    def copy(self, **kwargs):
        """Return a copy, optionally with other constructor parameters (rootdir, cparams...).

        Compatibility: as in bcolz, parameters not given take the current
        defaults (cparams) and ``expectedlen`` defaults to ``len(self)``.

        Raises
        ------
        As :class:`carray`.
        """
        expectedlen = kwargs.pop("expectedlen", self.len)
        kwargs.setdefault("dflt", self._dflt)
        if self._meta.vlen is not None:     # items of any length: copied block by block
            return type(self)(self, expectedlen=expectedlen, **kwargs)
        out = type(self)(np.empty((0,) + self._dtype.shape, dtype=self._dtype.base),
                         expectedlen=expectedlen, **kwargs)
        if self._dtype.kind == "O":
            if self.len:
                self._check_pickle()
            out._engine.append(self._engine.read_range(0, self.len))
        else:
            for block in self._copy_blocks():
                out._engine.append(block)
        if out.mode != "r":
            out.flush()
        return out

    def view(self):
        """A lightweight in-memory view sharing this carray's chunks.

        The view reads the same chunks; writes to either are not shown in the
        other once the leftover differs.
        """
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._engine = self._engine.copy_for_view()
        out._iterator = None
        out._is_iter_view = False
        return out

    def reshape(self, newshape):
        """Return a new carray with the same data and shape ``newshape`` (one -1 allowed).

        Raises
        ------
        ValueError
            If the sizes differ or more than one dimension is -1.
        ReadOnlyError
            On disk in mode 'r': a stored reshape replaces the dataset (as in
            bcolz), which a read-only carray must not do.
        """
        if self._rootdir:
            self._check_writable()
        if is_int(newshape):
            newshape = (int(newshape),)
        newshape = tuple(int(n) for n in newshape)
        size = self.size
        if newshape.count(-1) > 1:
            raise ValueError("only one shape dimension can be -1")
        if -1 in newshape:
            pos = newshape.index(-1)
            other = int(np.prod(newshape[:pos] + newshape[pos + 1:]))
            newshape = newshape[:pos] + ((size // other) if other else 0,) + newshape[pos + 1:]
        if int(np.prod(newshape)) != size:
            raise ValueError("`newshape` is not compatible with the current one")
        if (self._dtype.kind == "O" or self._meta.vlen is not None) and len(newshape) > 1:
            raise ValueError("object carrays and vlen carrays are one-dimensional")
        if not self._rootdir:
            return self._reshaped(newshape, None)
        # Stored, the reshaped data replaces this dataset in one commit: it is
        # written into a folder of this writer's journal, whose files become
        # the commit's blobs; a killed writer leaves the old dataset whole.
        with self._writing():
            build = self._store.scratch_folder("reshape")
            out = self._reshaped(newshape, self._store.store.child(build))
            new_files = out._store.recorded_checksums()
            self._store.remove_all()
            for key, digest in new_files.items():
                self._store.stage_moved(key, build + key, digest)
            self._store.commit()
        self._read_meta()
        # Mode 'w' would empty the dataset on open: open it in 'a', then say 'w'.
        out = type(self)(rootdir=self._root_arg, mode="a" if self._mode == "w" else self._mode,
                         _store=self._given_store, allow_pickle=self._allow_pickle,
                         storage_options=self._storage_options)
        out._allow_pickle_given = self._allow_pickle_given    # what its handle carries
        out.mode = self._mode
        return out

    def _reshaped(self, newshape: tuple, rootdir):
        """A new carray of this data in ``newshape`` (in memory, or at ``rootdir``)."""
        if self._meta.vlen is not None:     # one-dimensional: the same items
            return self.copy(rootdir=rootdir, mode="w", cparams=self._cparams)
        out = type(self)(np.empty((0,) + newshape[1:], dtype=self._dtype.base), dtype=None,
                         cparams=self._cparams, expectedlen=newshape[0], rootdir=rootdir,
                         mode="w")
        rowsize = int(np.prod(newshape[1:])) if len(newshape) > 1 else 1
        if self._dtype.kind == "O":
            if self.len:
                self._check_pickle()
            out._engine.append(self._engine.read_range(0, self.len))
        else:
            buf = np.empty(0, dtype=self._dtype.base)
            for block in self.iterblocks_():
                buf = np.concatenate((buf, block.ravel()))
                nrows = len(buf) // rowsize
                if nrows:
                    out._engine.append(buf[:nrows * rowsize].reshape((nrows,) + newshape[1:]))
                    buf = buf[nrows * rowsize:]
        if rootdir is not None:
            out.flush()
        return out

    def sum(self, dtype=None):
        """Sum of all elements (numpy's rules for the accumulator dtype).

        Raises
        ------
        TypeError
            For string dtypes.
        """
        if dtype is None:
            dtype = self._dtype.base
            if dtype.kind in "bi" and dtype.itemsize < np.dtype(np.int_).itemsize:
                dtype = np.dtype(np.int_)
            elif dtype.kind == "u" and dtype.itemsize < np.dtype(np.uint).itemsize:
                dtype = np.dtype(np.uint)
        else:
            dtype = np.dtype(dtype)
        if dtype.kind in "SUVT" or self._meta.vlen is not None:
            raise TypeError("cannot perform reduce with flexible type")
        if self._pickled:
            self._check_pickle()
        result = np.zeros((), dtype=dtype)[()]
        # Each chunk is summed where it is decoded (on the thread pool); the
        # partial sums are added in chunk order, so the result is the same for
        # every number of threads.
        for partial in self._engine.reduce_chunks(lambda block: block.sum(dtype=dtype)):
            result += partial
        return result

    # ------------------------------------------------------------ dask

    @property
    def shards(self) -> tuple:
        """``(chunklen, *atom shape)``: the block of rows compressed and written
        as one piece (a chunk).

        dask's ``from_array`` takes its automatic block shape from an array's
        ``shards`` when there is one (zarr 3 names so the smallest region
        safe to write), so ``dask.array.from_array(c)`` makes blocks of whole
        chunks; bcolz's ``chunks`` attribute, the list of chunk objects, stays
        as bcolz has it.
        """
        return (self._chunklen,) + self._dtype.shape

    def to_dask(self, blen=None):
        """This carray as a dask array, read block by block.

        Blocks are whole chunks of rows; each task reads its rows from this
        carray (a stored carray travels to other processes as its rootdir and
        is read there in mode 'r').  See
        :func:`bcolz_store.interop.dask.carray_to_dask`.

        Parameters
        ----------
        blen : int, optional
            Rows per block, a multiple of ``chunklen`` (default: about 32 MiB).

        Returns
        -------
        dask.array.Array

        Raises
        ------
        ImportError
            When dask is not installed (extra ``bcolz_store[dask]``).
        ValueError
            A ``blen`` that is not a positive multiple of ``chunklen``.
        """
        from .interop.dask import carray_to_dask
        return carray_to_dask(self, blen=blen)

    def tofixed(self, rootdir=None, mode="w", *, missing=None, **kwargs):
        """A copy the real bcolz reads: a vlen carray becomes fixed-width ``U``
        (str) or ``S`` (bytes), as wide as its longest item; others are copied.

        Parameters
        ----------
        rootdir : str, optional
            Where to write the copy (None: in memory).
        mode : {'w', 'a'}, default 'w'
        missing : str or bytes, optional
            Written for a missing item (default: missing items are refused).
        **kwargs
            Other carray parameters (``cparams``, ``chunklen``...).

        Raises
        ------
        ValueError
            Missing items without ``missing``, or a str item ending in NUL.
        """
        return tofixed(self, rootdir, mode, missing=missing, **kwargs)

    # ------------------------------------------------------------ protocols

    def __len__(self):
        return self.len

    def __sizeof__(self):
        return self.cbytes

    def __array__(self, dtype=None, copy=None):
        x = self[:]
        if dtype is not None and x.dtype != dtype:
            x = x.astype(dtype)
        return x

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __str__(self):
        from .printing import format_carray_str
        return format_carray_str(self)

    def __repr__(self):
        from .printing import format_carray_repr
        return format_carray_repr(self)
