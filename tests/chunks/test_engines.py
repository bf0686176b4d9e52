"""Every chunk engine keeps the engine contract.

The contract is :class:`bcolz_store.testing.engine.EngineTests`; each engine's
class below supplies ``make_engine`` (built as ``new_engine`` of
``bcolz_store/datasets/carray_files.py`` builds it, new or over a committed
state) and ``sample``.  Two checks keep the contract honest: every engine
class of ``bcolz_store/chunks/`` has a class inheriting it under ``tests/``,
and the contract fails on an engine that breaks it.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import bcolz_store.chunks
import bcolz_store.kinds
from bcolz_store.kinds.category.engine import CategoryEngine
from bcolz_store.chunks.engine import ChunkEngine
from bcolz_store.chunks.objects import ObjectEngine
from bcolz_store.kinds.vlen.engine import VlenEngine
from bcolz_store.cparams import cparams
from bcolz_store.kinds.category.meta import CATEGORIES_DIR
from bcolz_store.kinds.vlen.meta import VlenMeta, vlen_result_dtype
from bcolz_store.testing.engine import EngineTests, Subject
from tests.storage.test_store_contract import contract_classes, package_classes


def _random(dtype: np.dtype, shape: tuple, rng) -> np.ndarray:
    """Items of ``dtype`` (fields and sub-arrays too) that compare equal to
    themselves (no NaN)."""
    if dtype.names:
        out = np.zeros(shape, dtype=dtype)
        for name in dtype.names:
            out[name] = _random(dtype[name], shape, rng)
        return out
    if dtype.subdtype is not None:
        base, sub = dtype.subdtype
        return _random(base, shape + sub, rng)
    if dtype.kind in "SU":
        width = dtype.itemsize // (4 if dtype.kind == "U" else 1)
        words = ["".join(chr(c) for c in rng.integers(97, 123, size=rng.integers(0, width + 1)))
                 for _ in range(int(np.prod(shape)))]
        return np.array(words, dtype=dtype).reshape(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind in "fc":
        return (rng.integers(-40, 40, size=shape) / 4).astype(dtype)
    return rng.integers(0, 100, size=shape).astype(dtype)


ATOMS = [np.dtype("<i8"), np.dtype("(2,3)>f4"), np.dtype("S5"),
         np.dtype([("a", "<i4"), ("t", "M8[s]"), ("b", "S2")])]


class TestFixedEngine(EngineTests):

    @pytest.fixture(params=ATOMS, ids=str)
    def atom(self, request):
        return request.param

    @pytest.fixture
    def make_engine(self, atom):
        def make(chunklen, store=None, stored=None):
            if stored is None:
                return ChunkEngine(atom, cparams(), chunklen, store)
            length, _nbytes, cbytes = stored
            return ChunkEngine(atom, cparams(), chunklen, store, *divmod(length, chunklen),
                               cbytes)
        return make

    @pytest.fixture
    def sample(self, atom):
        return lambda n, rng: _random(atom, (n,), rng).reshape((n,) + atom.shape)

    def sizes(self, engine):
        # the carray counts a fixed-size carray's nbytes from its length
        return engine.length * engine.atom.itemsize, engine.cbytes

    def test_cbytes_counts_the_leftover_as_a_full_chunk(self, make_engine, sample, atom):
        engine = make_engine(4)
        assert engine.cbytes == 4 * atom.itemsize
        engine.append(sample(9, np.random.default_rng(0)))
        assert engine.cbytes == 4 * atom.itemsize + sum(c.cbytes for c in engine.chunks)


VLEN_KINDS = [VlenMeta("str", nullable=True), VlenMeta("bytes"), VlenMeta("str", level=1)]


class TestVlenEngine(EngineTests):

    @pytest.fixture(params=VLEN_KINDS, ids=lambda v: f"{v.kind}-{v.nullable}-{v.level}")
    def vlen(self, request):
        return request.param

    @pytest.fixture
    def make_engine(self, vlen):
        def make(chunklen, store=None, stored=None):
            if stored is None:
                return VlenEngine(vlen, chunklen, store)
            length, nbytes, cbytes = stored
            return VlenEngine(vlen, chunklen, store, *divmod(length, chunklen), nbytes, cbytes)
        return make

    @pytest.fixture
    def sample(self, vlen):
        letters = ["a", "Z", "é", "\u4e2d", "\U0001f600", "\0", " "]

        def make(n, rng):
            items = []
            for _ in range(n):
                text = "".join(rng.choice(letters, size=rng.integers(0, 9)))
                if vlen.nullable and rng.random() < 0.2:
                    items.append(None)
                else:
                    items.append(text if vlen.kind == "str" else text.encode("utf-8"))
            out = np.empty(n, dtype=vlen.dtype)
            out[:] = items
            return out
        return make


class TestObjectEngine(EngineTests):
    """Each item is a chunk of its own (no leftover), read by ``item``; the
    carray writes no slices or positions of object carrays, and nothing is
    cached."""

    item_writes = False
    caches = False

    @pytest.fixture
    def make_engine(self):
        def make(chunklen, store=None, stored=None):
            if stored is None:
                return ObjectEngine(cparams(), chunklen, store)
            length, _nbytes, cbytes = stored
            return ObjectEngine(cparams(), chunklen, store, length, cbytes)
        return make

    @pytest.fixture
    def sample(self):
        def make(n, rng):
            out = np.empty(n, dtype=object)
            for i in range(n):
                k = int(rng.integers(0, 1000))
                out[i] = [k, (str(k), b"x" * (k % 7)), {"k": [k] * (k % 3)}, None, 2.5 * k][k % 5]
            return out
        return make

    def layout(self, length, chunklen):
        return length, 0

    def test_object_items_are_their_own_chunks(self, make_engine, sample):
        engine = make_engine(5)
        engine.append(sample(7, np.random.default_rng(0)))
        assert engine.nchunks == 7 and engine.nleft == 0 and len(engine.leftover) == 0
        assert engine.cbytes == sum(c.cbytes for c in engine.chunks)


CATEGORIES = {"str": ["a", "bb", "", "é\u4e2d", "ccc"], "bytes": [b"x", b"", b"yy\0z"]}


class TestCategoryEngine(EngineTests):
    """Items are categories or None; the leftover buffer holds their codes."""

    @pytest.fixture(params=sorted(CATEGORIES))
    def kind(self, request):
        return request.param

    @pytest.fixture
    def make_engine(self, kind):
        vlen = VlenMeta(kind)
        initial = np.empty(len(CATEGORIES[kind]), dtype=vlen.dtype)
        initial[:] = CATEGORIES[kind]
        ncats, catlen = len(initial), 2        # categories over several chunks

        def make(chunklen, store=None, stored=None):
            sub = store.sub(CATEGORIES_DIR) if store is not None else None
            if stored is None:
                categories = VlenEngine(vlen, catlen, sub)
                categories.append(initial)
                if sub is not None:
                    sub.makedirs("data", "meta")
                    categories.stage_leftover()
                codes = ChunkEngine(np.dtype("i1"), cparams(), chunklen, store)
            else:
                model = VlenEngine(vlen, catlen)
                model.append(initial)
                categories = VlenEngine(vlen, catlen, sub, *divmod(ncats, catlen),
                                        model.nbytes, model.cbytes)
                length, _nbytes, cbytes = stored
                codes = ChunkEngine(np.dtype("i1"), cparams(), chunklen, store,
                                    *divmod(length, chunklen), cbytes)
            return CategoryEngine(codes, categories, vlen_result_dtype(kind, True))
        return make

    @pytest.fixture
    def sample(self, kind):
        choices = CATEGORIES[kind] + [None]
        atom = vlen_result_dtype(kind, True)

        def make(n, rng):
            out = np.empty(n, dtype=atom)
            out[:] = [choices[i] for i in rng.integers(0, len(choices), size=n)]
            return out
        return make

    def leftover(self, engine):
        return self.values(engine.items_of(engine.leftover[:engine.nleft]))

    def test_an_item_that_is_no_category_changes_nothing(self, make_engine, sample, where):
        subject = Subject(self, make_engine, where, 3)
        subject.append(sample(5, np.random.default_rng(0)))
        bad = np.empty(2, dtype=subject.engine.atom)
        bad[:] = [CATEGORIES["str"][0] if isinstance(subject.model[0], bytes) else b"x",
                  "not a category"]
        with pytest.raises((ValueError, TypeError)):
            subject.engine.prepare(bad)
        with pytest.raises((ValueError, TypeError)):
            subject.engine.append(bad)
        self.check(subject)


# ------------------------------------------------------------ the contract kept honest

def _is_engine(cls) -> bool:
    return all(callable(getattr(cls, name, None))
               for name in ("append", "read_range", "gather", "trim_to", "stage_leftover"))


def _engine_classes() -> dict:
    """The engines of chunks/ and of every kind's folder (kinds/<kind>/)."""
    engines = package_classes(bcolz_store.chunks, _is_engine)
    for info in pkgutil.iter_modules(bcolz_store.kinds.__path__):
        if info.ispkg:
            kind = importlib.import_module(f"{bcolz_store.kinds.__name__}.{info.name}")
            engines.update(package_classes(kind, _is_engine))
    return engines


