"""The one module that calls Blosc.

Compression goes through python-blosc 1.x, the same c-blosc 1.21 that bcolz
bundles, so ``compress(raw, typesize, clevel, shuffle, cname)`` gives the very
bytes bcolz wrote (FORMAT-NOTES: 65 of 65 fixture chunks recompress
identically).  Every buffer is validated with
:func:`bcolz_store.format.bloscpack.parse_blosc_header` before C sees it.
"""

from __future__ import annotations

import blosc
import numpy as np

from ..errors import CodecError
from ..format.bloscpack import BloscHeader, parse_blosc_header

__all__ = [
    "BLOSC_MAX_TYPESIZE",
    "blosc_compressor_list",
    "blosc_set_nthreads",
    "blosc_version",
    "compress",
    "decompress_checked",
    "decompress_into",
    "typesize_for",
]

BLOSC_MAX_TYPESIZE = 255

# Compress and decompress without holding the GIL.  python-blosc then calls
# c-blosc's context functions, which give the same bytes and are thread-safe,
# so chunk files are written, checksummed and fsynced on other threads while
# the next chunk compresses, and several threads can read at once.
blosc.set_releasegil(True)
# Blosc's own threads: one.  bcolz_store decodes and encodes whole chunks on
# its own pool (bcolz_store.threads); c-blosc 1.x splits a 1 MiB chunk of
# 8-byte items into a single block, which its threads cannot share, and its
# context functions start and join their threads on every call (a 1 MiB
# chunk of 1-byte items, 8 blocks, decodes about 9 times slower with 2 of
# them than with 1 on a 2-core machine).  blosc_set_nthreads changes it.
blosc.set_nthreads(1)


def blosc_version() -> tuple:
    """Return ``(version, date)`` of the c-blosc library, as bcolz does."""
    text = blosc.blosclib_version
    version, _, date = text.partition(" ")
    return version, date.strip("()")


def blosc_compressor_list() -> list:
    """Names of the compressors this Blosc build offers."""
    return list(blosc.compressor_list())


def blosc_set_nthreads(nthreads: int) -> int:
    """Set the number of Blosc's own threads (per chunk) and return the previous number.

    bcolz_store keeps them at 1 and decodes several chunks at once instead
    (:func:`bcolz_store.set_nthreads`); more only pays for chunks of many
    Blosc blocks read one at a time.  The bytes written do not depend on it.

    Raises
    ------
    ValueError
        If ``nthreads`` is not a positive integer.
    """
    if isinstance(nthreads, bool) or not isinstance(nthreads, (int, np.integer)) or nthreads < 1:
        raise ValueError(f"nthreads must be a positive integer, not {nthreads!r}")
    return blosc.set_nthreads(int(nthreads))


def typesize_for(dtype: np.dtype) -> int:
    """Blosc typesize bcolz uses for ``dtype``.

    ``dtype.base.itemsize``, except bytes strings (``S``) -> 1, unicode
    (``U``) -> 4, void wider than 255 bytes -> 1, object -> 1.

    Source: FORMAT-NOTES.md (checked on the fixtures).

    Raises
    ------
    TypeError
        If the typesize would exceed Blosc's limit of 255 bytes (bcolz
        refuses these too).
    """
    base = dtype.base
    kind = base.kind
    if kind in ("S", "O"):
        return 1
    if kind == "U":
        return 4
    if kind == "V" and base.itemsize > BLOSC_MAX_TYPESIZE:
        return 1
    if base.itemsize > BLOSC_MAX_TYPESIZE:
        raise TypeError(
            f"typesize is {base.itemsize} and Blosc does not support types larger than "
            f"{BLOSC_MAX_TYPESIZE} bytes")
    return max(base.itemsize, 1)


