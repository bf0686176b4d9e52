"""The libraries a benchmark compares, behind one small interface each.

bcolz_store is always there.  The real bcolz, blosc2 and zarr are optional
(``pip install bcolz_store[bench]`` for blosc2 and zarr; bcolz 1.x is the
format's reference implementation and serves here only as an oracle).  A
library that does not import is simply left out of every workload.

Each adapter knows how to write a 1-d numpy array to disk with the common
settings (codec, level, shuffle, chunk length), how to open what it wrote,
and which calls read a slice, an element, or the sum.
"""

from __future__ import annotations

import importlib
import os
import shutil
from dataclasses import dataclass

import numpy as np

LIBRARY_NAMES = ("bcolz_store", "bcolz", "blosc2", "zarr")


@dataclass
class Codec:
    """Compression settings shared by every library in a run."""

    cname: str = "lz4"
    clevel: int = 5
    shuffle: int = 1  # 0 none, 1 byte shuffle, 2 bit shuffle (bcolz numbering)


def remove(path: str) -> None:
    """Delete a file or directory tree if present."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


class BcolzLike:
    """bcolz_store and bcolz share bcolz 1.x's API, so one adapter serves both."""

    def __init__(self, name: str, module):
        self.name = name
        self.mod = module
        self.version = getattr(module, "__version__", "?")

    def cparams(self, codec: Codec):
        return self.mod.cparams(clevel=codec.clevel, shuffle=codec.shuffle, cname=codec.cname)

    def write(self, data: np.ndarray, path: str, chunklen: int, codec: Codec):
        remove(path)
        c = self.mod.carray(data, rootdir=path, mode="w", chunklen=chunklen,
                            cparams=self.cparams(codec))
        c.flush()
        return c

    def create_empty(self, dtype, path: str, chunklen: int, codec: Codec):
        remove(path)
        return self.mod.carray(np.empty(0, dtype=dtype), rootdir=path, mode="w",
                               chunklen=chunklen, cparams=self.cparams(codec))

    def open(self, path: str):
        return self.mod.open(path, mode="r")

    def write_table(self, columns: list, names: list, path: str, codec: Codec):
        remove(path)
        t = self.mod.ctable(columns=columns, names=names, rootdir=path, mode="w",
                            cparams=self.cparams(codec))
        t.flush()
        return t

    def set_nthreads(self, n: int) -> None:
        self.mod.set_nthreads(n)


class Blosc2Lib:
    """python-blosc2's NDArray stored in a ``.b2nd`` file."""

    name = "blosc2"

    def __init__(self, module):
        self.mod = module
        self.version = module.__version__

    def cparams(self, codec: Codec):
        b2 = self.mod
        filters = {0: b2.Filter.NOFILTER, 1: b2.Filter.SHUFFLE, 2: b2.Filter.BITSHUFFLE}
        return b2.CParams(codec=getattr(b2.Codec, codec.cname.upper()), clevel=codec.clevel,
                          filters=[filters[codec.shuffle]], filters_meta=[0])

    def write(self, data: np.ndarray, path: str, chunklen: int, codec: Codec):
        remove(path)
        return self.mod.asarray(data, urlpath=path, mode="w", chunks=(chunklen,),
                                cparams=self.cparams(codec))

    def open(self, path: str):
        return self.mod.open(path, mode="r")

    def set_nthreads(self, n: int) -> None:
        self.mod.set_nthreads(n)


class ZarrLib:
    """zarr (v3 format) with the Blosc codec, in a local directory store."""

    name = "zarr"

    def __init__(self, module):
        self.mod = module
        self.version = module.__version__

    def write(self, data: np.ndarray, path: str, chunklen: int, codec: Codec):
        from zarr.codecs import BloscCodec
        remove(path)
        shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}[codec.shuffle]
        z = self.mod.create_array(store=path, shape=data.shape, chunks=(chunklen,),
                                  dtype=data.dtype, overwrite=True,
                                  compressors=BloscCodec(cname=codec.cname, clevel=codec.clevel,
                                                         shuffle=shuffle))
        z[:] = data
        return z

    def open(self, path: str):
        return self.mod.open_array(path, mode="r")

    def set_nthreads(self, n: int) -> None:
        try:
            from numcodecs import blosc
            blosc.set_nthreads(n)
        except ImportError:  # pragma: no cover - numcodecs ships with zarr
            pass


def load_libraries(wanted=LIBRARY_NAMES) -> dict:
    """Import the wanted libraries that are installed; name -> adapter.

    bcolz_store is always loaded (it is what is being measured).
    """
    libs = {}
    for name in LIBRARY_NAMES:
        if name != "bcolz_store" and name not in wanted:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if name in ("bcolz_store", "bcolz"):
            libs[name] = BcolzLike(name, module)
        elif name == "blosc2":
            libs[name] = Blosc2Lib(module)
        else:
            libs[name] = ZarrLib(module)
    return libs
