"""The carray's parts of struct and decimal carrays: their column type, and
``carray.field(name)``.

Layout: :mod:`bcolz_store.kinds.struct.meta`.
"""

from __future__ import annotations

from .kinds.decimal.types import decimal_of
from .kinds.struct.meta import StructMeta
from .kinds.struct.types import struct_of

__all__ = ["column_type_of", "field_carray", "is_struct"]


def column_type_of(meta, engine):
    """The :class:`~bcolz_store.decimal` or :class:`struct` type of a carray of
    metadata ``meta`` and engine ``engine``, else None."""
    return decimal_of(meta) or struct_of(meta, engine)


def is_struct(meta) -> bool:
    """Whether ``meta`` describes a struct carray (whose ``c['name']`` is a field)."""
    return isinstance(getattr(meta, "composite", None), StructMeta)


def field_carray(self, name):
    """Field ``name`` of this struct carray, as a read-only carray sharing its
    engine (rows appended but not yet flushed included).

    Parameters
    ----------
    name : str
        The field's name, as the struct type gives it.

    Returns
    -------
    carray
        Of the field's kind and the struct's length; mode ``'r'`` (write
        through the struct carray: a field alone cannot change length).

    Raises
    ------
    TypeError
        When this carray is not a struct carray.
    KeyError
        When it has no such field.
    """
    smeta = self._meta.composite
    if not isinstance(smeta, StructMeta):
        raise TypeError("only struct carrays have fields")
    engine = self._engine.field_engine(name)
    field = next(f for f in smeta.fields if f.name == name)
    out = self.view()
    out._engine = engine
    out._meta = field.meta
    out._mode = "r"
    return out
