"""How a dataset is opened: one frozen value that travels from the
constructors and ``open()`` to the store, the commits and the handles.

``carray(..., verify=True)``, ``ctable(..., storage_options={...})`` and
``bcolz_store.open(...)`` take these as keyword arguments (bcolz had none of
them); inside the package they travel as one :class:`OpenOptions`, so a new
option is one field here, not a keyword threaded through every layer.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping

import numpy as np

__all__ = ["OpenOptions"]


@dataclasses.dataclass(frozen=True)
class OpenOptions:
    """The options a stored carray or ctable is opened with.

    Parameters
    ----------
    verify : bool, default False
        Check every file read against the dataset's checksum file
        (``bcolz_store.md5``).
    allow_pickle : bool, default False
        Allow reading object carrays, whose items are pickles (unpickling
        can run code).
    lock : bool or float, default False
        Hold the dataset's writer lock while the container is open: True
        waits without end, a number of seconds waits at most that long.
    storage_options : dict, optional
        fsspec options for a URL ``rootdir`` (credentials, endpoint...).
    consolidated : bool, optional
        Read the metadata from the consolidated metadata file
        (``bcolz_store.json``); None: on remote stores only.

    Raises
    ------
    TypeError
        A value of the wrong type (``storage_options`` not a mapping, a
        ``lock`` that is neither a bool nor a number, ...).
    ValueError
        A negative ``lock`` timeout.
    """

    verify: bool = False
    allow_pickle: bool = False
    lock: bool | float = False
    storage_options: Mapping | None = None
    consolidated: bool | None = None

    def __post_init__(self):
        for name in ("verify", "allow_pickle"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, not {value!r:.80}")
            object.__setattr__(self, name, bool(value))
        lock = self.lock
        if not isinstance(lock, (bool, np.bool_, numbers.Real)):
            raise TypeError(f"lock must be True, False or a timeout in seconds, not {lock!r:.80}")
        if not isinstance(lock, (bool, np.bool_)) and lock < 0:
            raise ValueError(f"lock timeout must not be negative, not {lock!r}")
        if self.storage_options is not None and not isinstance(self.storage_options, Mapping):
            raise TypeError(f"storage_options must be a dict, not "
                            f"{type(self.storage_options).__name__}")
        if self.consolidated is not None and \
                not isinstance(self.consolidated, (bool, np.bool_)):
            raise TypeError(f"consolidated must be True, False or None, not "
                            f"{self.consolidated!r:.80}")

    def replace(self, **changes) -> "OpenOptions":
        """A copy with ``changes`` (field names as keywords).

        Raises
        ------
        TypeError
            An unknown field name, or a value as the constructor refuses.
        """
        return dataclasses.replace(self, **changes)
