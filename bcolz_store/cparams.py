"""Compression parameters: the ``cparams`` class of bcolz.

Source: bcolz 1.x ``bcolz.cparams`` (defaults clevel=5, shuffle=SHUFFLE,
cname='lz4', quantize=0, kept from bcolz's ``defaults.py``).
"""

from __future__ import annotations

import numpy as np

from .defaults import defaults
from .params import BITSHUFFLE, CPARAMS_ENTRIES, NOSHUFFLE, SHUFFLE, check_cparams

__all__ = ["BITSHUFFLE", "NOSHUFFLE", "SHUFFLE", "check_cparams", "cparams"]

_ENTRIES = CPARAMS_ENTRIES


class cparams:
    """cparams(clevel=None, shuffle=None, cname=None, quantize=None)

    Parameters for Blosc compression and the lossy quantize filter.

    Parameters
    ----------
    clevel : int, 0..9, optional
        Compression level; 0 stores the data uncompressed.  Default 5.
    shuffle : int, optional
        ``NOSHUFFLE`` (0), ``SHUFFLE`` (1, default) or ``BITSHUFFLE`` (2).
    cname : str, optional
        Blosc compressor: 'blosclz', 'lz4' (default), 'lz4hc', 'snappy'
        (when built), 'zlib', 'zstd'.
    quantize : int, optional
        Keep this many significant decimal digits of floating point data
        (lossy); 0 (default) disables it.

    Parameters left as None take the current defaults (``bcolz_store.defaults.cparams``,
    changed with :meth:`setdefaults`).

    Raises
    ------
    ValueError
        On an invalid value (see :func:`check_cparams`).

    Notes
    -----
    Compatibility: the same names, defaults, checks and equality as bcolz's
    ``cparams``.
    """

    __slots__ = ("_clevel", "_shuffle", "_cname", "_quantize")

    def __init__(self, clevel=None, shuffle=None, cname=None, quantize=None):
        clevel, shuffle, cname, quantize = check_cparams(clevel, shuffle, cname, quantize)
        dflts = defaults.cparams
        self._clevel = int(dflts["clevel"] if clevel is None else clevel)
        self._shuffle = int(dflts["shuffle"] if shuffle is None else shuffle)
        self._cname = str(dflts["cname"] if cname is None else cname)
        self._quantize = int(dflts["quantize"] if quantize is None else quantize)

    @property
    def clevel(self) -> int:
        """The compression level (0..9)."""
        return self._clevel

    @property
    def shuffle(self) -> int:
        """The shuffle filter (0, 1 or 2)."""
        return self._shuffle

    @property
    def cname(self) -> str:
        """The Blosc compressor name."""
        return self._cname

    @property
    def quantize(self) -> int:
        """Significant digits kept by the quantize filter (0: off)."""
        return self._quantize

    @staticmethod
    def _checkparams(clevel, shuffle, cname, quantize):
        return check_cparams(clevel, shuffle, cname, quantize)

    @staticmethod
    def setdefaults(clevel=None, shuffle=None, cname=None, quantize=None):
        """Change the default compression parameters for new containers.

        Parameters are as for :class:`cparams`; None leaves a default as it is.

        Raises
        ------
        ValueError
            On an invalid value.
        """
        values = check_cparams(clevel, shuffle, cname, quantize)
        new = dict(defaults.cparams)
        for key, value in zip(_ENTRIES, values):
            if value is not None:
                new[key] = value
        defaults.cparams = new

    @classmethod
    def from_any(cls, value) -> "cparams":
        """Return a cparams from None, a cparams or a dict of its entries.

        Raises
        ------
        ValueError
            If ``value`` is none of these, or holds invalid entries.
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = set(value) - set(_ENTRIES)
            if unknown:
                raise ValueError(f"unknown cparams entries: {sorted(unknown)}")
            return cls(**value)
        raise ValueError(f"cparams must be a cparams object or a dict, not {type(value).__name__}")

    def to_dict(self) -> dict:
        """The entries as a dict (the layout of ``meta/storage``)."""
        return {"clevel": self._clevel, "shuffle": self._shuffle,
                "cname": self._cname, "quantize": self._quantize}

    def __eq__(self, other):
        if isinstance(other, cparams):
            return self.to_dict() == other.to_dict()
        if isinstance(other, dict):
            return self.to_dict() == other
        return NotImplemented

    def __hash__(self):
        return hash(tuple(self.to_dict().values()))

    def __repr__(self):
        return ("cparams(clevel=%d, shuffle=%d, cname='%s', quantize=%d)"
                % (self._clevel, self._shuffle, self._cname, self._quantize))
