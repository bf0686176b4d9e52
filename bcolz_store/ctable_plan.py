"""Query planning: the rows of a ctable a condition can match, found from the
chunk statistics (and secondary indexes) before any row is read.

:func:`plan_query` reads the condition into a predicate tree
(:mod:`bcolz_store.query.predicates`), gives every chunk of every column it
names a state from the column's chunk statistics -- ``NONE`` (no row can
match), ``ALL`` (every row matches) or ``SOME`` -- and combines them over the
row intervals that all those columns' chunk boundaries cut (columns may have
different chunklens).  The result is a :class:`QueryPlan`:

``'statistics'``
    ``NONE`` intervals are skipped, ``ALL`` intervals match without reading
    the condition's columns, and the condition is evaluated exactly as a scan
    evaluates it on the ``SOME`` rows only (one evaluation over all of them,
    by the same engine).
``'index'``
    A secondary index names candidate rows for one leaf of the condition's
    top-level ``&`` (:class:`ColumnIndex`); the condition is evaluated on
    those rows, so an index can never add a row that does not match.
``'scan'``
    The condition is evaluated on every row, as without planning.

The cost rule (never slower than a scan): statistics are used when they rule
out or settle (``NONE`` or ``ALL``) at least ``MIN_SKIP_FRACTION`` of the rows
and ``MIN_SKIP_ROWS`` rows; an index when its estimate is at most
``INDEX_MAX_FRACTION`` of the rows and ``INDEX_ROW_COST`` times fewer than the
rows the statistics would read.  Planning itself reads no row (about 0.25 ms
for a condition over a column of 150 chunks).  ``defaults.query_planning =
False`` always scans.

:func:`bcolz_store.ctable_select.select` carries a plan out: a
:class:`~bcolz_store.ctable_select.Selection`, the matching rows piece by
piece in row order, from which queries take their positions without building
a mask of the table's length.  Results are those of a scan, row for row, with
the same errors.
"""

from __future__ import annotations

import ast
import decimal as _dec
from typing import Protocol

import numpy as np

from .carray_ops import chunk_stats
from .defaults import defaults
from .errors import IntegrityError
from .query.eval import resolve_variables
from .query.predicates import (ALL, NONE, SOME, Both, ColumnInfo, Leaf, Not, Opaque, Unplannable,
                               category_matches, combine_states, leaf_states, parse_condition)
from .query.rewrite import parse_expression

__all__ = ["ColumnIndex", "INDEX_MAX_FRACTION", "INDEX_ROW_COST", "MAX_TESTED_ROWS",
           "MIN_SKIP_FRACTION", "MIN_SKIP_ROWS", "QueryPlan", "plan_query"]

#: Statistics are used when they skip or settle at least this many rows...
MIN_SKIP_ROWS = 1 << 15
#: ... and at least this fraction of the table.
MIN_SKIP_FRACTION = 1 / 16
#: An index is used when it names at most this fraction of the rows ...
INDEX_MAX_FRACTION = 1 / 32
#: ... and this many times fewer rows than the statistics would read.
INDEX_ROW_COST = 8
#: More rows to test than this: a scan (which keeps its mask compressed).
MAX_TESTED_ROWS = 1 << 26

_INDEX_OPS = ("==", "<", "<=", ">", ">=")


class ColumnIndex(Protocol):
    """What the planner asks of a secondary index on one column (the
    ``indexes`` mapping of a query gives one per indexed column).

    ``op`` is one of ``'=='``, ``'<'``, ``'<='``, ``'>'``, ``'>='`` (rows
    whose item ``op value`` holds) or ``'isin'`` (``value`` a tuple); the
    value is the condition's constant, unconverted.  A categorical column's
    index is of its codes: it is asked ``'isin'`` of the codes of the
    categories that match.  An index whose methods raise is not used.
    """

    def estimate(self, op: str, value) -> int | None:
        """About how many rows match (None: the index cannot tell)."""

    def lookup(self, op: str, value) -> np.ndarray | None:
        """The sorted int64 positions of the rows that match (None: the
        index cannot answer).  The rows are candidates: the condition is
        evaluated on them."""


