"""The ``fixed_binary`` entry of a fixed-size binary carray's ``meta/storage``::

    "fixed_binary": {"version": 1, "byte_width": n, "nullable": true|false}

The carray itself is a plain bcolz carray of ``V{n}`` atoms (nullable ones
with bcolz_store's nullable layout); bcolz ignores the key.  It is written
for every such carray (:data:`STORAGE_ENTRY`, registered in
:data:`~bcolz_store.datasets.carray_files.KIND_FILES`) and checked when
one is opened: a carray without it (written before the kind) reads the same.

Source: this library's own format (docs/format.md, "Fixed-size binary columns").
"""

from __future__ import annotations

from ...datasets.carray_files import KIND_FILES, KindFiles
from ...errors import FormatError
from ..nullable.meta import nullable_layout
from .meta import FIXED_BINARY_KEY, is_fixed_binary_atom

__all__ = ["FIXED_BINARY_VERSION", "STORAGE_ENTRY"]

#: The layout version this code writes; versions it reads: 1.
FIXED_BINARY_VERSION = 1


class _FixedBinaryEntry(KindFiles):
    """How the ``fixed_binary`` entry is made and checked (its carrays are read
    and written as bcolz's own, or nullable ones)."""

    key = FIXED_BINARY_KEY

    @staticmethod
    def entry(meta):
        """The entry of a carray's metadata (a ``CarrayMeta``), or None when it is
        not a fixed-size binary carray."""
        if not is_fixed_binary_atom(meta):
            return None
        return {"version": FIXED_BINARY_VERSION, "byte_width": int(meta.atom.itemsize),
                "nullable": nullable_layout(meta) is not None}

    @staticmethod
    def check(meta, value, where: str) -> None:
        """Check the stored entry ``value`` against the carray it was read with.

        Raises
        ------
        FormatError
            Naming ``where``: not an object, a version this code cannot read,
            or a width or nullability other than the carray's.
        """
        if not isinstance(value, dict):
            raise FormatError(f"{where}: the {FIXED_BINARY_KEY!r} entry must be an object, "
                              f"not {value!r:.60}")
        version = value.get("version")
        if version != FIXED_BINARY_VERSION:
            raise FormatError(f"{where}: {FIXED_BINARY_KEY!r} layout version {version!r:.20} "
                              f"is not one this bcolz_store reads (it reads "
                              f"{FIXED_BINARY_VERSION}); upgrade bcolz_store")
        if not is_fixed_binary_atom(meta):
            raise FormatError(f"{where}: a {FIXED_BINARY_KEY!r} entry on a carray of "
                              f"{meta.atom}, not of raw bytes (V)")
        width, nullable = value.get("byte_width"), value.get("nullable")
        if width != meta.atom.itemsize or not isinstance(width, int):
            raise FormatError(f"{where}: {FIXED_BINARY_KEY!r} says byte_width {width!r:.20}, "
                              f"the carray's items have {meta.atom.itemsize} bytes")
        has = nullable_layout(meta) is not None
        if nullable is not has:
            raise FormatError(f"{where}: {FIXED_BINARY_KEY!r} says nullable {nullable!r:.20}, "
                              f"the carray {'has' if has else 'has no'} validity")


STORAGE_ENTRY = _FixedBinaryEntry()
KIND_FILES.append(STORAGE_ENTRY)
