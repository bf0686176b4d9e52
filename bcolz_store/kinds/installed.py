"""The column kinds shipped with bcolz_store: importing this module registers them.

Every folder of :mod:`bcolz_store.kinds` with a ``kind.py`` is a kind; its
``kind.py`` registers its :class:`~.base.ColumnKind` when imported.  A new
kind is a new folder: nothing here changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

__all__ = ["installed_kinds"]


def installed_kinds() -> list:
    """The names of the kind folders (``kinds/<name>/kind.py``), sorted."""
    here = Path(__file__).resolve().parent
    return sorted(info.name for info in pkgutil.iter_modules([str(here)])
                  if info.ispkg and (here / info.name / "kind.py").is_file())


for _name in installed_kinds():
    importlib.import_module(f"{__package__}.{_name}.kind")
