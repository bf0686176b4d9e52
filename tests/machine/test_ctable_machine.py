"""A ctable of columns of every kind, on any store, driven by random
operations and compared with its model (one array per column) after every
step.

Rules (each drawn with what happens before it: nothing, a reopen, a
``refresh()`` or a dropped writer; see :mod:`tests.machine.base`): append
(a list of columns, one row, a list of rows, a structured array, a
DataFrame, another ctable), flush, trim, resize up and down, rows assigned
by int, slice (any step), mask and positions, a column's items assigned
through ``t[name][key]``, a column replaced (``t.cols[name] = ...``),
addcol (any kind, any position) and delcol (by name or position), attrs
set and delete, input the table must refuse (nothing may change), a
reader in mode 'r' (it sees the committed state) and a pack read back.

After every step: length, names, dtype, attrs, and reads by full slice,
row, slice with a step, positions, mask, one column's slice, ``iter``,
``iterblocks``, ``where`` and ``whereblocks`` (on a numeric column) and
``todataframe`` against the model; and every column's chunk statistics
against those recomputed from its items (after every commit, and of every
reader and pack: all of them, from the committed ``meta/stats``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

import bcolz_store
from bcolz_store.errors import BcolzStoreError
from tests.machine.base import BETWEEN, StoreMachine, run_machine, random_key, random_positions
from tests.machine.kinds import Categorical, Fixed, Nullable, concat, draw_kind
from tests.stats_check import check_stats
from bcolz_store.carray_index import usable_index

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h"]


class CtableMachine(StoreMachine):
    """One ctable and its model: ``names``, ``kinds`` and ``model`` (name ->
    array), ``attrs``, and the committed copies of each."""

    # ------------------------------------------------------------ state

    def committed_now(self):
        self.committed = (list(self.names), {n: self.model[n].copy() for n in self.names},
                          dict(self.attrs))
        self.check_committed_stats()

    def restore_committed(self):
        names, model, attrs = self.committed
        self.names = list(names)
        self.model = {n: model[n].copy() for n in names}
        self.attrs = dict(attrs)
        self.kinds = {n: self.all_kinds[n] for n in names}

    def commits(self):
        self.committed_now()

    @property
    def t(self):
        return self.obj

    @property
    def length(self):
        return len(self.model[self.names[0]])

    def new_kind(self):
        kind = draw_kind(self.rng, ("fixed", "fixed", "vlen", "category", "decimal", "struct",
                                    "nullable", "list", "map"), structured=False)
        if isinstance(kind, Categorical):
            kind.explicit = True        # (implicit ones would need all categories in the data)
        return kind

    def rows_of(self, n):
        return {name: self.kinds[name].values(self.rng, n) for name in self.names}

    def frame_ok(self):
        return all(self.kinds[n].frame_ok for n in self.names)

    def dataframe(self, values):
        import pandas as pd
        data = {}
        for name in self.names:
            kind, col = self.kinds[name], values[name]
            if isinstance(kind, Categorical):
                data[name] = pd.Categorical(col, categories=kind.categories)
            else:
                data[name] = pd.Series(col, dtype=object if col.dtype == object else None)
        return pd.DataFrame(data, columns=self.names)

    def structured(self, values, n):
        dtype = self.t.dtype
        out = np.empty(n, dtype=dtype)
        nulls = np.zeros(n, dtype=np.ma.make_mask_descr(dtype))
        for name in self.names:
            if isinstance(self.kinds[name], Nullable):     # a masked field: None is null
                nulls[name] = [v is None for v in values[name]]
                out[name] = [np.zeros((), dtype[name])[()] if v is None else v
                             for v in values[name]]
            else:
                out[name] = values[name]
        return np.ma.MaskedArray(out, mask=nulls) if nulls.view(np.uint8).any() else out

    # ------------------------------------------------------------ rules

    @initialize(seed=st.integers(0, 2 ** 32 - 1), ncols=st.integers(1, 4),
                chunklen=st.one_of(st.integers(1, 5), st.integers(1, 48)),
                length=st.one_of(st.integers(0, 4), st.integers(0, 150)),
                nthreads=st.sampled_from([1, 2]), auto_flush=st.sampled_from([True, True,
                                                                              False]),
                form=st.sampled_from(["columns", "carrays", "dataframe"]))
    def create(self, seed, ncols, chunklen, length, nthreads, auto_flush, form):
        self.rng = np.random.default_rng(seed)
        self.set_threads(nthreads)
        self.chunklen = chunklen
        self.names = NAMES[:ncols]
        self.kinds = {n: self.new_kind() for n in self.names}
        self.all_kinds = dict(self.kinds)
        self.model = {n: k.values(self.rng, length) for n, k in self.kinds.items()}
        dtypes = {n: k.create_kwargs()["dtype"] for n, k in self.kinds.items()
                  if "dtype" in k.create_kwargs()}
        for n, k in self.kinds.items():
            if isinstance(k, Fixed):
                dtypes[n] = k.dtype
        kwargs = dict(chunklen=chunklen, auto_flush=auto_flush, **self.location())
        if form != "carrays":
            for kind in self.kinds.values():    # (a dflt comes only with a carray column)
                kind.dflt = None
        if form == "dataframe" and self.frame_ok() and length:  # (no rows: object columns)
            df = self.dataframe(self.model)
            strings = {n: k.create_kwargs()["dtype"] for n, k in self.kinds.items()
                       if not isinstance(k, (Fixed, Categorical))}   # (categoricals stay)
            self.obj = bcolz_store.ctable.fromdataframe(df, strings=_strings(strings),
                                                        **kwargs)
            for name, kind in self.kinds.items():       # what fromdataframe made of them
                if isinstance(kind, Fixed):
                    self.model[name] = self.model[name].astype(self.t.cols[name].dtype)
                    self.kinds[name] = Fixed(self.t.cols[name].dtype, (), None)
            self.all_kinds = dict(self.kinds)
        elif form == "carrays":
            columns = [bcolz_store.carray(self.model[n], chunklen=chunklen,
                                          **self.kinds[n].create_kwargs()) for n in self.names]
            self.obj = bcolz_store.ctable(columns, names=self.names, **kwargs)
        else:
            self.obj = bcolz_store.ctable([self.kinds[n].masked(self.model[n]) if isinstance(
                self.kinds[n], Nullable) else self.model[n] for n in self.names],
                names=self.names, dtype=dtypes, **kwargs)
        self.attrs = {}
        self.committed_now()

    @rule(between=BETWEEN, n=st.one_of(st.integers(0, 3), st.integers(0, 120)),
          form=st.sampled_from(["columns", "row", "rows", "structured", "dataframe",
                                "ctable"]))
    def append(self, between, n, form):
        self.between(between)
        if form == "row":
            n = 1
        if form == "dataframe" and not self.frame_ok():
            form = "columns"
        values = self.rows_of(n)
        if form == "columns":
            self.t.append([self.kinds[k].as_input(values[k], self.rng) for k in self.names])
        elif form == "row":
            self.t.append(tuple(values[k][0] for k in self.names))
        elif form == "rows":
            if n == 0:
                return
            self.t.append([tuple(values[k][i] for k in self.names) for i in range(n)])
        elif form == "structured":
            self.t.append(self.structured(values, n))
        elif form == "dataframe":
            self.t.append(self.dataframe(values))
        else:
            other = bcolz_store.ctable([values[k] for k in self.names], names=self.names,
                                       dtype={k: self.kinds[k].create_kwargs()["dtype"]
                                              for k in self.names
                                              if "dtype" in self.kinds[k].create_kwargs()})
            self.t.append(other)
        for k in self.names:
            self.model[k] = concat(self.model[k], values[k])
        if self.t.auto_flush:
            self.commits()

    @rule(between=BETWEEN)
    def flush(self, between):
        self.between(between)
        self.t.flush()
        self.commits()

    @rule(between=BETWEEN, data=st.data())
    def trim(self, between, data):
        self.between(between)
        n = data.draw(st.integers(0, self.length), label="trim")
        self.t.trim(n)
        self.resize_model(self.length - n)
        self.commits()

    @rule(between=BETWEEN, data=st.data())
    def resize(self, between, data):
        self.between(between)
        n = data.draw(st.one_of(st.integers(0, self.length + 1),
                                st.integers(0, self.length + 2 * self.chunklen + 3)),
                      label="resize")
        self.t.resize(n)
        self.resize_model(n)
        self.commits()

    def resize_model(self, n):
        for k in self.names:
            m = self.model[k]
            self.model[k] = m[:n].copy() if n <= len(m) else \
                concat(m, self.kinds[k].filler(n - len(m)))

    @precondition(lambda self: self.length > 0)
    @rule(between=BETWEEN, how=st.sampled_from(["int", "slice", "mask", "positions"]))
    def set_rows(self, between, how):
        self.between(between)
        n = self.length
        if not n:                   # (a dropped writer's committed state may be empty)
            return
        if how == "int":
            key = int(self.rng.integers(-n, n))
            count = 1
        elif how == "slice":
            key = random_key(self.rng, n)
            count = len(range(*key.indices(n)))
        elif how == "mask":
            key = self.rng.random(n) < 0.3
            count = int(key.sum())
        else:
            key = np.unique(random_positions(self.rng, n) % n)
            count = len(key)
        values = self.rows_of(count)
        if how == "int":
            value = tuple(values[k][0] for k in self.names)
        else:
            value = [tuple(values[k][i] for k in self.names) for i in range(count)]
        if how != "int" and count == 0:
            value = self.structured(values, 0)
        self.t[key] = value
        for k in self.names:
            if how == "int":
                self.model[k][key] = values[k][0]
            else:
                self.model[k][key] = values[k]
        self.commits()

    @precondition(lambda self: self.length > 0)
    @rule(between=BETWEEN)
    def set_column_items(self, between):
        self.between(between)
        if not self.length:
            return
        name = self.names[int(self.rng.integers(0, len(self.names)))]
        key = random_key(self.rng, self.length)
        values = self.kinds[name].values(self.rng, len(self.model[name][key]))
        self.t[name][key] = values
        self.model[name][key] = values
        self.commits()

    @rule(between=BETWEEN)
    def replace_column(self, between):
        self.between(between)
        name = self.names[int(self.rng.integers(0, len(self.names)))]
        values = self.kinds[name].values(self.rng, self.length)
        self.t.cols[name] = values if isinstance(self.kinds[name], Fixed) else \
            bcolz_store.carray(values, **self.kinds[name].create_kwargs())
        self.model[name] = values
        self.commits()

    @precondition(lambda self: len(self.names) < len(NAMES))
    @rule(between=BETWEEN, form=st.sampled_from(["array", "list", "carray"]))
    def addcol(self, between, form):
        self.between(between)
        if len(self.names) == len(NAMES):
            return
        name = next(n for n in NAMES if n not in self.names)
        kind = self.new_kind()
        values = kind.values(self.rng, self.length)
        pos = int(self.rng.integers(0, len(self.names) + 1))
        kwargs = kind.create_kwargs()
        if form == "carray":
            self.t.addcol(bcolz_store.carray(values, **kwargs) if len(values) or
                          not isinstance(kind, Fixed) else
                          bcolz_store.carray(values, dtype=kind.dtype, **kwargs),
                          name=name, pos=pos)
            kind.dflt = None          # its values are taken, not its dflt (as in bcolz)
        else:
            if isinstance(kind, Fixed):
                kwargs["dtype"] = kind.dtype
            empty_nd = not len(values) and getattr(kind, "shape", ())   # [] has no atom shape
            data = values if form == "array" or empty_nd else values.tolist()
            self.t.addcol(data, name=name, pos=pos, **kwargs)
        self.names.insert(pos, name)
        self.kinds[name] = self.all_kinds[name] = kind
        self.model[name] = values
        self.commits()

    @precondition(lambda self: len(self.names) > 1)
    @rule(between=BETWEEN, by=st.sampled_from(["name", "pos"]))
    def delcol(self, between, by):
        self.between(between)
        if len(self.names) < 2:
            return
        pos = int(self.rng.integers(0, len(self.names)))
        name = self.names[pos]
        if by == "name":
            self.t.delcol(name)
        else:
            self.t.delcol(pos=pos)
        self.names.remove(name)
        del self.kinds[name], self.model[name]
        self.commits()

    @rule(between=BETWEEN, what=st.sampled_from(["append", "addcol", "delcol", "trim",
                                                "columns"]))
    def refused(self, between, what):
        """Input the table must refuse, with a clear error and no change."""
        self.between(between)
        errors = (ValueError, TypeError, BcolzStoreError)
        if what == "append":
            bad = {k: self.kinds[k].bad_values(2) for k in self.names}
            if all(v is None for v in bad.values()):
                return
            cols = [bad[k] if bad[k] is not None else self.kinds[k].values(self.rng, 2)
                    for k in self.names]
            with pytest.raises(errors):
                self.t.append(cols)
        elif what == "addcol":
            with pytest.raises(errors):
                self.t.addcol(np.zeros(self.length + 1), name="zz")
        elif what == "delcol":
            with pytest.raises(errors):
                self.t.delcol("no_such_column")
        elif what == "trim":
            with pytest.raises(errors):
                self.t.trim(self.length + 1)
        else:
            with pytest.raises(errors):
                self.t.append([self.model[self.names[0]][:1]] * (len(self.names) + 1))

    # ------------------------------------------------------------ indexes

    def indexable(self, name) -> bool:
        kind = self.kinds[name]
        return isinstance(kind, Categorical) or isinstance(kind, Fixed) and not kind.shape \
            and kind.dtype.kind in "biufMmSU" and not kind.dtype.names and \
            not (kind.dtype.kind == "f" and kind.dtype.itemsize > 8)

    @precondition(lambda self: self.stored)
    @rule(between=BETWEEN, data=st.data(), kind=st.sampled_from(["sorted", "bitmap"]))
    def create_index(self, between, data, kind):
        self.between(between)
        name = data.draw(st.sampled_from(self.names))
        if not self.indexable(name):
            with pytest.raises(TypeError):
                self.t.create_index(name, kind=kind)
        else:
            self.t.create_index(name, kind=kind)
            assert self.t.indexes[name] == kind
        self.committed_now()

    @precondition(lambda self: self.stored)
    @rule(between=BETWEEN, data=st.data())
    def drop_index(self, between, data):
        self.between(between)
        name = data.draw(st.sampled_from(self.names))
        if name in self.t.indexes:
            self.t.drop_index(name)
            assert name not in self.t.indexes
            self.committed_now()
        else:
            with pytest.raises(bcolz_store.IndexNotFoundError):
                self.t.drop_index(name)

    # ------------------------------------------------------------ checks

    def check_committed(self, obj):
        names, model, attrs = self.committed
        check_ctable(obj, names, {n: self.all_kinds[n] for n in names}, model, attrs,
                     self.rng, "committed")
        check_stats(obj, complete=True, what="committed")
        check_indexes(obj, self.rng, "committed", usable=True)

    @invariant()
    def reads(self):
        check_ctable(self.t, self.names, self.kinds, self.model, self.attrs, self.rng, "ctable")
        check_stats(self.t, what="ctable")
        check_indexes(self.t, self.rng, "ctable")


def _strings(kinds: dict):
    """fromdataframe's ``strings=`` for vlen and categorical columns."""
    return kinds if kinds else "fixed"


