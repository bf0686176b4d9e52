"""The encoded chunks of a carray of variable-length items, in memory or in a store.

A vlen chunk (see :mod:`bcolz_store.kinds.vlen.chunk`) is kept as its bytes: in a
list for an in-memory carray (:class:`VlenMemoryChunks`), as the file
``data/__N.vlen`` of a stored one (:class:`VlenDiskChunks`).  Both hold only
full chunks; the leftover's file (number ``nchunks``) is read and written
through the same calls.  Every chunk read is checked against what the
carray's metadata implies (its number of items, its dictionary) before it is
decompressed.

Source: this library's vlen layout (kinds/vlen/meta.py, docs/format.md).
"""

from __future__ import annotations

from ...errors import FormatError
from ...format.layout import MAX_VLEN_FILE_BYTES
from .chunk_header import parse_vlen_header
from .meta import VLEN_CHUNK_SUFFIX
from ...chunks.chunk import StoredChunkFiles

__all__ = ["MAX_VLEN_FILE_BYTES", "VlenDiskChunks", "VlenMemoryChunks", "check_chunk",
           "vlen_chunk_key"]



def vlen_chunk_key(nchunk: int) -> str:
    """Store key of vlen chunk number ``nchunk``: ``data/__N.vlen``."""
    return f"data/__{nchunk}{VLEN_CHUNK_SUFFIX}"


def check_chunk(data, nitems: int, kind: str, dict_id: int, where: str,
                nullable: bool = True):
    """The header of chunk ``data``, checked against the carray's metadata.

    Parameters
    ----------
    data : bytes-like
        The whole chunk.
    nitems : int
        The items the carray's length and chunklen imply for this chunk.
    kind : {'str', 'bytes'}
    dict_id : int
        The id of the carray's zstd dictionary (0 for none).
    where : str
        The chunk file, for messages.
    nullable : bool, default True
        Whether the carray may hold missing items; a chunk of a carray that
        may not must have no validity bitmap.

    Returns
    -------
    VlenHeader

    Raises
    ------
    FormatError
        If the header is malformed (see
        :func:`~bcolz_store.kinds.vlen.chunk_header.parse_vlen_header`), or holds
        another number of items, another kind, or names a dictionary other
        than the carray's, or has missing items where the carray may have none.
    """
    hdr = parse_vlen_header(data, where)
    if hdr.nitems != nitems:
        raise FormatError(f"{where}: chunk holds {hdr.nitems} items, the carray's metadata "
                          f"implies {nitems}")
    if hdr.kind != kind:
        raise FormatError(f"{where}: chunk holds {hdr.kind} items, the carray holds {kind}")
    if hdr.has_validity and not nullable:
        raise FormatError(f"{where}: chunk holds missing items, the carray is not nullable")
    if hdr.dict_id not in (0, dict_id):
        raise FormatError(f"{where}: chunk was compressed with zstd dictionary {hdr.dict_id}, "
                          f"the carray's is {dict_id or 'none'}")
    return hdr


class VlenMemoryChunks(list):
    """The full chunks of an in-memory vlen carray: a list of their bytes."""

    def path(self, nchunk: int) -> str:
        """The chunk's name in messages."""
        return f"vlen chunk {nchunk}"

    def get(self, nchunk: int) -> bytes:
        """The bytes of full chunk ``nchunk``."""
        return self[nchunk]

    def get_many(self, nchunks) -> dict:
        """``{nchunk: bytes}`` of several full chunks."""
        return {n: self[n] for n in nchunks}

    def write(self, nchunk: int, data: bytes) -> None:
        """Store ``data`` as full chunk ``nchunk`` (an existing one or the next)."""
        if nchunk == len(self):
            self.append(data)
        else:
            self[nchunk] = data

    def push(self, data: bytes) -> None:
        """Add ``data`` as the next full chunk."""
        self.append(data)

    def drop_last(self, read: bool = True) -> bytes:
        """Remove the last full chunk; return its bytes."""
        return self.pop()

    def free_cachemem(self) -> None:
        """Nothing is cached here."""


class VlenDiskChunks(StoredChunkFiles):
    """The full chunks of a stored vlen carray: files ``data/__N.vlen``.

    Parameters
    ----------
    store : DatasetStore
        The carray's view of its store.
    nchunks : int
        Number of full chunk files present.
    """

    key = staticmethod(vlen_chunk_key)
    stats = None        # the engine's ChunkStats, told of every chunk file written

    def __init__(self, store, nchunks: int = 0):
        self.store = store
        self.nchunks = nchunks

    def __len__(self) -> int:
        return self.nchunks

    def path(self, nchunk: int) -> str:
        """Where chunk file ``nchunk`` is, for messages."""
        return self.store.path(vlen_chunk_key(nchunk))

    def get(self, nchunk: int) -> bytes:
        """The bytes of chunk file ``nchunk`` (``nchunks`` is the leftover's).

        Raises
        ------
        ChunkNotFoundError
            If the file is missing.
        FormatError
            If it is larger than a vlen chunk can be, or not a regular file.
        IntegrityError, DatasetChangedError
            As the store's reads.
        """
        data = self.read_file(nchunk, MAX_VLEN_FILE_BYTES)
        self.store.check_reading()
        return data

    def get_many(self, nchunks) -> dict:
        """``{nchunk: bytes}`` of several chunk files, fetched together
        (concurrently on remote stores).

        Raises
        ------
        ChunkNotFoundError, FormatError, IntegrityError, DatasetChangedError
            As :meth:`get`, for the first chunk that fails.
        """
        out = self.read_files(nchunks, MAX_VLEN_FILE_BYTES)
        self.store.check_reading()
        return out

    def write(self, nchunk: int, data: bytes) -> None:
        """Stage ``data`` as chunk file ``nchunk`` for the next commit."""
        self.store.set(vlen_chunk_key(nchunk), data)
        if self.stats is not None:      # the engine records them again when it knows them
            self.stats.forget(nchunk)

    def push(self, data: bytes) -> None:
        """Stage ``data`` as the next full chunk file."""
        self.write(self.nchunks, data)
        self.nchunks += 1

    def drop_last(self, read: bool = True):
        """Stage the removal of the last full chunk file (and of a leftover
        file after it); return the removed chunk's bytes (None without
        ``read``: the file is not read)."""
        nchunk = self.nchunks - 1
        data = self.get(nchunk) if read else None
        self.store.delete(vlen_chunk_key(nchunk))
        self.store.delete(vlen_chunk_key(nchunk + 1))
        self.nchunks -= 1
        if self.stats is not None:
            self.stats.truncate(self.nchunks)
        return data

    def delete(self, nchunk: int) -> None:
        """Stage the removal of chunk file ``nchunk``."""
        self.store.delete(vlen_chunk_key(nchunk))

    def free_cachemem(self) -> None:
        """Nothing is cached here."""
