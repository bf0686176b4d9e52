"""The engine of a list (or map) carray of layout version 2: the ``int64``
end offsets of its rows (a plain carray, the column's own folder), a bool
validity when lists may be missing, and one engine per child column (a
list's elements, a map's keys and values), each a carray of its own.

Row ``i`` holds the child rows ``[ends[i-1], ends[i])`` (``ends[-1]`` being
0); a missing list holds none.  Rows travel as Arrow buffers
(:class:`~bcolz_store.kinds.buffers.ArrowBuffers`-like objects: ``length``,
``validity``, ``offsets``, ``values``, ``children``) in both directions;
Python items (``c[:]``) are made from them in one pass per child column.
The offsets are the primary part (:mod:`bcolz_store.chunks.parts`): the
carray's length, chunks and leftover are theirs; the validity is a row
part; the children are parts whose rows this engine places.

Layout: kinds/list/files.py.
"""

from __future__ import annotations

import numpy as np

from ...chunks.parts import Part, PartsEngine, part_nbytes
from ...errors import FormatError
from ..nullable.engine import NullableEngine
from ..vlen.engine import VlenEngine
from ..vlen.chunk_items import as_items

__all__ = ["ListV2Engine", "child_buffers", "child_store", "range_rows"]


def range_rows(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices ``starts[i] .. starts[i] + counts[i]`` of every run, end to end."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    firsts = np.cumsum(counts) - counts
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) + np.repeat(starts - firsts, counts)


class _Rows:
    """Arrow-layout rows (the fields of an ArrowBuffers, without its import)."""

    __slots__ = ("length", "validity", "offsets", "values", "children", "dictionary", "type")

    def __init__(self, length, validity, offsets, values, children=()):
        self.length, self.validity, self.offsets = int(length), validity, offsets
        self.values, self.children, self.dictionary, self.type = values, tuple(children), None, None


def _text_rows(objs: np.ndarray, kind: str) -> _Rows:
    """Arrow string or binary rows of an object array of str/bytes (None: missing)."""
    items = objs.tolist()
    valid = np.fromiter((v is not None for v in items), dtype=bool, count=len(items))
    if not valid.all():
        empty = "" if kind == "str" else b""
        items = [empty if v is None else v for v in items]
    raw = [v.encode("utf-8") for v in items] if kind == "str" else items
    lens = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    offsets = np.concatenate(([0], np.cumsum(lens)))
    values = np.frombuffer(b"".join(raw), dtype=np.uint8)
    return _Rows(len(items), None if valid.all() else valid, offsets, values)


def child_buffers(engine, values) -> _Rows:
    """The Arrow rows of a child's values as its engine reads them."""
    if isinstance(engine, VlenEngine):
        return _text_rows(np.asarray(values, dtype=object), engine.vlen.kind)
    if isinstance(values, np.ma.MaskedArray):
        return _Rows(len(values), ~np.ma.getmaskarray(values), None, np.asarray(values.data))
    return _Rows(len(values), None, None, np.asarray(values))


def _text_objects(rows, kind: str, idx: np.ndarray) -> np.ndarray:
    """The str/bytes (None where missing) of Arrow text rows ``idx``."""
    offsets = np.asarray(rows.offsets, dtype=np.int64)
    whole = np.asarray(rows.values, dtype=np.uint8).tobytes()
    starts, stops = offsets[idx].tolist(), offsets[idx + 1].tolist()
    if kind == "str":
        out = [whole[a:b].decode("utf-8") for a, b in zip(starts, stops)]
    else:
        out = [whole[a:b] for a, b in zip(starts, stops)]
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    if rows.validity is not None:
        arr[~np.asarray(rows.validity, dtype=bool)[idx]] = None
    return arr


def child_store(engine, rows, idx: np.ndarray):
    """Rows ``idx`` of the Arrow child ``rows`` as the child engine appends them."""
    valid = None if rows.validity is None else np.asarray(rows.validity, dtype=bool)[idx]
    if isinstance(engine, VlenEngine):
        objs = _text_objects(rows, engine.vlen.kind, idx)
        return as_items(objs, engine.vlen.kind, engine.atom, engine.vlen.nullable)
    atom = engine.atom
    values = np.asarray(rows.values)
    if values.dtype != atom:
        values = values.view(atom) if values.dtype.itemsize == atom.itemsize else \
            values.astype(atom)
    values = np.ascontiguousarray(values[idx])
    if isinstance(engine, NullableEngine):
        if valid is None:
            valid = np.ones(len(values), dtype=bool)
        return values, valid
    return values


