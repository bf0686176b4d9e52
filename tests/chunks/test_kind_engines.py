"""The engine contract (bcolz_store.testing.engine.EngineTests) for the engines
of nullable, decimal and struct carrays.

Their leftover buffers hold what the engines beneath them hold (values, raw
decimals, the first field's items), so each class reads its leftover items
back through the engine; a struct's sizes are the sums of its fields', whose
own engines keep the contract, so a struct reopened here compares its items
and length.
"""

from __future__ import annotations

import decimal

import numpy as np
import pytest

from bcolz_store.chunks.decimal_engine import DecimalEngine
from bcolz_store.chunks.engine import ChunkEngine
from bcolz_store.chunks.nullable_engine import NullableEngine
from bcolz_store.chunks.struct_engine import StructEngine
from bcolz_store.chunks.vlen_engine import VlenEngine
from bcolz_store.cparams import cparams
from bcolz_store.format.decimal_meta import DecimalMeta
from bcolz_store.format.vlen_meta import VlenMeta
from bcolz_store.testing.engine import EngineTests


def _chunks(atom, chunklen, store, stored, cbytes=None):
    if stored is None:
        return ChunkEngine(np.dtype(atom), cparams(), chunklen, store)
    length = stored[0]
    return ChunkEngine(np.dtype(atom), cparams(), chunklen, store, *divmod(length, chunklen),
                       stored[2] if cbytes is None else cbytes)


class _ReadLeftover:
    def leftover(self, engine) -> list:
        return self.values(engine.read_range(engine.length - engine.nleft, engine.length))


class TestNullableEngine(_ReadLeftover, EngineTests):
    """Items of a fixed dtype or None (masked reads); the validity in ``valid/``."""

    @pytest.fixture(params=["<f8"])      # (the fills of other dtypes: tests/test_nullable.py)
    def atom(self, request):
        return request.param

    @pytest.fixture
    def make_engine(self, atom):
        def make(chunklen, store=None, stored=None):
            sub = store.sub("valid") if store is not None else None
            if sub is not None and stored is None:
                sub.makedirs("data", "meta")
            values = _chunks(atom, chunklen, store, stored)
            valid = _chunks("?", chunklen, sub, stored, cbytes=0)
            return NullableEngine(values, valid)
        return make

    def sizes(self, engine) -> tuple:      # (the carray counts nbytes from the length)
        return engine.length * engine.values.atom.itemsize, engine.values.cbytes

    @pytest.fixture
    def sample(self, atom):
        def make(n, rng):
            values = (rng.integers(0, 50, n) / (2 if atom == "<f8" else 1)).astype(atom)
            return np.ma.MaskedArray(values, mask=rng.random(n) < 0.25)
        return make


class TestDecimalEngine(_ReadLeftover, EngineTests):
    """Decimal items (None too, over a nullable values engine)."""

    @pytest.fixture(params=[False, True], ids=["plain", "nullable"])
    def nullable(self, request):
        return request.param

    @pytest.fixture
    def make_engine(self, nullable):
        meta = DecimalMeta(12, 2, 128, nullable)

        def make(chunklen, store=None, stored=None):
            values = _chunks("V16", chunklen, store, stored)
            if nullable:
                sub = store.sub("valid") if store is not None else None
                if sub is not None and stored is None:
                    sub.makedirs("data", "meta")
                values = NullableEngine(values, _chunks("?", chunklen, sub, stored, cbytes=0))
            return DecimalEngine(values, meta)
        return make

    def sizes(self, engine) -> tuple:
        values = engine.values
        return engine.nbytes, getattr(values, "values", values).cbytes

    @pytest.fixture
    def sample(self, nullable):
        def make(n, rng):
            out = np.empty(n, dtype=object)
            for i in range(n):
                missing = nullable and rng.random() < 0.2
                out[i] = None if missing else \
                    decimal.Decimal(int(rng.integers(-10**9, 10**9))).scaleb(-2)
            return out
        return make


class TestStructEngine(_ReadLeftover, EngineTests):
    """Dicts of an int32 and a text field, or None (a validity)."""

    @pytest.fixture
    def make_engine(self):
        text = VlenMeta("str", nullable=True)

        def make(chunklen, store=None, stored=None):
            subs = [store.sub(name) if store is not None else None for name in "ab"] + \
                [store.sub("__valid-") if store is not None else None]
            if store is not None and stored is None:
                for sub in subs:
                    sub.makedirs("data", "meta")
            length = 0 if stored is None else stored[0]
            a = _chunks("<i4", chunklen, subs[0], stored, cbytes=0)
            b = VlenEngine(text, chunklen, subs[1], *divmod(length, chunklen))
            valid = _chunks("?", chunklen, subs[2], stored, cbytes=0)
            return StructEngine([("a", a, 0), ("b", b, None)], valid, None, "struct", chunklen)
        return make

    def sizes(self, engine) -> tuple:
        return (engine.length,)

    @pytest.fixture
    def sample(self):
        def make(n, rng):
            out = np.empty(n, dtype=object)
            for i in range(n):
                k = int(rng.integers(0, 100))
                out[i] = None if k % 5 == 0 else {"a": k, "b": None if k % 3 == 0 else "w%d" % k}
            return out
        return make
