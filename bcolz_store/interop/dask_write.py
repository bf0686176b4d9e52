"""A dask array or dataframe written as a carray or ctable by dask's workers,
made visible by one commit.

The writer (the process calling :func:`from_dask`) opens the dataset's journal
and stages the new container: metadata, and the removal of what was at the
rootdir (mode ``'w'``).  It reserves one blob name per full chunk in its blob
folder (see :mod:`bcolz_store.storage.journal`), and every dask task
compresses the whole chunks inside its block or partition and writes them
there itself, in parallel, from whatever process or machine dask runs it on
(the plan it receives names the store by its rootdir or URL, and the blob
names).  A chunk cut by a block boundary comes back to the writer in pieces
(at most two per block and column, each smaller than a chunk), which it
joins, compresses and stages; so does the last, partial chunk (the leftover).

When every task is done, the writer checks that the blobs the tasks reported
are in the store, stages them as the chunk files (nothing is copied), and
commits once: all chunk files become visible together.  A writer killed
before that commit leaves the previous state as it was (the blobs are a dead
writer's, removed by a later writer); one that fails discards them.

The chunks are those that ``carray(x.compute(), ...)`` with the same
parameters writes, byte for byte: the same rows, compressed alike.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..chunks.chunk import chunk, chunk_file_parts, chunk_key
from ..chunks.stats import stats_kind, stored_stats
from ..cparams import cparams as cparams_cls
from ..errors import BcolzStoreError, DatasetExistsError, IntegrityError
from ..storage.dataset import DatasetStore
from ..storage.records import blob_key, write_blob
from ..storage.credentials import carried_options
from ..storage.urls import open_store, portable_rootdir
from .dask import import_dask, is_dask_array, is_dask_dataframe

__all__ = ["from_dask"]

_NUMERIC_KINDS = "biufcmM"


@dataclass(frozen=True)
class _Column:
    """What a task needs to write one column's chunks."""

    prefix: str            # '' for a carray, 'name/' for a ctable column
    atom: np.dtype
    chunklen: int
    cparams: dict
    nfull: int             # full chunks of the whole column
    first_blob: int        # blob number of chunk 0
    stats: str | None = None    # its chunk statistics' kind (None: it keeps none)


@dataclass(frozen=True)
class _Plan:
    """What every task receives: where to write, and how."""

    store: object          # (rootdir, storage_options), or a Store (threads only)
    folder: str            # the writer's blob folder
    sync: bool             # fsync each blob (local disks)
    columns: tuple

    def __reduce__(self):
        # sent to worker processes: storage options without credentials
        # (the workers find their own), as every handle (handles.py)
        store = self.store
        if isinstance(store, tuple):
            store = (store[0], carried_options(store[1]))
        return (type(self), (store, self.folder, self.sync, self.columns))


def _open(plan: _Plan):
    if isinstance(plan.store, tuple):
        return open_store(plan.store[0], False, plan.store[1])
    return plan.store


