"""Library-wide defaults: ``defaults`` and ``defaults_ctx``, as in bcolz.

Values are process-wide; ``defaults_ctx`` overrides them through a
:class:`contextvars.ContextVar`, so only for the current thread or task, and
restores them even when the block raises.

Source: bcolz 1.x ``defaults.py`` (out_flavor 'bcolz', vm 'numexpr' when
installed, else 'dask', else 'python'; cparams clevel 5, SHUFFLE, lz4,
quantize 0).
"""

from __future__ import annotations

import contextvars
import importlib.util
from contextlib import contextmanager

import numpy as np

from .params import CPARAMS_ENTRIES, check_cparams

__all__ = ["DEFAULT_BLOCK_CACHE_BUDGET", "DEFAULT_CACHE_BUDGET", "check_cache_budget", "defaults",
           "defaults_ctx"]

_CHOICES = {
    "out_flavor": ("bcolz", "carray", "numpy"),
    "vm": ("numexpr", "python", "dask"),
}
_CPARAMS_ENTRIES = CPARAMS_ENTRIES
# Bytes of decompressed chunks each on-disk carray may keep for re-reads.
DEFAULT_CACHE_BUDGET = 8 * 2**20
# Bytes of decoded Blosc streams that point reads keep, in one cache for the process.
DEFAULT_BLOCK_CACHE_BUDGET = 64 * 2**20


def check_cache_budget(value) -> int:
    """``value`` as a byte count for a chunk cache.

    Raises
    ------
    TypeError
        If it is not an integer.
    ValueError
        If it is negative.
    """
    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"cache_budget must be an integer number of bytes, not {value!r}")
    if value < 0:
        raise ValueError(f"cache_budget must be >= 0 bytes, not {value}")
    return int(value)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _initial() -> dict:
    if _installed("numexpr"):
        vm = "numexpr"
    elif _installed("dask"):
        vm = "dask"
    else:
        vm = "python"
    return {
        "out_flavor": "bcolz",
        "vm": vm,
        "cparams": {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0},
        "cache_budget": DEFAULT_CACHE_BUDGET,
        "block_cache_budget": DEFAULT_BLOCK_CACHE_BUDGET,
        "query_planning": True,
    }


# Process-wide values; ``defaults_ctx`` overrides them in its own context only.
_GLOBAL: dict = {}
_OVERRIDE: contextvars.ContextVar = contextvars.ContextVar("bcolz_store_defaults", default=None)


def _get() -> dict:
    state = _OVERRIDE.get()
    if state is not None:
        return state
    if not _GLOBAL:
        _GLOBAL.update(_initial())
    return _GLOBAL


def _set(key: str, value) -> None:
    state = _OVERRIDE.get()
    if state is not None:
        _OVERRIDE.set({**state, key: value})
    else:
        _get()[key] = value


class Defaults:
    """The defaults object: ``out_flavor``, ``vm``, ``cparams``, the cache
    budgets and ``query_planning``.

    Attributes
    ----------
    out_flavor : {'bcolz', 'carray', 'numpy'}
        Result container of ``eval`` (default 'bcolz', a carray).
    vm : {'numexpr', 'python', 'dask'}
        The engine ``eval`` uses (default: numexpr when installed).
    cparams : dict
        Default compression parameters, keys clevel, shuffle, cname, quantize.
        Setting it accepts a ``cparams`` object or a dict with all four keys.
    cache_budget : int
        Bytes of decompressed chunks a carray keeps for re-reads, given to
        each carray when it is created or opened (default 8 MiB = 8,388,608;
        0 turns the cache off).  Not a bcolz setting: bcolz kept one chunk.
    block_cache_budget : int
        Bytes of decoded Blosc streams kept by the reads of a few items
        (points, small slices, sparse gathers), which decode only the
        blocks and streams they need: one cache shared by every carray of
        the process (default 64 MiB = 67,108,864; 0 turns it off).

    Raises
    ------
    ValueError
        When a value outside the choices is set, an engine that is not
        installed is chosen, cparams lack an entry, or cache_budget is
        negative.
    TypeError
        When cache_budget is not an integer, or query_planning not a bool.
    """

    @staticmethod
    def check_choices(name: str, value) -> None:
        if value not in _CHOICES[name]:
            raise ValueError(f"'{value}' is incorrect value for '{name}' default")

    @property
    def vm(self) -> str:
        return _get()["vm"]

    @vm.setter
    def vm(self, value: str) -> None:
        self.check_choices("vm", value)
        if value in ("numexpr", "dask") and not _installed(value):
            raise ValueError(f"cannot use `{value}` virtual machine (it is not installed)")
        _set("vm", value)

    eval_vm = vm

    @property
    def out_flavor(self) -> str:
        return _get()["out_flavor"]

    @out_flavor.setter
    def out_flavor(self, value: str) -> None:
        self.check_choices("out_flavor", value)
        _set("out_flavor", value)

    eval_out_flavor = out_flavor

    @property
    def cparams(self) -> dict:
        return dict(_get()["cparams"])

    @cparams.setter
    def cparams(self, value) -> None:
        if callable(getattr(value, "to_dict", None)):     # a cparams object
            value = value.to_dict()
        if not isinstance(value, dict):
            raise ValueError(
                f"this needs to be a cparams object or a dictionary and you passed '{type(value)}'")
        if not all(k in value for k in _CPARAMS_ENTRIES):
            raise ValueError(f"The dictionary must have the next entries: {list(_CPARAMS_ENTRIES)}")
        checked = check_cparams(*(value[k] for k in _CPARAMS_ENTRIES))
        _set("cparams", dict(zip(_CPARAMS_ENTRIES, checked)))

    @property
    def cache_budget(self) -> int:
        return _get()["cache_budget"]

    @cache_budget.setter
    def cache_budget(self, value) -> None:
        _set("cache_budget", check_cache_budget(value))

    @property
    def block_cache_budget(self) -> int:
        return _get()["block_cache_budget"]

    @block_cache_budget.setter
    def block_cache_budget(self, value) -> None:
        _set("block_cache_budget", check_cache_budget(value))

    @property
    def query_planning(self) -> bool:
        return _get()["query_planning"]

    @query_planning.setter
    def query_planning(self, value) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"query_planning must be True or False, not {value!r}")
        _set("query_planning", bool(value))

    def __repr__(self):
        state = _get()
        return f"defaults(out_flavor={state['out_flavor']!r}, vm={state['vm']!r}, cparams={state['cparams']!r})"


defaults = Defaults()


@contextmanager
def defaults_ctx(cparams=None, vm=None, out_flavor=None, query_planning=None):
    """Run a block with some defaults changed, restoring them afterwards.

    Parameters
    ----------
    cparams : cparams or dict, optional
    vm : {'numexpr', 'python', 'dask'}, optional
    out_flavor : {'bcolz', 'carray', 'numpy'}, optional
    query_planning : bool, optional

    Raises
    ------
    ValueError
        As the corresponding ``defaults`` setter.
    """
    token = _OVERRIDE.set(dict(_get()))
    try:
        if cparams:
            defaults.cparams = cparams
        if vm:
            defaults.vm = vm
        if out_flavor:
            defaults.out_flavor = out_flavor
        if query_planning is not None:
            defaults.query_planning = query_planning
        yield
    finally:
        _OVERRIDE.reset(token)
