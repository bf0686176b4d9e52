"""The ``uuid`` entry of a uuid carray's ``meta/storage``::

    "uuid": {"version": 1}

A uuid carray is a plain bcolz carray of ``V16`` atoms (each item the 16
bytes of a UUID, RFC 9562 byte order, as ``uuid.UUID.bytes``; nullable ones
with bcolz_store's nullable layout) whose ``meta/storage`` holds this key as
well, which bcolz ignores: the real bcolz reads the items as raw bytes.

Source: this library's own format (docs/format.md, "UUID columns"); Arrow's
canonical extension type ``arrow.uuid`` (a ``fixed_size_binary(16)`` storage).
"""

from __future__ import annotations

import numpy as np

__all__ = ["UUID_ATOM", "UUID_KEY", "UUID_VERSION", "is_uuid_meta"]

#: The key of the entry, and the kind's registry key.
UUID_KEY = "uuid"
#: The layout version this code writes; versions it reads: 1.
UUID_VERSION = 1
#: The atom of a uuid carray.
UUID_ATOM = np.dtype((np.void, 16))


def is_uuid_meta(meta) -> bool:
    """Whether ``meta`` (a CarrayMeta) is a uuid carray's: ``V16`` atoms and the
    ``uuid`` entry."""
    return meta.atom == UUID_ATOM and UUID_KEY in (getattr(meta, "entries", None) or {})
