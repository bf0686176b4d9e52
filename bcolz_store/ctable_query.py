"""Row queries over a ctable's columns: ``eval``, ``iter``, ``where``,
``whereblocks``, ``fetchwhere``.

The functions take the table's parts as their first arguments: its columns
(a :class:`~bcolz_store.columns.cols`), its length in rows, the caller's
frame (the variables an expression sees), the class that makes new tables;
then what the query asks.  A function that is the work of a ctable method
says which; the method's own docstring
documents its arguments.

A condition string is planned first (:mod:`bcolz_store.ctable_plan`): when
the chunk statistics (or an index) rule out enough rows, only the rows they
leave undecided are evaluated, and the matching rows come as a
:class:`~bcolz_store.ctable_select.Selection` (:func:`matching`).  Otherwise
the condition is evaluated once (:func:`condition`) into a boolean carray or
ndarray of the table's length.  Either is then read block by block; for each
block only the rows that match are read, column by column, so that no Python
work is done per row until rows are handed out.

``skip`` and ``limit`` count matching rows: the first ``skip`` matches are
dropped, then at most ``limit`` are returned.  The pseudo-column ``nrow__``
in ``outcols`` gives the row number.

Source: bcolz 1.x ``ctable.iter``, ``where``, ``whereblocks``,
``fetchwhere`` (parameters and results; rows hold Python scalars as in
bcolz, except datetime64/timedelta64 values, which stay numpy scalars rather
than becoming bare integers); checked by bcolz's own
test_ctable.py / test_queries.py through the conformance suite and by
tests/test_ctable.py.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import threads
from .carray import carray
from .columns import column_field, make_rows
from .ctable_plan import QueryPlan, plan_query
from .ctable_select import Selection, row_filter, select
from .defaults import defaults
from .errors import QueryError
from .format.layout import split_names, validate_names
from .indexing import matching_positions
from .query.eval import evaluate as _evaluate

__all__ = ["NROW", "check_outcols", "condition", "evaluate", "explain", "fetch_where",
           "iter_rows", "matching", "matching_rows", "outcols_dtype", "table_filter",
           "table_variables", "where_blocks", "where_rows"]

NROW = "nrow__"
MIN_SCAN_ROWS = 1 << 14  # rows of the condition read at a time, at least
# Conditions over tables up to this many rows are evaluated into a plain
# boolean ndarray (one byte per row); longer ones into a compressed carray.
MAX_NUMPY_MASK_ROWS = 1 << 26


def table_variables(cols, user_dict, frame) -> dict:
    """The names an expression over the columns ``cols`` sees.

    In increasing priority: the globals, then the locals of ``frame`` (the
    caller's), then the columns, then ``user_dict``.

    Notes
    -----
    Compatibility: bcolz let the caller's variables shadow columns and
    columns shadow ``user_dict``; here a column name always means the column
    and an explicit ``user_dict`` wins.
    """
    names = {}
    if frame is not None:
        names.update(frame.f_globals)
        names.update(frame.f_locals)
    names.update(cols.as_dict())
    if user_dict:
        names.update(user_dict)
    return names


def unnamed_columns_hint(cols, expression, err):
    """``err`` again, with a hint when ``expression`` mentions a column whose
    name is not an identifier (an expression cannot name it: it refers to it
    through ``user_dict``)."""
    if not isinstance(expression, str):
        return err
    found = [n for n in cols.names if not n.isidentifier() and n and n in expression]
    if not found:
        return err
    name = found[0]
    return QueryError(f"{err}; column {name!r} cannot be named in an expression (its name "
                      f"is not an identifier): pass it under another name, e.g. "
                      f"user_dict={{'c': t[{name!r}]}} and write 'c' in the expression")


def evaluate(cols, expression, user_dict, frame, **kwargs):
    """:func:`bcolz_store.eval` of ``expression`` over the columns ``cols``.

    Raises
    ------
    QueryError, NameError
        As :func:`bcolz_store.eval`; a QueryError names a column whose name
        is not an identifier when the expression tries to name it.
    """
    try:
        return _evaluate(expression, table_variables(cols, user_dict, frame),
                         make_result=carray, **kwargs)
    except (QueryError, NameError, SyntaxError) as err:
        hinted = unnamed_columns_hint(cols, expression, err)
        if hinted is err:
            raise
        raise hinted from err


def condition(cols, length, expression, user_dict, vm, frame, error=QueryError):
    """A boolean carray/ndarray of the rows where ``expression`` holds.

    Parameters
    ----------
    cols : cols
        The table's columns.
    length : int
        The table's length in rows.
    expression : str, carray or ndarray
        An expression (evaluated with :func:`evaluate`) or a boolean array.
    user_dict : dict or None
        Extra variables for the expression.
    vm : str or None
        The engine.
    frame : frame or None
        The caller's frame, whose variables the expression sees.
    error : exception class
        Raised when the result is not boolean (bcolz raised IndexError from
        ``t[expr]`` and ValueError from ``where``).

    Returns
    -------
    carray or numpy.ndarray
        Of ``length`` booleans.

    Raises
    ------
    error
        A result that is not boolean.
    QueryError
        A result whose length is not ``length``.
    """
    if isinstance(expression, str):
        flavor = "numpy" if length <= MAX_NUMPY_MASK_ROWS else "carray"
        result = evaluate(cols, expression, user_dict, frame, vm=vm, out_flavor=flavor)
    else:
        result = expression
    if not hasattr(result, "dtype") or result.dtype.type != np.bool_:
        if isinstance(expression, str):
            raise error(f"`{expression}` does not represent a boolean expression")
        raise error("only boolean expressions or arrays are supported")
    if len(result) != length:
        raise QueryError(f"the condition has length {len(result)}, the ctable {length}")
    return result


def matching(cols, length, frame, expression, user_dict=None, vm=None, error=QueryError,
             indexes=None):
    """The rows where ``expression`` holds: a :class:`~bcolz_store.ctable_select.Selection`
    when the query is planned (:func:`bcolz_store.ctable_plan.plan_query`),
    else the boolean mask of :func:`condition` (same arguments; ``indexes``:
    ``column name -> ColumnIndex``, or None).

    Raises
    ------
    error, QueryError, NameError
        As :func:`condition`.
    """
    if isinstance(expression, str) and defaults.query_planning:
        try:
            plan = plan_query(cols, length, expression, table_variables(cols, user_dict, frame),
                              vm, indexes)
        except (QueryError, NameError, SyntaxError) as err:
            hinted = unnamed_columns_hint(cols, expression, err)
            if hinted is err:
                raise
            raise hinted from err
        if plan.strategy != "scan":
            return select(cols, plan, error)
    return condition(cols, length, expression, user_dict, vm, frame, error)


def matching_rows(cols, length, frame, expression, indexes=None) -> np.ndarray:
    """The positions (int64, sorted) of the rows where ``expression`` (a
    condition or a boolean array) holds.

    Raises
    ------
    QueryError, NameError
        As :func:`condition`.
    """
    found = matching(cols, length, frame, expression, indexes=indexes)
    if isinstance(found, Selection):
        return found.all_positions()
    _check_mask(length, found)
    return np.flatnonzero(np.asarray(found[:])).astype(np.int64)


def explain(cols, length, frame, expression, user_dict=None, vm=None,
            indexes=None) -> QueryPlan:
    """How ``expression`` would be evaluated.  The work of
    :meth:`bcolz_store.ctable.explain` over the table's parts; its docstring
    (on the method) gives the arguments after the
    parts, the result and the errors."""
    if not isinstance(expression, str):
        raise TypeError(f"explain() needs a condition (a str), not {type(expression).__name__}")
    return plan_query(cols, length, expression, table_variables(cols, user_dict, frame), vm,
                      indexes)


def table_filter(table, frame, expression, indexes=None):
    """The :class:`~bcolz_store.ctable_select.RowFilter` of a condition over
    ``table`` (for ``to_dask(filters=...)``).

    Raises
    ------
    TypeError, ValueError, QueryError, NameError
        As :func:`bcolz_store.ctable_select.row_filter`.
    """
    return row_filter(table, expression, table_variables(table.cols, None, frame), None,
                      indexes)


def check_outcols(cols, outcols) -> list:
    """The list of output column names for ``outcols``.

    Parameters
    ----------
    cols : cols
        The table's columns.
    outcols : None, str or sequence of str
        None means all columns; a string is split on commas and spaces.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        A wrong type, a name that is not an identifier, or a name that is
        neither a column nor ``nrow__``.
    """
    if outcols is None:
        return list(cols.names)
    if isinstance(outcols, str):
        outcols = split_names(outcols)
    elif not isinstance(outcols, (list, tuple)):
        raise ValueError(f"only list/str is supported for outcols, not {type(outcols).__name__}")
    # a list may name any column; a str is split at commas and spaces
    outcols = validate_names(outcols, "outcols") if any(
        not isinstance(n, str) for n in outcols) else list(outcols)
    unknown = [n for n in outcols if n != NROW and n not in cols]
    if unknown:
        raise ValueError(f"outcols {unknown} are not columns of the ctable {cols.names}")
    return outcols


def outcols_dtype(cols, names) -> np.dtype:
    """The structured dtype of rows made of the columns ``names`` (and ``nrow__``)."""
    fields = [(NROW, np.int_) if name == NROW else column_field(name, cols[name])
              for name in names]
    return np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields]})


def _row_maker(names, dtype, out_flavor):
    """A function turning an iterator of value tuples into rows of ``out_flavor``."""
    if out_flavor is namedtuple or out_flavor == "namedtuple":
        row = namedtuple("row", names, rename=True)
        return lambda values: map(row._make, values)
    if out_flavor is tuple or out_flavor == "tuple":
        return lambda values: values

    if out_flavor is np.ndarray or out_flavor == "ndarray":
        def as_arrays(values):
            for value in values:
                nulls = tuple(v is np.ma.masked for v in value)
                out = np.zeros(1, dtype=dtype)
                if any(nulls):      # a masked row, as the table's rows read
                    out[0] = tuple(out[0][i] if null else v for i, (v, null) in
                                   enumerate(zip(value, nulls)))
                    mask = np.array([nulls], dtype=np.ma.make_mask_descr(dtype))
                    yield np.ma.masked_array(out, mask=mask)
                    continue
                out[0] = value
                yield out
        return as_arrays
    raise ValueError(f"out_flavor must be namedtuple, tuple or numpy.ndarray, not {out_flavor!r}")


def _python_values(values):
    """Values handed out in rows: Python scalars where bcolz gave them.

    Numbers, bools, bytes and str become Python objects (``tolist``);
    datetime64/timedelta64 stay numpy scalars (``tolist`` would turn
    nanoseconds into plain ints); multidimensional atoms stay arrays.  A null
    of a nullable fixed column is ``numpy.ma.masked``, as iterating the
    column gives it (a null of a column of objects -- vlen, categorical,
    decimal, list, struct -- is None, as it reads).
    """
    if isinstance(values, range):
        return values
    if values.ndim == 1 and values.dtype.kind not in "MmV":
        if isinstance(values, np.ma.MaskedArray):
            items = values.data.tolist()
            for i in np.flatnonzero(np.ma.getmaskarray(values)).tolist():
                items[i] = np.ma.masked
            return items
        return values.tolist()
    return values


def _scan_blen(cols) -> int:
    """Rows scanned at a time: a chunk of the column of shortest chunks, or as
    many as the thread pool decodes at once."""
    chunklens = [cols[n].chunklen for n in cols.names]
    return max(min(chunklens, default=MIN_SCAN_ROWS), MIN_SCAN_ROWS) * threads.chunks_per_block()


# --------------------------------------------------------------------- iter

def table_eval(cols, frame, expression, indexes=None, **kwargs):
    """Evaluate ``expression`` over the columns (and the caller's variables).  The
    work of :meth:`bcolz_store.ctable.eval` over the table's parts; its docstring
    (on the method) gives the arguments after the
    parts, the result and the errors.

    A condition is planned (``indexes`` as :func:`matching`) when no other
    argument than ``user_dict``, ``vm`` and ``out_flavor`` is given."""
    user_dict = kwargs.pop("user_dict", None)
    out_flavor = kwargs.get("out_flavor") or defaults.out_flavor
    length = len(cols[cols.names[0]]) if cols.names else 0
    if isinstance(expression, str) and defaults.query_planning and \
            set(kwargs) <= {"vm", "out_flavor"} and out_flavor in ("bcolz", "carray", "numpy") \
            and length <= MAX_NUMPY_MASK_ROWS:
        plan = plan_query(cols, length, expression, table_variables(cols, user_dict, frame),
                          kwargs.get("vm"), indexes)
        if plan.strategy != "scan":
            mask = select(cols, plan).mask()
            if out_flavor == "numpy":
                return mask
            result = carray(mask, expectedlen=length)
            result.flush()
            return result
    return evaluate(cols, expression, user_dict, frame, **kwargs)


def where(cols, length, frame, expression, outcols=None, limit=None, skip=0,
          out_flavor=namedtuple, user_dict=None, vm=None, indexes=None):
    """Iterate over the rows where ``expression`` is true.  The work of
    :meth:`bcolz_store.ctable.where` over the table's parts; its docstring
    (on the method) gives the arguments after the
    parts, the result and the errors."""
    mask = matching(cols, length, frame, expression, user_dict, vm, indexes=indexes)
    return where_rows(cols, length, mask, outcols, limit, skip, out_flavor)


def whereblocks(cols, length, frame, expression, blen=None, outcols=None, limit=None, skip=0,
                user_dict=None, vm=None, indexes=None):
    """Iterate over the rows where ``expression`` is true, in structured arrays.
    The work of :meth:`bcolz_store.ctable.whereblocks` over the table's parts; its
    docstring (on the method) gives the arguments
    after the parts, the result and the errors."""
    mask = matching(cols, length, frame, expression, user_dict, vm, indexes=indexes)
    return where_blocks(cols, length, mask, blen, outcols, limit, skip)


def fetchwhere(cols, length, frame, make_table, expression, outcols=None, limit=None, skip=0,
               out_flavor=None, user_dict=None, vm=None, indexes=None, **kwargs):
    """Return the rows where ``expression`` is true, all at once.  The work of
    :meth:`bcolz_store.ctable.fetchwhere` over the table's parts; its docstring
    (on the method) gives the arguments after the
    parts, the result and the errors."""
    mask = matching(cols, length, frame, expression, user_dict, vm, indexes=indexes)
    return fetch_where(cols, length, mask, make_table, outcols, limit, skip, out_flavor, kwargs)


def iter_rows(cols, length, start=0, stop=None, step=1, outcols=None, limit=None, skip=0,
              out_flavor=namedtuple):
    """Iterate over the rows ``start:stop:step``.  The work of
    :meth:`bcolz_store.ctable.iter` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    names = check_outcols(cols, outcols)
    step = 1 if step is None else step
    if step <= 0:
        raise NotImplementedError("step param can only be positive")
    rows = range(*slice(start, stop, step).indices(length))
    rows = rows[max(int(skip or 0), 0):]
    if limit is not None:
        rows = rows[:max(int(limit), 0)]
    make = _row_maker(names, outcols_dtype(cols, names), out_flavor)
    return _iter_gen(cols, rows, names, make)


def _iter_gen(cols, rows, names, make):
    blen = _scan_blen(cols)
    for first in range(0, len(rows), blen):
        part = rows[first:first + blen]
        values = [part if name == NROW else cols[name][part.start:part.stop:part.step]
                  for name in names]
        yield from make(zip(*map(_python_values, values)))


# -------------------------------------------------------------------- where

def _read_rows(cols, name, positions):
    """Values of column ``name`` at the (sorted) row numbers ``positions``."""
    if name == NROW:
        return positions
    col = cols[name]
    lo, hi = int(positions[0]), int(positions[-1]) + 1
    if hi - lo == len(positions):       # (sorted and distinct: every row of lo..hi)
        return col[lo:hi]
    if hi - lo <= 4 * len(positions):
        return col[lo:hi][positions - lo]
    return col[positions]


def _matching_columns(cols, mask, names, limit, skip):
    """Yield, per block, the list of matching values of every column in ``names``."""
    blen = _scan_blen(cols)
    found = mask.positions(limit, skip, blen) if isinstance(mask, Selection) else \
        matching_positions(mask, limit, skip, blen)
    for positions in found:
        yield [_read_rows(cols, name, positions) for name in names]


def _check_mask(length, mask):
    if isinstance(mask, Selection):     # (a planned query's rows)
        return
    if not hasattr(mask, "dtype") or mask.dtype.type != np.bool_:
        raise ValueError("only boolean expressions or arrays are supported")
    if len(mask) != length:
        raise ValueError(f"the boolean array has length {len(mask)}, the ctable {length}")


def where_rows(cols, length, mask, outcols=None, limit=None, skip=0, out_flavor=namedtuple):
    """Rows where the boolean ``mask`` (of ``length`` items) is true (see
    :meth:`ctable.where`).

    Raises
    ------
    ValueError
        A non-boolean mask or one of the wrong length, bad ``outcols`` or
        ``out_flavor``.
    """
    _check_mask(length, mask)
    names = check_outcols(cols, outcols)
    make = _row_maker(names, outcols_dtype(cols, names), out_flavor)
    return _where_gen(cols, mask, names, limit, skip, make)


def _where_gen(cols, mask, names, limit, skip, make):
    for values in _matching_columns(cols, mask, names, limit, skip):
        yield from make(zip(*map(_python_values, values)))


def _structured_blocks(cols, mask, names, limit, skip):
    dtype = outcols_dtype(cols, names)
    for values in _matching_columns(cols, mask, names, limit, skip):
        yield make_rows(dtype, len(values[0]), names, values)


def where_blocks(cols, length, mask, blen=None, outcols=None, limit=None, skip=0):
    """Structured arrays of ``blen`` matching rows (see :meth:`ctable.whereblocks`).

    Raises
    ------
    ValueError
        A non-boolean mask, bad ``outcols`` or a ``blen`` below 1.
    """
    _check_mask(length, mask)
    names = check_outcols(cols, outcols)
    if blen is None:
        blen = min((cols[n].chunklen for n in cols.names), default=MIN_SCAN_ROWS)
    if blen < 1:
        raise ValueError(f"blen must be a positive number of rows, not {blen}")
    return _rebuffer(_structured_blocks(cols, mask, names, limit, skip), int(blen))


def _concatenate(blocks):
    """Structured arrays joined (masked ones by numpy.ma, keeping their masks)."""
    data = np.empty(sum(len(b) for b in blocks), dtype=blocks[0].dtype)
    np.concatenate([np.ma.getdata(b) for b in blocks], out=data)    # (byte order kept)
    if any(isinstance(b, np.ma.MaskedArray) for b in blocks):
        return np.ma.MaskedArray(data, mask=np.concatenate([np.ma.getmaskarray(b)
                                                            for b in blocks]))
    return data


def _rebuffer(blocks, blen):
    """Regroup a stream of structured arrays into arrays of exactly ``blen`` rows."""
    pending, npending = [], 0
    for block in blocks:
        pending.append(block)
        npending += len(block)
        if npending < blen:
            continue
        data = _concatenate(pending)
        full = (len(data) // blen) * blen
        for start in range(0, full, blen):
            yield data[start:start + blen]
        pending, npending = [data[full:]], len(data) - full
    if npending:
        yield _concatenate(pending)


def fetch_where(cols, length, mask, make_table, outcols=None, limit=None, skip=0,
                out_flavor=None, kwargs=None):
    """All matching rows at once (see :meth:`ctable.fetchwhere`).

    ``make_table`` (the ctable class) makes the result for the 'bcolz' and
    'carray' flavors, with the constructor parameters ``kwargs``.

    Returns
    -------
    ctable or numpy.ndarray

    Raises
    ------
    ValueError
        An unknown ``out_flavor``, and as :func:`where_blocks`.
    """
    if out_flavor is None:
        out_flavor = defaults.out_flavor
    if out_flavor not in ("bcolz", "carray", "numpy"):
        raise ValueError(f"`out_flavor` can only take 'bcolz', 'carray' or 'numpy' values, "
                         f"not {out_flavor!r}")
    _check_mask(length, mask)
    names = check_outcols(cols, outcols)
    blocks = list(_structured_blocks(cols, mask, names, limit, skip))
    data = _concatenate(blocks) if blocks else np.empty(0, dtype=outcols_dtype(cols, names))
    if out_flavor == "numpy":
        return data
    vlen = {n: cols[n].category or cols[n].vlen for n in names
            if n != NROW and cols[n].vlen is not None}
    if vlen:        # columns of variable-length items stay so
        columns = [carray(data[n], dtype=vlen[n]) if n in vlen else data[n] for n in names]
        result = make_table(columns, list(names), **dict(kwargs or {}))
        result.flush()
        return result
    result = make_table(data, **dict(kwargs or {}))
    result.flush()
    return result