def check_ctable(t, names, kinds, model, attrs, rng, what):
    """Every read of ``t`` agrees with the model."""
    n = len(model[names[0]])
    assert t.names == names, f"{what}: names {t.names} != {names}"
    assert len(t) == n, f"{what}: length {len(t)} != {n}"
    assert dict(t.attrs) == attrs, f"{what}: attrs {dict(t.attrs)} != {attrs}"

    def check_rows(got, idx, label):
        for name in names:
            kinds[name].check(got[name], model[name][idx], f"{label}[{name!r}]")

    check_rows(t[:], slice(None), f"{what}[:]")
    if n:
        i = int(rng.integers(-n, n))
        row = t[i]
        for name in names:
            kinds[name].check_item(_item(row[name]), model[name][i], f"{what}[{i}][{name!r}]")
    key = random_key(rng, n)
    check_rows(t[key], key, f"{what}[{key}]")
    idx = random_positions(rng, n)
    check_rows(t[idx], idx, f"{what}[{idx.tolist()}]")
    mask = rng.random(n) < 0.3
    check_rows(t[mask], mask, f"{what}[mask]")
    name = names[int(rng.integers(0, len(names)))]
    kinds[name].check(t[name][key], model[name][key], f"{what}[{name!r}][{key}]")
    start, stop = sorted(int(v) for v in rng.integers(0, n + 1, 2))
    step = int(rng.integers(1, 4))
    got = list(t.iter(start, stop, step))
    assert len(got) == len(range(start, stop, step)), f"{what}.iter: {len(got)} rows"
    for j, row in zip(range(start, stop, step), got):
        for name in names:
            kinds[name].check_item(_item(getattr(row, name)), model[name][j],
                                   f"{what}.iter row {j} [{name!r}]")
    blen = int(rng.integers(1, 50))
    blocks = list(bcolz_store.iterblocks(t, blen, start, stop))
    assert sum(len(b) for b in blocks) == stop - start
    pos = start
    for block in blocks:
        check_rows(block, slice(pos, pos + len(block)), f"iterblocks({blen})")
        pos += len(block)
    numeric = [k for k in names if kinds[k].where_ok]
    if numeric:
        col = numeric[int(rng.integers(0, len(numeric)))]
        expr, want = _condition(col, model[col], rng)
        got = list(t.where(expr))
        assert len(got) == int(want.sum()), f"{what}.where({expr!r}): {len(got)} rows, " \
                                            f"expected {int(want.sum())}"
        for j, row in zip(np.flatnonzero(want), got):
            for name in names:
                kinds[name].check_item(_item(getattr(row, name)), model[name][j],
                                       f"{what}.where({expr!r}) row {j} [{name!r}]")
        blocks = list(t.whereblocks(expr, blen=blen))
        rows = np.flatnonzero(want)
        pos = 0
        for block in blocks:
            check_rows(block, rows[pos:pos + len(block)], f"whereblocks({expr!r})")
            pos += len(block)
        assert pos == len(rows), f"{what}.whereblocks({expr!r}): {pos} rows != {len(rows)}"
    if any(getattr(kinds[k], "shape", ()) for k in names) and rng.random() < 0.2:
        with pytest.raises(ValueError, match="holds items of shape"):
            t.todataframe()
    if all(kinds[k].frame_ok for k in names) and rng.random() < 0.5:
        df = t.todataframe()
        assert list(df.columns) == names
        for name in names:
            kinds[name].check(kinds[name].frame_values(df[name]), model[name],
                              f"{what}.todataframe()[{name!r}]")


