"""Column kinds beyond bcolz's fixed dtypes, each one folder, each a
:class:`~.base.ColumnKind` found by its registry (see :mod:`.base`)."""

from .base import ColumnKind, kind_for_arrow, kind_of, register, registered
from .buffers import ArrowBuffers
from . import installed  # noqa: F401,E402  (the kinds shipped with the package register)

__all__ = ["ArrowBuffers", "ColumnKind", "kind_for_arrow", "kind_of", "register", "registered"]
