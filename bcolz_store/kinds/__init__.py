"""Column kinds beyond bcolz's fixed dtypes, each one folder, each a
:class:`~.base.ColumnKind` found by its registry (see :mod:`.base`).

The shipped kinds are imported here, not by :mod:`.base` (each kind's module
imports it): importing any module of the package registers them."""

from .base import ColumnKind, kind_for_arrow, kind_of, register, registered
from .buffers import ArrowBuffers
from . import installed  # noqa: F401,E402  (the shipped kinds register themselves)

__all__ = ["ArrowBuffers", "ColumnKind", "kind_for_arrow", "kind_of", "register", "registered"]
