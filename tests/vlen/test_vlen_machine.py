"""A vlen carray driven by random operations stays equal to a Python list model.

Operations: append (lists of any length, single items), trim (negative grows),
resize, assignment (ints, slices of any step, masks, index arrays), flush and
reopening in mode 'a' or 'r'; items are str of length 0..40 (some non-ASCII,
some NUL characters) and None.  After every step the items, length and the
split into full chunks plus leftover must agree with the model.
"""

import os
import shutil
import tempfile

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import bcolz_store
from tests.properties import examples

_ALPHABET = list("ab \x00é€😀xyz")


class VlenMachine(RuleBasedStateMachine):
    """An on-disk vlen carray and its list model."""

    on_disk = True

    def __init__(self):
        super().__init__()
        self.tmpdir = tempfile.mkdtemp(prefix="vlen-machine-") if self.on_disk else None
        self.rootdir = os.path.join(self.tmpdir, "v") if self.on_disk else None

    def teardown(self):
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def items(self, n):
        out = []
        for _ in range(n):
            if self.rng.random() < 0.1:
                out.append(None)
            else:
                k = int(self.rng.integers(0, 41))
                out.append("".join(self.rng.choice(_ALPHABET, k)))
        return out

    @initialize(chunklen=st.one_of(st.integers(1, 4), st.integers(1, 40)),
                length=st.integers(0, 120), seed=st.integers(0, 2 ** 32 - 1),
                level=st.sampled_from([1, 3, 19]))
    def create(self, chunklen, length, seed, level):
        self.rng = np.random.default_rng(seed)
        self.chunklen = chunklen
        self.model = self.items(length)
        self.c = bcolz_store.carray(self.model, chunklen=chunklen, dflt="d",
                                    dtype=bcolz_store.vlen(level=level, nullable=True),
                                    rootdir=self.rootdir, mode="w")

    @rule(n=st.one_of(st.integers(0, 3), st.integers(0, 90)))
    def append_items(self, n):
        items = self.items(n)
        self.c.append(items)
        self.model += items

    @rule()
    def append_one(self):
        item = self.items(1)[0]
        self.c.append(item)
        self.model.append(item)

    @rule(data=st.data())
    def trim(self, data):
        n = data.draw(st.integers(-self.chunklen - 1, len(self.model)), label="trim")
        self.c.trim(n)
        self.resize_model(len(self.model) - n)

    @rule(data=st.data())
    def resize(self, data):
        n = data.draw(st.integers(0, len(self.model) + 2 * self.chunklen + 3), label="resize")
        self.c.resize(n)
        self.resize_model(n)

    def resize_model(self, n):
        self.model = self.model[:n] + ["d"] * (n - len(self.model))

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def set_int(self, data):
        i = data.draw(st.integers(-len(self.model), len(self.model) - 1), label="index")
        item = self.items(1)[0]
        self.c[i] = item
        self.model[i] = item

    @rule(data=st.data())
    def set_slice(self, data):
        n = len(self.model)
        bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
        key = slice(data.draw(bound), data.draw(bound),
                    data.draw(st.sampled_from([None, 1, 2, 5, -1, -3])))
        items = self.items(len(self.model[key]))
        self.c[key] = items
        self.model[key] = items

    @rule(frac=st.sampled_from([0.0, 0.1, 0.9]))
    def set_mask(self, frac):
        mask = self.rng.random(len(self.model)) < frac
        items = self.items(int(mask.sum()))
        self.c[mask] = items
        fill = iter(items)
        self.model = [next(fill) if m else v for v, m in zip(self.model, mask)]

    @precondition(lambda self: len(self.model) > 0)
    @rule()
    def set_positions(self):
        idx = self.rng.integers(0, len(self.model), size=3)
        items = self.items(3)
        self.c[idx] = items
        for i, item in zip(idx.tolist(), items):
            self.model[i] = item

    @rule()
    def flush(self):
        self.c.flush()

    @rule(mode=st.sampled_from(["a", "r"]))
    def reopen(self, mode):
        self.c.flush()
        self.c = bcolz_store.open(self.rootdir, mode=mode)
        self.check_all()
        self.c = bcolz_store.open(self.rootdir, mode="a")

    @invariant()
    def check_all(self):
        c, model = self.c, self.model
        assert len(c) == len(model)
        assert c.nchunks == len(model) // self.chunklen
        assert c.nleftover == len(model) % self.chunklen
        assert c[:].tolist() == model
        if model:
            i = int(self.rng.integers(0, len(model)))
            assert c[i] == model[i]
            assert c[i::3].tolist() == model[i::3]


class InMemoryVlenMachine(VlenMachine):
    """The same operations in memory; a copy stands in for reopening."""

    on_disk = False

    @rule(mode=st.just("a"))
    def reopen(self, mode):
        self.c = self.c.copy(chunklen=self.chunklen)


TestVlenOnDisk = VlenMachine.TestCase
TestVlenOnDisk.settings = settings(max_examples=examples(25), stateful_step_count=25,
                                   deadline=None)
TestVlenInMemory = InMemoryVlenMachine.TestCase
TestVlenInMemory.settings = settings(max_examples=examples(40), stateful_step_count=25,
                                     deadline=None)
