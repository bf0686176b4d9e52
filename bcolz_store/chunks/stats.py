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
codes of categorical carrays (-1 missing), nullable carrays of those fixed
kinds and 16-byte decimals (their present items: chunks/kind_stats.py, which
a ChunkStats asks through its ``source``).  Complex numbers, structured and
multidimensional atoms and pickled objects have none.  Floats of a carray
with ``quantize`` are rounded as they are stored.  A chunk whose least or
greatest item is a text longer than ``MAX_STATS_TEXT`` has its statistics
not kept (``NOT_KEPT``: it is read).

A committed file that is damaged, describes other items, or cannot be read is
not used (``damaged`` says why; ``verify=True`` raises, and a writer, which
could not replace a file that is not a plain one, refuses it);
:meth:`ChunkStats.recompute` recomputes every chunk's from its items (for
``bcolz-store index --stats`` and :func:`bcolz_store.verify`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import FormatError
from ..format.stats_meta import (MAX_STATS_BYTES, MAX_STATS_CHUNKS, MAX_STATS_TEXT, NOT_KEPT,
                                 STATS_KEY, dump_stats, encode_value, load_stats)
from .chunk import quantize
from .missing import missing_mask

__all__ = ["ChunkStats", "ColumnStats", "attach_stats", "piece_stats", "same_stats", "stats_kind",
           "stored_stats"]


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
    min and max are None when every item is missing.  ``(None, None,
    NOT_KEPT)`` when the least or greatest is a text longer than
    ``MAX_STATS_TEXT``: not kept."""
    n = len(values)
    mask = lo = None
    if n and values.dtype.kind in "Mm":
        return _time_stats(values)
    if kind.startswith("vlen:"):
        mask = missing_mask(values)
    elif n and values.dtype.kind in "iuf":
        lo = values.min()       # NaN propagates: one pass when none is missing
        if kind.startswith("category:") and lo < 0:
            mask = values < 0
        elif values.dtype.kind == "f" and np.isnan(lo):
            mask = np.isnan(values)
    nulls = 0
    if mask is not None:
        nulls = int(np.count_nonzero(mask))
        if nulls:
            values, lo = values[~mask], None
    if nulls == n:
        return None, None, nulls
    if lo is not None:
        return lo, values.max(), nulls
    if values.dtype.kind in "SUOT" or kind == "vlen:bytes":
        lo, hi = _text_minmax(values) if values.dtype.kind != "T" else \
            (str(values.min()), str(values.max()))
        if len(lo) > MAX_STATS_TEXT or len(hi) > MAX_STATS_TEXT:
            return None, None, NOT_KEPT
    elif values.dtype.kind == "b":
        lo, hi = bool(values.all()), bool(values.any())
    else:
        lo, hi = values.min(), values.max()
    return lo, hi, nulls


_NAT = np.iinfo(np.int64).min      # NaT as an int64


def _time_stats(values: np.ndarray) -> tuple:
    """:func:`piece_stats` of datetime64 or timedelta64 items: as their int64
    values (NaT the least of them), which numpy reduces several times faster."""
    ints = values.view(np.dtype(np.int64).newbyteorder(values.dtype.byteorder))
    lo, nulls = ints.min(), 0
    if lo == _NAT:
        ints = ints[ints != _NAT]
        nulls = len(values) - len(ints)
        if not len(ints):
            return None, None, nulls
        lo = ints.min()
    lo, hi = np.array([lo, ints.max()], dtype=np.int64).view(values.dtype.newbyteorder("="))
    return lo, hi, nulls


def stored_stats(values: np.ndarray, kind: str, digits: int = 0) -> tuple:
    """:func:`piece_stats` of ``values`` as a carray whose cparams have
    ``quantize=digits`` stores them: floats rounded (a monotonic rounding: the
    least and greatest of the rounded items are the rounded least and
    greatest)."""
    entry = piece_stats(values, kind)
    if digits and entry[0] is not None and values.dtype.kind == "f":
        lo, hi = quantize(np.array(entry[:2], dtype=kind), digits)
        entry = (lo, hi, entry[2])
    return entry


def _entry_dtype(kind: str) -> np.dtype:
    if kind.startswith("nullable:"):
        kind = kind[len("nullable:"):]
    if kind.startswith(("vlen:", "decimal:")):
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
        self.quantize = 0           # the carray's cparams.quantize (floats are stored rounded)
        self.source = None          # what computes them for a nullable or decimal carray
        self.repair = False         # the committed file is wrong: the next stage replaces it
        self._entries = []          # per full chunk: (min, max, nulls) or None (unknown)
        self._json = []             # per full chunk: its entry as written, or None
        self._left = None           # the committed leftover's, (nleft, entry)
        self._loaded = None         # bytes of the committed file
        self._damaged = None        # why the committed file was not used
        self._unparsed = None       # (data, length, where, check) of a file not parsed yet
        self._dirty = True          # entries changed since the last stage...
        self._last = None           # ...which staged (nfull, nleft, the leftover's as written)
        # what an index needs to know of the writes since the last flush (chunks/index.py)
        self.replaced = set()       # chunks written since the last flush, but by appends
        self.left_edited = False    # items of the leftover assigned since the last flush
        self.edited = False         # any change since the last flush

    def _parsed(self) -> "ChunkStats":
        if self._unparsed is not None:
            self._parse(*self._unparsed)
        return self

    # The committed file is parsed when first needed (opening a table reads it only).
    entries = property(lambda self: self._parsed()._entries,
                       doc="Per full chunk: its (min, max, nulls), or None (unknown).")
    left = property(lambda self: self._parsed()._left,
                    doc="The committed leftover's ``(nleft, entry)``, or None.")
    loaded = property(lambda self: self._parsed()._loaded,
                      doc="The bytes of the committed file, when it was used.")
    damaged = property(lambda self: self._parsed()._damaged,
                       doc="Why the committed file was not used (None: it was).")

    @damaged.setter
    def damaged(self, why: str) -> None:
        self._unparsed, self._damaged = None, why

    # --------------------------------------------------------- keeping them

    def forget(self, nchunk: int) -> None:
        """Chunk file ``nchunk`` was written without statistics."""
        self.replaced.add(nchunk)
        self.edited = True
        if nchunk < len(self.entries):
            self._entries[nchunk] = self._json[nchunk] = None
            self._dirty = True

    def truncate(self, nchunks: int) -> None:
        """Only the first ``nchunks`` chunk files are left."""
        if len(self.entries) > nchunks:
            self.edited = True
            del self._entries[nchunks:], self._json[nchunks:]
            self._dirty = True

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
            grow = [None] * (nchunk + 1 - len(self._entries))
            self._entries += grow
            self._json += grow
        self._entries[nchunk], self._json[nchunk] = entry, None
        self._dirty = True

    def settled(self) -> None:
        """Everything up to now is staged (a flush)."""
        self.replaced.clear()
        self.edited = self.left_edited = False

    def of(self, values: np.ndarray):
        """The statistics of the items ``values``, as they are stored."""
        if self.source is not None:
            return self.source.of(values)
        return stored_stats(values, self.kind, self.quantize)

    def read_entries(self, engine, nchunks: list):
        """Yield ``(n, statistics)`` of the engine's full chunks ``nchunks``, read."""
        if self.source is not None:
            return self.source.read_entries(nchunks)
        return _read_stats(engine, nchunks, self.kind)

    def leftover_entry(self, engine, nleft: int):
        """The statistics of the engine's leftover (``nleft`` items)."""
        if self.source is not None:
            return self.source.leftover_entry(nleft)
        return self.of(engine.leftover[:nleft])

    # ------------------------------------------------------ file and staging

    def load(self, data, length: int, where: str, check=None) -> None:
        """Take the committed statistics from ``data`` (the bytes of
        ``meta/stats``, or None) of a carray of ``length`` items, parsed when
        first needed.  A file that is damaged, or that describes other items
        than ``meta/sizes`` (a dataset another tool wrote to afterwards), is
        not used: its chunks count as unknown, and ``damaged`` says why.
        ``check`` (a writer's) says why ``data`` may not be carried over (it
        does not match its checksum), or None: then it is not used either,
        and the next :meth:`stage` replaces it."""
        self._entries, self._json, self._left, self._loaded, self._damaged = \
            [], [], None, None, None
        self._unparsed = None if data is None else (bytes(data), length, where, check)
        self._dirty = True

    def _parse(self, data: bytes, length: int, where: str, check=None) -> None:
        self._unparsed = None
        why = None if check is None else check(data)
        if why is not None:
            self._damaged, self.repair = why, True
            return
        try:
            stats = load_stats(data, where)
        except FormatError as err:
            self._damaged = str(err)
            return
        if (stats["kind"], stats["chunklen"], stats["length"]) != \
                (self.kind, self.chunklen, length):
            self._damaged = (f"{where}: describes {stats['length']} items of kind "
                             f"{stats['kind']} in chunks of {stats['chunklen']}, not the "
                             f"carray's {length} of {self.kind} in chunks of {self.chunklen}")
            return
        nfull, nleft = divmod(length, self.chunklen)
        self._entries = list(stats["chunks"][:nfull])
        self._json = list(stats["written"][:nfull])
        if nleft:
            self._left = (nleft, stats["chunks"][nfull])
        self._loaded = data

    def stage(self, store, engine) -> None:
        """Stage ``meta/stats`` for the engine's chunks and leftover as they are
        now (computing those not known), when it changed; a carray of more
        than ``MAX_STATS_CHUNKS`` chunks has none."""
        nfull, nleft = len(engine.chunks), engine.nleft
        data = None
        if nfull <= MAX_STATS_CHUNKS:
            self.truncate(nfull)
            left = self.leftover_entry(engine, nleft) if nleft else None
            self._left = (nleft, left) if nleft else None
            last = (nfull, nleft, self._write(left) if nleft else None)
            if not (self._dirty or self.repair) and last == self._last and \
                    len(self._entries) == nfull and self.loaded is not None:
                return              # what the last stage staged, still
            entries = self._entries
            missing = [n for n in range(nfull) if n >= len(entries) or entries[n] is None]
            if missing:
                for n, entry in self.read_entries(engine, missing):
                    self.record(n, entry)
            written = self._json
            for n in (n for n, one in enumerate(written) if one is None):
                written[n] = self._write(entries[n])
            data = dump_stats(self.kind, self.chunklen, nfull * self.chunklen + nleft,
                              written + ([last[2]] if nleft else []))
            self._dirty, self._last = False, last
        if data is None or len(data) > MAX_STATS_BYTES:
            if self.loaded is not None or store.exists(STATS_KEY):
                store.delete(STATS_KEY)
            self._loaded = None
        elif data != self.loaded or self.repair:
            store.set(STATS_KEY, data, repair=self.repair)
            self._loaded = data
        self.repair = False

    def _write(self, entry) -> list:
        """``entry`` as the file writes it."""
        lo, hi, nulls = entry
        return [encode_value(lo, self.kind), encode_value(hi, self.kind), int(nulls)]

    def recompute(self, engine):
        """Compute every chunk's statistics from its items (reading every chunk),
        to be staged by the next :meth:`stage`; call it before any write.

        Returns
        -------
        str or None
            Why the committed file, as loaded, did not describe the items
            (damaged, missing, or a chunk whose statistics differ); None when
            it did.
        """
        nfull, nleft = len(engine.chunks), engine.nleft
        fresh = [None] * nfull
        for n, entry in self.read_entries(engine, list(range(nfull))):
            fresh[n] = entry
        left = self.leftover_entry(engine, nleft) if nleft else None
        why = self.damaged
        if why is None and self.loaded is None:
            why = "no statistics"
        said = self.entries + ([self.left[1]] if self.left else [])
        for n, (old, new) in enumerate(zip(said, fresh + ([left] if nleft else []))):
            if why is None and not same_stats(old, new):
                why = (f"chunk {n}: the file says min {old[0]!r}, max {old[1]!r}, {old[2]} "
                       f"missing; its items give min {new[0]!r}, max {new[1]!r}, {new[2]} missing")
        self._entries, self._json, self._left = fresh, [None] * nfull, None
        self._dirty, self.repair = True, why is not None
        return why

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
            if entry is None or entry[2] == NOT_KEPT:
                continue
            known[n] = True
            nulls[n] = entry[2]
            if entry[0] is not None:
                mins[n], maxs[n] = entry[0], entry[1]
        got = ColumnStats(self.kind, starts, stops, mins, maxs, nulls, known)
        return got if self.source is None else self.source.shown(got)


