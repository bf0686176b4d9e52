"""The docstrings of :class:`bcolz_store.carray`'s methods about null items
(numpydoc; merged into :data:`bcolz_store.apidoc.carray.CARRAY_DOCS`).

Source: this library's own (docs/nulls.md).
"""

__all__ = ["NULLABLE_DOCS"]

NULLABLE_DOCS = {
    "isnull": """
    Which items are null (a nullable carray's nulls; None items of a vlen or
    categorical carray).

    Returns
    -------
    numpy.ndarray of bool, shape (len,)

    Raises
    ------
    FormatError
        A damaged validity.
    """,
    "notnull": """
    Which items are present: ``~isnull()``.

    Returns
    -------
    numpy.ndarray of bool, shape (len,)

    Raises
    ------
    FormatError
        A damaged validity.
    """,
}
