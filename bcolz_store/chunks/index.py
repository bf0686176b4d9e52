"""Secondary indexes of a stored carray: value -> row numbers, kept in the same
commit as the data by every write.

An index (files in :mod:`bcolz_store.format.index_meta`) is a list of
*segments*, each covering rows ``[A, B)``: the rows' items that are not
missing, sorted by value, with their row numbers.  A lookup asks each segment
for the rows whose value lies in an interval and reads only the blocks that
can hold them.

Kinds: ``'sorted'`` keeps the sorted values in blocks whose first values
are in the segment's header (point and range lookups over many distinct
values); ``'bitmap'`` keeps each distinct value with its count, so that the
rows of one value are one sorted run of row numbers (low-cardinality and
categorical columns; at most ``MAX_BITMAP_VALUES`` distinct values per
segment, else the segment is written as ``'sorted'``).

Kept current at each flush (:func:`stage_index`), from what the carray's
:class:`~.stats.ChunkStats` saw since the last: the segments that hold rows
of a chunk written since (a ``setitem``, a ``trim``), and the last partial
chunk plus the rows appended, are built again from the data; the others
stay.  More than ``MAX_SEGMENTS`` segments are merged, the two neighbours
of fewest rows first.  An index is used only when it describes exactly the
carray's committed items and the carray has no change since (a reader, or a
writer right after a flush); a damaged index file is never used.

Lookups return a *superset* of the matching rows where a bound cannot be
written exactly in the column's dtype: the query evaluates its condition on
the rows an index returns, so an index can make a query faster, never give
another answer.
"""

from __future__ import annotations

import hashlib
import math
import zlib

import numpy as np

from ..errors import FormatError, IndexNotFoundError, IntegrityError
from ..format.index_meta import (INDEX_META_KEY, dump_index_meta, dump_segment_header,
                                 load_index_meta, load_segment_header, segment_key)
from .codec import compress, decompress_checked

__all__ = ["ColumnIndex", "attach_index", "build_index", "drop_index", "index_problem",
           "stage_index"]

BLOCK = 16384                   # entries per block of row numbers or values
MAX_SEGMENTS = 8
MAX_SEGMENT_ROWS = 1 << 26
MAX_BITMAP_VALUES = 1 << 16
_HEAD_GUESS = 1 << 16           # bytes read first from a segment file
_MAX_SEGMENT_FILE = 1 << 33


def _missing(values: np.ndarray, kind: str):
    if kind.startswith("category:"):
        return values < 0
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "Mm":
        return np.isnat(values)
    return None


def _typesize(dtype: np.dtype) -> int:
    return dtype.itemsize if dtype.itemsize <= 255 else 1


def build_segment(values: np.ndarray, first: int, kind: str, stats_kind: str) -> bytes:
    """The bytes of the segment of rows ``[first, first + len(values))``."""
    stop = first + len(values)
    rows = np.arange(first, stop, dtype=np.int64)
    mask = _missing(values, stats_kind)
    if mask is not None and mask.any():
        values, rows = values[~mask], rows[~mask]
    order = np.argsort(values, kind="stable")
    values, rows = values[order], rows[order]
    body = bytearray()

    def put(arr):
        data = compress(np.ascontiguousarray(arr).tobytes(), _typesize(arr.dtype), 5, 1, "lz4")
        offset = len(body)
        body.extend(data)
        return offset, len(data), zlib.crc32(data)
    n = len(values)
    positions = [put(rows[i:i + BLOCK]) for i in range(0, n, BLOCK)]
    runs = blocks = None
    if kind == "bitmap":
        distinct, counts = np.unique(values, return_counts=True)
        if len(distinct) <= MAX_BITMAP_VALUES:
            runs = list(zip(distinct.tolist(), counts.tolist()))
    if runs is None:
        blocks = [put(values[i:i + BLOCK]) + (values[i],) for i in range(0, n, BLOCK)]
    dtype = stats_kind.partition(":")[2] if stats_kind.startswith("category:") else stats_kind
    header = dump_segment_header((first, stop), dtype, n, BLOCK, runs, blocks, positions)
    return header + bytes(body)


