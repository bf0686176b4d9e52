"""The docstrings of :class:`bcolz_store.ctable`'s queries: ``eval``,
``where``, ``whereblocks``, ``fetchwhere`` and ``explain`` (numpydoc; applied
with :data:`bcolz_store.apidoc.ctable.CTABLE_DOCS` by
:func:`bcolz_store.apidoc.documented`).

Source: bcolz 1.x's ctable (signatures, defaults, errors); ``explain`` and
query planning are bcolz_store's own.
"""

__all__ = ["QUERY_DOCS"]

QUERY_DOCS = {
    "eval": """
    Evaluate ``expression`` over the columns (and the caller's variables).

    Parameters
    ----------
    expression : str
        E.g. ``'2*a + b'``.
    **kwargs
        As :func:`bcolz_store.eval`: ``user_dict``, ``vm``,
        ``out_flavor``, ``blen`` and carray parameters.

    Returns
    -------
    carray, numpy.ndarray or scalar

    Raises
    ------
    NameError
        An unknown variable.
    QueryError, ValueError
        As :func:`bcolz_store.eval`.

    Notes
    -----
    A condition (comparisons, ``isin``, ``startswith``... joined by ``&``,
    ``|``, ``~``) given with no other argument than ``user_dict``, ``vm``
    and ``out_flavor`` is planned as :meth:`where` plans it: the rows of
    chunks the statistics decide are not read.  The result is the same.
    """,
    "where": """
    Iterate over the rows where ``expression`` is true.

    Parameters
    ----------
    expression : str, carray or ndarray
        A boolean expression over the columns and the caller's variables
        (evaluated now), or a boolean array of the table's length.
    outcols, limit, skip, out_flavor
        As :meth:`iter`.
    user_dict : dict, optional
        More variables for the expression (they win over the columns).
    vm : {'numexpr', 'python', 'dask'}, optional
        The engine (default ``bcolz_store.defaults.vm``).

    Returns
    -------
    iterator

    Raises
    ------
    QueryError
        A non-boolean condition (a ValueError), or one of another length.
    ValueError
        Bad ``outcols`` or ``out_flavor``.
    NameError
        An unknown variable in the expression.

    Notes
    -----
    A condition string is planned first (see :meth:`explain` and
    ``bcolz_store.defaults.query_planning``): chunks whose statistics
    prove that no row matches are skipped, rows that all match are not
    tested, and the rest are evaluated as a scan evaluates them.  The rows,
    their order, ``skip`` and ``limit`` are those of a scan.  A null of a
    nullable column satisfies no comparison, nor its negation (docs/nulls.md);
    in the rows it is ``numpy.ma.masked`` (None in a column of objects:
    vlen, categorical, decimal, list, struct).
    """,
    "whereblocks": """
    Iterate over the rows where ``expression`` is true, in structured arrays.

    Parameters
    ----------
    expression, outcols, limit, skip, user_dict, vm
        As :meth:`where`.
    blen : int, optional
        Rows per array (the last may be shorter); default the smallest
        chunklen of the columns.

    Returns
    -------
    iterator of numpy.ndarray

    Raises
    ------
    QueryError, ValueError, NameError
        As :meth:`where`; ValueError also for a ``blen`` below 1.
    """,
    "fetchwhere": """
    Return the rows where ``expression`` is true, all at once.

    Parameters
    ----------
    expression, outcols, limit, skip, user_dict, vm
        As :meth:`where`.
    out_flavor : {'bcolz', 'carray', 'numpy'}, optional
        A new ctable ('bcolz'/'carray') or a structured ndarray
        ('numpy'); default ``bcolz_store.defaults.out_flavor``.
    **kwargs
        ctable constructor parameters of the new ctable.

    Returns
    -------
    ctable or numpy.ndarray

    Raises
    ------
    QueryError, ValueError, NameError
        As :meth:`where`; ValueError also for an unknown ``out_flavor``.
    """,
    "explain": """
    How a condition would be evaluated: its query plan.

    Parameters
    ----------
    expression : str
        A condition over the columns and the caller's variables, as
        :meth:`where` takes it.
    user_dict : dict, optional
        More variables for the expression (they win over the columns).
    vm : {'numexpr', 'python', 'dask'}, optional
        The engine (default ``bcolz_store.defaults.vm``); conditions for
        'dask' are not planned.

    Returns
    -------
    QueryPlan
        A :class:`~bcolz_store.ctable_plan.QueryPlan`: its ``strategy``
        ('scan', 'statistics' or 'index') and ``reason``, the chunks and
        rows skipped (``chunks_skipped``, ``rows_skipped``), matching
        without a test (``chunks_all``, ``rows_all``) and to test
        (``chunks_to_test``, ``rows_to_test``), the ``index`` used and
        ``estimated_rows`` (at most that many rows match); ``str()`` shows
        them.

    Raises
    ------
    TypeError
        ``expression`` is not a string.

    Notes
    -----
    Only chunk statistics are read, no row.  A condition the planner
    cannot read, or that names an unknown variable, gives a 'scan' plan
    whose ``reason`` says why (the query itself then raises as always).
    A writer's unflushed rows and its last, partly filled chunk have no
    statistics: they are always tested.  The guide, with examples, is
    docs/query-planning.md.
    """,
}