class ListV2Engine(PartsEngine):
    """The offsets, validity and children of one list carray (version 2).

    Parameters
    ----------
    offsets : ChunkEngine
        ``int64`` end offsets, one per row.
    validity : ChunkEngine or None
        Bools, True where the list is present (None: every list is).
    children : list of (folder, engine)
        The child columns (``items``; or ``keys`` and ``values``).
    codec : object
        ``to_python(rows)`` and ``from_python(items)`` (Arrow rows <-> the
        items of reads and writes) and ``check(rows)`` (refusals).
    stage_part : callable or None
        ``stage_part(folder, engine)``: stage a part's ``meta/sizes`` and
        statistics for the next commit (folder None: the validity).
    where : str
        What errors name.
    """

    offsets = Part()

    def __init__(self, offsets, validity, children, codec, stage_part=None,
                 where: str = "list carray"):
        children = list(children)
        self._folders = [folder for folder, _ in children]
        # parts: the offsets (primary), each child by its folder, the validity as None
        parts = {"offsets": offsets}
        parts.update(children)
        parts[None] = validity
        self._init_parts(parts, rows=(None,), sized=list(parts))
        self.codec = codec
        self.stage_part = stage_part
        self.where = where
        self.atom = np.dtype(object)

    stats = None            # no chunk statistics for the lists themselves
    part_nbytes = staticmethod(part_nbytes)

    @property
    def children(self) -> list:
        """``(folder, engine)`` of each child column."""
        return [(folder, self.parts[folder]) for folder in self._folders]

    @property
    def validity(self):
        """The engine of the validity (bools, True where the list is
        present), or None when every list is."""
        return self.parts.get(None)

    @property
    def cbytes(self) -> int:
        """Compressed bytes of every part's chunk files (a nullable child's
        validity too)."""
        return sum(int(getattr(e, "parts_cbytes", e.cbytes)) for e in self.parts.values())

    parts_cbytes = cbytes

    # ------------------------------------------------------------ reading

    def _ends(self, start: int, stop: int) -> tuple:
        """``(lo, ends)``: the child row before row ``start`` and the ends of rows ``start:stop``."""
        if start >= stop:
            return 0, np.zeros(0, dtype=np.int64)
        if start == 0:
            ends = np.asarray(self.offsets.read_range(0, stop), dtype=np.int64)
            self._check_ends(0, ends, start)
            return 0, ends
        ends = np.asarray(self.offsets.read_range(start - 1, stop), dtype=np.int64)
        self._check_ends(int(ends[0]), ends[1:], start)
        return int(ends[0]), ends[1:]

    def _check_ends(self, lo: int, ends: np.ndarray, start: int) -> None:
        """Refuse end offsets that decrease or run past a child's rows.

        Raises
        ------
        FormatError
            Damaged offsets.
        """
        steps = np.diff(ends, prepend=lo)
        if lo < 0 or (len(steps) and int(steps.min()) < 0):
            at = start + int(np.argmin(steps)) if len(steps) else start
            raise FormatError(f"{self.where}: damaged list offsets: row {at} ends before it "
                              f"starts")
        hi = int(ends[-1]) if len(ends) else lo
        for folder, engine in self.children:
            if hi > engine.length:
                raise FormatError(f"{self.where}: damaged list offsets: they reach child row "
                                  f"{hi}, {folder}/ holds {engine.length}")

    def _child_rows(self, engine, how) -> _Rows:
        return self._rows_of(engine, how(engine))

    def _child_range(self, folder, engine, lo: int, hi: int):
        """Child rows ``[lo, hi)``: through the codec's ``child_range`` (a child's
        own column kind) where it gives them, else from the engine's values."""
        by_kind = getattr(self.codec, "child_range", None)
        found = by_kind(folder, engine, lo, hi) if by_kind is not None else None
        if found is not None:
            return found
        return self._child_rows(engine, lambda x: x.read_range(lo, hi))

    def _rows_of(self, engine, values):
        convert = getattr(self.codec, "child_rows", None)
        return convert(engine, values) if convert is not None else child_buffers(engine, values)

    def _valid(self, how, n: int):
        if self.validity is None:
            return None
        valid = np.asarray(how(self.validity), dtype=bool)
        return None if valid.all() else valid

    def read_buffers(self, start: int, stop: int) -> _Rows:
        """Rows ``[start, stop)`` as Arrow rows (``int64`` offsets from 0)."""
        start, stop = int(start), int(stop)
        lo, ends = self._ends(start, stop)
        hi = int(ends[-1]) if len(ends) else lo
        children = [self._child_range(f, e, lo, hi) for f, e in self.children]
        offsets = np.concatenate(([0], ends - lo)) if len(ends) else np.zeros(1, np.int64)
        valid = self._valid(lambda v: v.read_range(start, stop), stop - start)
        return self._assemble(stop - start, valid, offsets, children)

    def _assemble(self, n, valid, offsets, children) -> _Rows:
        if len(children) == 2:        # a map: one struct child of keys and values
            entries = _Rows(children[0].length, None, None, None, children)
            return _Rows(n, valid, offsets, None, (entries,))
        return _Rows(n, valid, offsets, None, tuple(children))

    def gather_buffers(self, idx: np.ndarray) -> _Rows:
        """The rows at positions ``idx`` (a 1-d int array) as Arrow rows."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if not len(idx):
            return self.read_buffers(0, 0)
        stops = np.asarray(self.offsets.gather(idx), dtype=np.int64)
        before = idx - 1
        starts = np.zeros(len(idx), dtype=np.int64)
        if (before >= 0).any():
            starts[before >= 0] = self.offsets.gather(before[before >= 0])
        counts = stops - starts
        if int(counts.min()) < 0 or int(starts.min()) < 0 or \
                any(int(stops.max()) > e.length for _, e in self.children):
            raise FormatError(f"{self.where}: damaged list offsets (a row ends before it "
                              f"starts, or past its child's rows)")
        rows = range_rows(starts, counts)
        children = [self._rows_of(e, e.gather(rows)) if len(rows) else
                    self._child_rows(e, lambda x: x.read_range(0, 0)) for _, e in self.children]
        offsets = np.concatenate(([0], np.cumsum(counts)))
        valid = self._valid(lambda v: v.gather(idx), len(idx))
        return self._assemble(len(idx), valid, offsets, children)

    def read_range(self, start: int, stop: int) -> np.ndarray:
        return self.codec.to_python(self.read_buffers(start, stop))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        return self.codec.to_python(self.gather_buffers(idx.reshape(-1))).reshape(idx.shape)

    def missing(self, start: int, stop: int) -> np.ndarray:
        """Whether each list ``start:stop`` is missing."""
        if self.validity is None:
            return np.zeros(stop - start, dtype=bool)
        return ~np.asarray(self.validity.read_range(start, stop), dtype=bool)

    # ------------------------------------------------------------ writing

    def prepare(self, items):
        """Items as Arrow rows, checked before anything changes."""
        if isinstance(items, _Rows) or hasattr(items, "children"):
            return items
        return self.codec.from_python(items)

    def append(self, items) -> None:
        """Append rows (Python items, or Arrow rows checked by the codec)."""
        rows = self.prepare(items)
        self.codec.check(rows)
        n = rows.length
        if not n:
            return
        valid = np.ones(n, dtype=bool) if rows.validity is None else \
            np.asarray(rows.validity, dtype=bool)
        offsets = np.asarray(rows.offsets, dtype=np.int64)
        counts = np.where(valid, np.diff(offsets), 0)
        idx = range_rows(offsets[:-1], counts)
        child = rows.children[0]
        parts = child.children if len(self.children) == 2 else (child,)
        store = getattr(self.codec, "child_values", child_store)
        by_kind = getattr(self.codec, "child_append", None)
        kinds = [by_kind(f, e) if by_kind is not None else None for f, e in self.children]
        stored = [store(e, part, idx) if write is None else part
                  for (_, e), part, write in zip(self.children, parts, kinds)]
        base = int(self.offsets.read_range(self.length - 1, self.length)[0]) \
            if self.length else 0
        for (_, engine), values, write in zip(self.children, stored, kinds):
            if write is None:
                engine.append(values)
            else:                       # the child's own kind appends the rows idx
                write(values, idx)
        self.offsets.append(base + np.cumsum(counts))
        if self.validity is not None:
            self.validity.append(valid)

    def _rewrite(self, lo: int, edit) -> None:
        """Rows ``lo:`` read as items, changed by ``edit(items)``, written back."""
        items = self.read_range(lo, self.length)
        edit(items)
        rows = self.codec.from_python(items)         # (refused before anything changes)
        self.trim_to(lo)
        self.append(rows)

    def _new_items(self, items) -> np.ndarray:
        rows = items if isinstance(items, _Rows) or hasattr(items, "children") else None
        return self.codec.to_python(rows) if rows is not None else \
            self.codec.to_python(self.codec.from_python(items))

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        new = self._new_items(items)
        positions = np.arange(start, stop, step, dtype=np.int64)
        self.set_positions(positions, new)

    def set_positions(self, idx: np.ndarray, items) -> None:
        new = self._new_items(items)
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if not len(idx):
            return
        lo = int(idx.min())

        def edit(old):
            for i, value in zip((idx - lo).tolist(), new):
                old[i] = value
        self._rewrite(lo, edit)

    def trim_to(self, newlen: int) -> None:
        newlen = int(newlen)
        end = int(self.offsets.read_range(newlen - 1, newlen)[0]) if newlen else 0
        for _, engine in self.children:
            engine.trim_to(end)
        self.offsets.trim_to(newlen)
        if self.validity is not None:
            self.validity.trim_to(newlen)

    def _staged(self, name, engine) -> None:
        """Stage a child's or the validity's ``meta/sizes`` and statistics."""
        if name != "offsets" and self.stage_part is not None:
            self.stage_part(name, engine)