def same_stats(a, b) -> bool:
    """Whether two chunks' statistics ``(min, max, nulls)`` are equal (min and
    max compared as values: ``-0.0 == 0.0``, a datetime64 with its int)."""
    if a is None or b is None:
        return a is b
    if int(a[2]) != int(b[2]) or (a[0] is None) != (b[0] is None):
        return False
    return a[0] is None or bool(a[0] == b[0]) and bool(a[1] == b[1])


def _read_stats(engine, nchunks: list, kind: str):
    """Yield ``(n, statistics)`` of the full chunks ``nchunks``, read."""
    if hasattr(engine, "map_chunks"):
        yield from engine.map_chunks(lambda n, items: (n, piece_stats(items, kind)), nchunks)
        return
    for n, items in engine.chunk_arrays(nchunks):
        yield n, piece_stats(items, kind)


def attach_stats(engine, kind, chunklen: int, store, length: int, new: bool,
                 source=None) -> None:
    """Give ``engine`` (and its chunk files) a :class:`ChunkStats` of ``kind``,
    loaded from the committed ``meta/stats`` unless ``new``; nothing for a
    kind without statistics or a carray in memory.  ``source`` (a nullable
    or decimal carray's, chunks/kind_stats.py) computes its statistics."""
    if kind is None or store is None:
        return
    stats = ChunkStats(kind, chunklen)
    if source is not None:
        stats.source, source.stats = source, stats
    cparams = getattr(engine, "cparams", None)
    if cparams is not None and _entry_dtype(kind).kind == "f":
        stats.quantize = cparams.quantize or 0
    if not new:
        where = store.path(STATS_KEY)
        try:
            data = store.get(STATS_KEY) if store.exists(STATS_KEY) else None
        except FormatError as err:      # not a plain file, too large...
            if getattr(store, "verify", False) or not getattr(store, "readonly", True):
                raise                   # ...which verify=True reports, as any damage, and
            stats.damaged = f"{err}" if where in str(err) else f"{where}: {err}"
            # a writer, which could not replace it, refuses (as for any other file)
        else:
            reads = None if getattr(store, "readonly", True) else getattr(store, "reads", None)
            stats.load(data, length, where,
                       None if reads is None else lambda got: reads.unchecked(STATS_KEY, got))
    engine.stats = stats
    engine.chunks.stats = stats
