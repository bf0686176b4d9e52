"""The numpydoc reference of ``to_kerchunk`` (zarr and xarray views of a
stored carray or ctable), applied with the rest of
:data:`bcolz_store.apidoc.carray.CARRAY_DOCS` and
:data:`bcolz_store.apidoc.ctable.CTABLE_DOCS`."""

__all__ = ["CARRAY_KERCHUNK_DOCS", "CTABLE_KERCHUNK_DOCS"]

_FORMAT = """
    Each full chunk is referenced in place as ``[url, 16, ctbytes]``: a chunk
    file ``data/__N.blp`` is a 16-byte bloscpack header and one Blosc 1.x
    buffer (docs/format.md, "A chunk file"; bcolz format v1.0, seeds/001),
    which numcodecs' ``Blosc`` decodes.  The last, partial chunk (the
    leftover) is padded with ``dflt`` to a whole chunk, compressed and
    inlined (``"base64:..."``).  Only committed files are referenced:
    appending afterwards makes the references stale (docs/zarr.md).
"""

_RAISES = """
    TypeError
        A column of a kind zarr v2 has no dtype for: vlen, categorical,
        object, structured, or any kind of this library's own (its
        ``meta/storage`` is not plain bcolz's); the message names the column
        and the reason.  Also an ``inline_threshold`` that is not an int.
    ValueError
        In memory (no files), with changes not yet flushed (call
        ``flush()`` first), with a committed change an interrupted writer
        left unapplied, on a store whose files have no URL (a ``.zip`` pack,
        a :class:`~bcolz_store.storage.memory.MemoryStore`) unless ``url`` is
        given, a negative ``inline_threshold``, or a ``name`` that is empty,
        holds '/' or starts with '.'.
    CodecError
        A chunk compressed with snappy, which numcodecs' Blosc lacks.
    FormatError
        A chunk file whose headers are invalid or announce another size.
"""

CARRAY_KERCHUNK_DOCS = {
    "to_kerchunk": f"""
    kerchunk references that open this stored carray as a zarr (format 2)
    array, and with xarray, without converting it.

    The references (kerchunk's version-1 format) describe a zarr group
    holding one array ``name``: shape ``(len, *atom)``, chunks
    ``(chunklen, *atom)``, the dtype with its byte order (``'>i4'`` stays
    big-endian), numcodecs' Blosc as compressor, a null fill value (xarray
    would take one for a missing-value marker and mask items equal to it),
    and ``.zattrs`` with the carray's attrs and ``_ARRAY_DIMENSIONS``
    (``dim_0``, ``dim_1``...).
{_FORMAT}
    Parameters
    ----------
    url : str, optional
        The URL of the carray's folder as the reader will see it (the chunk
        URLs become ``url/data/__N.blp``).  Default: ``file://`` and the
        absolute path for a local carray, the store's own URL
        (``s3://...``) for one that fsspec opens.
    name : str, optional
        The array's name in the group (default: the rootdir's last part, or
        ``"data"``).
    inline_threshold : int, default 0
        Full chunks whose Blosc buffer is smaller than this many bytes are
        inlined too (0: none).

    Returns
    -------
    dict
        ``{{"version": 1, "refs": {{key: JSON text, [url, offset, length] or
        "base64:..."}}}}``, ready for ``json.dump`` and for fsspec's
        ``ReferenceFileSystem`` (``fo=``).

    Raises
    ------{_RAISES}
    Examples
    --------
    >>> import numpy as np, bcolz_store as bcolz
    >>> c = bcolz.carray(np.arange(10.0), chunklen=4, rootdir="walk")
    >>> refs = c.to_kerchunk()
    >>> sorted(refs["refs"])
    ['.zattrs', '.zgroup', 'walk/.zarray', 'walk/.zattrs', 'walk/0', 'walk/1', 'walk/2']
    >>> refs["refs"]["walk/0"][1:], refs["refs"]["walk/2"][:7]
    ([16, ...], 'base64:')
    """,
}

CTABLE_KERCHUNK_DOCS = {
    "to_kerchunk": f"""
    kerchunk references that open this stored ctable as a zarr (format 2)
    group, one array per column, and with xarray as a Dataset whose
    variables share the dimension ``row`` (a column's atom dimensions are
    ``COLUMN_dim_1``...); the group's ``.zattrs`` are the table's attrs.
    Each column is described as :meth:`carray.to_kerchunk` describes one.
{_FORMAT}
    Parameters
    ----------
    url : str, optional
        The URL of the table's folder as the reader will see it (chunk URLs
        ``url/COLUMN/data/__N.blp``); default as :meth:`carray.to_kerchunk`.
    inline_threshold : int, default 0
        Full chunks whose Blosc buffer is smaller than this many bytes are
        inlined too.
    skip_unsupported : bool, default False
        Leave out, with a ``UserWarning`` naming each, the columns zarr
        cannot read instead of raising.

    Returns
    -------
    dict
        kerchunk's version-1 references.

    Raises
    ------{_RAISES}
    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> t = bcolz.ctable([[1, 2, 3], [0.5, 1.5, 2.5]], names=["a", "b"], rootdir="t")
    >>> sorted(t.to_kerchunk()["refs"])
    ['.zattrs', '.zgroup', 'a/.zarray', 'a/.zattrs', 'a/0', 'b/.zarray', 'b/.zattrs', 'b/0']
    """,
}
