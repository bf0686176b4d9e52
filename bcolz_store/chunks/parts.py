"""The engine of a carray whose items are stored in several part engines.

A nullable carray keeps its values and their validity, a categorical one
its codes and its categories, a struct one a carray per field (and a
validity), a version-2 list one its end offsets, a validity and its child
columns; a decimal or (version-1) list carray keeps one part, its items
encoded.  :class:`PartsEngine` is the engine API that carrays and ctables
call (see :class:`~.engine.ChunkEngine`) written once over such parts, so
that each kind's engine holds only how its items are encoded across them
(``read_range``, ``gather``, ``prepare``, ``append``, ``set_slice``,
``set_positions``).

The parts are named (``self.parts``, in order); the first is the
*primary* part, whose rows are the carray's: its length, chunks, leftover,
store, cache and statistics are the carray's.  Besides it:

- *row parts* hold one entry per row too (a validity, a struct's fields):
  trimming and dropping a chunk from the cache apply to them as well;
- *fixed parts* are never written (a categorical carray's categories):
  they are loaded for writing, but shared by views, never staged, trimmed
  nor cached on the carray's budget;
- every other part (a list's child columns) is written by the kind's own
  methods, and is staged, copied for a view and cached like the others.

``nbytes`` and ``cbytes`` are the sums over the *sized* parts (the
primary alone unless a kind says otherwise), as the carray's ``meta/sizes``
counts them.
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["Part", "PartsEngine", "part_nbytes"]


def part_nbytes(engine) -> int:
    """The uncompressed bytes of one engine: its ``nbytes``, or its items'
    bytes when it keeps none (a :class:`~.engine.ChunkEngine`)."""
    found = getattr(engine, "nbytes", None)
    return int(found) if found is not None else engine.length * engine.atom.itemsize


class Part:
    """A part of a :class:`PartsEngine` read as an attribute of its own name
    (``engine.values``, ``engine.validity``): its engine, or None when the
    carray has no such part."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, engine, owner=None):
        if engine is None:
            return self
        return engine.parts.get(self.name)


