"""How the ``uuid`` entry of a uuid carray's ``meta/storage`` is written and
checked (its carrays are read and written as bcolz's own, or as nullable
ones): registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES`.

Source: this library's own format (docs/format.md, "UUID columns").
"""

from __future__ import annotations

from ...datasets.carray_files import KIND_FILES, KindFiles
from ...errors import FormatError
from .meta import UUID_ATOM, UUID_KEY, UUID_VERSION, is_uuid_meta

__all__ = ["UUID_ENTRY"]


class _UuidEntry(KindFiles):
    """The ``uuid`` entry: written for a uuid carray, checked when one is opened."""

    key = UUID_KEY

    @staticmethod
    def entry(meta):
        """``{"version": 1}`` for a uuid carray's metadata, else None."""
        return {"version": UUID_VERSION} if is_uuid_meta(meta) else None

    @staticmethod
    def check(meta, value, where: str) -> None:
        """Check the stored entry ``value`` against the carray it was read with.

        Raises
        ------
        FormatError
            Naming ``where``: not an object, a version this code cannot
            read, or a carray whose atoms are not 16 raw bytes.
        """
        if not isinstance(value, dict):
            raise FormatError(f"{where}: the {UUID_KEY!r} entry must be an object, "
                              f"not {value!r:.60}")
        version = value.get("version")
        if version != UUID_VERSION:
            raise FormatError(f"{where}: {UUID_KEY!r} layout version {version!r:.20} is not "
                              f"one this bcolz_store reads (it reads {UUID_VERSION}); "
                              f"upgrade bcolz_store")
        if meta.atom != UUID_ATOM:
            raise FormatError(f"{where}: a {UUID_KEY!r} entry on a carray of {meta.atom}, "
                              f"not of 16 raw bytes (V16)")


UUID_ENTRY = _UuidEntry()
KIND_FILES.append(UUID_ENTRY)
