"""A :class:`~.base.Store` in a dict: bytes under keys, in this process.

Useful to build a dataset without touching a disk (``carray(..., rootdir=
MemoryStore())``) and to test the commit protocol.  ``rootdir=None`` does not
use it: an in-memory carray keeps its chunks as objects (an all-zero chunk
keeps only its constant, as bcolz does, so ``zeros(10**9)`` costs almost
nothing, and ``carray.chunks`` gives bcolz's chunk objects), which bytes under
keys cannot do without a copy per chunk.
"""

from __future__ import annotations

import threading
import time

from ..errors import ConcurrentWriteError, DatasetNotFoundError, FormatError
from ..format.layout import OWN_NAMES, TEMP_PREFIX
from .base import Store
from .ranges import check_ranges

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Bytes under keys in a dict (thread-safe).

    Parameters
    ----------
    name : str, default 'memory'
        Shown in messages as ``mem://<name>``.
    readonly : bool, default False
    """

    def __init__(self, name: str = "memory", readonly: bool = False):
        super().__init__(f"mem://{name}", readonly)
        self._objects = {}      # key -> (bytes, time written)
        self._lock = threading.Lock()

    def get(self, key, limit):
        self.path(key)
        with self._lock:
            found = self._objects.get(key)
        if found is None:
            raise DatasetNotFoundError(f"{self.path(key)}: no such file")
        if len(found[0]) > limit:
            raise FormatError(f"{self.path(key)}: holds {len(found[0])} bytes, more than the "
                              f"{limit} such a file may hold")
        return found[0]

    def get_ranges(self, key, ranges):
        """The bytes of several ranges of the object ``key``, sliced from one
        snapshot of it (see :meth:`Store.get_ranges`).

        Parameters
        ----------
        key : str
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs.

        Returns
        -------
        list of bytes
            One per range, in their order.

        Raises
        ------
        ValueError, DatasetNotFoundError, FormatError
            As :meth:`get_range`.
        """
        ranges = check_ranges(ranges)
        if not ranges:
            self.path(key)                  # a hostile key is refused all the same
            return []
        data = self.get(key, 1 << 62)
        return [data[start:stop] for start, stop in ranges]

    def exists(self, key):
        self.path(key)
        with self._lock:
            return key in self._objects

    def size(self, key):
        self.path(key)
        with self._lock:
            found = self._objects.get(key)
        return None if found is None else len(found[0])

    def identity(self, key):
        with self._lock:
            found = self._objects.get(key)
        return None if found is None else (id(found[0]), found[1], len(found[0]))

    def list(self, prefix=""):
        with self._lock:
            keys = list(self._objects)
        return sorted(k for k in keys if k.startswith(prefix)
                      and not any(p in OWN_NAMES for p in k.split("/"))
                      and not k.rpartition("/")[2].startswith(TEMP_PREFIX))

    def list_times(self, prefix):
        with self._lock:
            return {k: t for k, (_d, t) in self._objects.items() if k.startswith(prefix)}

    def put(self, key, data):
        self._check_writable()
        self.path(key)
        payload = b"".join(bytes(p) for p in data) if isinstance(data, list) else bytes(data)
        with self._lock:
            self._objects[key] = (payload, time.time())

    def put_if_absent(self, key, data):
        self._check_writable()
        self.path(key)
        with self._lock:
            if key in self._objects:
                raise ConcurrentWriteError(f"{self.path(key)}: exists already (another writer "
                                           f"committed)")
            self._objects[key] = (bytes(data), time.time())

    def delete(self, key):
        self._check_writable()
        self.path(key)
        with self._lock:
            self._objects.pop(key, None)

    def delete_if(self, key, data):
        self._check_writable()
        self.path(key)
        with self._lock:
            found = self._objects.get(key)
            if found is None or found[0] != bytes(data):
                return False
            del self._objects[key]
            return True

    def replace_if(self, key, data, expected):
        self._check_writable()
        self.path(key)
        with self._lock:
            found = self._objects.get(key)
            if found is None or found[0] != bytes(expected):
                return False
            self._objects[key] = (bytes(data), time.time())
            return True

    def delete_prefix(self, prefix):
        self._check_writable()
        with self._lock:
            for key in [k for k in self._objects if k.startswith(prefix) or not prefix]:
                del self._objects[key]

    def move(self, src, dst):
        self._check_writable()
        self.path(src)
        self.path(dst)
        with self._lock:
            found = self._objects.pop(src, None)
            if found is None:
                raise DatasetNotFoundError(f"{self.path(src)}: no such file")
            self._objects[dst] = found

    def root_state(self):
        with self._lock:
            return "folder" if self._objects else "missing"
