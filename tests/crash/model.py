"""The seeded operation sequence of the crash test, and its numpy model.

:func:`operations` is the single source of the operations: ``writer.py``
applies them to an on-disk carray or ctable, :class:`Model` applies them to
plain numpy arrays.  The generator depends only on the seed and on its own
bookkeeping (length, column names and dtypes), never on the dataset, so both
sides see exactly the same operations.

Each operation is an :class:`Op`.  ``Op.commit`` is the number of the
commit it makes (1, 2, ...) or None for an operation that only buffers
(``append`` without auto-flush).  Commit 0 is the creation of the dataset.

After commit ``N`` the committed state is :meth:`Model.snapshot`.  An
operation that commits while appends are pending (trim, resize, setitem)
flushes them first; a crash in between may leave the "flushed, not yet
changed" state, which :func:`acceptable_states` also accepts.

Run ``python model.py SEED KIND`` to print the operations of a seed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

__all__ = ["Op", "Spec", "Model", "VLEN", "make_spec", "operations", "acceptable_states",
           "states_equal", "describe_state", "dflt_of"]

# Column dtypes (and atom shapes) a dataset may get.  VLEN is a column of str
# items of any length (None for some), modelled as an object array.
VLEN = "vlen-str"
DTYPES = ["i8", "f8", "i4", "u2", ("i4", (2,)), ("f8", (3,)), VLEN]
MAX_LEN = 2500          # lengths stay around this so each operation is quick


@dataclass
class Spec:
    """What the seed decides before the first operation."""

    seed: int
    kind: str                   # 'carray' or 'ctable'
    chunklen: int
    dtype: Any = None           # carray only
    dflt: int = 0               # carray only
    columns: list = field(default_factory=list)     # ctable: [(name, dtype)]
    auto_flush: bool = False    # ctable: every append commits
    initial: Any = None         # carray: ndarray; ctable: {name: ndarray}


@dataclass
class Op:
    """One operation: ``name`` and its arguments; ``commit`` its commit number."""

    name: str
    args: dict
    commit: int | None = None
    pending_before: bool = False    # appends were buffered when it started

    def __repr__(self):
        short = {k: (f"<{type(v).__name__} len={len(v)}>" if hasattr(v, "__len__")
                     and not isinstance(v, str) and len(v) > 6 else v)
                 for k, v in self.args.items()}
        return f"Op({self.name}, {short}, commit={self.commit})"


def _dtype(d) -> np.dtype:
    if d == VLEN:
        return np.dtype(object)
    return np.dtype(d) if not isinstance(d, tuple) else np.dtype((d[0], d[1]))


def dflt_of(dtype, dflt=0):
    """The fill value of a column of ``dtype``: ``dflt``, or '' for a vlen column."""
    return "" if dtype == VLEN else dflt


def _values(rng, dtype, n) -> np.ndarray:
    if dtype == VLEN:
        lengths = rng.integers(0, 30, size=n)
        missing = rng.random(n) < 0.1
        out = np.empty(n, dtype=object)
        out[:] = ["".join(chr(c) for c in rng.integers(0x61, 0x7b, k)) + ("é" if k % 7 == 1
                  else "") for k in lengths]
        out[missing] = None
        return out
    dt = _dtype(dtype)
    shape = (n,) + dt.shape
    base = dt.base
    if base.kind == "u":
        vals = rng.integers(0, 60000, size=shape)
    else:
        vals = rng.integers(-10**6, 10**6, size=shape)
    out = vals.astype(base)
    if base.kind == "f":
        out = out / 8.0     # exact in binary, so equality is exact
    return out


def make_spec(seed: int, kind: str) -> Spec:
    """The dataset layout of ``seed``: chunklen 50..200, dtypes, initial data."""
    rng = np.random.default_rng([seed, 0 if kind == "carray" else 1])
    chunklen = int(rng.integers(50, 201))
    n0 = int(rng.integers(0, 3 * chunklen))
    if kind == "carray":
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        dflt = dflt_of(dtype, int(rng.integers(0 if _dtype(dtype).kind == "u" else -5, 6)))
        return Spec(seed, kind, chunklen, dtype=dtype, dflt=dflt,
                    initial=_values(rng, dtype, n0))
    if kind != "ctable":
        raise ValueError(f"kind must be 'carray' or 'ctable', not {kind!r}")
    ncols = int(rng.integers(1, 4))
    columns = [(f"c{i}", DTYPES[int(rng.integers(len(DTYPES)))]) for i in range(ncols)]
    return Spec(seed, kind, chunklen, columns=columns, auto_flush=bool(rng.random() < 0.25),
                initial={name: _values(rng, dt, n0) for name, dt in columns})


def operations(spec: Spec, max_ops: int = 10**6) -> Iterator[Op]:
    """Yield the seeded operations of ``spec`` (at most ``max_ops``)."""
    rng = np.random.default_rng([spec.seed, 2 if spec.kind == "carray" else 3])
    cl = spec.chunklen
    ctable = spec.kind == "ctable"
    columns = list(spec.columns)
    length = len(spec.initial if not ctable else next(iter(spec.initial.values())))
    pending = False
    commit = 0
    ncol_made = len(columns)

    def new_commit():
        nonlocal commit
        commit += 1
        return commit

    def fresh(n):
        if ctable:
            return {name: _values(rng, dt, n) for name, dt in columns}
        return _values(rng, spec.dtype, n)

    for _ in range(max_ops):
        r = rng.random()
        grow_bias = length < MAX_LEN
        if r < (0.40 if grow_bias else 0.15):
            # append: small, around a chunk, or several chunks
            k = rng.random()
            n = int(rng.integers(1, 10) if k < 0.4 else rng.integers(cl - 5, cl + 6) if k < 0.7
                    else rng.integers(cl, 4 * cl))
            commits = ctable and spec.auto_flush
            yield Op("append", {"values": fresh(n)}, new_commit() if commits else None,
                     pending)
            length += n
            pending = not commits
        elif r < 0.52:
            yield Op("flush", {}, new_commit(), pending)
            pending = False
        elif r < 0.60 and length:
            n = int(rng.integers(0, min(length, 2 * cl) + 1))
            yield Op("trim", {"n": n}, new_commit(), pending)
            length -= n
            pending = False
        elif r < 0.70:
            shrink = rng.random() < (0.3 if grow_bias else 0.8)
            if shrink:
                n = int(rng.integers(0, length + 1)) if length else 0
            else:
                n = length + int(rng.integers(0, 2 * cl))
            yield Op("resize", {"n": n}, new_commit(), pending)
            length = n
            pending = False
        elif r < 0.88 and length:
            k = rng.random()
            if k < 0.3:
                i = int(rng.integers(-length, length))
                key, n = i, 1
            elif k < 0.7:
                start = int(rng.integers(0, length))
                stop = int(rng.integers(start, min(length, start + 3 * cl) + 1))
                step = int(rng.integers(1, 4)) if rng.random() < 0.3 else 1
                key = slice(start, stop, step)
                n = len(range(start, stop, step))
            else:
                mask = rng.random(length) < rng.choice([0.01, 0.1, 0.5])
                key, n = mask, int(mask.sum())
            vals = fresh(n)
            if isinstance(key, int):
                vals = {c: v[0] for c, v in vals.items()} if ctable else vals[0]
            yield Op("setitem", {"key": key, "values": vals}, new_commit(), pending)
            pending = False
        elif r < 0.94:
            if pending:
                yield Op("flush", {}, new_commit(), pending)
                pending = False
            key = f"k{int(rng.integers(0, 4))}"
            choice = int(rng.integers(0, 4))
            value = [int(rng.integers(0, 100)), "text", None, [1.5, {"a": 2}]][choice]
            yield Op("attrs", {"key": key, "value": value}, new_commit(), False)
        elif ctable:
            if pending:
                yield Op("flush", {}, new_commit(), pending)
                pending = False
            if rng.random() < 0.5 or len(columns) < 2:
                if len(columns) >= 5:
                    continue
                name = f"c{ncol_made}"
                ncol_made += 1
                dt = DTYPES[int(rng.integers(len(DTYPES)))]
                pos = int(rng.integers(0, len(columns) + 1))
                values = _values(rng, dt, length)
                yield Op("addcol", {"name": name, "pos": pos, "values": values}, new_commit())
                columns.insert(pos, (name, dt))
            else:
                pos = int(rng.integers(0, len(columns)))
                name = columns.pop(pos)[0]
                yield Op("delcol", {"name": name}, new_commit())


class Model:
    """The numpy state a dataset of ``spec`` should have."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.attrs: dict = {}
        if spec.kind == "carray":
            self.data = spec.initial.copy()
        else:
            self.names = [name for name, _ in spec.columns]
            self.cols = {name: v.copy() for name, v in spec.initial.items()}

    def _dflt(self, name=None):
        return self.spec.dflt if name is None else 0

    def _col_dflt(self, name):
        return "" if self.cols[name].dtype == object else 0

    def apply(self, op: Op) -> None:
        a = op.args
        ctable = self.spec.kind == "ctable"
        if op.name == "append":
            if ctable:
                for name in self.names:
                    self.cols[name] = np.concatenate([self.cols[name], a["values"][name]])
            else:
                self.data = np.concatenate([self.data, a["values"]])
        elif op.name in ("trim", "resize"):
            def sized(arr, dflt):
                n = len(arr) - a["n"] if op.name == "trim" else a["n"]
                if n <= len(arr):
                    return arr[:n].copy()
                extra = np.empty((n - len(arr),) + arr.shape[1:], dtype=arr.dtype)
                extra[...] = dflt
                return np.concatenate([arr, extra])
            if ctable:
                self.cols = {name: sized(self.cols[name], self._col_dflt(name))
                             for name in self.names}
            else:
                self.data = sized(self.data, self.spec.dflt)
        elif op.name == "setitem":
            if ctable:
                for name in self.names:
                    self.cols[name][a["key"]] = a["values"][name]
            else:
                self.data[a["key"]] = a["values"]
        elif op.name == "attrs":
            self.attrs[a["key"]] = a["value"]
        elif op.name == "addcol":
            self.names.insert(a["pos"], a["name"])
            self.cols[a["name"]] = a["values"].copy()
        elif op.name == "delcol":
            self.names.remove(a["name"])
            del self.cols[a["name"]]
        elif op.name != "flush":
            raise ValueError(f"unknown operation {op.name}")

    def snapshot(self) -> dict:
        """The state as plain values: kind, data (or names and columns), attrs."""
        if self.spec.kind == "carray":
            return {"data": self.data.copy(), "attrs": dict(self.attrs)}
        return {"names": list(self.names),
                "cols": {n: self.cols[n].copy() for n in self.names},
                "attrs": dict(self.attrs)}


