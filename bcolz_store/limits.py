"""The limits bcolz_store keeps whatever its input says.

A dataset, a pack or a file to convert may announce sizes (item counts,
lengths, widths, chunk shapes) that no machine can serve.  Every allocation
sized from input is checked here first; what is over a limit raises
:class:`~bcolz_store.errors.LimitError` naming the input and the limit,
before anything is allocated or changed.

* ``memory_ceiling()``: the bytes one allocation may take: the smaller of the
  machine's physical memory and what the process's address-space limit
  (``RLIMIT_AS``, where there is one) leaves free.  A read whose result would
  be larger (a categorical column of 4,000 codes of one 64 MiB category is
  250 GB as strings) is refused, not attempted.
* ``MAX_NDIM``: dimensions of a carray (its length plus its atom's), as the
  metadata reader allows them (format/meta.py), so that what is written can
  be read.
* Nesting: a list type nests at most 32 levels of lists, maps and struct
  elements (``format.list_meta.MAX_LIST_DEPTH``), struct columns at most 12
  (``kinds/struct/new.MAX_STRUCT_DEPTH``); a deeper type is refused when it is
  made, as the reader would refuse it.
* A decimal item given as text has at most 4096 characters
  (``format.decimal_meta.MAX_DECIMAL_TEXT``).
"""

from __future__ import annotations

import functools
import os

from .errors import LimitError
from .format.meta import MAX_NDIM

__all__ = ["MAX_NDIM", "check_alloc", "memory_ceiling"]


@functools.lru_cache(maxsize=1)
def _physical_memory() -> int | None:
    # (os.sysconf reads /proc/meminfo: about 0.2 ms, and the machine's memory is fixed)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _address_space_left() -> int | None:
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", "rb") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        used = 0
    return max(0, soft - used)


def memory_ceiling() -> int:
    """Bytes one allocation sized from input may take now.

    Returns
    -------
    int
        ``min(physical memory, address space left under RLIMIT_AS)``; where
        neither can be known, 2**62.
    """
    found = [n for n in (_physical_memory(), _address_space_left()) if n is not None]
    return min(found) if found else 2**62


def check_alloc(nbytes: int, what: str) -> int:
    """``nbytes`` when one allocation of that size is within ``memory_ceiling()``.

    Parameters
    ----------
    nbytes : int
        The bytes the allocation would take.
    what : str
        What is allocated and from which input, for the message.

    Raises
    ------
    LimitError
        When ``nbytes`` is over the ceiling.
    """
    nbytes = int(nbytes)
    ceiling = memory_ceiling()
    if nbytes > ceiling:
        raise LimitError(f"{what} would take {nbytes:,} bytes, more than the "
                         f"{ceiling:,} this process can allocate (physical memory and "
                         f"RLIMIT_AS); it is refused before allocating")
    return nbytes