class QueryPlan:
    """How a condition over a ctable is evaluated (:meth:`ctable.explain`).

    Attributes
    ----------
    expression : str
        The condition.
    nrows : int
        Rows of the table.
    strategy : {'scan', 'statistics', 'index'}
        Every row is evaluated; only the rows the chunk statistics leave
        undecided are; only the rows an index names are.
    reason : str
        Why this strategy.
    columns : tuple of str
        The columns the condition names.
    starts, stops : numpy.ndarray of int64
        The row intervals the columns' chunks cut (empty when no statistics
        were read).
    states : numpy.ndarray of int8
        Per interval: 0 no row can match, 1 some may, 2 every row matches.
    index : str or None
        The column whose index names the candidate rows.
    candidates : numpy.ndarray of int64 or None
        Those rows (within the intervals the statistics leave).
    index_rows : int or None
        How many rows it names.
    variables : dict
        The condition's variables (columns and scalars), as evaluated.
    vm : str or None
        The engine that evaluates it.
    """

    def __init__(self, expression, nrows, strategy="scan", reason="", columns=(),
                 starts=None, stops=None, states=None, index=None, candidates=None):
        self.expression = expression
        self.nrows = int(nrows)
        self.strategy = strategy
        self.reason = reason
        self.columns = tuple(sorted(columns))
        empty = np.zeros(0, np.int64)
        self.starts = empty if starts is None else starts
        self.stops = empty if stops is None else stops
        self.states = np.zeros(0, np.int8) if states is None else states
        self.index = index
        self.candidates = candidates
        self.index_rows = None if candidates is None else len(candidates)
        self.variables, self.vm = {}, None      # what select() evaluates with

    def _rows(self, state) -> int:
        return int((self.stops - self.starts)[self.states == state].sum())

    chunks = property(lambda self: len(self.states), doc="int: Row intervals (chunks).")
    chunks_skipped = property(lambda self: int(np.count_nonzero(self.states == NONE)),
                              doc="int: Intervals where no row can match.")
    chunks_all = property(lambda self: int(np.count_nonzero(self.states == ALL)),
                          doc="int: Intervals where every row matches.")
    chunks_to_test = property(lambda self: int(np.count_nonzero(self.states == SOME)),
                              doc="int: Intervals whose rows are evaluated.")
    rows_skipped = property(lambda self: self._rows(NONE),
                            doc="int: Rows no statistic lets match.")
    rows_all = property(lambda self: self._rows(ALL), doc="int: Rows that match unread.")
    rows_to_test = property(lambda self: self._rows(SOME) if len(self.states) else self.nrows,
                            doc="int: Rows whose condition columns are read.")

    @property
    def estimated_rows(self) -> int:
        """int: At most this many rows match."""
        if self.strategy == "index":
            return self.index_rows
        if len(self.states):
            return self.rows_all + self.rows_to_test
        return self.nrows

    def __str__(self):
        lines = [f"QueryPlan for {self.expression!r} over {self.nrows:,} rows",
                 f"  strategy: {self.strategy} ({self.reason})"]
        if len(self.states):
            lines += [
                f"  chunks: {self.chunks:,}",
                f"  skipped: {self.chunks_skipped:,} chunks, {self.rows_skipped:,} rows "
                f"(no row can match)",
                f"  all match: {self.chunks_all:,} chunks, {self.rows_all:,} rows "
                f"(the condition is not read)",
                f"  to test: {self.chunks_to_test:,} chunks, {self.rows_to_test:,} rows"]
        else:
            lines.append("  statistics: none used")
        if self.index is not None:
            lines.append(f"  index: {self.index!r} names {self.index_rows:,} candidate rows")
        else:
            lines.append("  index: none")
        lines.append(f"  estimated rows: at most {self.estimated_rows:,}")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<QueryPlan {self.strategy} {self.expression!r}: {self.chunks_skipped} of "
                f"{self.chunks} chunks skipped, {self.chunks_all} all-match, "
                f"index {self.index!r}, at most {self.estimated_rows} rows>")


# ------------------------------------------------------------------ planning

def _column_info(name, col, full=False) -> ColumnInfo:
    """What the planner knows of a column: with ``full``, its statistics and
    categories too (read for the columns a leaf tests)."""
    vlen = col.vlen
    stats = categories = None
    if full:
        stats = chunk_stats(col)
        category = col.category
        if category is not None:
            categories = np.array(list(category.categories or []), dtype=col.dtype)
    column_type = getattr(col, "column_type", None)
    return ColumnInfo(name, col.dtype, col.ndim, None if vlen is None else vlen.kind,
                      stats, categories, getattr(col, "nullable", False) is True,
                      getattr(column_type, "scale", None))      # (a decimal's)


