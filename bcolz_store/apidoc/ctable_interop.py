"""The docstrings of :class:`bcolz_store.ctable`'s conversions to and from other
libraries: pandas, fixed-width copies, dask and the Arrow
PyCapsule interface (numpydoc; applied with
:data:`bcolz_store.apidoc.ctable.CTABLE_DOCS` by
:func:`bcolz_store.apidoc.documented`).

Source: bcolz 1.x's ctable (``fromdataframe``, ``todataframe``); the others
are bcolz_store's own.
"""

__all__ = ["CTABLE_INTEROP_DOCS"]

CTABLE_INTEROP_DOCS = {
    "fromdataframe": """
    A ctable of the columns of a pandas DataFrame.

    Parameters
    ----------
    df : pandas.DataFrame
    **kwargs
        ``strings='vlen'`` (columns of str or bytes items of any length,
        which bcolz cannot read; default fixed-width 'U' or 'S'
        columns), and ctable constructor parameters.

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        When pandas is not installed.
    """,
    "todataframe": """
    This table as a pandas DataFrame.

    Parameters
    ----------
    columns : sequence of str, optional
        The columns to take (default all).
    orient : str, default 'columns'
        As :func:`bcolz_store.interop.pandas.todataframe`.
    where : str, carray or ndarray, optional
        Only the rows where this condition holds (as :meth:`where` takes
        it, planned the same way); the DataFrame is then indexed by their
        row numbers.
    dtype_backend : {None, 'pyarrow'}, default None
        'pyarrow': every column an ``ArrowDtype`` column made from the
        columns' Arrow buffers (no Python object per item; needs pyarrow).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ImportError
        When pandas (or, for 'pyarrow', pyarrow) is not installed.
    ValueError
        ``where`` with ``orient='index'``; another ``dtype_backend``.
    QueryError, NameError
        As :meth:`where`, for ``where``.
    """,
    "tofixed": """
    A copy bcolz reads: vlen columns become fixed-width ``U`` (str) or
    ``S`` (bytes), as wide as their longest item.

    Parameters
    ----------
    rootdir : str, optional
        Where to write the copy (default in memory).
    mode : {'w', 'a'}, default 'w'
    missing : str or bytes, optional
        Written for a missing item (default: missing items are refused).
    **kwargs
        Other ctable parameters (``cparams``, ``chunklen``...).

    Returns
    -------
    ctable

    Raises
    ------
    ValueError
        Missing items without ``missing``, or a str item ending in NUL.
    """,
    "to_dask": """
    This table as a dask DataFrame, indexed by row number; each
    partition (whole chunks of rows) is read by its task.

    Parameters
    ----------
    blen : int, optional
        Rows per partition, a multiple of the largest chunklen (default
        about 64 MiB of rows).
    columns : sequence of str, optional
        The columns to take (default all).
    filters : str, optional
        A condition over the columns and the caller's scalars (as
        :meth:`where` takes it): each partition holds only its matching
        rows, and partitions the chunk statistics prove empty are left out
        of the graph.

    Returns
    -------
    dask.dataframe.DataFrame

    Raises
    ------
    ImportError
        When dask or pandas is not installed (extra ``bcolz_store[dask]``).
    KeyError
        An unknown column.
    ValueError
        A column of multidimensional items, a bad ``blen``, or ``filters``
        naming a variable that is neither a column nor a scalar.
    TypeError
        ``filters`` that is not a string.
    QueryError, NameError
        As :meth:`where`, for ``filters`` (checked on the first row).
    """,
    "fromhdf5": """
    A ctable of a PyTables Table node.

    Parameters
    ----------
    filepath : str
    nodepath : str, default '/ctable'
    **kwargs
        ``drop_attrs=True`` leaves out the node's attributes; ctable
        constructor parameters.

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        When PyTables is not installed (extra ``bcolz_store[hdf5]``).
    OSError
        A file that cannot be opened.
    NodeKindError
        A node that is not a Table (a TypeError); the message names it,
        the file's Tables, and how to read an array (as a carray).
    ValueError, FormatError
        An attribute JSON cannot hold (unless ``drop_attrs``), or a
        malformed one bcolz_store wrote.
    """,
    "tohdf5": """
    Write this table as a PyTables Table node.

    Parameters
    ----------
    filepath : str
    nodepath : str, default '/ctable'
    mode : {'w', 'a'}, default 'w'
    cparams : cparams, optional
        Default this table's.
    cname : str, optional
        The HDF5 compressor (default from ``cparams``).

    Raises
    ------
    ImportError
        When PyTables is not installed (extra ``bcolz_store[hdf5]``).
    DatasetExistsError
        With mode 'w' when ``filepath`` exists.
    TypeError, ValueError
        datetime64, timedelta64 or object columns, unicode past U+10FFFF,
        or an attribute name bcolz_store uses itself (nothing is written).
    """,
    "__arrow_c_stream__": """
    This ctable as an Arrow C stream (the Arrow PyCapsule interface).

    A stream of record batches of all columns: ``pyarrow.table(t)``,
    ``polars.DataFrame(t)``, and DuckDB's queries naming ``t`` read it.
    The stream is lazy: one batch per block of whole chunks (about 16 MiB
    of all columns), each read and converted when the consumer asks for it,
    so a table larger than memory streams in bounded memory.  Columns
    become Arrow as :func:`bcolz_store.converters.arrow.to_arrow` makes
    them: numbers, bools and temporal types as themselves (an ``M8``
    column with a ``timezone`` attr as a zoned timestamp), vlen columns as
    large strings or binary (missing items as nulls), categorical columns
    as dictionaries (the categories as the dictionary, the codes' int type
    as the indices, ``ordered`` kept), with bcolz_store's schema metadata
    (docs/arrow.md).

    Parameters
    ----------
    requested_schema : PyCapsule, optional
        An ``"arrow_schema"`` capsule the consumer asks for; the batches are
        cast to it when it differs.

    Returns
    -------
    PyCapsule
        An ``"arrow_array_stream"``.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns, or a ``requested_schema`` that is not a capsule.
    ValueError
        When the columns cannot be cast to ``requested_schema``.
    """,
    "__arrow_c_schema__": """
    The Arrow schema of this ctable (the Arrow PyCapsule interface).

    Returns
    -------
    PyCapsule
        An ``"arrow_schema"``: the table's schema (a struct of its
        columns), with bcolz_store's schema metadata.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns.
    """,
}
