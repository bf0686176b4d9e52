"""The ``vlen`` entry of a vlen carray's ``meta/storage`` (kinds/vlen/meta.py),
registered in :data:`~bcolz_store.format.meta.STORAGE_KINDS`: its carrays
are marked by their ``dtype`` text (``vlen-str``, ``vlen-bytes``), their
``dflt`` is a string (or the bytes as latin-1 text, or null).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import numpy as np

from ...format.meta import STORAGE_KINDS, StorageKind
from .meta import (VLEN_KEY, decode_vlen_dflt, dump_vlen, encode_vlen_dflt, load_vlen,
                   vlen_kind_of_text)

__all__ = ["VLEN_STORAGE"]


class _VlenStorage(StorageKind):
    """The ``vlen`` entry (a VlenMeta); ``dtype`` the dtype reads return."""

    key = VLEN_KEY

    def of_text(self, text: str):
        """The item kind (``'str'``, ``'bytes'``) a ``vlen-`` text names, or None."""
        return vlen_kind_of_text(text)

    def load(self, value, parsed, where: str):
        """As :func:`~.meta.load_vlen` (raises FormatError naming ``where``)."""
        return load_vlen(value, parsed, where)

    def dump(self, entry):
        return dump_vlen(entry)

    def dtype(self, entry, parsed) -> np.dtype:
        return entry.dtype

    def load_dflt(self, value, entry, dtype: np.dtype, where: str) -> np.ndarray:
        """As :func:`~.meta.decode_vlen_dflt` (raises FormatError naming ``where``)."""
        dflt = np.empty((), dtype=dtype)
        dflt[()] = decode_vlen_dflt(value, entry, where)
        return dflt

    def dump_dflt(self, dflt: np.ndarray, entry):
        return encode_vlen_dflt(dflt[()], entry.kind)


VLEN_STORAGE = _VlenStorage()
STORAGE_KINDS.append(VLEN_STORAGE)