def _is_scalar(value) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 0
    return value is None or isinstance(value, (np.generic, int, float, complex, str, bytes,
                                               _dec.Decimal))


def _variables(cols, found: dict) -> tuple:
    """``(columns, scalars)``: the condition's variables that are columns of
    the table, and the others (which must be scalars)."""
    columns, scalars = {}, {}
    for name, value in found.items():
        if name in cols and value is cols[name]:
            columns[name] = cols[name]
        elif _is_scalar(value):
            scalars[name] = value
        else:
            raise Unplannable(f"{name!r} is neither a column of the table nor a scalar")
    return columns, scalars


def _leaves(node, out):
    if isinstance(node, (Leaf, Opaque)):
        out.append(node)
    elif isinstance(node, Both):
        _leaves(node.left, out)
        _leaves(node.right, out)
    else:
        _leaves(node.child, out)
    return out


def _conjuncts(node, out):
    if isinstance(node, Both) and node.op == "and":
        _conjuncts(node.left, out)
        _conjuncts(node.right, out)
    elif isinstance(node, Leaf):
        out.append(node)
    return out


def _null_readers(node, nullable: set) -> set:
    """The ``nullable`` columns the tree reads other than by ``isnull``: a null
    there makes the whole condition false (numpy.ma carries it through ``|``
    and ``~``), so no interval can be known to match entirely, and one where
    such a column holds nulls only matches nowhere."""
    if isinstance(node, Leaf):
        return {node.column} & nullable if node.kind != "isnull" else set()
    if isinstance(node, Opaque):
        names = {n.id for n in ast.walk(ast.parse(node.text, mode="eval"))
                 if isinstance(n, ast.Name)}
        return names & nullable
    if isinstance(node, Not):
        return _null_readers(node.child, nullable)
    return _null_readers(node.left, nullable) | _null_readers(node.right, nullable)


def _all_null(info) -> np.ndarray | None:
    """Per entry of a nullable column's statistics, whether all its items are
    null, or None when its counts of missing items hold present NaN/NaT too."""
    stats = info.stats
    if info.decimal is None and info.dtype.kind not in "biu":
        return None
    return stats.known & (stats.nulls == stats.stops - stats.starts)


def _grid(tree, infos: dict, length: int, nullable=frozenset()):
    """``(starts, stops, states)`` of the tree over the intervals its columns'
    chunks cut, or None when no column has statistics.  A tree that reads a
    ``nullable`` column (other than by ``isnull``) has no ``ALL`` interval."""
    stats = {name: info.stats for name, info in infos.items()
             if info.stats is not None and len(info.stats.stops)
             and int(info.stats.stops[-1]) == length}
    if not stats:
        return None
    bounds = np.unique(np.concatenate([s.starts for s in stats.values()] + [[length]]))
    starts, stops = bounds[:-1].astype(np.int64), bounds[1:].astype(np.int64)
    where = {name: np.searchsorted(s.starts, starts, side="right") - 1
             for name, s in stats.items()}
    cache = {}

    def states_of(leaf):
        if isinstance(leaf, Leaf) and leaf.column in stats:
            if leaf not in cache:
                info = infos[leaf.column]
                cache[leaf] = leaf_states(leaf, info)
            found = cache[leaf]
            if found is not None:
                return found[where[leaf.column]]
        return np.full(len(starts), SOME, np.int8)
    states = combine_states(tree, states_of)
    readers = _null_readers(tree, set(nullable))
    if readers:
        states[states == ALL] = SOME
    for name in sorted(readers & set(stats)):
        empty = _all_null(infos[name])
        if empty is not None:
            states[empty[where[name]]] = NONE
    return starts, stops, states


def _index_question(leaf, info):
    """``(op, value)`` to ask an index for the rows of ``leaf``, or None.  A
    categorical column's index is of its codes: it is asked for the codes
    of the categories that match."""
    if info.categories is not None:
        matches, missing = category_matches(leaf, info)
        return None if missing else ("isin", tuple(np.flatnonzero(matches).tolist()))
    if leaf.kind == "cmp" and leaf.op in _INDEX_OPS:
        return leaf.op, leaf.value
    if leaf.kind == "isin":
        return "isin", leaf.value
    return None