def acceptable_states(spec: Spec, last_done: int, begun: int | None) -> list:
    """The states a crash may leave.

    Parameters
    ----------
    last_done : int
        The last commit whose ``done`` line is in the log.
    begun : int or None
        ``last_done + 1`` when its ``begin`` line is in the log.

    Returns
    -------
    list of (label, state)
        ``('N', state)`` for the state after commit N, and
        ``('N+flush', state)`` for the pending appends flushed before commit
        N's own change.
    """
    model = Model(spec)
    out = []
    if last_done == 0:
        out.append(("0", model.snapshot()))
        if begun is None:
            return out
    for op in operations(spec):
        if op.commit is not None and op.commit == begun:
            if op.pending_before and op.name != "flush":
                out.append((f"{op.commit}+flush", model.snapshot()))
            model.apply(op)
            out.append((str(op.commit), model.snapshot()))
            return out
        model.apply(op)
        if op.commit is not None and op.commit == last_done:
            out.append((str(op.commit), model.snapshot()))
            if begun is None:
                return out
    return out


def states_equal(a: dict, b: dict) -> bool:
    """True when two states hold the same names, values (and dtypes) and attrs."""
    if a["attrs"] != b["attrs"]:
        return False
    if "data" in a:
        return (a["data"].dtype == b["data"].dtype and a["data"].shape == b["data"].shape
                and np.array_equal(a["data"], b["data"]))
    if a["names"] != b["names"]:
        return False
    return all(a["cols"][n].dtype == b["cols"][n].dtype and a["cols"][n].shape == b["cols"][n].shape
               and np.array_equal(a["cols"][n], b["cols"][n]) for n in a["names"])


def describe_state(state: dict) -> str:
    """A one-line summary of a state, for failure messages."""
    if "data" in state:
        d = state["data"]
        return f"carray len={len(d)} dtype={d.dtype} attrs={state['attrs']}"
    lens = {n: len(c) for n, c in state["cols"].items()}
    return f"ctable names={state['names']} lens={lens} attrs={state['attrs']}"


if __name__ == "__main__":
    seed, kind = int(sys.argv[1]), sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    s = make_spec(seed, kind)
    print(s.kind, "chunklen", s.chunklen, s.dtype or s.columns, "auto_flush", s.auto_flush)
    for op in operations(s, count):
        print(op)
