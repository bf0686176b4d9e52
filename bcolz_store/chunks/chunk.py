"""A compressed chunk, and the sequences of chunks of a carray (memory or disk).

A chunk holds ``chunklen`` atoms (the last, partial "leftover" chunk lives
uncompressed in the carray until flushed).  In memory a chunk keeps its Blosc
bytes; an all-zero chunk keeps only its constant (as bcolz does, so
``zeros(10**9)`` costs almost nothing).  On disk each chunk is the file
``data/__N.blp`` (see :mod:`bcolz_store.format.bloscpack`).
"""

from __future__ import annotations

import math

import numpy as np

from ..params import public_signature
from ..errors import ChunkNotFoundError, CodecError, DatasetNotFoundError, FormatError
from ..format.layout import MAX_CHUNK_FILE_BYTES
from ..format.bloscpack import (BLOSCPACK_HEADER_LENGTH, BLOSC_MAX_OVERHEAD, chunk_file_nbytes,
                                pack_bloscpack_header, parse_blosc_header, split_chunk_file)
from . import codec

__all__ = ["DiskChunks", "MemoryChunks", "StoredChunkFiles", "chunk", "chunk_file_parts",
           "chunk_key"]



def _check_size(path: str, nbytes: int, expected: int) -> None:
    """Refuse a chunk whose Blosc header disagrees with the carray's metadata."""
    if nbytes != expected:
        raise FormatError(f"{path}: Blosc header announces {nbytes} bytes, the "
                          f"carray's metadata implies {expected}")


def chunk_key(nchunk: int) -> str:
    """Store key of chunk number ``nchunk``: ``data/__N.blp``."""
    return f"data/__{nchunk}.blp"


def chunk_file_parts(chunk_: "chunk") -> list:
    """The parts of the chunk file of ``chunk_``: the bloscpack header, then the
    Blosc buffer (source: bcolz format v1.0, seeds/001; FORMAT-NOTES.md)."""
    return [pack_bloscpack_header(1), chunk_.getdata()]