def check_indexes(t, rng, what, usable=False):
    """Every index of ``t`` that a query may use names exactly the rows of each
    value probed (``usable``: every index must be usable, as a reader's)."""
    for name in t.indexes if t.rootdir is not None else ():
        col = t.cols[name]
        index = usable_index(col)
        if index is None:
            assert not usable, f"{what}: the index of {name!r} is not usable"
            continue
        values = col._engine.codes.read_range(0, len(col)) if col.category is not None \
            else col[:]
        if not len(values):
            continue
        for v in values[rng.integers(0, len(values), 3)]:
            if (v.dtype.kind in "fMm" and np.isnan(v)) or (col.category is not None and v < 0):
                continue
            got = index.lookup("==", v.item() if v.dtype.kind not in "Mm" else v)
            assert got is not None, (what, name, v)
            np.testing.assert_array_equal(got, np.flatnonzero(values == v),
                                          err_msg=f"{what}: index of {name!r} at {v!r}")


def _item(value):
    """A row's field as the model holds it (numpy scalars of object fields unwrapped)."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        return value[()]
    return value


def _condition(col, values, rng):
    """An expression over column ``col`` and the mask numpy gives for it."""
    if values.dtype == bool:
        return col, values.copy()
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    threshold = finite[int(rng.integers(0, len(finite)))] if len(finite) else 0
    threshold = repr(threshold.item()) if hasattr(threshold, "item") else repr(threshold)
    op = [">", "<=", "=="][int(rng.integers(0, 3))]
    mask = {">": np.greater, "<=": np.less_equal, "==": np.equal}[op](
        values.astype(np.float64) if values.dtype.kind == "f" else values,
        float(threshold) if values.dtype.kind == "f" else int(threshold))
    return f"{col} {op} {threshold}", mask


@pytest.mark.parametrize("store, share", [("local", 0.35), (None, 0.09),
                                          ("memory", 0.11)])
def test_ctable_machine(store, share):
    run_machine(CtableMachine, store, share, steps=20)


def test_ctable_machine_on_s3(s3_bucket):
    run_machine(CtableMachine, "s3", 0.02, steps=10, s3=s3_bucket)
