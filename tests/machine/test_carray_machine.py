"""A carray of any kind, on any store, driven by random operations and
compared with its numpy model after every step.

Rules (each drawn with what happens before it: nothing, a reopen, a
``refresh()`` or a dropped writer; see :mod:`tests.machine.base`): append
(arrays, lists, one item, another carray), flush, trim (a negative trim
grows), resize up and down, assignment by int, slice (any step, negative
too), mask and positions, attrs set and delete, an append or assignment of
values the carray must refuse (nothing may change), a reader in mode 'r' (it
sees the committed state), and a pack (``bcolz-store pack``) read back.

After every step: length, dtype, shape, ``nchunks``/``nleftover``, attrs,
and reads by full slice, point, slice with a step, positions, mask,
``iter``, ``iterblocks`` and ``where`` against the model; and the chunk
statistics the carray knows against those recomputed from its items (after
every commit, and of every reader and pack: all of them, from the committed
``meta/stats``; ``tests/stats_check.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

import bcolz_store
from bcolz_store.errors import BcolzStoreError, KindMismatchError
from tests.machine.base import BETWEEN, StoreMachine, run_machine, random_key, random_positions
from tests.machine.kinds import Fixed, concat, draw_kind, initial_values
from tests.stats_check import check_stats

CNAMES = ["blosclz", "lz4", "zstd", "zlib"]


class CarrayMachine(StoreMachine):
    """One carray and its model (``model``, ``committed``, ``attrs``)."""

    families = ("fixed", "fixed", "vlen", "category", "decimal", "struct", "nullable", "list",
                "map")

    # ------------------------------------------------------------ state

    def committed_now(self):
        self.committed = self.model.copy()
        self.committed_attrs = dict(self.attrs)
        self.check_committed_stats()

    def restore_committed(self):
        self.model = self.committed.copy()
        self.attrs = dict(self.committed_attrs)

    @property
    def c(self):
        return self.obj

    def values(self, n):
        return self.kind.values(self.rng, n)

    def commits(self):
        """After an operation that commits (on a stored carray)."""
        self.committed_now()

    # ------------------------------------------------------------ rules

    @initialize(seed=st.integers(0, 2 ** 32 - 1), chunklen=st.one_of(st.integers(1, 5),
                                                                       st.integers(1, 64)),
                length=st.one_of(st.integers(0, 5), st.integers(0, 200)),
                nthreads=st.sampled_from([1, 2]), form=st.sampled_from(["array", "list",
                                                                       "empty"]))
    def create(self, seed, chunklen, length, nthreads, form):
        self.rng = np.random.default_rng(seed)
        self.set_threads(nthreads)
        self.kind = draw_kind(self.rng, self.families)
        self.chunklen = chunklen
        cparams = bcolz_store.cparams(clevel=int(self.rng.integers(0, 10)),
                                      shuffle=int(self.rng.integers(0, 3)),
                                      cname=CNAMES[int(self.rng.integers(0, len(CNAMES)))])
        kwargs = dict(self.kind.create_kwargs(), chunklen=chunklen, cparams=cparams,
                      **self.location())
        if isinstance(self.kind, Fixed):
            kwargs.setdefault("dtype", self.kind.dtype)
        if form == "empty" and not getattr(self.kind, "explicit", True):
            form = "array"                # implicit categories come from the initial items
        if form == "empty":
            self.model = self.values(0)
            data = self.model if isinstance(self.kind, Fixed) else []
        else:
            self.model = initial_values(self.kind, self.rng, length)
            empty_nd = not length and getattr(self.kind, "shape", ())   # [] has no atom shape
            data = self.model if form == "array" or empty_nd else self.model.tolist()
        self.obj = bcolz_store.carray(data, **kwargs)
        self.attrs = {}
        self.committed_now()

    @rule(between=BETWEEN, n=st.one_of(st.integers(0, 3), st.integers(0, 150)),
          form=st.sampled_from(["array", "list", "one", "carray"]))
    def append(self, between, n, form):
        self.between(between)
        rows = self.values(1 if form == "one" else n)
        if form == "one":
            self.c.append(self.kind.one(rows[0]))
        elif form == "carray":
            self.c.append(self.kind.as_carray(rows, self.rng))
        else:
            self.c.append(self.kind.as_input(rows, self.rng) if form == "list" else rows)
        self.model = concat(self.model, rows)

    @rule(between=BETWEEN)
    def flush(self, between):
        self.between(between)
        self.c.flush()
        self.commits()

    @rule(between=BETWEEN, data=st.data())
    def trim(self, between, data):
        self.between(between)
        n = data.draw(st.integers(-self.chunklen - 1, len(self.model)), label="trim")
        self.c.trim(n)             # a negative trim grows the carray, as bcolz's
        self.resize_model(len(self.model) - n)
        self.commits()

    @rule(between=BETWEEN, data=st.data())
    def resize(self, between, data):
        self.between(between)
        n = data.draw(st.one_of(st.integers(0, len(self.model) + 1),
                                st.integers(0, len(self.model) + 3 * self.chunklen + 3)),
                      label="resize")
        self.c.resize(n)
        self.resize_model(n)
        self.commits()

    def resize_model(self, n):
        if n <= len(self.model):
            self.model = self.model[:n].copy()
        else:
            self.model = concat(self.model, self.kind.filler(n - len(self.model)))

    @precondition(lambda self: len(self.model) > 0)
    @rule(between=BETWEEN, data=st.data())
    def set_int(self, between, data):
        self.between(between)
        n = len(self.model)
        if not n:                   # (a dropped writer's committed state may be empty)
            return
        i = data.draw(st.integers(-n, n - 1), label="index")
        value = self.values(1)[0]
        self.c[i] = self.kind.one(value)
        self.model[i] = value
        self.commits()

    @rule(between=BETWEEN, broadcast=st.booleans())
    def set_slice(self, between, broadcast):
        self.between(between)
        key = random_key(self.rng, len(self.model))
        count = len(self.model[key])
        if broadcast and isinstance(self.kind, Fixed):
            value = self.values(1)[0]
        else:
            value = self.values(count)
        self.c[key] = value
        self.model[key] = value
        self.commits()

    @rule(between=BETWEEN, p=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    def set_mask(self, between, p):
        self.between(between)
        mask = self.rng.random(len(self.model)) < p
        value = self.values(int(mask.sum()))
        self.c[mask] = value
        self.model[mask] = value
        self.commits()

    @precondition(lambda self: len(self.model) > 0)
    @rule(between=BETWEEN, form=st.sampled_from(["array", "list"]))
    def set_positions(self, between, form):
        self.between(between)
        if not len(self.model):
            return
        idx = random_positions(self.rng, len(self.model))
        idx = np.unique(idx % len(self.model))       # no repeats: numpy leaves their order open
        value = self.values(len(idx))
        self.c[idx if form == "array" else idx.tolist()] = value
        self.model[idx] = value
        self.commits()

    @rule(between=BETWEEN, what=st.sampled_from(["append", "assign", "trim", "resize",
                                                 "other kind"]))
    def refused(self, between, what):
        """Input the carray must refuse, with a clear error and no change."""
        self.between(between)
        n = len(self.model)
        if what == "other kind":
            other = self.kind.other_kind_carray()
            if other is not None:
                with pytest.raises(KindMismatchError):
                    self.c.append(other)
        elif what == "append":
            bad = self.kind.bad_values(2)
            if bad is None:
                return
            with pytest.raises((ValueError, TypeError, BcolzStoreError)):
                self.c.append(bad)
        elif what == "assign":
            bad = self.kind.bad_values(1)
            if bad is None or not n:
                return
            with pytest.raises((ValueError, TypeError, BcolzStoreError)):
                self.c[n - 1] = bad[0]
        elif what == "trim":
            with pytest.raises(ValueError):
                self.c.trim(n + 1)
        else:
            with pytest.raises(ValueError):
                self.c.resize(-1)

    # ------------------------------------------------------------ checks

    def check_committed(self, obj):
        check_carray(obj, self.committed, self.kind, self.chunklen, self.rng,
                     self.committed_attrs, "committed")
        check_stats(obj, complete=True, what="committed")

    @invariant()
    def reads(self):
        check_carray(self.c, self.model, self.kind, self.chunklen, self.rng, self.attrs,
                     "carray")
        check_stats(self.c, what="carray")


def check_carray(c, model, kind, chunklen, rng, attrs, what):
    """Every read of ``c`` agrees with ``model``."""
    n = len(model)
    assert len(c) == n, f"{what}: length {len(c)} != {n}"
    assert c.chunklen == chunklen
    assert (c.nchunks, c.nleftover) == divmod(n, chunklen), \
        f"{what}: {c.nchunks} chunks + {c.nleftover} != {n} items of {chunklen}"
    if isinstance(kind, Fixed):
        assert c.dtype == kind.dtype and c.shape == model.shape, (c.dtype, c.shape)
    assert dict(c.attrs) == attrs, f"{what}: attrs {dict(c.attrs)} != {attrs}"
    kind.check(c[:], model, f"{what}[:]")
    if n:
        i = int(rng.integers(-n, n))
        kind.check_item(c[i], model[i], f"{what}[{i}]")
    key = random_key(rng, n)
    kind.check(c[key], model[key], f"{what}[{key}]")
    idx = random_positions(rng, n)
    kind.check(c[idx], model[idx], f"{what}[{idx.tolist()}]")
    if n and rng.random() < 0.5:
        kind.check(c[idx.tolist()], model[idx], f"{what}[list {idx.tolist()}]")
    mask = rng.random(n) < 0.3
    kind.check(c[mask], model[mask], f"{what}[mask]")
    start, stop = sorted(int(v) for v in rng.integers(0, n + 1, 2))
    step = int(rng.integers(1, 4))
    got = list(c.iter(start, stop, step))
    kind.check(_stack(got, model[:0]), model[start:stop:step], f"{what}.iter({start}, {stop}, "
                                                                   f"{step})")
    blen = int(rng.integers(1, 2 * chunklen + 2))
    blocks = list(bcolz_store.iterblocks(c, blen, start, stop))
    if blen == 1:       # as bcolz: rows without the leading dimension
        blocks = [_stack([b], model[:0]) for b in blocks]
    assert all(len(b) <= blen for b in blocks)
    kind.check(_concat(blocks, model[:0]), model[start:stop], f"iterblocks({blen})")
    if c.ndim == 1:
        got = list(c.where(mask))
        kind.check(_stack(got, model[:0]), model[mask], f"{what}.where(mask)")


def _stack(items, empty):
    if not items:
        return empty
    if empty.dtype == object:
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    return np.array(items, dtype=empty.dtype).reshape((len(items),) + empty.shape[1:])


def _concat(blocks, empty):
    if not blocks:
        return empty
    if empty.dtype == object:
        out = np.empty(sum(len(b) for b in blocks), dtype=object)
        out[:] = [v for b in blocks for v in b.tolist()]
        return out
    for block in blocks:
        assert block.dtype == empty.dtype, f"a block of {block.dtype}, not {empty.dtype}"
    out = np.empty((sum(len(b) for b in blocks),) + empty.shape[1:], dtype=empty.dtype)
    np.concatenate(blocks, out=out)     # (concatenate alone makes byte order native)
    return out


@pytest.mark.parametrize("store, share", [("local", 0.27), (None, 0.06),
                                          ("memory", 0.08)])
def test_carray_machine(store, share):
    run_machine(CarrayMachine, store, share, steps=25)


def test_carray_machine_on_s3(s3_bucket):
    run_machine(CarrayMachine, "s3", 0.02, steps=12, s3=s3_bucket)