@public_signature
class chunk:
    """One compressed chunk of atoms.

    Parameters
    ----------
    dobject : numpy.ndarray, shape (n, *atom.shape) or bytes
        The data: an array of ``atom`` (compressed here), or a pickle
        (``atom`` is object).  A chunk made only of zero bytes keeps just
        the constant.
    atom : numpy.dtype
        dtype of one item, including its sub-array shape.
    cparams : cparams
        Compression parameters.

    Raises
    ------
    FormatError
        If the bytes of a chunk read from a file are not a valid Blosc chunk.
    CodecError
        If Blosc fails.

    Attributes
    ----------
    nbytes, cbytes, blocksize : int
        Uncompressed and compressed sizes and the Blosc block size, in bytes.
    isconstant : bool
        True for an in-memory all-zero chunk (then ``cbytes`` is 0).
    """

    __slots__ = ("atom", "nbytes", "cbytes", "blocksize", "isconstant", "constant",
                 "_cdata", "_where")

    def __init__(self, dobject, atom, cparams, _memory=True, _compr=False, _where="chunk"):
        # (the package's own: _memory=False keeps an all-zero chunk's bytes, as a
        # file needs them; _compr: dobject is already a Blosc chunk, from _where)
        self.atom = np.dtype(atom)
        self.isconstant = False
        self.constant = None
        self._where = _where
        if _compr:
            hdr = parse_blosc_header(dobject, _where)
            self._cdata = dobject
            self.nbytes, self.cbytes, self.blocksize = hdr.nbytes, hdr.ctbytes, hdr.blocksize
            return
        if self.atom.base.kind == "O":
            raw = bytes(dobject)
            self._cdata = codec.compress(raw, 1, cparams.clevel, cparams.shuffle, cparams.cname)
            self._set_sizes(len(raw))
            return
        # In the atom's own dtype: a value of another byte order (numpy's
        # concatenate makes them native) would otherwise be stored as its bytes.
        array = np.ascontiguousarray(dobject, dtype=self.atom.base)
        self.nbytes = array.nbytes
        if _memory and array.size and not array.view(np.uint8).any():
            self.isconstant = True
            self.constant = np.zeros((), dtype=self.atom)
            self.cbytes = 0
            self.blocksize = 0
            self._cdata = None
            return
        if cparams.quantize:
            if array.dtype.kind != "f":
                raise TypeError("quantize is meant only for floating point data")
            array = quantize(array, cparams.quantize)
        self._cdata = codec.compress(array, codec.typesize_for(self.atom), cparams.clevel,
                                     cparams.shuffle, cparams.cname)
        self._set_sizes(array.nbytes)

    def _set_sizes(self, nbytes: int) -> None:
        hdr = parse_blosc_header(self._cdata, self._where)
        self.nbytes, self.cbytes, self.blocksize = nbytes, hdr.ctbytes, hdr.blocksize

    @property
    def dtype(self) -> np.dtype:
        """The atom dtype."""
        return self.atom

    def __len__(self) -> int:
        return self.nbytes // self.atom.itemsize if self.atom.itemsize else 0

    def getdata(self) -> bytes:
        """The Blosc bytes of this chunk (what goes to disk after the bloscpack header)."""
        if self.isconstant:
            raise ValueError("a constant in-memory chunk has no Blosc bytes")
        return self._cdata

    def getudata(self) -> bytes:
        """The decompressed bytes (the pickle of an object chunk)."""
        return codec.decompress(self._cdata, self._where)

    def decompress(self, out: np.ndarray | None = None) -> np.ndarray:
        """Return all atoms, shape (n, *atom.shape), decompressed into ``out`` when given.

        Raises
        ------
        FormatError, CodecError
            If the stored bytes are corrupt.
        """
        n = len(self)
        if out is None:
            out = np.empty(n, dtype=self.atom)
        if self.isconstant:
            out[...] = self.constant
        else:
            codec.decompress_into(self._cdata, out, self._where)
        return out

    def __getitem__(self, key):
        data = self.decompress()
        if isinstance(key, slice):
            return data[key].copy()
        return data[key]

    def __setitem__(self, key, value):
        raise NotImplementedError("chunks are immutable; assign through the carray")

    def __str__(self):
        return str(self[:])

    def __repr__(self):
        ratio = self.nbytes / float(self.cbytes) if self.cbytes else float("nan")
        return (f"chunk({self.atom})  nbytes: {self.nbytes}; cbytes: {self.cbytes}; "
                f"ratio: {ratio:.2f}\n{str(self)!r}")


class MemoryChunks(list):
    """The full chunks of an in-memory carray: a plain list of :class:`chunk`."""

    def free_cachemem(self) -> None:
        """Nothing is cached for in-memory chunks."""

    def read_into(self, nchunk: int, out: np.ndarray, check: bool = True) -> None:
        """Decompress full chunk ``nchunk`` into ``out`` (C-contiguous, a chunk's size)."""
        self[nchunk].decompress(out)

    def check_reading(self) -> None:
        """Nothing to check in memory."""


