"""The ``nullable`` entry of a nullable carray's ``meta/storage``
(kinds/nullable/meta.py), registered in
:data:`~bcolz_store.format.meta.STORAGE_KINDS`: an entry added to a carray
of a plain ``dtype`` text, read when the key is there.

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

from ...format.meta import STORAGE_KINDS, StorageKind
from .meta import NULLABLE_KEY, dump_nullable, load_nullable

__all__ = ["NULLABLE_STORAGE"]


class _NullableStorage(StorageKind):
    """The ``nullable`` entry (a NullableMeta) of a carray of bcolz's dtypes."""

    key = NULLABLE_KEY
    plain = True

    def load(self, value, parsed, where: str):
        """As :func:`~.meta.load_nullable` of the carray's dtype ``parsed``
        (raises FormatError naming ``where``)."""
        return load_nullable(value, parsed, where)

    def dump(self, entry):
        return dump_nullable(entry)


NULLABLE_STORAGE = _NullableStorage()
STORAGE_KINDS.append(NULLABLE_STORAGE)