def _write_rows(store, plan: _Plan, col: _Column, values: np.ndarray, offset: int):
    """Write the whole chunks of rows ``offset:offset + len(values)`` of one
    column; return ``(written, pieces)``: ``(nchunk, md5, cbytes, statistics)``
    per chunk written (its chunk statistics, computed while its rows are in
    hand), ``(nchunk, first row in the chunk, rows)`` per piece of a chunk."""
    cparams = cparams_cls(**col.cparams)
    cl = col.chunklen
    end = offset + len(values)
    written, pieces = [], []
    for nchunk in range(offset // cl, -(-end // cl)):
        lo, hi = max(offset, nchunk * cl), min(end, (nchunk + 1) * cl)
        rows = values[lo - offset:hi - offset]
        if hi - lo == cl and nchunk < col.nfull:
            made = chunk(rows, col.atom, cparams, _memory=False)
            blob = blob_key(plan.folder, col.first_blob + nchunk)
            digest = write_blob(store, blob, chunk_file_parts(made), False,
                                col.prefix + chunk_key(nchunk))
            if plan.sync:
                store.sync([blob])
            entry = None if col.stats is None else \
                stored_stats(rows, col.stats, cparams.quantize)
            written.append((nchunk, digest, made.cbytes, entry))
        elif hi > lo:
            pieces.append((nchunk, lo - nchunk * cl, np.array(rows, copy=True)))
    return written, pieces


def _write_block(block, offset: int, plan: _Plan):
    """A task: write the chunks of one block of a dask array."""
    col = plan.columns[0]
    values = np.ascontiguousarray(block)
    if values.dtype != col.atom.base:
        values = values.astype(col.atom.base)
    return [_write_rows(_open(plan), plan, col, values, offset)]


def _column_values(series, atom: np.dtype, name: str) -> np.ndarray:
    """The values of one partition's column as ``atom``.

    Raises
    ------
    ValueError
        Values that are not of the column's kind (missing values, mixed types).
    """
    values = series.to_numpy()
    if values.dtype == atom:
        return values
    if atom.kind in "SU":
        want = str if atom.kind == "U" else bytes
        if not all(isinstance(v, want) for v in values):
            raise ValueError(f"column {name!r}: a partition holds values that are not "
                             f"{want.__name__} (missing values?)")
        return values.astype(atom)
    if values.dtype.kind in _NUMERIC_KINDS and np.can_cast(values.dtype, atom, "same_kind"):
        return values.astype(atom)
    raise ValueError(f"column {name!r}: a partition holds {values.dtype} values, the column "
                     f"is {atom}")


def _write_partition(frame, offset: int, plan: _Plan, names: list):
    """A task: write the chunks of every column of one dataframe partition."""
    store = _open(plan)
    return [_write_rows(store, plan, col, _column_values(frame[name], col.atom, name), offset)
            for name, col in zip(names, plan.columns)]


def _partition_facts(frame, text: list):
    """A task of the first pass: a partition's length and, per text column,
    ``(kind, width)`` of its values (kind 'U' for str, 'S' for bytes, else
    the names of the types found)."""
    facts = {}
    for name in text:
        values = frame[name].to_numpy()
        types = {type(v) for v in values}
        if types <= {str}:
            facts[name] = ("U", max(map(len, values), default=0))
        elif types <= {bytes}:
            facts[name] = ("S", max(map(len, values), default=0))
        else:
            facts[name] = (sorted(t.__name__ for t in types), 0)
    return len(frame), facts


def _frame_atoms(frame, names: list, dask):
    """Lengths of the partitions, and the dtype of every column.

    Raises
    ------
    ValueError
        A column that is neither numeric (bool, int, float, complex,
        datetime64, timedelta64) nor all str or all bytes.
    """
    dtypes = frame.dtypes
    text = [n for n in names if not (isinstance(dtypes[n], np.dtype)
                                     and dtypes[n].kind in _NUMERIC_KINDS)]
    parts = frame.to_delayed()
    facts = dask.compute(*[dask.delayed(_partition_facts)(p, text) for p in parts])
    atoms = {n: dtypes[n] for n in names if n not in text}
    for name in text:
        kinds = {f[1][name][0] if isinstance(f[1][name][0], str) else "?"
                 for f in facts if f[0]}
        found = sorted({t for f in facts if not isinstance(f[1][name][0], str)
                        for t in f[1][name][0]})
        if found or len(kinds) > 1:
            raise ValueError(f"column {name!r} ({dtypes[name]}) holds values of types "
                             f"{found or sorted(kinds)}: a ctable column needs numeric values "
                             f"of a numpy dtype, or all str, or all bytes (no missing values)")
        width = max((f[1][name][1] for f in facts), default=0)
        atoms[name] = np.dtype(f"{kinds.pop() if kinds else 'U'}{max(width, 1)}")
    return [f[0] for f in facts], [np.dtype(atoms[n]) for n in names]


def _offsets(lengths) -> list:
    return [int(v) for v in np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)[:-1]))] \
        if len(lengths) else []


