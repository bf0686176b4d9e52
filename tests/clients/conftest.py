"""Where the client flows write and read: a local folder, a ``memory://`` URL, or
a local folder that readers get as a pack (``.zip``, read-only); and the number
of threads that encode and decode chunks."""

import os
import posixpath
import uuid

import pytest

import bcolz_store as bcolz
from bcolz_store.storage.packs import pack

try:
    import bcolz as real_bcolz          # bcolz-zipline, the test-only oracle
except ImportError:
    real_bcolz = None

STORES = ("local", "memory", "pack")


class Place:
    """A root where a client writes, and what its readers open.

    ``path(...)`` joins names under the root the way the client would (``os.path``
    for a folder, ``/`` for a URL).  ``published(path)`` is what a reader opens:
    the dataset itself, or for ``pack`` a fresh ``.zip`` packed from it.
    """

    def __init__(self, kind, tmp_path):
        self.kind = kind
        self._packs = 0
        self._tmp = tmp_path
        if kind == "memory":
            fsspec = pytest.importorskip("fsspec")
            self.fs = fsspec.filesystem("memory")
            self.root = f"memory://clients-{uuid.uuid4().hex}"
        else:
            self.fs = None
            self.root = str(tmp_path / "data")
            os.makedirs(self.root)

    @property
    def is_url(self) -> bool:
        return self.kind == "memory"

    @property
    def read_only(self) -> bool:
        """Readers get a pack: nothing can be written through what they open."""
        return self.kind == "pack"

    @property
    def folder(self) -> bool:
        """The data is a local folder (which the real bcolz can read)."""
        return self.kind != "memory"

    def path(self, *parts) -> str:
        return self.join(self.root, *parts)

    def join(self, path, *parts) -> str:
        return posixpath.join(path, *parts) if self.is_url else os.path.join(path, *parts)

    def exists(self, path) -> bool:
        return self.fs.exists(path) if self.is_url else os.path.exists(path)

    def makedirs(self, path) -> None:
        if not self.is_url:
            os.makedirs(path, exist_ok=True)

    def published(self, path) -> str:
        if self.kind != "pack":
            return path
        self._packs += 1
        dst = str(self._tmp / f"pack-{self._packs}.zip")
        info = pack(path, dst)
        assert info["files"] > 0 and os.path.getsize(dst) >= info["bytes"]
        return dst

    def cleanup(self) -> None:
        if self.is_url and self.fs.exists(self.root):
            self.fs.rm(self.root, recursive=True)


@pytest.fixture(params=STORES)
def place(request, tmp_path):
    p = Place(request.param, tmp_path)
    yield p
    p.cleanup()


@pytest.fixture(params=[1, 2], ids=["nthreads1", "nthreads2"])
def nthreads(request):
    previous = bcolz.set_nthreads(request.param)
    yield request.param
    bcolz.set_nthreads(previous)
