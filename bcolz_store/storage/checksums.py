"""The checksum file ``bcolz_store.md5`` and the size bound of each dataset file.

Every commit rewrites ``ROOT/bcolz_store.md5`` in md5sum's text format (as
datadings ships one with each dataset): ``<32 hex digits>  <relative path>``,
one line per bcolz file, sorted by path, so ``cd ROOT && md5sum -c
bcolz_store.md5`` checks a dataset without this library.

Pure functions: nothing here reads or writes a file.
"""

from __future__ import annotations

import hashlib

from ..errors import FormatError
from ..format.layout import (CHECKSUM_FILE, MAX_CHUNK_FILE_BYTES, MAX_META_BYTES,
                             MAX_OWN_FILE_BYTES, MAX_VLEN_FILE_BYTES, check_key)

__all__ = ["dump_checksums", "load_checksums", "md5_hex", "read_limit"]

_HEX = frozenset("0123456789abcdef")


def md5_hex(data) -> str:
    """md5 of ``data`` as lowercase hex."""
    return hashlib.md5(data).hexdigest()


def md5_parts(parts) -> str:
    """md5 of the bytes-like ``parts`` one after the other, as lowercase hex."""
    digest = hashlib.md5()
    for part in parts:
        digest.update(part)
    return digest.hexdigest()


def dump_checksums(sums: dict) -> bytes:
    """The checksum file: ``<hex>  <path>`` lines sorted by path (md5sum's text mode)."""
    return "".join(f"{sums[key]}  {key}\n" for key in sorted(sums)).encode("utf-8")


def load_checksums(data: bytes, where: str = CHECKSUM_FILE) -> dict:
    """Parse a checksum file into ``{relative path: hex}``.

    Raises
    ------
    FormatError
        On a line that is not ``<32 hex digits>  <path>`` or an unsafe path.
    """
    sums = {}
    for number, line in enumerate(bytes(data).decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, key = line.partition("  ")
        if not sep or len(digest) != 32 or not _HEX.issuperset(digest):
            raise FormatError(f"{where}: line {number} is not '<md5>  <path>'")
        key = key.lstrip("*")
        check_key(key, f"{where}: line {number}")
        sums[key] = digest
    return sums


def read_limit(key: str) -> int:
    """Largest size accepted for the file ``key`` of a dataset (see :mod:`..format.layout`)."""
    name = key.rpartition("/")[2]
    if name.endswith(".vlen"):
        return MAX_VLEN_FILE_BYTES
    if name.endswith(".blp"):
        return MAX_CHUNK_FILE_BYTES
    if name == CHECKSUM_FILE:
        return MAX_OWN_FILE_BYTES
    return MAX_META_BYTES