class StoredChunkFiles:
    """Reading the chunk files of a stored carray (its store view ``store``),
    for :class:`DiskChunks` and the vlen chunks, which name them with
    ``key(nchunk)`` (a store key) and ``path(nchunk)`` (for messages).

    A missing file raises :class:`ChunkNotFoundError`; after any failed read
    the store is asked whether a writer's commit explains it (then
    :class:`DatasetChangedError` is raised instead).
    """

    def exists(self, nchunk: int) -> bool:
        """Whether anything is at chunk file ``nchunk``'s key."""
        return self.store.exists(self.key(nchunk))

    def read_file(self, nchunk: int, limit: int) -> bytes:
        """The bytes of chunk file ``nchunk``, which may hold at most ``limit``.

        Raises
        ------
        ChunkNotFoundError, FormatError, IntegrityError, DatasetChangedError
        """
        try:
            return self.store.get_chunk(self.key(nchunk), limit)
        except DatasetNotFoundError as err:
            self.store.check_reading(failed=True)
            raise ChunkNotFoundError(f"{self.path(nchunk)}: chunk file not found (meta/sizes "
                                     f"promises it)") from None      # err says the same
        except FormatError:
            self.store.check_reading(failed=True)   # a writer's commit, not damage?
            raise

    def read_files(self, nchunks, limit: int) -> dict:
        """``{nchunk: bytes}`` of several chunk files, fetched together
        (concurrently on remote stores).

        Raises
        ------
        ChunkNotFoundError, FormatError, IntegrityError, DatasetChangedError
            For the first chunk that fails.
        """
        nchunks = list(nchunks)
        got = self.store.get_many([self.key(n) for n in nchunks], limit)
        out = {}
        for n in nchunks:
            data = got[self.key(n)]
            if isinstance(data, DatasetNotFoundError):
                self.store.check_reading(failed=True)
                raise ChunkNotFoundError(f"{self.path(n)}: chunk file not found") from data
            if isinstance(data, Exception):
                self.store.check_reading(failed=True)
                raise data
            out[n] = data
        return out

    def read_file_range(self, nchunk: int, start: int, stop: int):
        """The bytes ``[start, stop)`` of chunk file ``nchunk``, or None when
        the store view cannot read a part of it (``verify``, a remote
        reader's content checks, staged changes: see
        :meth:`~bcolz_store.storage.dataset_reads.DatasetReads.get_chunk_range`);
        the caller then reads the whole file with :meth:`read_file`.

        As after :meth:`read_file`, the caller asks :meth:`check_reading` of
        its store once the bytes are read; a failed read asks it here.

        Parameters
        ----------
        nchunk : int
        start, stop : int
            The range, ``0 <= start <= stop``.

        Returns
        -------
        bytes or None
            Fewer bytes where the file ends before ``stop``.

        Raises
        ------
        ValueError
            For a range that is not one.
        ChunkNotFoundError
            When the file is missing.
        FormatError
            When something else than a file is there.
        DatasetChangedError, ConcurrentWriteError
            When another writer's commit explains a failed read (a reader's
            error, a writer's).
        """
        got = self.read_file_ranges(nchunk, [(start, stop)])
        return None if got is None else got[0]

    def read_file_ranges(self, nchunk: int, ranges):
        """Several ranges of chunk file ``nchunk``, or None (see
        :meth:`read_file_range`).

        Parameters
        ----------
        nchunk : int
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs.

        Returns
        -------
        list of bytes, or None
            The bytes of each range, in their order.

        Raises
        ------
        ValueError, ChunkNotFoundError, FormatError, DatasetChangedError, ConcurrentWriteError
            As :meth:`read_file_range`.
        """
        try:
            return self.store.get_chunk_ranges(self.key(nchunk), ranges)
        except DatasetNotFoundError as err:
            self.store.check_reading(failed=True)
            raise ChunkNotFoundError(f"{self.path(nchunk)}: chunk file not found (meta/sizes "
                                     f"promises it)") from None      # err says the same
        except FormatError:
            self.store.check_reading(failed=True)   # a writer's commit, not damage?
            raise


