"""The docstrings of :class:`bcolz_store.carray`'s public methods (numpydoc;
applied by :func:`bcolz_store.apidoc.documented`).

Source: bcolz 1.x's carray methods (signatures, defaults, errors), with what
bcolz_store adds said where it differs.
"""

from .nullable import NULLABLE_DOCS

__all__ = ["CARRAY_DOCS"]

CARRAY_DOCS = {
    "": """carray(array=None, cparams=None, dtype=None, dflt=None, expectedlen=None, chunklen=None, rootdir=None, safe=True, mode='a', *, nullable=None)

    A compressed, enlargeable array, in memory or on disk.

    Parameters
    ----------
    array : array_like or carray, optional
        Initial data; its first dimension is the length, the others form the
        atom.  Required unless opening an existing ``rootdir``.
    cparams : cparams or dict, optional
        Compression parameters (default: ``bcolz_store.defaults.cparams``).
    dtype : numpy dtype, str, vlen or category, optional
        Force this dtype.  ``'vlen-str'``, ``'vlen-bytes'``, a ``StringDType``
        or a :class:`~bcolz_store.vlen` make items of any length (which bcolz
        cannot read, docs/strings.md); ``'category'`` or a
        :class:`~bcolz_store.category` codes plus categories.
    dflt : scalar, optional
        Fill value for growing (``resize``); default zero (vlen: an empty
        item; categorical: a missing item).
    expectedlen : int, optional
        Expected final length; decides ``chunklen`` (default ``len(array)``).
    chunklen : int, optional
        Atoms per chunk; overrides ``expectedlen``'s choice.
    rootdir : str, os.PathLike or Store, optional
        A folder, a URL (``s3://bucket/x.bcolz``, any fsspec URL), a ``.zip``
        pack (read-only) or a :class:`~bcolz_store.storage.base.Store`; None
        keeps the carray in memory.
    safe : bool, default True
        Convert and check appended data.
    mode : {'a', 'r', 'w'}, default 'a'
        'r' read-only, 'a' read and append, 'w' create anew (replacing what is
        at ``rootdir`` in the creation's one commit).
    nullable : bool, optional
        Keyword only: items may be null (default: masked or None data; docs/nulls.md).
    verify, allow_pickle, lock, storage_options, consolidated
        Keyword only: how a stored carray is opened
        (:class:`~bcolz_store.options.OpenOptions`); or ``options=``.

    Raises
    ------
    ValueError
        Invalid mode or parameters, or neither ``array`` nor ``rootdir``.
    DatasetExistsError
        Creating at an existing ``rootdir`` with mode other than 'w'.
    DatasetNotFoundError
        Opening a ``rootdir`` that holds no carray.
    FormatError
        Opening a rootdir whose metadata or chunk files are corrupt.
    TypeError
        dtypes bcolz cannot store either (nested objects, typesize > 255).
    LockTimeoutError
        ``lock`` asked for, and another writer keeps it past the timeout.

    Notes
    -----
    Compatibility: bcolz 1.x's constructor, properties and methods, with the
    same chunklen choice and the same bytes on disk.  Better than bcolz:
    negative slice steps, integer index arrays of any integer dtype, every
    dtype persists (complex, timedelta64, datetime64 in any unit, structured).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([1, 2, 3], chunklen=2)
    >>> c.append([4, 5]); (len(c), c.nchunks, c.nleftover)
    (5, 2, 1)
    >>> c[1:4]
    array([2, 3, 4])
    """,
    "__getitem__": """
    Read ``x[key]``.

    In mode 'r' reads come from the committed state the carray opened (or
    last refreshed to).

    Parameters
    ----------
    key : int, slice, tuple, array_like, carray or str
        An int; a slice of any step (negative steps too, which bcolz
        refused); a tuple (its first item selects rows, the rest index
        within them); an integer array of positions (any integer dtype,
        negative counted from the end); a boolean array or boolean carray of
        ``len(x)``; or an expression string over the caller's variables
        that evaluates to a boolean array.

    Returns
    -------
    scalar or numpy.ndarray
        An int gives one element (a Python int/bool for integer and
        boolean dtypes, as bcolz; an ndarray for a multidimensional atom),
        anything else a new ndarray of ``dtype``.

    Raises
    ------
    IndexError
        Out-of-range ints, a mask of the wrong length, non-integer arrays,
        unsupported keys, an expression that is not boolean.
    ValueError
        An empty tuple, or a zero slice step.
    DatasetChangedError
        A writer replaced files the read needs (call ``refresh()``).
    UnsafeDataError
        An object carray from a store without ``allow_pickle``.
    QueryError
        An expression string that cannot be evaluated.

    Examples
    --------
    >>> import numpy as np, bcolz_store as bcolz
    >>> c = bcolz.carray(np.arange(10))
    >>> c[3], c[8:2:-2], c[[1, -1]]
    (3, array([8, 6, 4]), array([1, 9]))
    >>> c["c > 6"]
    array([7, 8, 9])
    """,
    "__setitem__": """
    Write ``x[key] = value``; on disk each assignment is one commit.

    Parameters
    ----------
    key : int, slice, tuple, array_like, carray or str
        As ``x[key]`` takes it.
    value : scalar or array_like
        Broadcast to the items ``key`` selects, converted to ``dtype``.

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    IndexError
        Out-of-range ints, unsupported keys.
    ValueError
        A boolean mask of the wrong length, values that cannot broadcast
        or convert, an empty tuple.
    NotImplementedError
        On an object carray (as bcolz).

    Examples
    --------
    >>> import numpy as np, bcolz_store as bcolz
    >>> c = bcolz.carray(np.zeros(6, dtype="i4"))
    >>> c[::2] = 7; c[[1, 3]] = [1, 3]
    >>> c[:]
    array([7, 1, 7, 3, 7, 0], dtype=int32)
    """,
    "__next__": """
    The next element of an iteration (``next(c)``; bcolz's ``c.next()``).

    A carray iterates from its start; a view made by :meth:`iter`,
    :meth:`where` or :meth:`wheretrue` from where it stands.

    Returns
    -------
    scalar or numpy.ndarray

    Raises
    ------
    StopIteration
        At the end (an iterator view stays exhausted, as in bcolz).
    """,
    "iter": """
    Iterate over the elements ``start:stop:step``.

    Parameters
    ----------
    start, stop : int, optional
        The range, as a slice takes it (default: all).
    step : int, default 1
        Positive.
    limit : int, optional
        Yield at most this many elements (None: all).
    skip : int, default 0
        Skip this many first.

    Returns
    -------
    carray
        A view that is also an iterator (as bcolz's).

    Raises
    ------
    NotImplementedError
        For a step <= 0 (as bcolz).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> list(bcolz.arange(10).iter(1, 9, 3, skip=1))
    [4, 7]
    """,
    "wheretrue": """
    Iterate over the positions where this boolean carray is true.

    Parameters
    ----------
    limit : int, optional
        Yield at most this many positions (None: all).
    skip : int, default 0
        Skip this many first.

    Returns
    -------
    carray
        A view that is also an iterator of ints.

    Raises
    ------
    ValueError
        If the carray is not boolean.
    NotImplementedError
        If it is multidimensional.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> list(bcolz.carray([True, False, True]).wheretrue())
    [0, 2]
    """,
    "where": """
    Iterate over the values where ``boolarr`` is true.

    Parameters
    ----------
    boolarr : numpy.ndarray or carray of bool
        As long as this carray.
    limit : int, optional
        Yield at most this many values (None: all).
    skip : int, default 0
        Skip this many first.

    Returns
    -------
    carray
        A view that is also an iterator.

    Raises
    ------
    NotImplementedError
        If this carray is multidimensional.
    ValueError
        ``boolarr`` not a boolean array of the same length.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> c = bcolz.arange(5)
    >>> [int(v) for v in c.where(c[:] % 2 == 0)]
    [0, 2, 4]
    """,
    "sum": """
    Sum all elements (a nullable carray's nulls are skipped).

    Parameters
    ----------
    dtype : numpy dtype, optional
        The accumulator's dtype (default numpy's rule: at least the platform
        integer for integers and booleans).

    Returns
    -------
    numpy scalar
        The same for every number of threads (partial sums of chunks are
        added in chunk order).

    Raises
    ------
    TypeError
        For string dtypes and vlen carrays.
    UnsafeDataError
        An object carray from a store without ``allow_pickle``.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> int(bcolz.arange(101).sum())
    5050
    """,
    "append": """
    Append data at the end.

    On disk the rows are staged and committed at the next ``flush()`` (or
    write, or ``close()``); rows that fit in the leftover only go there.

    Parameters
    ----------
    array : array_like, scalar or carray
        Atoms, one atom, a scalar, or another carray (copied block by block;
        into a vlen or categorical carray, checked whole before anything is
        written, a categorical carray's codes translated into this one's
        categories).

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    ValueError
        Data that cannot be converted, or whose trailing dimensions differ
        from the atom's; for a categorical carray, an item that is not one of
        its categories.
    KindMismatchError
        str items (an array, a list, a carray) appended to a vlen or
        categorical carray of bytes, or bytes to one of str; a ``TypeError``.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([1, 2])
    >>> c.append(3); c.append([4, 5])
    >>> c[:]
    array([1, 2, 3, 4, 5])
    """,
    "trim": """
    Remove the trailing ``nitems`` atoms (one commit on disk).

    Parameters
    ----------
    nitems : int
        How many to remove; a negative number grows the array with ``dflt``.

    Raises
    ------
    TypeError
        ``nitems`` not a number.
    ValueError
        ``nitems`` more than the length.
    ReadOnlyError
        In mode 'r'.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> c = bcolz.arange(5)
    >>> c.trim(2); c[:]
    array([0, 1, 2])
    """,
    "resize": """
    Make the length ``nitems`` (one commit on disk).

    Parameters
    ----------
    nitems : int
        The new length: shorter trims, longer grows with ``dflt``.

    Raises
    ------
    TypeError
        ``nitems`` not a number.
    ValueError
        ``nitems`` negative.
    ReadOnlyError
        In mode 'r'.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([1, 2], dflt=9)
    >>> c.resize(4); c[:]
    array([1, 2, 9, 9])
    """,
    "flush": """
    Commit: write the leftover and ``meta/sizes`` of a stored carray.

    Nothing happens in memory, or when nothing changed since the last
    commit.

    Raises
    ------
    ReadOnlyError
        In mode 'r' (nothing is written).
    ConcurrentWriteError
        Another writer changed the dataset in a way this write cannot be
        rebased on (a ``ConflictError``), or kept the commit lock.
    """,
    "refresh": """
    Load the latest committed state, to see other writers' commits.

    In modes 'a'/'w' pending appends are committed first; after a failed
    write the carray returns to the last committed state.  Nothing happens
    in memory.

    Raises
    ------
    FormatError, DatasetNotFoundError
        The dataset has become unreadable.
    ReadOnlyError
        Never in mode 'r' (nothing is written there).
    """,
    "close": """
    Flush (unless read-only) and release the writer lock, if held.

    Raises
    ------
    ReadOnlyError, ConcurrentWriteError
        As :meth:`flush`; the lock is released all the same.
    """,
    "free_cachemem": """
    Release the cached decompressed chunks (``cache_budget`` stays).
    """,
    "purge": """
    Remove the stored data in one commit (a no-op in memory).

    A standalone carray's folder goes too; a ctable column's when its table
    commits.

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    DatasetNotFoundError
        The rootdir is gone already.
    """,
    "copy": """
    Copy the carray, optionally elsewhere or otherwise compressed.

    Parameters
    ----------
    **kwargs
        :class:`carray` parameters (``rootdir``, ``mode``, ``cparams``,
        ``chunklen``...); as in bcolz, those not given take the current
        defaults, and ``expectedlen`` is ``len(self)``.

    Returns
    -------
    carray

    Raises
    ------
    UnsafeDataError
        An object carray from a store without ``allow_pickle``.
    DatasetExistsError, ValueError, TypeError
        As :class:`carray` for the parameters given.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.arange(4).copy(cparams={"clevel": 9}).cparams.clevel
    9
    """,
    "view": """
    A lightweight in-memory view sharing this carray's chunks.

    Writes to either are not shown in the other once the leftover differs.

    Returns
    -------
    carray
    """,
    "reshape": """
    The same data in another shape.

    Stored, the reshaped data replaces this dataset in one commit (as in
    bcolz, which rewrote its rootdir).

    Parameters
    ----------
    newshape : int or tuple of int
        One dimension may be -1 (inferred).

    Returns
    -------
    carray

    Raises
    ------
    ValueError
        Sizes that differ, more than one -1, or more than one dimension
        for an object or vlen carray.
    ReadOnlyError
        On disk in mode 'r'.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.arange(6).reshape((3, -1)).shape
    (3, 2)
    """,
    "to_kerchunk": """
    kerchunk references (version 1) that open this stored carray as a zarr
    v2 array, and with xarray, in place (docs/zarr.md).

    One group holding one array ``name``: shape ``(len, *atom)``, chunks
    ``(chunklen, *atom)``, the dtype with its byte order, numcodecs' Blosc,
    a null fill value (xarray would mask items equal to one), and
    ``.zattrs`` with the attrs and ``_ARRAY_DIMENSIONS`` (``dim_0``...).
    Each full chunk is ``[url, 16, ctbytes]``: a chunk file is a 16-byte
    bloscpack header and one Blosc buffer (docs/format.md, "A chunk file").
    The leftover is padded with ``dflt``, compressed and inlined
    (``"base64:..."``).  Only committed files are referenced.

    Parameters
    ----------
    url : str, optional
        The carray's folder as readers will see it (chunk URLs
        ``url/data/__N.blp``).  Default: ``file://`` and the absolute path,
        or the store's own URL (``s3://...``).
    name : str, optional
        The array's name (default: the rootdir's last part, else "data").
    inline_threshold : int, default 0
        Full chunks whose Blosc buffer is smaller are inlined too.

    Returns
    -------
    dict
        ``{"version": 1, "refs": {...}}``, for ``json.dump`` and fsspec's
        ``ReferenceFileSystem(fo=...)``.

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
        without ``url``; a negative ``inline_threshold``; a ``name`` that
        is empty, holds '/' or '\\' or starts with '.'.
    CodecError
        A chunk compressed with snappy, which numcodecs' Blosc lacks.
    FormatError
        A chunk file whose headers are invalid or announce another size.

    Examples
    --------
    >>> import numpy as np, bcolz_store as bcolz
    >>> c = bcolz.carray(np.arange(10.0), chunklen=4, rootdir="walk")
    >>> refs = c.to_kerchunk()["refs"]
    >>> refs["walk/0"][0].startswith("file://"), refs["walk/0"][1], refs["walk/2"][:7]
    (True, 16, 'base64:')
    """,
}
CARRAY_DOCS.update(NULLABLE_DOCS)     # isnull, notnull
