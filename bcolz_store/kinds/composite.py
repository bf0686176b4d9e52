"""What the carrays of the kinds whose items are Python objects the engine
encodes (decimals, structs: their entry, :meth:`CompositeKind.composite`)
do alike: their items, nulls and growth.  Their kinds derive from
:class:`CompositeKind`.
"""

from __future__ import annotations

import numpy as np

from ..items import composite_items
from .base import ColumnKind

__all__ = ["CompositeKind"]


class CompositeKind(ColumnKind):
    """A kind whose items are Python objects (a decimal's ``Decimal``, a
    struct's dicts), nullable when its entry says so, growing with nulls or
    its ``dflt`` as the entry's ``grow`` says."""

    python_items = True

    @classmethod
    def composite(cls, meta):
        """The kind's entry of the carray ``meta`` (a ``CarrayMeta``), whose
        ``nullable`` (and ``grow``, when it has one) say its nulls: the
        metadata's ``kind`` slot (the default)."""
        return meta.kind

    @classmethod
    def may_hold_nulls(cls, meta) -> bool:
        return bool(getattr(cls.composite(meta), "nullable", False))

    @classmethod
    def grows_null(cls, meta) -> bool:
        return cls.may_hold_nulls(meta) and \
            getattr(cls.composite(meta), "grow", "dflt") == "null"

    @classmethod
    def filler(cls, meta, fill, n: int):
        """Atoms holding ``fill``, None (a null) when growing adds nulls."""
        return super().filler(meta, None if cls.grows_null(meta) else fill, n)

    @classmethod
    def to_items(cls, value, dtype, meta, arrlen, where) -> np.ndarray:
        """``value`` as an object array of items (:func:`~bcolz_store.items.composite_items`).

        Raises
        ------
        ValueError
            Values not broadcast to ``arrlen``.
        """
        return composite_items(value, arrlen, where)
