"""The contract every chunk engine keeps.

A chunk engine (:class:`~bcolz_store.chunks.engine.ChunkEngine` for fixed-size
atoms, :class:`~bcolz_store.chunks.objects.ObjectEngine`,
:class:`~bcolz_store.kinds.vlen.engine.VlenEngine`,
:class:`~bcolz_store.kinds.category.engine.CategoryEngine`) holds a carray's
items as ``nchunks`` full chunks of ``chunklen`` items and a leftover of
``nleft`` items, in memory or over a dataset's store.  What they share, and
what :class:`EngineTests` checks against a plain list of the same items:

* ``append(items)``, ``length``, ``nchunks``, ``nleft`` and ``leftover``
  (its first ``nleft`` items are the last items);
* ``read_range(start, stop)`` and ``gather(positions)``;
* ``prepare(items)``, ``set_slice(start, stop, step, items)`` and
  ``set_positions(positions, items)``, and ``point(nchunk, pos)``, where the
  engine writes and reads single items;
* ``trim_to(length)``;
* ``stage_leftover()``: with the store's commit, what a new engine over the
  committed state (``load_for_writing()`` for a writer) reads back;
* ``cbytes`` and ``nbytes``, which depend on the items only, not on how
  they were written;
* ``cache``, ``cache_nbytes``, ``cache_budget``, ``set_cache_budget()``,
  ``drop_cache()`` and ``free_cachemem()``: decoded chunks kept within the
  budget, read-only, and never the leftover;
* ``copy_for_view()``.

A new engine proves itself by inheriting :class:`EngineTests` and supplying
two fixtures, ``make_engine`` and ``sample``::

    import numpy as np
    import pytest
    from bcolz_store.testing.engine import EngineTests

    class TestMyEngine(EngineTests):
        @pytest.fixture
        def make_engine(self):
            def make(chunklen, store=None, stored=None):
                if stored is None:
                    return MyEngine(chunklen, store)
                length, nbytes, cbytes = stored
                return MyEngine(chunklen, store, length, nbytes, cbytes)
            return make

        @pytest.fixture
        def sample(self):
            return lambda n, rng: rng.integers(0, 100, size=n)

This module imports pytest and hypothesis; ``import bcolz_store`` never
imports it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..storage.dataset import DatasetStore
from ..storage.memory import MemoryStore

__all__ = ["EngineTests", "Subject", "new_dataset"]

_DRAWN = settings(max_examples=25, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow])


def new_dataset(store=None) -> DatasetStore:
    """A writer's view of an empty dataset (its ``data`` and ``meta`` folders
    made), for an engine over a store.

    Parameters
    ----------
    store : Store, optional
        Where the dataset is (default: a new
        :class:`~bcolz_store.storage.memory.MemoryStore`).

    Returns
    -------
    DatasetStore
    """
    dataset = DatasetStore(MemoryStore() if store is None else store)
    dataset.makedirs("data", "meta")
    return dataset


class Subject:
    """An engine under test, its dataset (None in memory) and the list of
    the items it must hold.

    Parameters
    ----------
    contract : EngineTests
        The test class (its hooks turn reads into lists).
    make_engine : callable
        The subclass's ``make_engine`` fixture.
    where : {'memory', 'store'}
        In memory, or over a dataset of a :class:`MemoryStore`.
    chunklen : int
    """

    def __init__(self, contract, make_engine, where: str, chunklen: int):
        self.contract = contract
        self.make_engine = make_engine
        self.chunklen = chunklen
        self.dataset = new_dataset() if where == "store" else None
        self.engine = make_engine(chunklen, self.dataset)
        self.model = []

    def append(self, items) -> None:
        """Append ``items`` to the engine and to the list."""
        self.engine.append(items)
        self.model.extend(self.contract.values(items))

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        """Write ``items`` at ``range(start, stop, step)`` (prepared first, as a carray does)."""
        self.engine.set_slice(start, stop, step, self.engine.prepare(items))
        for i, value in zip(range(start, stop, step), self.contract.values(items)):
            self.model[i] = value

    def set_positions(self, idx: np.ndarray, items) -> None:
        """Write ``items[i]`` at position ``idx[i]`` (distinct positions)."""
        self.engine.set_positions(idx, self.engine.prepare(items))
        for i, value in zip(idx.tolist(), self.contract.values(items)):
            self.model[i] = value

    def trim(self, length: int) -> None:
        """Keep the first ``length`` items."""
        self.engine.trim_to(length)
        del self.model[length:]

    def commit(self) -> None:
        """Stage the leftover and commit (over a store)."""
        self.engine.stage_leftover()
        self.dataset.commit()

    def reopen(self, writing: bool = True):
        """Commit, then an engine over the committed state, as a carray opens
        one: a writer's (which becomes this subject's engine) or a reader's
        (returned)."""
        self.commit()
        stored = (self.engine.length,) + tuple(self.contract.sizes(self.engine))
        if not writing:
            reader = DatasetStore(self.dataset.store, readonly=True)
            return self.make_engine(self.chunklen, reader, stored)
        self.dataset = DatasetStore(self.dataset.store)
        self.engine = self.make_engine(self.chunklen, self.dataset, stored)
        self.engine.load_for_writing()
        return self.engine


class EngineTests:
    """The tests every chunk engine passes; a subclass supplies two fixtures.

    ``make_engine`` gives a callable ``make(chunklen, store=None,
    stored=None)``: an empty engine of ``chunklen`` items per chunk, in
    memory (``store`` None) or over ``store`` (a writer's
    :class:`~bcolz_store.storage.dataset.DatasetStore`, its folders made);
    with ``stored``, ``(length, nbytes, cbytes)`` as ``meta/sizes`` records
    them, the engine of what is committed in ``store`` (as a carray opens a
    stored one).  ``sample`` gives a callable ``sample(n, rng)``: ``n`` items
    of the engine's kind, drawn with the :class:`numpy.random.Generator`
    ``rng``, as ``append`` takes them.

    Attributes
    ----------
    item_writes : bool, default True
        The engine writes to slices and positions (``prepare``,
        ``set_slice``, ``set_positions``) and reads one item with ``point``.
        An engine that does not (object carrays) sets it False; the tests
        then check that it offers none of them.
    caches : bool, default True
        The engine keeps decoded chunks in a cache bounded by its budget.
        One that keeps none sets it False; the tests then check that its
        ``cache_budget`` stays 0.

    Notes
    -----
    The hooks :meth:`layout`, :meth:`sizes`, :meth:`values`, :meth:`leftover`
    and :meth:`item` let an engine say where it legitimately differs (one
    item per chunk, ``nbytes`` that the carray computes, items that are
    Python objects, a leftover buffer of codes).
    """

    item_writes = True
    caches = True

    # ------------------------------------------------------------ the subclass's part

    @pytest.fixture
    def make_engine(self):
        """``make(chunklen, store=None, stored=None)``: see the class's description."""
        raise NotImplementedError("a subclass of EngineTests defines the make_engine fixture")

    @pytest.fixture
    def sample(self):
        """``sample(n, rng)``: see the class's description."""
        raise NotImplementedError("a subclass of EngineTests defines the sample fixture")

    @pytest.fixture(params=["memory", "store"])
    def where(self, request):
        """Each test runs in memory and over a dataset of a :class:`MemoryStore`."""
        return request.param

    def layout(self, length: int, chunklen: int) -> tuple:
        """``(nchunks, nleft)`` of an engine holding ``length`` items.

        Parameters
        ----------
        length, chunklen : int

        Returns
        -------
        tuple of int
            ``divmod(length, chunklen)``; an engine with one item per chunk
            says ``(length, 0)``.
        """
        return divmod(length, chunklen)

    def sizes(self, engine) -> tuple:
        """``(nbytes, cbytes)`` of ``engine``, as ``meta/sizes`` records them.

        Parameters
        ----------
        engine : engine under test

        Returns
        -------
        tuple of int
        """
        return engine.nbytes, engine.cbytes

    def values(self, items) -> list:
        """``items`` (what a read returns, or what was appended) as a list of
        Python values, compared with ``==``.

        Parameters
        ----------
        items : numpy.ndarray or list

        Returns
        -------
        list
        """
        return items.tolist() if isinstance(items, np.ndarray) else list(items)

    def leftover(self, engine) -> list:
        """The items of ``engine``'s leftover buffer (its first ``nleft``), as
        Python values.

        Parameters
        ----------
        engine : engine under test

        Returns
        -------
        list
            An engine whose buffer holds the items in another form (the codes
            of categorical items) turns them back into items.
        """
        return self.values(engine.leftover[:engine.nleft])

    def item(self, engine, i: int):
        """Item ``i`` of ``engine`` read on its own, as a Python value.

        Parameters
        ----------
        engine : engine under test
        i : int
            0 <= i < length.

        Returns
        -------
        object
        """
        value = engine.point(*divmod(i, engine.chunklen))
        return value.tolist() if hasattr(value, "tolist") else value

    # ------------------------------------------------------------ checks

    def check(self, subject: Subject) -> None:
        """The engine's length, chunk counts, items and leftover agree with the list."""
        engine, model = subject.engine, subject.model
        n = len(model)
        assert engine.length == n
        assert (engine.nchunks, engine.nleft) == self.layout(n, subject.chunklen)
        got = engine.read_range(0, n)
        assert len(got) == n
        assert self.values(got) == model
        assert self.leftover(engine) == model[n - engine.nleft:]
        if self.caches:
            assert engine.cache_nbytes <= engine.cache_budget

    def check_reads(self, engine, model: list, rng=None, count: int = 0) -> None:
        """Every range, every range with steps 1 to 3 (as positions), the
        positions backwards and shuffled with repeats, and every item; with
        ``count``, that many ranges drawn with ``rng`` instead."""
        n = len(model)
        if count:
            pairs = [tuple(sorted(rng.integers(0, n + 1, size=2))) for _ in range(count)]
        else:
            pairs = [(a, b) for a in range(n + 1) for b in range(a, n + 1)]
        for start, stop in pairs:
            start, stop = int(start), int(stop)
            assert self.values(engine.read_range(start, stop)) == model[start:stop], \
                (start, stop)
            for step in (1, 2, 3):
                idx = np.arange(start, stop, step, dtype=np.int64)
                assert self.values(engine.gather(idx)) == model[start:stop:step], \
                    (start, stop, step)
        backwards = np.arange(n - 1, -1, -1, dtype=np.int64)
        assert self.values(engine.gather(backwards)) == model[::-1]
        if n:
            rng = rng if rng is not None else np.random.default_rng(n)
            idx = rng.integers(0, n, size=2 * n).astype(np.int64)
            assert self.values(engine.gather(idx)) == [model[i] for i in idx.tolist()]
            assert self.values(engine.gather(idx.reshape(2, n))) == \
                [[model[i] for i in row] for row in idx.reshape(2, n).tolist()]
        assert self.values(engine.gather(np.zeros(0, dtype=np.int64))) == []
        if self.item_writes and n:
            for i in range(n) if not count else rng.integers(0, n, size=min(n, count)):
                assert self.item(engine, int(i)) == model[int(i)], i

    # ------------------------------------------------------------ the tests

    def test_an_empty_engine(self, make_engine, sample, where):
        subject = Subject(self, make_engine, where, 4)
        self.check(subject)
        self.check_reads(subject.engine, [])
        subject.append(sample(0, np.random.default_rng(0)))
        self.check(subject)

    @pytest.mark.parametrize("sizes", [
        [4], [3], [5], [3, 1], [1] * 9, [14], [0], [0, 4, 0], [3, 6, 8], [4, 4, 4],
        [2, 2, 1, 3]], ids=str)
    def test_appends_across_chunk_boundaries(self, make_engine, sample, where, sizes):
        rng = np.random.default_rng(len(sizes))
        subject = Subject(self, make_engine, where, 4)
        for n in sizes:
            subject.append(sample(n, rng))
            self.check(subject)
        self.check_reads(subject.engine, subject.model, rng)

    @pytest.mark.parametrize("chunklen", [1, 2, 3, 7])
    def test_every_range_and_position_reads_back(self, make_engine, sample, where, chunklen):
        rng = np.random.default_rng(chunklen)
        subject = Subject(self, make_engine, where, chunklen)
        subject.append(sample(2 * chunklen + 3, rng))
        self.check(subject)
        self.check_reads(subject.engine, subject.model, rng)

    def test_appended_items_are_copied(self, make_engine, sample, where):
        rng = np.random.default_rng(1)
        subject = Subject(self, make_engine, where, 3)
        items = sample(7, rng)
        subject.append(items)
        other = sample(7, rng)
        items[:] = other                      # the caller's array changes afterwards
        self.check(subject)

    def test_reads_are_copies(self, make_engine, sample, where):
        rng = np.random.default_rng(2)
        subject = Subject(self, make_engine, where, 3)
        subject.append(sample(8, rng))
        for _ in range(2):                    # the second time through the cache
            for got in (subject.engine.read_range(0, 8), subject.engine.read_range(1, 2),
                        subject.engine.read_range(6, 8),
                        subject.engine.gather(np.array([7, 0, 4], dtype=np.int64))):
                if got.flags.writeable:
                    got[:] = sample(len(got), rng)
            self.check(subject)

    def test_writes_to_every_slice(self, make_engine, sample, where):
        if not self.item_writes:
            for name in ("set_slice", "set_positions", "prepare", "point"):
                assert not hasattr(make_engine(3), name), name
            return
        rng = np.random.default_rng(3)
        subject = Subject(self, make_engine, where, 3)
        subject.append(sample(8, rng))
        n = len(subject.model)
        for start in range(n):
            for stop in range(start + 1, n + 1):
                for step in (1, 2, 3):
                    count = len(range(start, stop, step))
                    subject.set_slice(start, stop, step, sample(count, rng))
                    assert self.values(subject.engine.read_range(0, n)) == subject.model, \
                        (start, stop, step)
        self.check(subject)
        self.check_reads(subject.engine, subject.model, rng)

    def test_writes_to_positions(self, make_engine, sample, where):
        if not self.item_writes:
            assert not hasattr(make_engine(3), "set_positions")
            return
        rng = np.random.default_rng(4)
        subject = Subject(self, make_engine, where, 3)
        subject.append(sample(11, rng))
        for size in (1, 2, 5, 11, 3, 4):
            idx = rng.permutation(11)[:size].astype(np.int64)
            subject.set_positions(idx, sample(size, rng))
            self.check(subject)
        subject.set_positions(np.array([10, 9], dtype=np.int64), sample(2, rng))  # the leftover
        self.check(subject)
        self.check_reads(subject.engine, subject.model, rng)

    @pytest.mark.parametrize("chunklen", [1, 3])
    def test_trim_to_every_length(self, make_engine, sample, where, chunklen):
        rng = np.random.default_rng(5)
        items = sample(3 * chunklen + 1, rng)
        for length in range(len(items) + 1):
            subject = Subject(self, make_engine, where, chunklen)
            subject.append(items)
            subject.trim(length)
            self.check(subject)
            subject.append(sample(chunklen + 1, rng))
            self.check(subject)
            subject.trim(length)
            self.check(subject)

    def test_sizes_depend_only_on_the_items(self, make_engine, sample, where):
        rng = np.random.default_rng(6)
        subject = Subject(self, make_engine, where, 3)
        assert self.sizes(subject.engine) == self.sizes(make_engine(3, subject.dataset))
        for n in (2, 5, 1):
            subject.append(sample(n, rng))
        if self.item_writes:
            subject.set_slice(1, 7, 2, sample(3, rng))
            subject.set_positions(np.array([7, 0], dtype=np.int64), sample(2, rng))
        subject.trim(5)
        subject.append(sample(3, rng))
        once = Subject(self, make_engine, where, 3)
        once.append(subject.engine.read_range(0, subject.engine.length))
        assert self.values(once.engine.read_range(0, 8)) == subject.model
        assert self.sizes(subject.engine) == self.sizes(once.engine)
        for value in self.sizes(subject.engine):
            assert isinstance(value, (int, np.integer)) and value >= 0

    @pytest.mark.parametrize("length", [0, 2, 3, 4, 11])
    def test_committed_items_read_back(self, make_engine, sample, length):
        rng = np.random.default_rng(length)
        subject = Subject(self, make_engine, "store", 3)
        subject.append(sample(length, rng))
        before = self.sizes(subject.engine)
        reader = subject.reopen(writing=False)
        assert self.sizes(subject.engine) == before
        assert reader.length == length
        assert self.values(reader.read_range(0, length)) == subject.model
        assert self.sizes(reader) == before
        self.check_reads(reader, subject.model, rng)
        subject.reopen()
        self.check(subject)
        assert self.sizes(subject.engine) == before
        subject.append(sample(4, rng))
        if self.item_writes:
            subject.set_slice(0, len(subject.model), 3, sample(len(range(0, length + 4, 3)), rng))
        subject.trim(length + 2)
        self.check(subject)
        after = self.sizes(subject.engine)
        reader = subject.reopen(writing=False)
        assert self.values(reader.read_range(0, length + 2)) == subject.model
        assert self.sizes(reader) == after

    def test_leftover_is_the_last_items(self, make_engine, sample, where):
        rng = np.random.default_rng(7)
        subject = Subject(self, make_engine, where, 4)
        for n in range(1, 7):
            subject.append(sample(n, rng))
            engine = subject.engine
            assert engine.nleft < subject.chunklen or engine.nleft == 0
            assert self.leftover(engine) == subject.model[len(subject.model) - engine.nleft:]

    @pytest.mark.parametrize("budget", [0, 1, 200, 5000, 1 << 20])
    def test_cache_stays_within_its_budget(self, make_engine, sample, where, budget):
        rng = np.random.default_rng(budget)
        subject = Subject(self, make_engine, where, 3)
        subject.append(sample(20, rng))
        engine = subject.engine
        engine.set_cache_budget(budget)
        if not self.caches:
            assert engine.cache_budget == 0
            self.check_reads(engine, subject.model, rng, count=10)
            engine.free_cachemem()
            self.check(subject)
            return
        assert engine.cache_budget == budget
        for _ in range(3):
            self.check_reads(engine, subject.model, rng, count=8)
            cache = engine.cache
            assert engine.cache_nbytes <= budget
            assert engine.cache_nbytes == sum(size for _data, size in cache.values())
            assert all(0 <= n < engine.nchunks for n in cache)       # never the leftover
            assert not any(data.flags.writeable for data, _size in cache.values())
        engine.set_cache_budget(max(budget // 3, 0))
        assert engine.cache_nbytes <= engine.cache_budget
        engine.drop_cache(0)
        assert 0 not in engine.cache
        engine.free_cachemem()
        assert engine.cache_nbytes == 0 and not engine.cache
        self.check(subject)

    def test_view_reads_the_same_items(self, make_engine, sample, where):
        rng = np.random.default_rng(8)
        subject = Subject(self, make_engine, where, 3)
        subject.append(sample(8, rng))
        view = subject.engine.copy_for_view()
        assert view.length == subject.engine.length
        assert self.values(view.read_range(0, 8)) == subject.model
        if self.caches:
            assert view.cache is not subject.engine.cache
        if self.item_writes:
            view.set_positions(np.array([7], dtype=np.int64), view.prepare(sample(1, rng)))
            self.check(subject)              # the original's leftover is its own
        if where == "memory":                # (a view of a stored carray is read)
            more = sample(5, rng)
            view.append(more)                # completes chunks of the view's own
            self.check(subject)
            assert view.length == 13
            assert self.values(view.read_range(8, 13)) == self.values(more)

    @_DRAWN
    @given(chunklen=st.integers(1, 5), seed=st.integers(0, 2 ** 32 - 1),
           ops=st.lists(st.tuples(st.sampled_from(["append", "append", "slice", "positions",
                                                   "trim", "reopen", "free", "budget"]),
                                  st.integers(0, 1 << 16), st.integers(0, 1 << 16),
                                  st.integers(1, 4)), max_size=8))
    def test_operations_match_a_list(self, make_engine, sample, where, chunklen, seed, ops):
        rng = np.random.default_rng(seed)
        subject = Subject(self, make_engine, where, chunklen)
        for op, a, b, step in ops:
            n = len(subject.model)
            if op == "append":
                subject.append(sample(a % (3 * chunklen + 2), rng))
            elif op == "slice" and self.item_writes and n:
                start, stop = sorted((a % (n + 1), b % (n + 1)))
                count = len(range(start, stop, step))
                if count:
                    subject.set_slice(start, stop, step, sample(count, rng))
            elif op == "positions" and self.item_writes and n:
                idx = rng.permutation(n)[:1 + a % n].astype(np.int64)
                subject.set_positions(idx, sample(len(idx), rng))
            elif op == "trim":
                subject.trim(a % (n + 1))
            elif op == "reopen" and where == "store":
                subject.reopen()
            elif op == "free":
                subject.engine.free_cachemem()
            elif op == "budget":
                subject.engine.set_cache_budget(a % 4096)
            self.check(subject)
        self.check_reads(subject.engine, subject.model, rng, count=12)
