"""The ``categorical`` entry of a categorical carray's ``meta/storage``
(kinds/category/meta.py), registered in
:data:`~bcolz_store.format.meta.STORAGE_KINDS`: its carrays are marked by
their ``dtype`` text (``category-<codes>``); ``dtype`` is its codes' and
``dflt`` the code of the default, as bcolz writes an integer.

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import numpy as np

from ...format.meta import STORAGE_KINDS, StorageKind
from .meta import CATEGORY_KEY, category_codes_of_text, dump_category, load_category

__all__ = ["CATEGORY_STORAGE"]


class _CategoryStorage(StorageKind):
    """The ``categorical`` entry (a CategoryMeta)."""

    key = CATEGORY_KEY

    def of_text(self, text: str):
        """The codes' dtype a ``category-`` text names, or None."""
        return category_codes_of_text(text)

    def load(self, value, parsed, where: str):
        """As :func:`~.meta.load_category` (raises FormatError naming ``where``)."""
        return load_category(value, parsed, where)

    def dump(self, entry):
        return dump_category(entry)

    def dtype(self, entry, parsed) -> np.dtype:
        return parsed


CATEGORY_STORAGE = _CategoryStorage()
STORAGE_KINDS.append(CATEGORY_STORAGE)
