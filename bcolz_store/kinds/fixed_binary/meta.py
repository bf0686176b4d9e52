"""The ``fixed_binary`` entry of a fixed-size binary carray's ``meta/storage``::

    "fixed_binary": {"version": 1, "byte_width": n, "nullable": true|false}

and which carrays it is written for: those of ``V{n}`` atoms.

Source: this library's own format (docs/format.md, "Fixed-size binary columns").

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

from ..nullable.meta import NullableLayout

__all__ = ["FIXED_BINARY_KEY", "is_fixed_binary_atom"]

#: The key of the kind's entry in ``meta/storage`` (and in the kinds' registry).
FIXED_BINARY_KEY = "fixed_binary"


def is_fixed_binary_atom(meta) -> bool:
    """Whether a carray's metadata (a ``CarrayMeta``) describes items of ``V{n}``:
    raw bytes, no fields, no sub-array shape, of bcolz's layout (nullable or
    not: no other kind's)."""
    atom = meta.atom
    return (atom.kind == "V" and atom.names is None and atom.subdtype is None
            and atom.itemsize >= 1
            and (meta.kind is None or isinstance(meta.kind, NullableLayout)))
