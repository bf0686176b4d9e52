"""What ``meta/storage`` says about a nullable carray: plain values plus validity.

A nullable carray stores its values as an ordinary carray of Blosc chunks at
its root (the real bcolz reads them) and, beside them, which items are
present as a carray of booleans (True: present) in the folder ``valid``,
with the same chunklen::

    ROOT/meta/storage        bcolz's keys, plus
                             "nullable": {"validity": "valid", "fill": "NaN",
                                          "grow": "null"}
    ROOT/meta/sizes          the values
    ROOT/data/__N.blp        the values, chunk N (a null item holds the fill)
    ROOT/valid/meta/...      a carray of bool, True where an item is present
    ROOT/valid/data/__N.blp

``fill`` names what a null item's slot holds: ``"NaN"`` (floats, complex),
``"NaT"`` (datetime64, timedelta64) or ``"zeros"`` (every other dtype:
0, False, b'', '', zero bytes).  ``grow`` says what ``resize`` fills in:
``"null"`` (no ``dflt`` was given) or ``"dflt"`` (the carray's ``dflt``).

A validity carray shorter than the values (the real bcolz appended to the
values) leaves the items past its end present; a longer one (the real bcolz
trimmed the values) is cut to the values' length.  The next write of this
library brings it to the values' length.

Source: this library's own format (docs/format.md, "Nullable columns
(bcolz_store only)"), inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import FormatError

__all__ = ["NULLABLE_KEY", "NullableLayout", "NullableMeta", "VALIDITY_DIR", "dump_nullable",
           "fill_kind", "fill_value", "load_nullable", "nullable_layout"]

NULLABLE_KEY = "nullable"
VALIDITY_DIR = "valid"
_FILLS = ("NaN", "NaT", "zeros")
_GROWS = ("null", "dflt")


@dataclass(frozen=True)
class NullableMeta:
    """The ``nullable`` entry of ``meta/storage``.

    Attributes
    ----------
    fill : str
        ``'NaN'``, ``'NaT'`` or ``'zeros'``: what a null item's slot holds.
    grow : str
        ``'null'``: ``resize`` adds null items; ``'dflt'``: it adds ``dflt``.
    validity : str
        The folder of the validity carray (always ``'valid'``).
    """

    fill: str
    grow: str = "null"
    validity: str = VALIDITY_DIR


@dataclass
class NullableLayout:
    """What a nullable carray's metadata (a ``CarrayMeta``) keeps in its
    ``kind`` slot: its values are the carray's own atoms, in bcolz's layout.

    Attributes
    ----------
    nullable : NullableMeta
        The ``nullable`` entry.
    validity : CarrayMeta or None
        The metadata of the validity carray (``ROOT/valid``) of a stored
        carray; None for a new one (its validity is made with its engine).
    """

    nullable: NullableMeta
    validity: object = None


def nullable_layout(meta) -> NullableLayout | None:
    """The :class:`NullableLayout` of a carray's metadata (a ``CarrayMeta``), or
    None when it is not a nullable carray."""
    slot = getattr(meta, "kind", None)
    return slot if isinstance(slot, NullableLayout) else None


def fill_kind(dtype: np.dtype) -> str:
    """The fill of a null item of ``dtype``: 'NaN', 'NaT' or 'zeros'."""
    kind = np.dtype(dtype).base.kind
    return "NaN" if kind in "fc" else "NaT" if kind in "Mm" else "zeros"


def fill_value(dtype: np.dtype) -> np.ndarray:
    """A 0-d array of ``dtype.base`` holding the fill of a null item."""
    base = np.dtype(dtype).base
    out = np.zeros((), dtype=base)
    kind = fill_kind(base)
    if kind == "NaN":
        out[()] = np.nan
    elif kind == "NaT":
        out[()] = np.array("NaT", dtype=base)
    return out


def dump_nullable(meta: NullableMeta) -> dict:
    """The JSON value of the ``nullable`` key."""
    return {"validity": meta.validity, "fill": meta.fill, "grow": meta.grow}


def load_nullable(obj, dtype: np.dtype, where: str = "meta/storage") -> NullableMeta:
    """Parse the ``nullable`` key of ``meta/storage`` (``dtype``: the values').

    Raises
    ------
    FormatError
        If the value is not an object, names another validity folder than
        ``valid``, a fill other than the one of ``dtype``, or an unknown
        ``grow``.
    """
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: the 'nullable' entry must be an object, not "
                          f"{type(obj).__name__}")
    if obj.get("validity") != VALIDITY_DIR:
        raise FormatError(f"{where}: the nullable validity folder must be "
                          f"{VALIDITY_DIR!r}, not {obj.get('validity')!r:.40}")
    fill = obj.get("fill")
    if fill not in _FILLS or fill != fill_kind(dtype):
        raise FormatError(f"{where}: nullable fill {fill!r:.40} is not the fill of "
                          f"{np.dtype(dtype)} ({fill_kind(dtype)!r})")
    grow = obj.get("grow", "null")
    if grow not in _GROWS:
        raise FormatError(f"{where}: nullable 'grow' {grow!r:.40} is not one of {_GROWS}")
    return NullableMeta(fill, grow)