def compress(raw, typesize: int, clevel: int, shuffle: int, cname: str) -> bytes:
    """Compress a contiguous buffer into one Blosc-1 chunk.

    Parameters
    ----------
    raw : bytes-like, C-contiguous
    typesize : int
        Bytes per element for the shuffle filter.
    clevel, shuffle, cname
        As in :class:`bcolz_store.cparams`.

    Raises
    ------
    CodecError
        If Blosc fails or the buffer exceeds Blosc's 2 GB limit.
    """
    try:
        if isinstance(raw, np.ndarray) and raw.flags.c_contiguous:
            return blosc.compress_ptr(raw.__array_interface__["data"][0], raw.nbytes // typesize,
                                      typesize, clevel=clevel, shuffle=shuffle, cname=cname)
        return blosc.compress(bytes(memoryview(raw).cast("B")), typesize, clevel, shuffle, cname)
    except (ValueError, TypeError) as err:
        raise CodecError(f"Blosc could not compress the buffer: {err}") from err


def _refuse_object_buffer(out: np.ndarray, where: str) -> None:
    """Never let Blosc write bytes into slots that hold Python object pointers."""
    if out.dtype.hasobject:
        raise CodecError(f"{where}: refusing to decompress into a buffer of {out.dtype}, "
                         f"which holds Python objects (object data is stored pickled)")


def decompress_into(cdata, out: np.ndarray, where: str = "chunk",
                    header: BloscHeader | None = None) -> None:
    """Decompress a whole Blosc chunk straight into ``out``.

    Parameters
    ----------
    cdata : bytes-like
        One whole Blosc-1 chunk.
    out : numpy.ndarray, C-contiguous, writeable
        Receives the data; its ``nbytes`` must equal the header's ``nbytes``.
    where : str
        Named in error messages.

    Raises
    ------
    FormatError
        If the Blosc header is invalid (checked before C reads the buffer).
    CodecError
        If the sizes disagree or Blosc reports corrupt data.
    """
    _refuse_object_buffer(out, where)
    hdr = header or parse_blosc_header(cdata, where)
    if hdr.nbytes != out.nbytes:
        raise CodecError(f"{where}: holds {hdr.nbytes} bytes, expected {out.nbytes}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise CodecError(f"{where}: output buffer must be contiguous and writeable")
    if hdr.nbytes == 0:
        return
    try:
        if isinstance(cdata, memoryview):
            cdata = cdata.tobytes() if not cdata.contiguous else cdata
        n = blosc.decompress_ptr(cdata, out.__array_interface__["data"][0])
    except Exception as err:  # python-blosc raises RuntimeError or ValueError
        raise CodecError(f"{where}: Blosc could not decompress ({err})") from err
    if n != hdr.nbytes:
        raise CodecError(f"{where}: Blosc returned {n} bytes, expected {hdr.nbytes}")


def decompress_checked(cdata, out: np.ndarray, nbytes: int, where: str = "chunk") -> None:
    """Decompress a Blosc chunk whose header was already checked into ``out``.

    The read path of a chunk file: :func:`bcolz_store.format.bloscpack.chunk_file_nbytes`
    validated the header and returned ``nbytes``, which the caller compared
    with ``out.nbytes``; ``out`` is a fresh or owned C-contiguous array.

    Raises
    ------
    CodecError
        If Blosc reports corrupt data or returns another size.
    """
    _refuse_object_buffer(out, where)
    try:
        n = blosc.decompress_ptr(cdata, out.__array_interface__["data"][0])
    except Exception as err:  # python-blosc raises RuntimeError or ValueError
        raise CodecError(f"{where}: Blosc could not decompress ({err})") from err
    if n != nbytes:
        raise CodecError(f"{where}: Blosc returned {n} bytes, expected {nbytes}")


def decompress(cdata, where: str = "chunk") -> bytes:
    """Decompress a whole Blosc chunk into new bytes (used for pickled objects).

    Raises
    ------
    FormatError, CodecError
        As :func:`decompress_into`.
    """
    hdr = parse_blosc_header(cdata, where)
    out = np.empty(hdr.nbytes, dtype=np.uint8)
    decompress_into(cdata, out, where, hdr)
    return out.tobytes()
