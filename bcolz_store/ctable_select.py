"""Carrying out a query plan (:mod:`bcolz_store.ctable_plan`): the matching
rows of a ctable, without a mask of the table's length.

:func:`select` evaluates the condition where the plan says it must -- on the
rows of its ``SOME`` intervals, or on the rows an index names -- in one
evaluation by the engine a scan uses (the rows are handed to it as one
operand per column, :class:`_Rows`), and returns a :class:`Selection`: the
matching rows piece by piece, in row order, from which queries take their
positions (with bcolz's ``skip`` and ``limit``), their values or a mask.
When the plan leaves nothing to evaluate, the condition is still evaluated on
the first row, so that it raises what a scan would raise.

:class:`RowFilter` does the same for the partitions of a dask DataFrame
(``ctable.to_dask(filters=...)``).
"""

from __future__ import annotations

import numpy as np

from .ctable_plan import QueryPlan, _variables, plan_query
from .defaults import defaults
from .errors import QueryError
from .query.eval import evaluate, resolve_variables
from .query.predicates import ALL, NONE, SOME, Unplannable

__all__ = ["RowFilter", "Selection", "row_filter", "select"]


class _Rows:
    """Some rows of a column -- runs ``[start, stop)`` one after another, or
    positions -- as one operand of :func:`~bcolz_store.query.eval.evaluate`
    (a chunked operand: ``chunklen``, ``dtype``, ``shape``, slices; and
    ``_iterblocks`` as a carray has)."""

    def __init__(self, col, runs=None, positions=None):
        self.col, self.positions = col, positions
        self.dtype, self.vlen, self.chunklen = col.dtype, col.vlen, col.chunklen
        # what the engine asks of a column operand: a nullable column's rows
        # stay masked (its nulls satisfy no comparison), lists are tested for nulls only
        self.nullable = getattr(col, "nullable", False) is True
        self.listtype = getattr(col, "listtype", None)
        if positions is None:
            self.starts = np.array([r[0] for r in runs], dtype=np.int64)
            self.stops = np.array([r[1] for r in runs], dtype=np.int64)
            self.ends = np.cumsum(self.stops - self.starts)
            n = int(self.ends[-1]) if len(runs) else 0
        else:
            n = len(positions)
        self.shape = (n,) + tuple(col.shape[1:])
        self.ndim = len(self.shape)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        a, b, _ = key.indices(len(self))
        if self.positions is not None:
            return self.col[self.positions[a:b]]
        pieces = []
        i = int(np.searchsorted(self.ends, a, side="right"))
        while a < b:
            first = int(self.ends[i] - (self.stops[i] - self.starts[i]))
            start = int(self.starts[i]) + a - first
            take = min(b - a, int(self.stops[i]) - start)
            pieces.append(self.col[start:start + take])
            a += take
            i += 1
        if len(pieces) == 1:
            return pieces[0]
        if any(isinstance(p, np.ma.MaskedArray) for p in pieces):
            return np.ma.concatenate(pieces)
        return np.concatenate(pieces)

    def _iterblocks(self, blen=None, start=0, stop=None):
        stop = len(self) if stop is None else min(stop, len(self))
        blen = blen or self.chunklen
        for pos in range(start, stop, blen):
            yield self[pos:min(pos + blen, stop)]


def _evaluate_rows(plan, columns, error, runs=None, positions=None) -> np.ndarray:
    """The condition on some rows (as a scan evaluates it on them)."""
    variables = dict(plan.variables)
    for name in plan.columns:
        variables[name] = _Rows(columns[name], runs, positions)
    result = evaluate(plan.expression, variables, vm=plan.vm, out_flavor="numpy")
    if not isinstance(result, np.ndarray) or result.dtype.type != np.bool_:
        raise error(f"`{plan.expression}` does not represent a boolean expression")
    n = len(positions) if positions is not None else sum(r[1] - r[0] for r in runs)
    if result.shape != (n,):
        raise QueryError(f"the condition gives {result.shape} for {n} rows")
    return result


