"""Column kinds beyond bcolz's fixed dtypes, each one folder, each a
:class:`~.base.ColumnKind` found by its registry (see :mod:`.base`).

Importing the package imports the kinds it ships (:mod:`.installed`), so
that they are registered before any lookup.
"""

from . import installed  # noqa: F401  (the imports register the kinds)
from .base import ColumnKind, kind_for_arrow, kind_of, register, registered
from .buffers import ArrowBuffers

__all__ = ["ArrowBuffers", "ColumnKind", "kind_for_arrow", "kind_of", "register", "registered"]
