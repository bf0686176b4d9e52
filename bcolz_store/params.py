"""Checks of compression parameters, below the ``cparams`` class and the
defaults; and :func:`public_signature`, the constructor parameters that the
classes show (carray, ctable, chunk, attrs).

Both :mod:`bcolz_store.defaults` (whose ``cparams`` setter validates) and
:class:`bcolz_store.cparams.cparams` use :func:`check_cparams`.

Source: bcolz 1.x ``bcolz.cparams`` (clevel 0..9; shuffle NOSHUFFLE 0,
SHUFFLE 1, BITSHUFFLE 2; cname one of Blosc's compressors).
"""

from __future__ import annotations

import inspect

import numpy as np

__all__ = ["BITSHUFFLE", "CPARAMS_ENTRIES", "NOSHUFFLE", "SHUFFLE", "check_cparams",
           "public_signature"]

NOSHUFFLE = 0
SHUFFLE = 1
BITSHUFFLE = 2

CPARAMS_ENTRIES = ("clevel", "shuffle", "cname", "quantize")


def _compressor_list() -> list:
    import blosc
    return list(blosc.compressor_list())


def check_cparams(clevel=None, shuffle=None, cname=None, quantize=None) -> tuple:
    """Validate compression parameters; ``None`` means "use the default".

    Returns
    -------
    tuple
        ``(clevel, shuffle, cname, quantize)`` unchanged (bools as given).

    Raises
    ------
    ValueError
        If clevel is not an int in 0..9, shuffle not 0/1/2, cname not a
        compressor of this Blosc build, or quantize not a non-negative int.
    """
    if clevel is not None:
        if not isinstance(clevel, (int, np.integer)) or isinstance(clevel, bool):
            raise ValueError("`clevel` must be an int.")
        if clevel < 0:
            raise ValueError("`clevel` must be 0 or a positive integer.")
        if clevel > 9:
            raise ValueError("`clevel` must be at most 9.")
    if shuffle is not None:
        if not isinstance(shuffle, (bool, int, np.integer)):
            raise ValueError("`shuffle` must be an int.")
        if shuffle not in (NOSHUFFLE, SHUFFLE, BITSHUFFLE):
            raise ValueError("`shuffle` value not allowed.")
    if cname is not None:
        if isinstance(cname, bytes):
            cname = cname.decode()
        if cname not in _compressor_list():
            raise ValueError(f"Compressor '{cname}' is not available in this build")
    if quantize is not None:
        if not isinstance(quantize, (int, np.integer)) or isinstance(quantize, bool):
            raise ValueError("`quantize` must be an int.")
        if quantize < 0:
            raise ValueError("`quantize` must be 0 or a positive integer.")
        if quantize > 300:
            raise ValueError("`quantize` must be at most 300 (significant digits of a double).")
    return clevel, shuffle, cname, quantize


def public_signature(cls):
    """A class decorator: ``inspect.signature`` and ``help()`` of the class
    and of its ``__init__`` show only the public parameters.

    The ``_private`` parameters, which only the package's own modules pass
    (a store, a dataset or a lock already opened), stay accepted; they are
    not part of the API, so the signature users see leaves them out.
    """
    init = cls.__dict__.get("__init__")
    if init is None:
        return cls
    full = inspect.signature(init)
    shown = full.replace(parameters=[p for name, p in full.parameters.items()
                                     if not name.startswith("_")])
    init.__signature__ = shown
    cls.__signature__ = shown.replace(parameters=list(shown.parameters.values())[1:])
    return cls
