"""The reference docstrings of carray's Arrow PyCapsule methods (applied with
:data:`bcolz_store.apidoc.carray.CARRAY_DOCS`)."""

from __future__ import annotations

__all__ = ["CARRAY_ARROW_DOCS"]

CARRAY_ARROW_DOCS = {
    "__arrow_c_stream__": """
    This carray as an Arrow C stream of arrays of its Arrow type (the Arrow
    PyCapsule interface: ``pyarrow.chunked_array(c)``, ``polars.Series(c)``).

    Lazy, one array per block of whole chunks, typed as ``ctable``'s
    columns are (docs/arrow.md).

    Parameters
    ----------
    requested_schema : PyCapsule, optional
        An ``"arrow_schema"`` capsule; the arrays are cast to its type.

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
        When the arrays cannot be cast to ``requested_schema``.
    """,
    "__arrow_c_schema__": """
    An ``"arrow_schema"`` PyCapsule: a field of this carray's Arrow type.

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
}
