"""The reference docstrings of carray's Arrow PyCapsule methods (applied with
:data:`bcolz_store.apidoc.carray.CARRAY_DOCS`)."""

from __future__ import annotations

__all__ = ["CARRAY_ARROW_DOCS"]

CARRAY_ARROW_DOCS = {
    "__arrow_c_stream__": """
    This carray as an Arrow C stream of record batches of one column,
    ``data`` (the Arrow PyCapsule interface: ``pyarrow.table(c)``,
    ``polars.DataFrame(c)``, DuckDB's ``select ... from c``).

    Lazy, one batch per block of whole chunks, the column typed as
    ``ctable``'s columns are (docs/arrow.md).

    Parameters
    ----------
    requested_schema : PyCapsule, optional
        An ``"arrow_schema"`` capsule; the batches are cast to it, or, for a
        type that is not a struct (``pyarrow.chunked_array(c, type=...)``),
        the stream is of plain arrays of that type.

    Returns
    -------
    PyCapsule
        An ``"arrow_array_stream"``.

    Raises
    ------
    ImportError
        Without pyarrow (``pip install 'bcolz_store[arrow]'``).
    TypeError
        Object carrays; a ``requested_schema`` that is not a capsule.
    ValueError
        When the items cannot be cast to ``requested_schema``.
    """,
    "__arrow_c_schema__": """
    An ``"arrow_schema"`` PyCapsule: the schema of its stream, one column
    ``data`` of this carray's Arrow type.

    Returns
    -------
    PyCapsule

    Raises
    ------
    ImportError
        Without pyarrow (``pip install 'bcolz_store[arrow]'``).
    TypeError
        Object carrays.
    """,
    "to_buffers": """
    Rows ``[start, stop)`` of a carray of a column kind (vlen, categorical,
    nullable, decimal, list, map, struct, fixed-size binary) in Arrow's
    columnar layout, as numpy arrays (no pyarrow needed).

    Parameters
    ----------
    start, stop : int, optional
        As a slice's (default: every row).

    Returns
    -------
    bcolz_store.kinds.buffers.ArrowBuffers
        ``stop - start`` rows: validity, offsets, values, children
        (``bcolz_store.kinds.arrow.to_pyarrow`` wraps them in a pyarrow
        array without a copy).

    Raises
    ------
    TypeError
        A carray of one of bcolz's fixed dtypes (it has no column kind).
    """,
    "kind": """
    The column kind of this carray (``bcolz_store.kinds.base.ColumnKind``:
    its Arrow type, how its rows encode and decode), or None for one of
    bcolz's fixed dtypes.
    """,
}
