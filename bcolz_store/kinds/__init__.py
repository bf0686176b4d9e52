"""Column kinds beyond bcolz's fixed dtypes, each one folder, each a
:class:`~.base.ColumnKind` found by its registry (see :mod:`.base`).

A kind's folder holds everything about it, one module per layer of the
package: ``meta*`` (its ``meta/storage`` entry, beside :mod:`bcolz_store.format`),
``chunk*`` and ``engine*`` (its chunks and engine, beside
:mod:`bcolz_store.chunks`), ``files`` (its files in a store, beside
:mod:`bcolz_store.datasets`), ``types`` (its public dtype object and the
metadata of a new carray), ``kind`` and ``codec`` (its :class:`ColumnKind`
and Arrow buffers) and ``interop_*`` (its pandas and Arrow converters).

The package imports :mod:`.installed` (which registers every kind folder)
when :mod:`bcolz_store` is imported; this module itself stays light, since
the lower layers import the kinds' ``meta`` and ``engine`` modules.
"""

from .base import ColumnKind, kind_for_arrow, kind_of, register, registered
from .buffers import ArrowBuffers

__all__ = ["ArrowBuffers", "ColumnKind", "kind_for_arrow", "kind_of", "register", "registered"]
