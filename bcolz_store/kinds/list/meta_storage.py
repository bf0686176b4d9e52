"""The ``list`` entry of a list carray of layout version 1's ``meta/storage``
(kinds/list/meta.py), registered in
:data:`~bcolz_store.format.meta.STORAGE_KINDS`: its carrays are marked by
their ``dtype`` text (``list:``), hold objects, and their ``dflt`` is an
encoded item (kinds/list/meta_items.py).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import numpy as np

from ...format.meta import STORAGE_KINDS, StorageKind
from .meta import LIST_KEY, dump_list, list_type_of_text, load_list
from .meta_items import decode_list_dflt, encode_list_dflt

__all__ = ["LIST_STORAGE"]


class _ListStorage(StorageKind):
    """The ``list`` entry, as ``(type, level)``: its ListType or MapType and the
    zstd level of its chunks."""

    key = LIST_KEY

    def of_text(self, text: str):
        """True for a ``list:`` text, else None."""
        return True if list_type_of_text(text) else None

    def load(self, value, parsed, where: str):
        """As :func:`~.meta.load_list` (raises FormatError naming ``where``)."""
        return load_list(value, where)

    def dump(self, entry):
        return dump_list(*entry)

    def dtype(self, entry, parsed) -> np.dtype:
        return np.dtype(object)

    def load_dflt(self, value, entry, dtype: np.dtype, where: str) -> np.ndarray:
        """As :func:`~.meta_items.decode_list_dflt` (raises FormatError naming
        ``where``)."""
        dflt = np.empty((), dtype=object)
        dflt[()] = decode_list_dflt(value, entry[0], where)
        return dflt

    def dump_dflt(self, dflt: np.ndarray, entry):
        return encode_list_dflt(dflt[()], entry[0])


LIST_STORAGE = _ListStorage()
STORAGE_KINDS.append(LIST_STORAGE)
