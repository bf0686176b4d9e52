"""Importing an optional library, or an error naming the extra that installs it.

What every module of this package that needs pyarrow, zarr, h5py... calls
inside the function that needs it (``import bcolz_store`` loads none of them).
"""

from __future__ import annotations

import importlib

from ..errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, extra: str | None, what: str):
    """Import an optional library, or raise an error naming the extra.

    Parameters
    ----------
    module : str
        The module to import (e.g. ``'pyarrow.parquet'``).
    extra : str or None
        The bcolz_store extra that installs it (e.g. ``'arrow'``).
    what : str
        What needs it, for the message (e.g. ``'Parquet conversions'``).

    Returns
    -------
    module

    Raises
    ------
    MissingDependencyError
        When the library is not installed (an ImportError); the message says
        ``pip install 'bcolz_store[EXTRA]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        # quoted: zsh would take the brackets of an extra for a glob
        install = f"'bcolz_store[{extra}]'" if extra else module.split(".")[0]
        raise MissingDependencyError(f"{module.split('.')[0]} is needed for {what}; install "
                                     f"it, e.g. `pip install {install}`") from err