def _create(rootdir, ds, carray_cls, ctable_cls, names, atoms, kwargs):
    """The new, staged container (its creation's commit is held by the batch)."""
    if names is None:
        atom = atoms[0]
        made = carray_cls(np.empty((0,) + atom.shape, dtype=atom.base), rootdir=rootdir,
                          mode="w", _store=ds, **kwargs)
        return made, [made]
    made = ctable_cls(columns=[np.empty(0, dtype=a) for a in atoms], names=names,
                      rootdir=rootdir, mode="w", _dataset=ds, **kwargs)
    return made, [made.cols[n] for n in names]


def _assemble(column, col: _Column, results, index: int, folder: str, found: set,
              length: int, chunk_calls) -> None:
    """Stage the chunks the tasks wrote for one column, and those made here
    from their pieces (``chunk_calls``: see :func:`from_dask`); set its leftover.

    Raises
    ------
    IntegrityError
        A chunk reported twice, missing, or not in the store.
    """
    written, pieces, stats = {}, defaultdict(list), []
    for result in results:
        done, parts = result[index]
        for nchunk, digest, cbytes, entry in done:
            if nchunk in written:
                raise IntegrityError(f"{column.rootdir}: chunk {nchunk} written twice")
            written[nchunk] = (digest, cbytes)
            stats.append((nchunk, entry))
        for nchunk, start, rows in parts:
            pieces[nchunk].append((start, rows))
    cbytes = 0
    leftover = np.empty((0,) + col.atom.shape, dtype=col.atom.base)
    for nchunk, parts in sorted(pieces.items()):
        parts.sort(key=lambda p: p[0])
        if [p[0] for p in parts] != list(np.cumsum([0] + [len(p[1]) for p in parts[:-1]])):
            raise IntegrityError(f"{column.rootdir}: the pieces of chunk {nchunk} overlap "
                                 f"or leave a gap")
        rows = np.concatenate([p[1] for p in parts], dtype=parts[0][1].dtype)
        if nchunk < col.nfull and len(rows) == col.chunklen and nchunk not in written:
            cbytes += chunk_calls[0](column, nchunk, rows)
            written[nchunk] = None
        elif nchunk == col.nfull and len(rows) == length - col.nfull * col.chunklen:
            leftover = rows
        else:
            raise IntegrityError(f"{column.rootdir}: chunk {nchunk} came back in pieces of "
                                 f"{len(rows)} rows in all")
    missing = sorted(set(range(col.nfull)) - set(written))
    if missing:
        raise IntegrityError(f"{column.rootdir}: no task wrote chunks {missing[:5]}")
    for nchunk, entry in sorted(written.items()):
        if entry is None:
            continue
        blob = blob_key(folder, col.first_blob + nchunk)
        if blob not in found:
            raise IntegrityError(
                f"{column.rootdir}: chunk {nchunk}, which a task reported written as {blob}, "
                f"is not in the store (did the workers write to another store, one local "
                f"to their process?); nothing was committed")
        column.dataset.stage_written(chunk_key(nchunk), blob, entry[0])
        cbytes += entry[1]
    chunk_calls[1](column, col.nfull, cbytes, leftover, stats)