class _Segment:
    """One segment file, read lazily: its header, then the blocks a lookup needs
    (kept decoded)."""

    def __init__(self, store, first: int, stop: int, md5: str, dtype: np.dtype):
        self.store, self.first, self.stop, self.md5, self.dtype = store, first, stop, md5, dtype
        self.key = segment_key(first)
        self.header = None
        self.whole = None
        self.blocks = {}

    def _read(self, ranges):
        if self.whole is None:
            got = self.store.get_chunk_ranges(self.key, ranges)
            if got is not None:
                self.store.check_reading()
                return got
            self.whole = self.store.get_chunk(self.key, _MAX_SEGMENT_FILE)
            self.store.check_reading()
        return [self.whole[a:b] for a, b in ranges]

    def load(self):
        if self.header is not None:
            return self.header
        where = self.store.path(self.key)
        (head,) = self._read([(0, _HEAD_GUESS)])
        if len(head) >= 8:
            size = 8 + int.from_bytes(bytes(head[4:8]), "little")
            if size > len(head):
                (head,) = self._read([(0, size)])
        header, size = load_segment_header(head, where)
        if hashlib.md5(bytes(head[:size])).hexdigest() != self.md5:
            raise FormatError(f"{where}: the header does not match the index's md5 (damaged)")
        if header["rows"] != (self.first, self.stop):
            raise FormatError(f"{where}: holds rows {header['rows']}, the index says "
                              f"[{self.first}, {self.stop})")
        self.offset = size
        if header["runs"] is not None:
            values = np.array([v for v, _ in header["runs"]], dtype=self.dtype)
            counts = np.array([c for _, c in header["runs"]], dtype=np.int64)
            if len(values) > 1 and not (values[1:] > values[:-1]).all():
                raise FormatError(f"{where}: the runs are not in increasing order")
            self.run_values, self.run_starts = values, np.concatenate([[0], np.cumsum(counts)])
        else:
            self.fences = np.array([b[3] for b in header["values"]], dtype=self.dtype)
        self.header = header
        return header

    def _blocks(self, name: str, numbers: list, dtype: np.dtype) -> list:
        header = self.header
        want = [n for n in numbers if (name, n) not in self.blocks]
        if want:
            spans = [header[name][n] for n in want]
            got = self._read([(self.offset + o, self.offset + o + s) for o, s, *_ in spans])
            where = self.store.path(self.key)
            for n, (o, s, crc, *_), data in zip(want, spans, got):
                count = min(header["block"], header["n"] - n * header["block"])
                if len(data) != s or zlib.crc32(data) != crc:
                    raise FormatError(f"{where}: block {n} of {name} is damaged")
                out = np.empty(count, dtype=dtype)
                decompress_checked(data, out, out.nbytes, where)
                self.blocks[(name, n)] = out
        return [self.blocks[(name, n)] for n in numbers]

    def entries(self, lo, lo_strict, hi, hi_strict) -> np.ndarray:
        """Row numbers of the entries with value in the interval (None: unbounded)."""
        header = self.load()
        if header["n"] == 0:
            return np.empty(0, dtype=np.int64)
        if header["runs"] is not None:
            vals, base = self.run_values, 0
            a = 0 if lo is None else np.searchsorted(vals, lo, "right" if lo_strict else "left")
            b = len(vals) if hi is None else np.searchsorted(vals, hi,
                                                             "left" if hi_strict else "right")
            if b <= a:
                return np.empty(0, dtype=np.int64)
            start, stop = int(self.run_starts[a]), int(self.run_starts[b])
        else:
            fences = self.fences
            first = 0 if lo is None else max(int(np.searchsorted(fences, lo, "left")) - 1, 0)
            last = len(fences) if hi is None else int(np.searchsorted(fences, hi, "right"))
            if last <= first:
                return np.empty(0, dtype=np.int64)
            vals = np.concatenate(self._blocks("values", list(range(first, last)), self.dtype))
            base = first * header["block"]
            a = 0 if lo is None else np.searchsorted(vals, lo, "right" if lo_strict else "left")
            b = len(vals) if hi is None else np.searchsorted(vals, hi,
                                                             "left" if hi_strict else "right")
            if b <= a:
                return np.empty(0, dtype=np.int64)
            start, stop = base + int(a), base + int(b)
        size = header["block"]
        parts = self._blocks("positions", list(range(start // size, (stop - 1) // size + 1)),
                             np.dtype(np.int64))
        rows = np.concatenate(parts)[start - (start // size) * size:][:stop - start]
        if len(rows) and (rows.min() < self.first or rows.max() >= self.stop):
            raise FormatError(f"{self.store.path(self.key)}: row numbers out of its rows")
        return rows


class ColumnIndex:
    """The index of one stored carray (see the module docstring).

    Attributes
    ----------
    kind : {'sorted', 'bitmap'}
    dtype : numpy.dtype
        Of the values indexed (a categorical's: its codes).
    length : int
        Rows it describes.
    damaged : str or None
        Why the committed index is not used (then it has no segments).
    """

    def __init__(self, store, kind: str, stats_kind: str, length: int = 0, segments=()):
        self.store, self.kind, self.stats_kind, self.length = store, kind, stats_kind, length
        base = stats_kind.partition(":")[2] if stats_kind.startswith("category:") else stats_kind
        self.dtype = np.dtype(base)
        self.segments = [_Segment(store, a, b, md5, self.dtype) for a, b, md5 in segments]
        self.damaged = None
        self.rebuild = False    # a writer's damaged index: built again at the next flush
        self._last = None

    def _bounds(self, value):
        """``value`` written exactly in the index's dtype, or None."""
        dtype = self.dtype
        try:
            if dtype.kind in "iub":
                if isinstance(value, (bool, np.bool_)) != (dtype.kind == "b"):
                    return None
                if not isinstance(value, (int, np.integer, bool, np.bool_)):
                    return None
                if dtype.kind != "b":
                    info = np.iinfo(dtype)
                    if not info.min <= int(value) <= info.max:
                        return None
                return np.array(value, dtype=dtype)
            if dtype.kind == "f":
                if isinstance(value, (bool, np.bool_)) or \
                        not isinstance(value, (int, float, np.integer, np.floating)):
                    return None
                out = np.array(value, dtype=dtype)
                return out if not math.isnan(float(value)) and float(out) == value else None
            if dtype.kind in "Mm":
                if not isinstance(value, (np.datetime64, np.timedelta64)) or \
                        np.dtype(type(value)).kind != dtype.kind and \
                        np.asarray(value).dtype.kind != dtype.kind:
                    return None
                out = np.asarray(value).astype(dtype)
                return out if not np.isnat(out) and out == value else None
            if dtype.kind in "SU":
                if not isinstance(value, bytes if dtype.kind == "S" else str):
                    return None
                out = np.array(value, dtype=dtype)
                return out if out == value else None
        except (TypeError, ValueError, OverflowError):
            return None
        return None

    def lookup(self, op: str, value):
        """Sorted int64 row numbers of the items ``op value`` may hold for
        (``op`` one of ``== < <= > >= between isin``; ``between`` takes
        ``(lo, hi)`` inclusive, ``isin`` a sequence), or None when the index
        cannot answer (a value not exact in its dtype, another op).

        Raises
        ------
        FormatError
            A damaged segment file (the query then reads the chunks).
        IntegrityError
            The same, with ``verify=True`` (the query raises it).
        """
        last, self._last = self._last, None
        if last is not None and last[0] == op and last[1] is value:
            return last[2]          # what estimate() just found
        if op == "isin":
            parts = [self.lookup("==", v) for v in value]
            if any(p is None for p in parts):
                return None
            return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
        if op == "between":
            lo, hi = self._bounds(value[0]), self._bounds(value[1])
            interval = (lo, False, hi, False)
        else:
            bound = self._bounds(value)
            interval = {"==": (bound, False, bound, False), "<": (None, False, bound, True),
                        "<=": (None, False, bound, False), ">": (bound, True, None, False),
                        ">=": (bound, False, None, False)}.get(op)
            if interval is None:
                return None
            lo, hi = interval[0], interval[2]
        if op in ("==", "between") and (lo is None or hi is None) or \
                op in ("<", "<=") and hi is None or op in (">", ">=") and lo is None:
            return None
        try:
            parts = [seg.entries(*interval) for seg in self.segments]
        except FormatError as err:  # with verify=True a damaged index is reported
            if getattr(self.store, "verify", False):
                raise IntegrityError(str(err)) from err
            raise
        rows = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        rows.sort()
        return rows

    def estimate(self, op: str, value) -> int:
        """Rows a lookup of ``op value`` returns (it is done, and kept for the
        :meth:`lookup` of the same arguments that follows)."""
        rows = self.lookup(op, value)
        self._last = (op, value, rows)
        return self.length if rows is None else len(rows)


def attach_index(engine, store, stats_kind, length: int) -> None:
    """Give ``engine`` the committed index of its carray (``index/meta``), if any:
    one whose file is damaged or describes other items is kept as ``damaged``
    (never used); a writer's is built again at its next flush, as is one
    whose ``index/meta`` does not match the checksum the writer's commit
    would keep for it (changed outside commits).

    Raises
    ------
    FormatError
        ``index/meta`` is not a plain file (a device, a link out of the
        dataset, too large), for a writer or with ``verify=True``.
    IntegrityError
        With ``verify=True``, its content is not what was committed.
    """
    engine.index = None
    if store is None or stats_kind is None or not store.exists(INDEX_META_KEY):
        return
    where = store.path(INDEX_META_KEY)
    try:
        data = store.get(INDEX_META_KEY)
    except FormatError:         # not a plain file, too large: reported as any damage to
        if getattr(store, "verify", False) or not getattr(store, "readonly", True):
            raise               # verify=True, and to a writer, which could not replace it
        data = b""
    reads = None if getattr(store, "readonly", True) else getattr(store, "reads", None)
    kind = "sorted"
    try:
        meta = load_index_meta(data, where)
        kind = meta["kind"]
        why = None if reads is None else reads.unchecked(INDEX_META_KEY, data)
        if why is not None:
            raise FormatError(why)
        kind_ok = meta["dtype"] == (stats_kind.partition(":")[2]
                                    if stats_kind.startswith("category:") else stats_kind)
        if not kind_ok or meta["length"] != length:
            raise FormatError(f"{where}: describes {meta['length']} items of {meta['dtype']}, "
                              f"not the carray's {length} of {stats_kind}")
    except FormatError as err:
        index = ColumnIndex(store, kind, stats_kind)
        index.damaged, index.rebuild = str(err), reads is not None
        engine.index = index
        return
    engine.index = ColumnIndex(store, meta["kind"], stats_kind, meta["length"],
                               meta["segments"])


def _build(store, engine, index, first: int, stop: int) -> list:
    """Build and stage the segments of rows ``[first, stop)``."""
    out = []
    for a in range(first, stop, MAX_SEGMENT_ROWS):
        b = min(a + MAX_SEGMENT_ROWS, stop)
        data = build_segment(engine.read_range(a, b), a, index.kind, index.stats_kind)
        size = 8 + int.from_bytes(data[4:8], "little")
        store.set(segment_key(a), data)
        out.append((a, b, hashlib.md5(data[:size]).hexdigest()))
    return out


def _stage_meta(store, index, spans: list, length: int) -> None:
    store.set(INDEX_META_KEY, dump_index_meta(index.kind, str(index.dtype.str), length, spans))
    index.length = length
    index._last = None
    index.segments = [_Segment(store, a, b, md5, index.dtype) for a, b, md5 in spans]


def build_index(store, engine, kind: str, stats_kind: str) -> ColumnIndex:
    """Build an index of ``kind`` over all of the engine's items and stage it."""
    old = getattr(engine, "index", None)
    index = ColumnIndex(store, kind, stats_kind)
    spans = _build(store, engine, index, 0, engine.length)
    if old is not None:
        for seg in old.segments:
            if seg.first not in {a for a, _, _ in spans}:
                store.delete(seg.key)
    _stage_meta(store, index, spans, engine.length)
    engine.index = index
    return index


def drop_index(store, engine) -> None:
    """Stage the removal of the engine's index.

    Raises
    ------
    IndexNotFoundError
        When it has none.
    """
    index = getattr(engine, "index", None)
    if index is None:
        raise IndexNotFoundError(f"{store.root}: the carray has no index")
    for seg in index.segments:
        store.delete(seg.key)
    store.delete(INDEX_META_KEY)
    engine.index = None


def stage_index(store, engine, stats) -> None:
    """Bring the engine's index up to date with its items (see the module
    docstring) and stage what changed; nothing without an index."""
    index = getattr(engine, "index", None)
    if index is not None and index.rebuild:
        _rebuild(store, engine, index)
        return
    if index is None or index.damaged is not None or not stats.edited:
        return
    n, cl = engine.length, engine.chunklen
    nfull = len(engine.chunks)      # the leftover's file is written at every flush
    dirty = [(k * cl, (k + 1) * cl) for k in sorted(stats.replaced) if k < nfull]
    tail = min(index.length, n)
    dirty.append((tail // cl * cl if stats.left_edited else tail, max(n, index.length)))
    kept = [s for s in index.segments if s.stop <= n
            and not any(a < s.stop and s.first < b for a, b in dirty)]
    spans, row = [], 0
    for seg in kept + [None]:
        stop = n if seg is None else seg.first
        if row < stop:
            spans.extend(_build(store, engine, index, row, stop))
        if seg is not None:
            spans.append((seg.first, seg.stop, seg.md5))
            row = seg.stop
    while len(spans) > MAX_SEGMENTS:
        i = min(range(len(spans) - 1), key=lambda j: spans[j + 1][1] - spans[j][0])
        if spans[i + 1][1] - spans[i][0] > MAX_SEGMENT_ROWS:
            break
        spans[i:i + 2] = _build(store, engine, index, spans[i][0], spans[i + 1][1])
    firsts = {a for a, _, _ in spans}
    for seg in index.segments:
        if seg.first not in firsts:
            store.delete(seg.key)
    _stage_meta(store, index, spans, n)


def _rebuild(store, engine, index) -> None:
    """Build a damaged index again over all of the engine's items, removing
    every other segment file of its folder."""
    spans = _build(store, engine, index, 0, engine.length)
    keep = {segment_key(a) for a, _, _ in spans} | {INDEX_META_KEY}
    for name in store.listdir("index"):
        if f"index/{name}" not in keep:
            store.delete(f"index/{name}")
    _stage_meta(store, index, spans, engine.length)
    index.damaged, index.rebuild = None, False


def index_problem(store, engine):
    """Why the committed index of ``engine``'s carray does not describe its
    items (damaged, of other items, or a segment whose bytes differ from those
    built again from the items), or None (it does, or there is none)."""
    index = getattr(engine, "index", None)
    if index is None:
        return None
    if index.damaged is not None:
        return index.damaged
    for seg in index.segments:
        want = build_segment(engine.read_range(seg.first, seg.stop), seg.first, index.kind,
                             index.stats_kind)
        got = store.get_chunk(seg.key, _MAX_SEGMENT_FILE)
        if bytes(got) != want:
            return (f"{store.path(seg.key)}: does not match the items of rows "
                    f"[{seg.first}, {seg.stop}) (stale or damaged)")
    return None
