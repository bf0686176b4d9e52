"""The numpydoc reference of the ctable's secondary-index methods
(``create_index``, ``drop_index``, ``indexes``), applied with the rest of
:data:`bcolz_store.apidoc.ctable.CTABLE_DOCS`."""

__all__ = ["INDEX_DOCS"]

INDEX_DOCS = {
    "create_index": """
    Build a secondary index over one column and commit it; queries (``where``,
    ``fetchwhere``, ``t[cond]``...) then find the rows of a point or range
    condition on that column without reading its chunks.  Every later write
    keeps the index current in the same commit (an append extends it).
    The files are ``COLUMN/index/meta`` and ``COLUMN/index/__N.idx``, which
    bcolz ignores (docs/queries.md).

    Parameters
    ----------
    col : str
        The column.
    kind : {'sorted', 'bitmap'}, default 'sorted'
        'sorted': values sorted in blocks with their row numbers, for point
        and range lookups over many distinct values; 'bitmap': each distinct
        value with its rows, for low-cardinality and categorical columns (up
        to 65,536 distinct values per segment of rows).

    Raises
    ------
    KeyError
        ``col`` is not a column.
    ValueError
        An unknown ``kind``, or a table in memory.
    TypeError
        A column of vlen items or objects (not indexable).
    ReadOnlyError
        In mode 'r'.

    """,
    "drop_index": """
    Remove the index of a column and commit.

    Parameters
    ----------
    col : str
        The column.

    Raises
    ------
    KeyError
        ``col`` is not a column.
    IndexNotFoundError
        The column has no index (a ``KeyError``).
    ReadOnlyError
        In mode 'r'.
    """,
    "indexes": """
    ``{column name: index kind}`` of the columns that have a secondary index
    (see :meth:`create_index`); empty for a table in memory.
    """,
}