def _runs(starts, stops, chosen) -> list:
    """The maximal runs ``(start, stop)`` of the intervals where ``chosen``."""
    idx = np.flatnonzero(chosen)
    if not len(idx):
        return []
    cut = np.flatnonzero((np.diff(idx) != 1) | (stops[idx[:-1]] != starts[idx[1:]])) + 1
    return [(int(starts[group[0]]), int(stops[group[-1]])) for group in np.split(idx, cut)]


def select(cols, plan: QueryPlan, error=QueryError) -> Selection:
    """The rows a plan (not a 'scan') finds, the condition evaluated where it must be.

    Raises
    ------
    error
        A condition that is not boolean (as the scan raises it).
    QueryError, NameError
        As evaluating the condition raises them.
    """
    columns = {name: cols[name] for name in plan.columns}
    length = plan.nrows
    if plan.strategy == "index":
        found = plan.candidates
        if len(found):
            found = found[_evaluate_rows(plan, columns, error, positions=found)]
        elif length:
            _evaluate_rows(plan, columns, error, runs=[(0, 1)])    # its errors, if any
        return Selection([(0, length, found)], length)
    starts, stops, states = plan.starts, plan.stops, plan.states
    some = _runs(starts, stops, states == SOME)
    pieces = [(a, b, None) for a, b in _runs(starts, stops, states == ALL)]
    if some:
        mask = _evaluate_rows(plan, columns, error, runs=some)
        offsets = np.cumsum([0] + [b - a for a, b in some])
        pieces += [(a, b, mask[offsets[i]:offsets[i + 1]]) for i, (a, b) in enumerate(some)]
    elif length:
        _evaluate_rows(plan, columns, error, runs=[(0, 1)])        # its errors, if any
    pieces.sort(key=lambda piece: piece[0])
    return Selection(pieces, length)


class Selection:
    """The rows a planned condition matches, in row order: pieces ``(start,
    stop, rows)`` where ``rows`` is None (every row of ``[start, stop)``), a
    boolean mask of ``stop - start`` rows, or sorted int64 positions."""

    def __init__(self, pieces: list, length: int):
        self.pieces = pieces
        self.length = length

    def __len__(self):
        """int: The number of matching rows."""
        return sum(b - a if rows is None else
                   int(np.count_nonzero(rows)) if rows.dtype == bool else len(rows)
                   for a, b, rows in self.pieces)

    def _chunks(self, blen: int, skip: int):
        """Yield ``(positions, skip left)`` piece by piece (at most ``blen`` each)."""
        for a, b, rows in self.pieces:
            if rows is None:
                if skip >= b - a:
                    skip -= b - a
                    continue
                a, skip = a + skip, 0
                for start in range(a, b, blen):
                    yield np.arange(start, min(start + blen, b), dtype=np.int64)
                continue
            for first in range(0, len(rows), blen):
                part = rows[first:first + blen]
                hits = np.flatnonzero(part) + (a + first) if rows.dtype == bool else part
                if skip:
                    dropped = min(skip, len(hits))
                    skip -= dropped
                    hits = hits[dropped:]
                if len(hits):
                    yield hits.astype(np.int64, copy=False)

    def positions(self, limit=None, skip=0, blen=1 << 16):
        """Yield arrays of matching positions, up to ``blen`` at a time, after
        passing over ``skip`` matches and stopping after ``limit``
        (:func:`bcolz_store.indexing.matching_positions`' rules)."""
        skip = max(int(skip or 0), 0)
        remaining = None if limit is None else max(int(limit), 0)
        if remaining == 0:
            return
        pending, npending = [], 0
        for hits in self._chunks(blen, skip):
            if remaining is not None:
                hits = hits[:remaining]
                remaining -= len(hits)
            pending.append(hits)
            npending += len(hits)
            if npending >= blen or remaining == 0:
                yield pending[0] if len(pending) == 1 else np.concatenate(pending)
                pending, npending = [], 0
            if remaining == 0:
                return
        if pending:
            yield pending[0] if len(pending) == 1 else np.concatenate(pending)

    def all_positions(self) -> np.ndarray:
        """The matching positions, all at once (int64)."""
        found = list(self._chunks(1 << 20, 0))
        return np.concatenate(found) if found else np.zeros(0, np.int64)

    def mask(self) -> np.ndarray:
        """A boolean array of the table's length: True where the condition holds."""
        out = np.zeros(self.length, dtype=bool)
        for a, b, rows in self.pieces:
            if rows is None:
                out[a:b] = True
            elif rows.dtype == bool:
                out[a:b] = rows
            else:
                out[rows] = True
        return out

    def read(self, col) -> np.ndarray:
        """The items of the column ``col`` at the matching rows."""
        parts = []
        for a, b, rows in self.pieces:
            if rows is None:
                parts.append(col[a:b])
            elif rows.dtype == bool:
                if rows.any():
                    parts.append(col[a:b][rows])
            elif len(rows):
                parts.append(col[rows])
        if not parts:
            return col[0:0]
        if len(parts) == 1:
            return parts[0]
        if any(isinstance(p, np.ma.MaskedArray) for p in parts):
            return np.ma.concatenate(parts)     # (a nullable column's nulls kept)
        return np.concatenate(parts)


