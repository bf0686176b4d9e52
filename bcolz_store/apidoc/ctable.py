"""The docstrings of :class:`bcolz_store.ctable` and its public methods
(numpydoc; applied by :func:`bcolz_store.apidoc.documented`).

Source: bcolz 1.x's ctable (signatures, defaults, errors), with what
bcolz_store adds said where it differs.
"""

__all__ = ["CTABLE_DOCS"]

CTABLE_DOCS = {
    "": """ctable(columns=None, names=None, **kwargs)

    A compressed table: one carray per column, in memory or on disk.

    Parameters
    ----------
    columns : sequence of column data, structured ndarray, or ctable, optional
        A list or tuple of carrays, ndarrays or sequences (all of one
        length), or a structured numpy array of one dimension.  Required
        unless opening an existing ``rootdir``.  Carrays are used as they are
        for in-memory tables and copied into the rootdir for on-disk ones.
    names : list or tuple of str, optional
        Column names, any distinct str; default the fields of a structured
        array, else ``f0``, ``f1``...  A name that is not a plain
        identifier is stored in a made-up folder (docs/format.md, "Column
        names"), and an expression refers to its column through
        ``user_dict``.
    verify, allow_pickle, lock, storage_options, consolidated : optional
        The open options, keyword only (see :class:`~bcolz_store.options.OpenOptions`).
    options : OpenOptions, optional
        The open options as one value (the five keywords above are then not read).
    cparams : cparams or dict, optional
        Compression parameters of new columns (default ``defaults.cparams``).
    dtype : numpy dtype, str, vlen or dict, optional
        The dtype of every new column, or a dict of column name -> dtype
        (columns it does not name keep their own); a :class:`~bcolz_store.vlen`
        (or ``'vlen-str'``/``'vlen-bytes'``) makes columns of items of any length.
    dflt, expectedlen, chunklen, safe : optional
        Passed on to every new :class:`carray` column.
    rootdir : str, os.PathLike or Store, optional
        Where an on-disk table lives; None keeps it in memory.
    mode : {'r', 'w', 'a'}, optional
        'r' opens read-only; 'a' opens for appending (the default when
        ``rootdir`` exists) or creates when it does not; 'w' creates anew,
        removing what is at ``rootdir`` (the default otherwise).
    auto_flush : bool, default True
        For on-disk tables: flush after creation, ``append``, ``addcol`` and
        ``delcol``.  Always False in memory.

    Raises
    ------
    ValueError
        Neither ``columns`` nor ``rootdir``; a bad mode; ``columns`` with
        mode 'a' or 'r' on an existing rootdir; mode 'w' without ``columns``;
        bad names, unsupported column data, or columns of different lengths;
        ``lock`` in memory.
    TypeError
        Open options of the wrong types.
    DatasetNotFoundError
        Opening a rootdir that holds no ctable (with mode 'r' it is also a
        ``KeyError``, as in bcolz).
    FormatError
        A malformed ``__rootdirs__``, unsafe column folders, a column leading
        outside the rootdir, or columns of different lengths on disk.
    LockTimeoutError
        When ``lock`` waits past its timeout for another writer.

    Notes
    -----
    Compatibility: bcolz 1.x's constructor, attributes and methods, writing
    the same files and bytes.  Differences on purpose: a structured array
    with ``names`` is taken by position; mode 'a' on a missing rootdir
    creates the table; in expressions, ``user_dict`` wins over columns and
    columns over the caller's variables (bcolz let the caller's variables
    shadow columns).

    Examples
    --------
    >>> import numpy as np
    >>> import bcolz_store as bcolz
    >>> t = bcolz.ctable([np.arange(3), np.array([1.5, 2.5, 3.5])], names=['i', 'x'])
    >>> t[1]
    np.void((1, 2.5), dtype=[('i', '<i8'), ('x', '<f8')])
    >>> t.append((3, 4.5))
    >>> t['x > 2']['i'].tolist()
    [1, 2, 3]
    >>> [row.x for row in t.where('i >= 2', outcols='x')]
    [3.5, 4.5]
    >>> t.names
    ['i', 'x']
    """,
    "__getitem__": """
    t[key]: a column, rows, or the rows where an expression holds.

    Parameters
    ----------
    key : str, int, slice, list, tuple, ndarray or carray
        A column name gives the carray; a list of names a new in-memory
        ctable of those columns; another string is a boolean expression
        over the columns and the caller's variables.  An int gives one
        row; slices, integer lists/arrays and boolean arrays give rows; a
        tuple of one key is that key.

    Returns
    -------
    carray, ctable, numpy.void or numpy.ndarray
        Rows are of this table's ``dtype``.

    Raises
    ------
    KeyError
        When the table has no columns.
    ColumnNotFoundError
        A name (or a name in a list of names) that is neither a column nor
        a variable of the caller's; the message lists the columns.  It is a
        ``KeyError`` and, as bcolz raised, a ``NameError``.
    IndexError
        Out-of-range rows, a boolean array of the wrong length, a
        non-integer array, a non-boolean expression, a multidimensional key.
    NotImplementedError
        Other key types.
    DatasetChangedError
        In mode 'r', when a writer has replaced the files a read needs
        (``refresh()`` moves to the new state).
    """,
    "iter": """
    Iterate over the rows ``start:stop:step``.

    Parameters
    ----------
    start, stop, step : int
        As a slice; ``step`` must be positive.
    outcols : str or sequence of str, optional
        The columns to return (``'a, b'`` or ``['a', 'b']``); ``nrow__``
        is the row number.  Default all.
    limit : int, optional
        Return at most this many rows.
    skip : int, default 0
        Skip this many rows first.
    out_flavor : namedtuple, tuple or numpy.ndarray
        The rows as namedtuples, tuples or 1-row structured arrays.

    Returns
    -------
    iterator

    Raises
    ------
    NotImplementedError
        A step <= 0.
    ValueError
        Bad ``outcols`` or ``out_flavor``.
    """,
    "append": """
    Append rows; on disk one commit (with ``auto_flush``).

    Parameters
    ----------
    cols : tuple, list, structured array, ctable or DataFrame
        One row (a tuple of scalars); columns (a tuple or list of arrays,
        carrays or lists, one per column); rows (a list of tuples, or a
        structured array, matched by field name, else by position);
        another ctable or a pandas DataFrame (by column name).  bcolz read
        a list of tuples as columns.

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    ValueError
        Unsupported input, a wrong number of columns, values that do not
        convert, or columns of different lengths (nothing is appended).
    TypeError
        Items of a wrong type for a column of variable-length items.
    """,
    "trim": """
    Remove the last ``nitems`` rows.

    Parameters
    ----------
    nitems : int

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    ValueError
        When ``nitems`` exceeds the length.
    """,
    "resize": """
    Make the table ``nitems`` rows long; new rows hold each column's dflt.

    Parameters
    ----------
    nitems : int

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    """,
    "addcol": """
    Add a column.

    Parameters
    ----------
    newcol : carray, ndarray, list, tuple, Arrow or pandas column
        The values, one per row (as ``carray()`` reads them).  A carray gives
        its values and vlen or
        categorical type, not its dflt, chunklen or cparams (``kwargs``
        set those), as in bcolz; an on-disk carray moved or copied into
        an on-disk table keeps them.
    name : str, optional
        Default ``'f<pos>'``.
    pos : int, optional
        Its position among the columns (default last).
    move : bool, default False
        Move an on-disk carray's folder into an on-disk table (else copy).
    **kwargs
        carray parameters of the new column (default cparams: the table's).

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    ValueError
        A bad ``pos`` or ``name``, an existing name, a length other than
        the table's, or an unsupported type.
    """,
    "delcol": """
    Remove a column, by ``name`` or by ``pos`` (not both).

    Parameters
    ----------
    name : str, optional
    pos : int, optional
    keep : bool, default False
        Leave an on-disk column's folder on disk.

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    ValueError
        Neither or both of ``name`` and ``pos``, an unknown name, or a
        position out of range.
    """,
    "__setitem__": """
    t[key] = value: replace a column, or set rows.

    Parameters
    ----------
    key : str, int, slice, list, ndarray or carray
        A column name: that column's values are replaced (same length;
        its dtype, cparams and dflt are kept; a carray is taken as it
        is).  A boolean expression, int, slice, integer list/array or
        boolean array selects rows.
    value
        For rows: one row (a tuple) for every selected row, or as many
        rows as selected (a list of tuples or a structured array).

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    KeyError
        When the table has no columns.
    ValueError
        Values that do not convert or do not match the selection.
    """,
    "flush": """
    Commit the buffered rows of every column as one commit (no-op in
    memory or mode 'r').

    Raises
    ------
    OSError
        When the medium refuses a write (the table returns to its last
        committed state).
    """,
    "refresh": """
    Re-read the committed state, to see other writers' commits (no-op
    in memory).  In modes 'a'/'w' pending rows are committed first; after
    a failed write the table returns to its last committed state.

    Raises
    ------
    FormatError, DatasetNotFoundError
        When the table on disk has become unreadable.
    """,
    "close": """
    Flush (unless read-only) and release the writer lock, if held.

    Raises
    ------
    OSError
        As :meth:`flush` (the lock is released all the same).
    """,
    "purge": """
    Remove the whole on-disk table, as one commit (no-op in memory).

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    """,
    "free_cachemem": """
    Drop the decompressed chunks the columns cache.
    """,
    "copy": """
    A copy of this table.

    Parameters
    ----------
    sortby : str, optional
        A column: the copy's rows are ordered by it (stably, missing items
        last), so that the chunk statistics of that column let queries skip
        chunks on data that arrived unordered.  Each column is read whole
        into memory in its turn.
    **kwargs
        ctable constructor parameters of the copy (``rootdir``, ``mode``,
        ``cparams``, ``names``, ``expectedlen``, ``chunklen``...).

    Returns
    -------
    ctable

    Raises
    ------
    DatasetExistsError
        When ``rootdir`` is this table's own (an OSError).
    KeyError
        ``sortby`` is not a column.
    TypeError
        ``sortby`` names a column of objects, complex or structured items.
    ValueError
        As the constructor.
    """,
    "to_kerchunk": """
    kerchunk references (version 1) that open this stored ctable as a zarr
    v2 group, one array per column, and with xarray as a Dataset whose
    variables share the dimension ``row`` (docs/zarr.md).

    Each column is described as :meth:`carray.to_kerchunk` describes one;
    a column's atom dimensions are ``COLUMN_dim_1``...; the group's
    ``.zattrs`` are the table's attrs.  A column whose name zarr cannot
    open as an array name (empty, ``.``, ``..``, with ``/`` or ``\\``,
    starting with ``.``) is named after its folder in the dataset
    (``__c<N>_<ascii>``), its ``.zattrs`` giving the column's name under
    ``bcolz_store_column``.  Only committed files are referenced.

    Parameters
    ----------
    url : str, optional
        The table's folder as readers will see it (chunk URLs
        ``url/COLUMN/data/__N.blp``); default as :meth:`carray.to_kerchunk`.
    inline_threshold : int, default 0
        Full chunks whose Blosc buffer is smaller are inlined too.
    skip_unsupported : bool, default False
        Leave out, with a ``UserWarning`` naming each, the columns zarr
        cannot read, instead of raising.

    Returns
    -------
    dict
        ``{"version": 1, "refs": {...}}``.

    Raises
    ------
    TypeError
        A kind zarr v2 has no dtype for: vlen, categorical, object,
        structured, or any kind of this library's own (its ``meta/storage``
        is not plain bcolz's); the message names the column and the reason.
        Also an ``inline_threshold`` that is not an int.
    ValueError
        In memory (no files); changes not yet flushed (call ``flush()``
        first); a committed change an interrupted writer left unapplied; a
        store whose files have no URL (a ``.zip`` pack, a ``MemoryStore``)
        without ``url``; a negative ``inline_threshold``.
    CodecError
        A chunk compressed with snappy, which numcodecs' Blosc lacks.
    FormatError
        A chunk file whose headers are invalid or announce another size.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> t = bcolz.ctable([[1, 2, 3], [0.5, 1.5, 2.5]], names=["a", "b"], rootdir="t")
    >>> sorted(t.to_kerchunk()["refs"])
    ['.zattrs', '.zgroup', 'a/.zarray', 'a/.zattrs', 'a/0', 'b/.zarray', 'b/.zattrs', 'b/0']
    """,
}