def from_dask(x, rootdir, carray_cls, ctable_cls, cparams=None, chunklen=None,
              expectedlen=None, mode="a", storage_options=None, *, chunk_calls):
    """Write the dask array or dataframe ``x`` at ``rootdir`` as a carray or
    ctable, its chunks written by dask's workers, visible after one commit.

    See :func:`bcolz_store.from_dask` for the parameters; ``carray_cls`` and
    ``ctable_cls`` are the classes to make; ``chunk_calls`` the pair
    (:func:`~bcolz_store.carray_ops.stage_chunk`,
    :func:`~bcolz_store.carray_ops.adopt_chunks`) that completes a new carray
    with the chunks made here and those the tasks wrote.

    Raises
    ------
    TypeError
        ``x`` is neither a dask array nor a dask DataFrame.
    ValueError
        Bad ``mode``, unknown block sizes, object arrays, unsupported columns.
    DatasetExistsError
        ``rootdir`` holds something and ``mode`` is 'a'.
    IntegrityError
        The tasks did not write every chunk where the writer commits.
    ImportError
        When dask is not installed.
    """
    if mode not in ("a", "w"):
        raise ValueError(f"mode must be 'a' (create) or 'w' (replace), not {mode!r}")
    dask = import_dask()
    kwargs = {"cparams": cparams, "chunklen": chunklen}
    if is_dask_array(x):
        if x.ndim == 0:
            raise ValueError("a 0-d dask array has no rows to write")
        if any(math.isnan(n) for n in x.chunks[0]):
            raise ValueError("the dask array's block lengths are unknown; call "
                             "x.compute_chunk_sizes() first")
        if x.dtype.kind == "O" or x.dtype.hasobject:
            raise ValueError("object arrays are pickled one chunk at a time; write them "
                             "with carray(x.compute(), rootdir=...)")
        if any(len(c) > 1 for c in x.chunks[1:]):
            x = x.rechunk({axis: -1 for axis in range(1, x.ndim)})
        names, lengths = None, list(x.chunks[0])
        atoms = [np.dtype((x.dtype, x.shape[1:]))]
        parts = list(x.to_delayed().ravel())
    elif is_dask_dataframe(x):
        names = [str(n) if not isinstance(n, str) else n for n in x.columns]
        if len(set(names)) != len(names) or list(names) != list(x.columns):
            raise ValueError(f"the DataFrame's column labels {list(x.columns)} must be "
                             f"distinct strings")
        lengths, atoms = _frame_atoms(x, names, dask)
        parts = x.to_delayed()
    else:
        raise TypeError(f"from_dask needs a dask Array or DataFrame, not {type(x).__name__}")
    length = int(sum(lengths))
    kwargs["expectedlen"] = length if expectedlen is None else expectedlen

    store = open_store(rootdir, False, storage_options)
    existed = store.root_state()
    if existed != "missing" and mode != "w":
        raise DatasetExistsError(f"specified rootdir path '{store.url}' already exists and "
                                 f"mode is 'a' (use mode 'w' to replace it)")
    if existed == "other":
        store.remove_root()                # a file, or a broken link: not a dataset
        existed = "missing"
    portable = portable_rootdir(rootdir, storage_options)
    ds = DatasetStore(store)
    try:
        if existed == "folder":
            ds.recover()              # finish a commit left by a killed writer
        else:
            store.makedirs()
        with ds.batch():
            made, columns = _create(rootdir, ds, carray_cls, ctable_cls, names, atoms, kwargs)
            nfull = [length // c.chunklen for c in columns]
            folder, first = ds.reserve_blobs(sum(nfull))
            starts = np.concatenate(([0], np.cumsum(nfull)[:-1])) + first
            # (a column's atom: its dtype with the shape of one row)
            plan = _Plan(portable if portable is not None else store, folder, ds.sync_blobs,
                         tuple(_Column(c.dataset.prefix, np.dtype((c.dtype, c.shape[1:])),
                                       c.chunklen, c.cparams.to_dict(), n, int(s),
                                       stats_kind(np.dtype((c.dtype, c.shape[1:]))))
                               for c, n, s in zip(columns, nfull, starts)))
            offsets = _offsets(lengths)
            if names is None:
                tasks = [dask.delayed(_write_block)(p, o, plan) for p, o in zip(parts, offsets)]
            else:
                tasks = [dask.delayed(_write_partition)(p, o, plan, names)
                         for p, o in zip(parts, offsets)]
            results = dask.compute(*tasks)
            found = set(store.list_times(folder)) if sum(nfull) else set()
            for index, (column, col) in enumerate(zip(columns, plan.columns)):
                _assemble(column, col, results, index, folder, found, length, chunk_calls)
            made.flush()
    except BaseException:
        ds.discard()
        if existed == "missing":
            with contextlib.suppress(OSError, BcolzStoreError):
                store.remove_root()
        raise
    cls = carray_cls if names is None else ctable_cls
    return cls(rootdir=rootdir, mode="a", storage_options=storage_options)