class DiskChunks(StoredChunkFiles):
    """The full chunks of a stored carray, read from ``data/__N.blp`` on demand.

    Parameters
    ----------
    store : DatasetStore
        The carray's view of its store.
    atom : numpy.dtype
    cparams : cparams
    nchunks : int
        Number of full chunk files present.
    chunk_nbytes : int or None
        Uncompressed bytes of a full chunk (None for object chunks).
    """

    key = staticmethod(chunk_key)

    def __init__(self, store, atom, cparams, nchunks: int = 0, chunk_nbytes=None):
        self.store = store
        self.atom = atom
        self.cparams = cparams
        self.nchunks = nchunks
        self.chunk_nbytes = chunk_nbytes
        self.stats = None       # the engine's ChunkStats, told of every chunk file written
        self._cached = (-1, None)
        self._shown = None      # (store.root, path prefix of chunk files in messages)

    def __len__(self) -> int:
        return self.nchunks

    def path(self, nchunk: int) -> str:
        """Where chunk file ``nchunk`` is, for messages."""
        shown = self._shown
        if shown is None or shown[0] is not self.store.root:
            shown = self._shown = (self.store.root, self.store.path("data/__"))
        return f"{shown[1]}{nchunk}.blp"

    def limit(self, nbytes=None) -> int:
        """Largest chunk file that can hold ``nbytes`` (default a full chunk)."""
        nbytes = self.chunk_nbytes if nbytes is None else nbytes
        if nbytes is None:              # an object chunk: up to Blosc's limit
            return MAX_CHUNK_FILE_BYTES
        return nbytes + BLOSCPACK_HEADER_LENGTH + BLOSC_MAX_OVERHEAD

    def read(self, nchunk: int) -> chunk:
        """Read full chunk file ``nchunk`` as a :class:`chunk` (its Blosc bytes).

        Raises
        ------
        ChunkNotFoundError
            If the file is missing.
        FormatError
            If its headers are invalid, it is truncated, or its Blosc header
            announces another size than the carray's metadata implies (checked
            before any memory is allocated for it).
        DatasetChangedError
            In mode 'r', when a writer committed since the reader opened.
        """
        expected = self.chunk_nbytes  # None for object chunks, whose size varies
        data = self.read_file(nchunk, self.limit())
        path = self.path(nchunk)
        self.store.check_reading()
        view = split_chunk_file(data, path)
        chunk_ = chunk(view, self.atom, self.cparams, _memory=False, _compr=True, _where=path)
        if expected is not None:
            _check_size(path, chunk_.nbytes, expected)
        return chunk_

    def get_many(self, nchunks) -> dict:
        """``{nchunk: bytes}`` of several full chunk files, fetched together."""
        return self.read_files(nchunks, self.limit())

    def check_reading(self) -> None:
        """Raise :class:`DatasetChangedError` when a writer committed since a reader
        opened (after reads made with ``check=False``)."""
        self.store.check_reading()

    def check_header(self, nchunk: int) -> None:
        """Check that full chunk file ``nchunk`` announces ``chunk_nbytes`` bytes
        (reading the file, not decompressing it).

        Raises
        ------
        ChunkNotFoundError, FormatError
            As :meth:`read`.
        """
        if self.chunk_nbytes is None:
            return
        data = self.read_file(nchunk, self.limit())
        path = self.path(nchunk)
        _check_size(path, chunk_file_nbytes(data, path), self.chunk_nbytes)

    def decode_into(self, nchunk: int, data: bytes, out: np.ndarray) -> None:
        """Decompress the bytes ``data`` of chunk file ``nchunk`` into ``out``.

        Raises
        ------
        FormatError, CodecError
            As :meth:`read_into`.
        """
        path = self.path(nchunk)
        nbytes = chunk_file_nbytes(data, path)
        _check_size(path, nbytes, out.nbytes)
        codec.decompress_checked(memoryview(data)[BLOSCPACK_HEADER_LENGTH:], out, nbytes, path)

    def read_into(self, nchunk: int, out: np.ndarray, check: bool = True) -> None:
        """Decompress chunk file ``nchunk`` straight into ``out``.

        The fast read path: no :class:`chunk` object, one header check.

        Parameters
        ----------
        nchunk : int
            0 <= nchunk <= nchunks (``nchunks`` is the leftover's file).
        out : numpy.ndarray, C-contiguous, writeable
            As many bytes as the chunk holds: ``chunk_nbytes``, or the
            leftover's size.
        check : bool, default True
            Ask, once the file is read, whether a writer committed since a
            reader opened.  A read of many chunks asks once after the last
            instead (a commit replaces files only after its record exists, so
            one check after all the reads covers each of them).

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError
            As :meth:`read`.
        DatasetChangedError
            In mode 'r', when a writer committed since the reader opened.
        """
        data = self.read_file(nchunk, self.limit(out.nbytes))
        if check:
            self.store.check_reading()
        try:
            self.decode_into(nchunk, data, out)
        except (FormatError, CodecError):
            self.store.check_reading(failed=True)   # a writer's commit, not damage?
            raise

    def __getitem__(self, nchunk):
        if isinstance(nchunk, slice):
            return [self[i] for i in range(*nchunk.indices(self.nchunks))]
        if nchunk < 0:
            nchunk += self.nchunks
        if not 0 <= nchunk < self.nchunks:
            raise IndexError(f"chunk {nchunk} out of range (0..{self.nchunks - 1})")
        if self._cached[0] == nchunk:
            return self._cached[1]
        chunk_ = self.read(nchunk)
        self._cached = (nchunk, chunk_)
        return chunk_

    def __iter__(self):
        for i in range(self.nchunks):
            yield self[i]

    def digest(self, chunk_: chunk) -> str:
        """The checksum of ``chunk_``'s file, as the store records it (computed
        ahead by the thread that compressed it; see :meth:`write`)."""
        return self.store.digest(chunk_file_parts(chunk_))

    def write(self, nchunk: int, chunk_: chunk, digest: str | None = None) -> None:
        """Write ``chunk_`` as file ``nchunk`` (bloscpack header + Blosc bytes);
        ``digest`` is its :meth:`digest` when already computed."""
        self.store.set(chunk_key(nchunk), chunk_file_parts(chunk_), digest)
        if self.stats is not None:      # the writer records them again when it knows them
            self.stats.forget(nchunk)
        if self._cached[0] == nchunk:
            self._cached = (-1, None)

    def __setitem__(self, nchunk: int, chunk_: chunk) -> None:
        self.write(nchunk, chunk_)

    def append(self, chunk_: chunk, digest: str | None = None) -> None:
        self.write(self.nchunks, chunk_, digest)
        self.nchunks += 1

    def write_ahead(self, nchunk: int, chunk_: chunk):
        """Write ``chunk_`` as file ``nchunk`` from any thread (the one that
        compressed it: the md5 is taken while the bytes are in its cache);
        :meth:`append_ahead` then stages it, in order."""
        return self.store.write_ahead(chunk_key(nchunk), chunk_file_parts(chunk_))

    def append_ahead(self, chunk_: chunk, written) -> None:
        """Append ``chunk_``, whose file :meth:`write_ahead` wrote as the next one.

        Raises
        ------
        ValueError
            When it was written as another chunk file.
        """
        self.store.stage_ahead(chunk_key(self.nchunks), written)
        if self.stats is not None:
            self.stats.forget(self.nchunks)
        if self._cached[0] == self.nchunks:
            self._cached = (-1, None)
        self.nchunks += 1

    def pop(self) -> chunk:
        """Remove the last full chunk file (and any leftover file after it)."""
        nchunk = self.nchunks - 1
        chunk_ = self[nchunk]
        self.store.delete(chunk_key(nchunk))
        self.store.delete(chunk_key(nchunk + 1))
        self.nchunks -= 1
        if self.stats is not None:
            self.stats.truncate(self.nchunks)
        self._cached = (-1, None)
        return chunk_

    def free_cachemem(self) -> None:
        """Drop the cached chunk."""
        self._cached = (-1, None)


def quantize(data: np.ndarray, digits: int) -> np.ndarray:
    """Round floating point ``data`` to keep ``digits`` significant decimal digits.

    Source: bcolz's quantize filter: with precision ``10**-digits``, take
    ``bits = ceil(log2(10**-floor(log10(precision))))`` and return
    ``around(2**bits * data) / 2**bits``.  Non-float data is returned unchanged.
    """
    if data.dtype.kind != "f" or not digits:
        return data
    # math.log(x, 10), not log10: its rounding decides bits, as in bcolz.
    exponent = math.floor(math.log(10.0 ** -digits, 10))
    bits = math.ceil(math.log2(10.0 ** -exponent))
    scale = 2.0 ** bits
    return np.around(scale * data) / scale
