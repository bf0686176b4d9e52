"""The numpydoc reference of the carray methods that hand its data to
other libraries (``to_dask``, ``tofixed``; the Arrow PyCapsule methods of
:mod:`.carray_arrow`), applied with the rest of
:data:`bcolz_store.apidoc.carray.CARRAY_DOCS`."""

from .carray_arrow import CARRAY_ARROW_DOCS

__all__ = ["CARRAY_INTEROP_DOCS"]

CARRAY_INTEROP_DOCS = {
    "to_dask": """
    This carray as a dask array of whole chunks of rows.

    Each task reads its rows from this carray (a stored carray travels to
    other processes as its rootdir and is read there in mode 'r'); see
    :func:`bcolz_store.interop.dask.carray_to_dask`.

    Parameters
    ----------
    blen : int, optional
        Rows per block, a multiple of ``chunklen`` (default: about 32 MiB).

    Returns
    -------
    dask.array.Array

    Raises
    ------
    ImportError
        dask is not installed (extra ``bcolz_store[dask]``).
    ValueError
        A ``blen`` that is not a positive multiple of ``chunklen``.
    """,
    "tofixed": """
    A copy the real bcolz reads.

    A vlen carray becomes fixed-width ``U`` (str) or ``S`` (bytes), as wide
    as its longest item; other carrays are copied.

    Parameters
    ----------
    rootdir : str, optional
        Where to write the copy (None: in memory).
    mode : {'w', 'a'}, default 'w'
    missing : str or bytes, optional
        Written for a missing item (default: missing items are refused).
    **kwargs
        Other :class:`carray` parameters (``cparams``, ``chunklen``...).

    Returns
    -------
    carray

    Raises
    ------
    ValueError
        Missing items without ``missing``, or a str item ending in NUL
        (fixed-width ``U`` cannot hold it).
    DatasetExistsError
        ``rootdir`` exists and ``mode`` is not 'w'.
    """,
}

CARRAY_INTEROP_DOCS.update(CARRAY_ARROW_DOCS)
