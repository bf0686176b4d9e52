"""The index files of a datadings dataset: offsets, key hashes and the Bloom
filter, written as datadings 3.4 writes them and the offsets read back.

The layout of each file is in :mod:`bcolz_store.converters.datadings`, which
uses these for its conversions.

Source: the datadings file format (seeds/000_7539750c326b609e.txt),
``datadings.index``, ``datadings.writer`` and simplebloom 1.1.
"""

from __future__ import annotations

import hashlib
import math
import struct

import numpy as np

from ..errors import FormatError

__all__ = ["BLOOM_MAGIC", "bloom_filter", "key_hashes", "read_offsets", "write_index"]

BLOOM_MAGIC = b"SIMPBLOO"
_BLOOM_HEADER = struct.Struct(">8sQQd")
_OFFSET = np.dtype(">u8")


def key_hashes(keys, max_tries=1000) -> tuple:
    """Salted 64-bit hashes of ``keys``, free of collisions, as datadings makes them.

    Parameters
    ----------
    keys : sequence of str
    max_tries : int, default 1000
        Salts tried before giving up.

    Returns
    -------
    (bytes, numpy.ndarray)
        The 8-byte salt and the hashes, dtype ``>u8``, shape (len(keys),).

    Raises
    ------
    ValueError
        When ``max_tries`` salts all give a collision.
    """
    for attempt in range(max_tries):
        salt = hashlib.blake2s(str(attempt).encode()).digest()[:8]
        digests = b"".join(hashlib.blake2s(k.encode(), salt=salt).digest()[:8] for k in keys)
        hashes = np.frombuffer(digests, dtype=_OFFSET)
        if len(np.unique(hashes)) == len(hashes):
            return salt, hashes
    raise ValueError(f"key hashes collide with {max_tries} salts")


def bloom_filter(keys) -> bytes:
    """The simplebloom Bloom filter of ``keys``, as datadings writes it.

    Parameters
    ----------
    keys : sequence of str

    Returns
    -------
    bytes
        Header and bits (see the module docstring).
    """
    n = max(2, len(keys))
    p = 1.0 / n
    nbits = int(math.ceil(n * math.log(p) / -0.4804530139182015 / 8) * 8)
    nhashes = int(round(nbits / n * 0.6931471805599453))
    bits = np.zeros(nbits // 8, dtype=np.uint8)
    if len(keys):
        digests = b"".join(hashlib.blake2s(k.encode()).digest()[:16] for k in keys)
        h = np.frombuffer(digests, dtype=_OFFSET).astype(np.uint64).reshape(-1, 2)
        for i in range(nhashes):
            index = (h[:, 0] + np.uint64(i) * h[:, 1]) % np.uint64(nbits)   # wraps mod 2**64
            np.bitwise_or.at(bits, (index >> np.uint64(3)).astype(np.intp),
                             np.left_shift(1, index & np.uint64(7)).astype(np.uint8))
    header = _BLOOM_HEADER.pack(BLOOM_MAGIC, _BLOOM_HEADER.size + len(bits), n, p)
    return header + bits.tobytes()


def write_index(msgpack, files: dict, keys: list, offsets: list, data_md5: str) -> list:
    """Write offsets, keys, key_hashes, filter and md5 files; return their paths."""
    salt, hashes = key_hashes(keys)
    packer = msgpack.Packer()
    contents = {
        ".offsets": np.asarray(offsets, dtype=_OFFSET).tobytes(),
        ".keys": packer.pack_array_header(len(keys)) + b"".join(map(packer.pack, keys)),
        ".key_hashes": salt + hashes.tobytes(),
        ".filter": bloom_filter(keys),
    }
    lines = [f"{data_md5}  {files[''].name}\n"]
    for suffix, data in contents.items():
        files[suffix].write_bytes(data)
        lines.append(f"{hashlib.md5(data).hexdigest()}  {files[suffix].name}\n")
    files[".md5"].write_text("".join(lines), encoding="utf-8")
    return [files[s] for s in ("", ".offsets", ".keys", ".key_hashes", ".filter", ".md5")]


def read_offsets(files: dict, size: int, where: str):
    """The offsets file's n + 1 sample offsets (uint64), checked against the
    data file's ``size``; None when there is no offsets file.

    Raises
    ------
    FormatError
        Naming the offsets file, when it is not a whole number of 8-byte
        offsets going up from 0 to ``size``.
    """
    path = files[".offsets"]
    if not path.is_file():
        return None
    raw = path.read_bytes()
    if len(raw) % 8 or len(raw) < 8:
        raise FormatError(f"{path}: {len(raw)} bytes, not a whole number (at least one) of "
                          f"8-byte offsets")
    offsets = np.frombuffer(raw, dtype=_OFFSET).astype(np.uint64)
    if offsets[0] != 0 or offsets[-1] != size or np.any(np.diff(offsets.astype(np.int64)) <= 0) \
            or np.any(offsets > size):
        raise FormatError(f"{path}: offsets do not go up from 0 to the size of {where} "
                          f"({size} bytes), one per sample")
    return offsets