class PartsEngine:
    """The engine API over named part engines (see the module's description).

    A subclass calls :meth:`_init_parts` from its constructor and provides
    ``read_range``, ``gather``, ``prepare``, ``append``, ``set_slice`` and
    ``set_positions``; it may override :meth:`_sync` (run before every
    write) and :meth:`_staged` (told of each part staged).
    """

    stats = property(lambda self: getattr(self.primary, "stats", None),
                     doc="The chunk statistics of the primary part, or None.")

    def _init_parts(self, parts: dict, rows=(), fixed=(), sized=None, chunklen=None) -> None:
        """Set the parts.

        Parameters
        ----------
        parts : dict
            ``{name: engine}`` in order, the primary part first; an engine of
            None is no part (an optional validity).
        rows : iterable
            Names of the parts besides the primary with one entry per row.
        fixed : iterable
            Names of the parts never written.
        sized : iterable, optional
            Names of the parts ``nbytes`` and ``cbytes`` sum (default: the
            primary's).
        chunklen : int, optional
            Rows per chunk (default the primary's).
        """
        self.parts = {name: e for name, e in parts.items() if e is not None}
        self._primary_name = next(iter(parts))
        self._names_rows = (self._primary_name,) + tuple(
            n for n in rows if n in self.parts and n != self._primary_name)
        self._names_fixed = tuple(fixed)
        self._names_sized = tuple(n for n in (sized or (self._primary_name,)) if n in self.parts)
        self.chunklen = int(chunklen) if chunklen is not None else self.primary.chunklen

    # ------------------------------------------------------------ the parts

    @property
    def primary(self):
        """The engine of the primary part."""
        return self.parts[self._primary_name]

    def _written(self) -> list:
        """The engines of the parts that writes change, in order."""
        return [e for name, e in self.parts.items() if name not in self._names_fixed]

    def _row_parts(self) -> list:
        return [self.parts[name] for name in self._names_rows]

    # ------------------------------------------------------------ shape

    length = property(lambda self: self.primary.length, doc="Rows held.")
    nleft = property(lambda self: self.primary.nleft, doc="Rows past the full chunks.")
    nchunks = property(lambda self: self.primary.nchunks, doc="Full chunks.")
    chunks = property(lambda self: self.primary.chunks, doc="The primary part's full chunks.")
    leftover = property(lambda self: self.primary.leftover,
                        doc="The primary part's leftover buffer.")
    store = property(lambda self: self.primary.store,
                     doc="The primary part's DatasetStore, or None in memory.")
    remote = property(lambda self: self.primary.remote, doc="Whether the store is remote.")

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes of the sized parts."""
        return sum(part_nbytes(self.parts[name]) for name in self._names_sized)

    @property
    def cbytes(self) -> int:
        """Compressed bytes of the sized parts."""
        return sum(int(self.parts[name].cbytes) for name in self._names_sized)

    @property
    def parts_cbytes(self) -> int:
        """Compressed bytes of every written part (not of the parts' own parts)."""
        return sum(int(e.cbytes) for e in self._written())

    # ------------------------------------------------------------ cache

    cache = property(lambda self: self.primary.cache,
                     doc="The primary part's cached chunks (for inspection).")
    cache_nbytes = property(lambda self: self.primary.cache_nbytes,
                            doc="Bytes the primary part's cached chunks count.")
    cache_budget = property(lambda self: self.primary.cache_budget,
                            doc="Bytes of decoded chunks each part keeps at most.")

    def set_cache_budget(self, budget: int) -> None:
        """Keep at most ``budget`` bytes of decoded chunks in each written part."""
        for engine in self._written():
            engine.set_cache_budget(budget)

    def drop_cache(self, nchunk=None) -> None:
        """Forget cached chunk ``nchunk`` of the row parts (every cached chunk
        of every written part when None)."""
        for engine in self._written() if nchunk is None else self._row_parts():
            engine.drop_cache(nchunk)

    def free_cachemem(self) -> None:
        """Release the written parts' cached chunks."""
        for engine in self._written():
            engine.free_cachemem()

    # ------------------------------------------------------------ state

    def load_for_writing(self) -> None:
        """Read now what every part reads lazily (see
        :meth:`~.engine_base.EngineBase.load_for_writing`), then
        :meth:`_loaded_for_writing`.

        Raises
        ------
        BcolzStoreError
            What reading raised, when another writer committed meanwhile.
        """
        for engine in self.parts.values():
            engine.load_for_writing()
        self._loaded_for_writing()

    def _loaded_for_writing(self) -> None:
        """Read what the kind itself reads lazily (nothing by default)."""

    def copy_for_view(self):
        """An engine whose written parts are views of these (see
        :meth:`~.engine_base.EngineBase.copy_for_view`); fixed parts and
        the kind's own state are shared."""
        out = copy.copy(self)
        out.parts = {name: e if name in self._names_fixed else e.copy_for_view()
                     for name, e in self.parts.items()}
        return out

    # ------------------------------------------------------------ reading

    def chunk_array(self, nchunk: int) -> np.ndarray:
        """The items of chunk ``nchunk`` (the leftover's when ``nchunk`` is
        the last)."""
        start = nchunk * self.chunklen
        return self.read_range(start, min(self.length, start + self.chunklen))

    def point(self, nchunk: int, pos: int):
        """Item ``pos`` of chunk ``nchunk``."""
        start = nchunk * self.chunklen + pos
        return self.read_range(start, start + 1)[0]

    def reduce_chunks(self, fn):
        """Yield ``fn(items)`` of every chunk's items in order (the leftover's
        last), as reads return them."""
        for nchunk in range(self.nchunks + (1 if self.nleft else 0)):
            yield fn(self.chunk_array(nchunk))

    # ------------------------------------------------------------ writing

    def _sync(self) -> None:
        """Bring the parts into step before a write (nothing by default)."""

    def trim_to(self, newlen: int) -> None:
        """Keep the first ``newlen`` rows of every row part."""
        self._sync()
        for engine in self._row_parts():
            engine.trim_to(newlen)

    def stage_leftover(self) -> None:
        """Stage every written part's leftover (and tell :meth:`_staged`)."""
        self._sync()
        for name, engine in self.parts.items():
            if name not in self._names_fixed:
                engine.stage_leftover()
                self._staged(name, engine)

    def _staged(self, name, engine) -> None:
        """Part ``name`` was staged (a kind stages its ``meta/sizes`` here)."""

    def _single(self, what: str):
        """The one written part, which adopts chunks written elsewhere.

        Raises
        ------
        NotImplementedError
            When the carray keeps several written parts.
        """
        written = self._written()
        if len(written) != 1:
            raise NotImplementedError(f"a carray of {type(self).__name__} cannot {what}")
        return written[0]

    def stage_chunk(self, nchunk: int, rows) -> int:
        """Encode and stage full chunk ``nchunk`` of ``rows`` written elsewhere
        (see :meth:`~.engine.ChunkEngine.stage_chunk`); its compressed bytes.

        Raises
        ------
        NotImplementedError
            When the carray keeps several written parts.
        """
        return self._single("adopt chunks written elsewhere").stage_chunk(nchunk, rows)

    def adopt_chunks(self, nchunks: int, cbytes: int, stats=()) -> None:
        """Take ``nchunks`` full chunks staged elsewhere (see
        :meth:`~.engine.ChunkEngine.adopt_chunks`).

        Raises
        ------
        NotImplementedError
            When the carray keeps several written parts.
        """
        self._single("adopt chunks written elsewhere").adopt_chunks(nchunks, cbytes, stats)
