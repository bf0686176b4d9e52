"""Chunk statistics: per chunk of a stored carray, its least and greatest item
and how many of its items are missing, kept current by every write.

A :class:`ChunkStats` belongs to a chunk engine.  The engine records the
statistics of each chunk it compresses while the items are in hand
(:func:`piece_stats`; a min and a max of a 1 MiB float64 chunk cost about
30 us); the chunk files (``DiskChunks``, ``VlenDiskChunks``) forget the
statistics of any chunk file written without them, so that no write can
leave them stale.  At each flush the carray stages ``meta/stats``
(:meth:`ChunkStats.stage`, format in :mod:`bcolz_store.format.stats_meta`),
computing first what is not known: every chunk, the first time a dataset
bcolz wrote is written by this library.  The file is part of the same
commit as the chunks it describes.

Queries read them through :meth:`ChunkStats.column_stats`: a
:class:`ColumnStats` of every chunk's row range and statistics, with
``known`` false where nothing is known (the chunk must be read).  The
leftover's statistics are used only by readers (mode ``'r'``), whose
leftover cannot change in memory.

Kinds: booleans, integers, floats (NaN missing), datetime64/timedelta64 (NaT
missing), fixed-width bytes and str, vlen str/bytes (None missing) and the
codes of categorical carrays (-1 missing).  Complex numbers, structured and
multidimensional atoms and pickled objects have none.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import FormatError
from ..format.stats_meta import MAX_STATS_CHUNKS, STATS_KEY, dump_stats, encode_value, load_stats
from .vlen_items import missing_mask

__all__ = ["ChunkStats", "ColumnStats", "attach_stats", "piece_stats", "stats_kind"]


class ColumnStats(NamedTuple):
    """The statistics of a carray's chunks, the leftover last (one entry each).

    Attributes
    ----------
    kind : str
        As in ``meta/stats`` (``'<f8'``, ``'vlen:str'``, ``'category:<i4'``...).
    starts, stops : numpy.ndarray of int64
        Each chunk's rows, ``[start, stop)``.
    mins, maxs : numpy.ndarray
        Least and greatest item not missing (the atom's dtype; object for
        text); meaningless where ``known`` is false or every item is missing.
    nulls : numpy.ndarray of int64
        Missing items (NaN, NaT, None, code -1).
    known : numpy.ndarray of bool
        Whether the entry is known; false: the chunk must be read.
    """

    kind: str
    starts: np.ndarray
    stops: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    nulls: np.ndarray
    known: np.ndarray


def stats_kind(atom: np.dtype, vlen_kind: str | None = None, categorical: bool = False):
    """The statistics kind of a carray (None: it has none).

    ``atom`` is the dtype of the stored items: the codes' dtype for a
    categorical carray (``categorical``), unused for vlen (``vlen_kind``).
    """
    if categorical:
        return f"category:{atom.str}"
    if vlen_kind is not None:
        return f"vlen:{vlen_kind}"
    if atom.shape or atom.kind not in "biufMmSU" or atom.kind == "f" and atom.itemsize > 8:
        return None
    return atom.str


def _text_minmax(values):
    items = values.tolist()
    return (min(items), max(items)) if items else (None, None)


def piece_stats(values: np.ndarray, kind: str) -> tuple:
    """``(min, max, nulls)`` of the items ``values`` (a chunk) of ``kind``;
    min and max are None when every item is missing."""
    n = len(values)
    mask = None
    if kind.startswith("category:"):
        mask = values < 0
    elif kind.startswith("vlen:"):
        mask = missing_mask(values)
    elif values.dtype.kind == "f":
        if n and np.isnan(values.min()):
            mask = np.isnan(values)
    elif values.dtype.kind in "Mm":
        if n and np.isnat(values.min()):
            mask = np.isnat(values)
    nulls = 0
    if mask is not None:
        nulls = int(np.count_nonzero(mask))
        if nulls:
            values = values[~mask]
    if nulls == n:
        return None, None, nulls
    if values.dtype.kind in "SUO" or kind == "vlen:bytes":
        lo, hi = _text_minmax(values)
    elif values.dtype.kind == "T":
        lo, hi = str(values.min()), str(values.max())
    elif values.dtype.kind == "b":
        lo, hi = bool(values.all()), bool(values.any())
    else:
        lo, hi = values.min(), values.max()
    return lo, hi, nulls


def _entry_dtype(kind: str) -> np.dtype:
    if kind.startswith("vlen:"):
        return np.dtype(object)
    if kind.startswith("category:"):
        kind = kind[len("category:"):]
    dtype = np.dtype(kind)
    return np.dtype(object) if dtype.kind in "SU" else dtype


class ChunkStats:
    """The statistics of one stored carray's chunks (see the module docstring).

    Parameters
    ----------
    kind : str
        Its statistics kind (:func:`stats_kind`).
    chunklen : int
        Items per chunk.
    """

    def __init__(self, kind: str, chunklen: int):
        self.kind = kind
        self.chunklen = chunklen
        self.entries = []           # per full chunk: (min, max, nulls) or None (unknown)
        self.left = None            # the committed leftover's, (nleft, entry)
        self.loaded = None          # bytes of the committed file
        self.damaged = None         # why the committed file was not used
        self.replaced = set()       # chunks written since the last flush, but by appends
        self.left_edited = False    # items of the leftover assigned since the last flush
        self.edited = False         # any change since the last flush

    # --------------------------------------------------------- keeping them

    def forget(self, nchunk: int) -> None:
        """Chunk file ``nchunk`` was written without statistics."""
        self.replaced.add(nchunk)
        self.edited = True
        if nchunk < len(self.entries):
            self.entries[nchunk] = None

    def truncate(self, nchunks: int) -> None:
        """Only the first ``nchunks`` chunk files are left."""
        if nchunks < len(self.entries):
            self.edited = True
        del self.entries[nchunks:]

    def record(self, nchunk: int, entry, pushed: bool = False) -> None:
        """Chunk ``nchunk`` holds items whose statistics are ``entry``; ``pushed``:
        it was written by an append (the leftover filled, or new items)."""
        if entry is None:
            self.forget(nchunk)
        if pushed:
            self.replaced.discard(nchunk)
        else:
            self.replaced.add(nchunk)
        self.edited = True
        if entry is None:
            return
        if nchunk >= len(self.entries):
            self.entries.extend([None] * (nchunk + 1 - len(self.entries)))
        self.entries[nchunk] = entry

    def settled(self) -> None:
        """Everything up to now is staged (a flush)."""
        self.replaced.clear()
        self.edited = self.left_edited = False

    def of(self, values: np.ndarray):
        """The statistics of the items ``values``."""
        return piece_stats(values, self.kind)

    # ------------------------------------------------------ file and staging

    def load(self, data, length: int, where: str) -> None:
        """Take the committed statistics from ``data`` (the bytes of
        ``meta/stats``, or None) of a carray of ``length`` items.  A file
        that is damaged, or that describes other items than ``meta/sizes``
        (a dataset another tool wrote to afterwards), is not used: its chunks
        count as unknown, and ``damaged`` says why."""
        self.entries, self.left, self.loaded, self.damaged = [], None, None, None
        if data is None:
            return
        try:
            stats = load_stats(data, where)
        except FormatError as err:
            self.damaged = str(err)
            return
        if (stats["kind"], stats["chunklen"], stats["length"]) != \
                (self.kind, self.chunklen, length):
            self.damaged = (f"{where}: describes {stats['length']} items of kind "
                            f"{stats['kind']} in chunks of {stats['chunklen']}, not the "
                            f"carray's {length} of {self.kind} in chunks of {self.chunklen}")
            return
        nfull, nleft = divmod(length, self.chunklen)
        self.entries = list(stats["chunks"][:nfull])
        if nleft:
            self.left = (nleft, stats["chunks"][nfull])
        self.loaded = bytes(data)

    def stage(self, store, engine) -> None:
        """Stage ``meta/stats`` for the engine's chunks and leftover as they are
        now (computing those not known), when it changed; a carray of more
        than ``MAX_STATS_CHUNKS`` chunks has none."""
        if not self.edited:         # a flush with nothing new writes nothing
            return
        nfull, nleft = len(engine.chunks), engine.nleft
        if nfull > MAX_STATS_CHUNKS:
            if self.loaded is not None or store.exists(STATS_KEY):
                store.delete(STATS_KEY)
                self.loaded = None
            return
        self.truncate(nfull)
        missing = [n for n in range(nfull) if n >= len(self.entries) or self.entries[n] is None]
        if missing:
            for n, entry in _read_stats(engine, missing, self.kind):
                self.record(n, entry)
        chunks = list(self.entries)
        if nleft:
            chunks.append(self.of(engine.leftover[:nleft]))
        encoded = [(encode_value(lo, self.kind), encode_value(hi, self.kind), int(nulls))
                   for lo, hi, nulls in chunks]
        data = dump_stats(self.kind, self.chunklen, nfull * self.chunklen + nleft, encoded)
        if data != self.loaded:
            store.set(STATS_KEY, data)
            self.loaded = data
        self.left = (nleft, chunks[-1]) if nleft else None

    # ---------------------------------------------------------------- reading

    def column_stats(self, engine, use_leftover: bool) -> ColumnStats:
        """The statistics of the engine's chunks, for planning a query.  The
        leftover's are used only with ``use_leftover`` (a reader)."""
        nfull, nleft = len(engine.chunks), engine.nleft
        entries = self.entries[:nfull]
        entries += [None] * (nfull - len(entries))
        if nleft:
            left = self.left[1] if use_leftover and self.left and self.left[0] == nleft else None
            entries.append(left)
        count = len(entries)
        starts = np.arange(count, dtype=np.int64) * self.chunklen
        stops = np.minimum(starts + self.chunklen, nfull * self.chunklen + nleft)
        dtype = _entry_dtype(self.kind)
        mins, maxs = np.zeros(count, dtype=dtype), np.zeros(count, dtype=dtype)
        nulls = np.zeros(count, dtype=np.int64)
        known = np.zeros(count, dtype=bool)
        for n, entry in enumerate(entries):
            if entry is None:
                continue
            known[n] = True
            nulls[n] = entry[2]
            if entry[0] is not None:
                mins[n], maxs[n] = entry[0], entry[1]
        return ColumnStats(self.kind, starts, stops, mins, maxs, nulls, known)


def _read_stats(engine, nchunks: list, kind: str):
    """Yield ``(n, statistics)`` of the full chunks ``nchunks``, read."""
    if hasattr(engine, "map_chunks"):
        yield from engine.map_chunks(lambda n, items: (n, piece_stats(items, kind)), nchunks)
        return
    for n, items in engine.chunk_arrays(nchunks):
        yield n, piece_stats(items, kind)


def attach_stats(engine, kind, chunklen: int, store, length: int, new: bool) -> None:
    """Give ``engine`` (and its chunk files) a :class:`ChunkStats` of ``kind``,
    loaded from the committed ``meta/stats`` unless ``new``; nothing for a
    kind without statistics or a carray in memory."""
    if kind is None or store is None:
        return
    stats = ChunkStats(kind, chunklen)
    if not new and length:
        data = store.get(STATS_KEY) if store.exists(STATS_KEY) else None
        stats.load(data, length, store.path(STATS_KEY))
    engine.stats = stats
    engine.chunks.stats = stats