def test_every_engine_has_a_contract_class():
    engines = _engine_classes()
    assert {"ChunkEngine", "ObjectEngine", "VlenEngine", "CategoryEngine"} <= set(engines)
    assert "EngineBase" not in engines
    named = set().union(*contract_classes("EngineTests").values())
    missing = sorted(set(engines) - named)
    assert not missing, (f"no test class inheriting bcolz_store.testing.engine.EngineTests "
                         f"uses {missing}")


class _DroppingEngine(ChunkEngine):
    """append loses the last item of each call."""

    def append(self, arr):
        super().append(arr[:-1])


class _LeakyCacheEngine(ChunkEngine):
    """keeps every decoded chunk whatever its budget."""

    def _evict(self):
        pass


class _StaleLeftoverEngine(ChunkEngine):
    """set_positions forgets the leftover."""

    def set_positions(self, idx, vals):
        keep = idx < len(self.chunks) * self.chunklen
        super().set_positions(idx[keep], vals[keep])


def _broken(cls):
    def make(chunklen, store=None, stored=None):
        return cls(np.dtype("<i8"), cparams(), chunklen, store)
    return make


def _ints(n, rng):
    return rng.integers(0, 100, size=n)


@pytest.mark.parametrize("broken, run", [
    (_DroppingEngine, lambda t, make: t.test_appends_across_chunk_boundaries(
        make, _ints, "memory", [3, 6, 8])),
    (_LeakyCacheEngine, lambda t, make: t.test_cache_stays_within_its_budget(
        make, _ints, "memory", 200)),
    (_StaleLeftoverEngine, lambda t, make: t.test_writes_to_positions(make, _ints, "memory")),
], ids=["append-drops", "cache-unbounded", "positions-miss-leftover"])
def test_the_contract_fails_an_engine_that_breaks_it(broken, run):
    contract = TestFixedEngine()
    run(contract, _broken(ChunkEngine))          # the sound engine passes
    with pytest.raises(AssertionError):
        run(contract, _broken(broken))



def test_appending_to_a_view_leaves_the_original():
    """A view appended to until it completed a chunk pushed that chunk into
    the chunk list it shared with its carray: the carray counted one chunk
    more and read its stale leftover after it."""
    import bcolz_store as bcolz
    c = bcolz.carray(np.arange(6), chunklen=4)
    v = c.view()
    v.append([6, 7, 8])
    assert len(c) == 6 and c[:].tolist() == list(range(6))
    assert len(v) == 9 and v[:].tolist() == list(range(9))
    o = bcolz.carray(np.array([{"a": 1}, None], dtype=object), chunklen=4)
    w = o.view()
    w.append([3])
    assert len(o) == 2 and len(w) == 3