class RowFilter:
    """The rows of ``[start, stop)`` where a condition holds, for the partitions
    of a dask DataFrame: it pickles (the table as its handle) and evaluates
    in the task.  Made by :func:`row_filter`."""

    def __init__(self, table, expression, vm, columns, scalars, grid=None):
        self.table, self.expression, self.vm = table, expression, vm
        self.columns, self.scalars, self.grid = tuple(columns), dict(scalars), grid

    def may_match(self, start: int, stop: int) -> bool:
        """Whether a row of ``[start, stop)`` may match (False: the plan proves none does)."""
        if self.grid is None:
            return True
        starts, stops, states = self.grid
        inside = (starts < stop) & (stops > start)
        return bool((states[inside] != NONE).any())

    def __call__(self, start: int, stop: int) -> np.ndarray:
        """The positions (int64) of the matching rows of ``[start, stop)``."""
        if stop <= start:
            return np.zeros(0, np.int64)
        plan = QueryPlan(self.expression, len(self.table), columns=self.columns)
        plan.variables, plan.vm = dict(self.scalars), self.vm
        mask = _evaluate_rows(plan, {n: self.table.cols[n] for n in self.columns}, QueryError,
                              runs=[(start, stop)])
        return np.flatnonzero(mask).astype(np.int64) + start

    def __dask_tokenize__(self):
        """tuple: What identifies the filter in dask's names."""
        return (type(self).__name__, self.table, self.expression, self.vm,
                repr(sorted(self.scalars.items())))


def row_filter(table, expression, namespace, vm=None, indexes=None) -> RowFilter:
    """A :class:`RowFilter` of the condition ``expression`` over ``table``,
    its names looked up in ``namespace``; it knows from the plan which rows
    cannot match.

    Raises
    ------
    TypeError
        ``expression`` is not a string.
    ValueError
        The condition names a variable that is neither a column nor a scalar.
    QueryError, NameError
        As evaluating the condition on the first row raises them.
    """
    if not isinstance(expression, str):
        raise TypeError(f"filters must be a condition (a str), not {type(expression).__name__}")
    plan = plan_query(table.cols, len(table), expression, namespace, vm, indexes)
    vm = vm or defaults.vm
    try:
        columns, scalars = _variables(table.cols, resolve_variables(expression, namespace, vm))
    except Unplannable as err:
        raise ValueError(f"filters {expression!r}: {err}") from None
    grid = (plan.starts, plan.stops, plan.states) if len(plan.states) else None
    found = RowFilter(table, expression, vm, sorted(columns), scalars, grid)
    found(0, min(len(table), 1))        # its errors now, not in a task
    return found