def _index_candidates(tree, indexes, infos, length, grid, budget):
    """``(column, positions)`` of the best index for a leaf of the top-level
    ``&``, or None."""
    best = None
    for leaf in _conjuncts(tree, []):
        index = indexes.get(leaf.column)
        if index is None or leaf.column not in infos:
            continue
        try:
            ask = _index_question(leaf, infos[leaf.column])
            estimate = None if ask is None else index.estimate(*ask)
        except IntegrityError:  # verify=True: a file that is not what was committed
            raise
        except Exception:       # (an index that cannot tell is not used)
            continue
        if estimate is not None and (best is None or estimate < best[0]):
            best = (int(estimate), leaf.column, index, ask)
    if best is None or best[0] > INDEX_MAX_FRACTION * length or \
            best[0] * INDEX_ROW_COST >= budget:
        return None
    try:
        found = best[2].lookup(*best[3])
    except IntegrityError:
        raise
    except Exception:           # (a damaged index: the statistics or a scan)
        return None
    if found is None:
        return None
    found = np.unique(np.asarray(found, dtype=np.int64))
    found = found[(found >= 0) & (found < length)]
    if grid is not None:
        starts, _, states = grid
        found = found[states[np.searchsorted(starts, found, side="right") - 1] != NONE]
    return best[1], found


def plan_query(cols, length, expression, namespace, vm=None, indexes=None) -> QueryPlan:
    """The plan of the condition ``expression`` over the columns ``cols`` (a
    table of ``length`` rows), whose names are looked up in ``namespace``.

    Parameters
    ----------
    cols : cols
        The table's columns.
    length : int
    expression : str
    namespace : mapping
        Columns, user and caller variables (``ctable_query.table_variables``).
    vm : str, optional
        The engine (default ``defaults.vm``); 'dask' is not planned.
    indexes : mapping, optional
        ``column name -> ColumnIndex``.

    Returns
    -------
    QueryPlan
        A 'scan' whenever planning is off, the condition is not one the
        planner reads, or any look-up fails (the scan then raises what it
        always raised).
    """
    plan = QueryPlan(expression, length, reason="query planning is off")
    if not defaults.query_planning:
        return plan
    vm = vm or defaults.vm
    try:
        _, tree, names = parse_expression(expression)
        found = resolve_variables(expression, namespace, vm)
        columns, scalars = _variables(cols, found)
        functions = set(names) - set(found)
        infos = {name: _column_info(name, col) for name, col in columns.items()}
        pred, read = parse_condition(tree, infos, scalars, functions)
        if vm == "dask":
            raise Unplannable("the dask engine evaluates every row")
        infos = {n: _column_info(n, columns[n], full=True) for n in read}
        nullable = {n for n, col in columns.items() if getattr(col, "nullable", False) is True}
        grid = _grid(pred, infos, length, nullable)
    except Unplannable as err:
        plan.reason = str(err)
        return plan
    except Exception as err:        # NameError, SyntaxError...: the scan raises it
        plan.reason = f"{type(err).__name__}: {err}"
        return plan
    plan.columns = tuple(sorted(columns))
    plan.variables, plan.vm = found, vm
    if grid is not None:
        plan.starts, plan.stops, plan.states = grid
    decided = plan.rows_skipped + plan.rows_all if grid is not None else 0
    if grid is None:
        plan.reason = "no statistics for the condition's columns"
    elif decided < max(MIN_SKIP_ROWS, MIN_SKIP_FRACTION * length):
        plan.reason = f"the statistics decide {decided:,} rows only"
    elif plan.rows_to_test > MAX_TESTED_ROWS:
        plan.reason = "too many rows to test"
    else:
        plan.strategy = "statistics"
        plan.reason = f"the statistics decide {decided:,} rows"
    # the rows the statistics plan (or a scan) reads, against those an index names
    to_read = plan.rows_to_test + plan.rows_all if plan.strategy == "statistics" else length
    chosen = _index_candidates(pred, indexes, infos, length, grid, to_read) if indexes else None
    if chosen is not None:
        plan.strategy, plan.reason = "index", "an index names few rows"
        plan.index, plan.candidates = chosen
        plan.index_rows = len(plan.candidates)
    return plan
