"""A carray driven by random sequences of operations stays equal to a numpy model.

Operations: append (arrays of any length, including 0 and more than a chunk,
and scalars or single atoms), trim, resize (growing with ``dflt``, shrinking),
assignment (ints, slices, masks), flush and, on disk, reopening in mode 'a'.
After every step the contents, length, shape, dtype and the split into full
chunks plus leftover must agree with the model, and the chunk statistics the
carray knows with those of its items (a reader's, from the committed
``meta/stats``, all of them).
"""

import os
import shutil
import tempfile

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule)
from numpy.testing import assert_array_equal

import bcolz_store
from tests.properties import examples, random_values
from tests.stats_check import check_stats

#: (dtype, atom shape) pairs the machine draws from.
LAYOUTS = [("int32", ()), ("float64", ()), ("S3", ()), ("int16", (3,)), ("bool", ()),
           ("datetime64[s]", ())]


class CarrayMachine(RuleBasedStateMachine):
    """An on-disk carray and its numpy model."""

    on_disk = True

    def __init__(self):
        super().__init__()
        self.tmpdir = tempfile.mkdtemp(prefix="carray-machine-") if self.on_disk else None
        self.rootdir = os.path.join(self.tmpdir, "a") if self.on_disk else None
        self.rng = np.random.default_rng(0)

    def teardown(self):
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    # ---------------------------------------------------------------- helpers

    def values(self, n):
        return random_values(self.rng, self.dtype, (n,) + self.atom)

    def n_rows(self):
        return st.one_of(st.integers(0, 3), st.integers(0, 3 * self.chunklen + 2))

    # ------------------------------------------------------------------ rules

    @initialize(layout=st.sampled_from(LAYOUTS), chunklen=st.one_of(st.integers(1, 4),
                                                                     st.integers(1, 60)),
                length=st.integers(0, 150), seed=st.integers(0, 2 ** 32 - 1),
                with_dflt=st.booleans())
    def create(self, layout, chunklen, length, seed, with_dflt):
        self.rng = np.random.default_rng(seed)
        dtype, self.atom = layout
        self.dtype = np.dtype(dtype)
        self.chunklen = chunklen
        self.dflt = random_values(self.rng, self.dtype, ())[()] if with_dflt else None
        self.model = self.values(length)
        self.c = bcolz_store.carray(self.model, chunklen=chunklen, dflt=self.dflt,
                                    rootdir=self.rootdir, mode="w")

    @rule(data=st.data())
    def append_rows(self, data):
        rows = self.values(data.draw(self.n_rows(), label="nrows"))
        self.c.append(rows)
        self.model = np.concatenate([self.model, rows])

    @rule()
    def append_one(self):
        row = self.values(1)
        self.c.append(row[0])  # a scalar, or a single atom for 2-d atoms
        self.model = np.concatenate([self.model, row])

    @rule(data=st.data())
    def trim(self, data):
        n = data.draw(st.integers(-self.chunklen - 1, len(self.model)), label="trim")
        self.c.trim(n)  # a negative trim grows the array, as bcolz's
        self.resize_model(len(self.model) - n)

    @rule(data=st.data())
    def resize(self, data):
        n = data.draw(st.integers(0, len(self.model) + 2 * self.chunklen + 3), label="resize")
        self.c.resize(n)
        self.resize_model(n)

    def resize_model(self, n):
        if n <= len(self.model):
            self.model = self.model[:n]
        else:
            fill = np.zeros((n - len(self.model),) + self.atom, dtype=self.dtype)
            if self.dflt is not None:
                fill[...] = self.dflt
            self.model = np.concatenate([self.model, fill])

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def set_int(self, data):
        n = len(self.model)
        i = data.draw(st.integers(-n, n - 1), label="index")
        value = self.values(1)[0]
        self.c[i] = value
        self.model[i] = value

    @rule(data=st.data())
    def set_slice(self, data):
        n = len(self.model)
        bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
        key = slice(data.draw(bound), data.draw(bound),
                    data.draw(st.sampled_from([None, 1, 2, 5, -1, -3])))
        value = self.values(len(self.model[key]))
        self.c[key] = value
        self.model[key] = value

    @rule(data=st.data())
    def set_mask(self, data):
        mask = self.rng.random(len(self.model)) < data.draw(st.sampled_from([0.0, 0.1, 0.9]))
        value = self.values(int(mask.sum()))
        self.c[mask] = value
        self.model[mask] = value

    @rule()
    def flush(self):
        self.c.flush()
        if self.on_disk:
            files = os.listdir(os.path.join(self.rootdir, "data"))
            assert len(files) == -(-len(self.model) // self.chunklen)

    @rule(mode=st.sampled_from(["a", "r"]))
    def reopen(self, mode):
        self.c.flush()
        self.c = bcolz_store.carray(rootdir=self.rootdir, mode=mode)
        self.check_all()
        check_stats(bcolz_store.carray(rootdir=self.rootdir, mode="r"), complete=True,
                    what="reopened")
        self.c = bcolz_store.carray(rootdir=self.rootdir, mode="a")

    # ------------------------------------------------------------- invariants

    @invariant()
    def check_all(self):
        c, model = self.c, self.model
        assert len(c) == c.len == len(model)
        assert c.shape == model.shape
        assert c.dtype == self.dtype
        assert c.chunklen == self.chunklen
        assert c.nchunks == len(model) // self.chunklen
        assert c.nleftover == len(model) % self.chunklen
        assert c.leftover == c.nleftover * c.dtype.itemsize * int(np.prod(self.atom))
        assert c.nbytes == model.nbytes
        got = c[:]
        assert got.dtype == model.dtype
        assert_array_equal(got, model, strict=True)
        if self.dflt is not None:
            assert_array_equal(c.dflt, np.asarray(self.dflt, dtype=self.dtype))
        check_stats(c, what="carray")


class InMemoryCarrayMachine(CarrayMachine):
    """The same operations on an in-memory carray; a copy stands in for reopening."""

    on_disk = False

    @rule(mode=st.just("a"))
    def reopen(self, mode):
        self.c = self.c.copy(chunklen=self.chunklen)


TestCarrayOnDisk = CarrayMachine.TestCase
TestCarrayOnDisk.settings = settings(max_examples=examples(30), stateful_step_count=25)
TestCarrayInMemory = InMemoryCarrayMachine.TestCase
TestCarrayInMemory.settings = settings(max_examples=examples(60), stateful_step_count=30)
