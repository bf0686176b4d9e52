"""bcolz_store: compressed, chunked numpy arrays and tables on disk, in bcolz's format.

``import bcolz_store as bcolz`` gives bcolz 1.x's public API: ``carray``,
``ctable``, ``open``, ``zeros``, ``ones``, ``fill``, ``arange``, ``fromiter``,
``iterblocks``, ``walk``, ``eval``, ``cparams``, ``defaults``, ``attrs``...; and
``vlen`` (the type of carrays of str or bytes of any length),
``train_dictionary`` (a zstd dictionary for them), ``category`` (the type
of categorical carrays: codes plus categories), ``decimal`` (exact
fixed-point numbers) and ``struct`` (items of named fields of any kind).
Datasets are read and written in bcolz's on-disk format, byte for byte.

Importing this package does no I/O and starts no threads.
"""

import importlib.util as _util

from . import attrs
from ._version import __version__
from .carray import carray, chunk
from .chunks.codec import blosc_compressor_list, blosc_set_nthreads, blosc_version
from .cparams import BITSHUFFLE, NOSHUFFLE, SHUFFLE, cparams
from .ctable import ctable
from .defaults import defaults, defaults_ctx
from .errors import (BcolzStoreError, ChunkNotFoundError, CodecError, ColumnNotFoundError,
                     ConcurrentWriteError, ConflictError, DatasetChangedError, DatasetExistsError,
                     DatasetNotFoundError,
                     DuplicateConverterError, FormatError, IndexNotFoundError, IntegrityError,
                     IntegrityWarning, KindMismatchError, LimitError, LockLostError,
                     LockTimeoutError, MissingDependencyError, NodeKindError, QueryError,
                     ReadOnlyError,
                     RemoteFormatError, TableNotFoundError, UnknownFormatError, UnsafeDataError,
                     WriteFailedError)
from .integrity import VerifyReport, verify
from .printing import array2string, get_printoptions, set_printoptions
from .constructors import arange, fill, fromiter, ones, zeros
from .kinds.category.types import category
from .kinds.decimal.types import decimal
from .kinds.struct.types import struct
from .kinds.vlen.types import train_dictionary, vlen
from .kinds.list.types import list_, map_, struct_items
from .kinds import installed as _installed  # noqa: F401  (registers every kind)
from .toplevel import (detect_number_of_cores, eval, from_dask, iterblocks, open,
                       print_versions, set_nthreads, walk)


filters = {NOSHUFFLE: "noshuffle", SHUFFLE: "shuffle", BITSHUFFLE: "bitshuffle"}


def _here(module: str) -> bool:
    return _util.find_spec(module) is not None


numexpr_here = _here("numexpr")
dask_here = _here("dask")
pandas_here = _here("pandas")
tables_here = _here("tables")

__all__ = [
    "BITSHUFFLE", "BcolzStoreError", "ChunkNotFoundError", "CodecError", "ColumnNotFoundError",
    "ConcurrentWriteError", "ConflictError", "DatasetChangedError", "DatasetExistsError",
    "DatasetNotFoundError", "DuplicateConverterError", "FormatError", "IndexNotFoundError", "IntegrityError",
    "IntegrityWarning", "KindMismatchError", "LimitError", "LockLostError", "LockTimeoutError",
    "MissingDependencyError", "NOSHUFFLE", "NodeKindError", "QueryError", "ReadOnlyError",
    "RemoteFormatError",
    "SHUFFLE", "TableNotFoundError", "UnknownFormatError", "UnsafeDataError", "VerifyReport",
    "WriteFailedError", "arange", "array2string", "attrs",
    "blosc_compressor_list", "blosc_set_nthreads", "blosc_version", "carray", "category", "chunk",
    "cparams", "ctable", "dask_here", "decimal", "defaults", "defaults_ctx",
    "detect_number_of_cores", "eval",
    "fill", "filters", "from_dask", "fromiter", "get_printoptions", "iterblocks", "list_", "map_",
    "numexpr_here",
    "ones", "open", "pandas_here", "print_versions", "set_nthreads", "set_printoptions",
    "struct", "struct_items", "tables_here", "train_dictionary", "verify", "vlen", "walk", "zeros",
]
