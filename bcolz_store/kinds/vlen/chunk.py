"""One chunk of variable-length items (``str`` or ``bytes``) <-> bytes.

A vlen chunk is the 32-byte header of kinds/vlen/chunk_header.py (magic ``bvlc``,
kind, flags, ``nitems``, ``rawbytes``, ``dict_id``, ``cbytes``) followed by one
zstd frame.

The zstd frame (content size, dictionary id and XXH64 content checksum
recorded, all checked on reading) holds the payload of ``rawbytes`` bytes::

    |--- data region ---|--- idata manifest ---|--- validity bitmap ---|
      the items, end to    postfix, see            ceil(nitems / 8) bytes,
      end, no separators   format/idata.py         only if flags & 0x01

* ``str`` items are stored as UTF-8, ``bytes`` items as they are.
* A missing item (``None``) takes 0 bytes in the data region, like an empty
  item; the validity bitmap tells them apart.  Bit ``i`` (least significant
  bit first in each byte, ``np.packbits(bitorder="little")``) is 1 when item
  ``i`` is present, 0 when it is missing (Arrow's convention).  The bitmap is
  written only when at least one item is missing, so chunks without missing
  items pay nothing; its padding bits are 0.
* The data region and manifest together are an IndexedData buffer, so
  ``parse_index(payload[:rawbytes - bitmap], filtered=flags & 0x02)`` finds
  every item.  :func:`encode_chunk` always sets flag 0x02: the index values
  are stored delta-coded and byte-shuffled (format/idata.py), which zstd
  compresses far better than cumulative offsets (100,000 tickers of 1..5
  letters: 216 kB instead of 407 kB); chunks without the flag hold the
  paper's plain layout and decode too.

Every field is checked on reading, so a chunk that is not exactly what
:func:`encode_chunk` writes raises :class:`~bcolz_store.errors.FormatError`
(a structural fault) or :class:`~bcolz_store.errors.CodecError` (zstd refused
the frame, or the wrong dictionary): header fields against their allowed
values and against each other; ``cbytes`` against the chunk length;
``rawbytes`` against 2 GiB and against the most a zstd frame of ``cbytes``
bytes can expand to (32768 times: a block of at most 128 KiB takes at least
4 bytes); the frame's own content size, dictionary id and checksum; the
manifest (see format/idata.py); the bitmap; the UTF-8.  Memory use is
therefore bounded by a small multiple of ``rawbytes``.

Decoding rebuilds the items without a Python loop per item (one fixed-width
cast per block where that keeps them exactly, else one decode and one split:
kinds/vlen/chunk_rebuild.py).  See benchmarks/vlen_codec.py for figures against
numcodecs' VLenUTF8.

Source: IndexedData white paper (seeds/002) for the manifest, RFC 8878 (zstd)
for the frame; checked by tests/chunks/test_vlen_codec.py (golden bytes,
round trips, hostile chunks).
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import zstandard as zstd

from ...errors import CodecError, FormatError, LimitError
from ...limits import check_alloc
from ...format.idata import pack_index, parse_index
from .chunk_header import (VLEN_CODEC_ZSTD, VLEN_FLAG_INDEX_FILTER, VLEN_FLAG_VALIDITY,
                                  VLEN_FORMAT_VERSION, VLEN_HEADER_LENGTH, VLEN_MAX_RAWBYTES,
                                  VlenHeader, kind_code, pack_vlen_header, parse_vlen_header)
from .meta import vlen_result_dtype
from .chunk_rebuild import rebuild_items

__all__ = [
    "VLEN_DEFAULT_DICT_SIZE",
    "VLEN_DEFAULT_LEVEL",
    "decode_chunk",
    "dictionary_id",
    "encode_chunk",
    "open_chunk",
    "train_chunk_dictionary",
    "train_dictionary",
]

VLEN_DEFAULT_LEVEL = 3
VLEN_DEFAULT_DICT_SIZE = 16384



# ------------------------------------------------------------ dictionaries

def _zstd_dict(dictionary, where: str = "dictionary") -> zstd.ZstdCompressionDict:
    try:
        zdict = zstd.ZstdCompressionDict(bytes(dictionary))
        dict_id = zdict.dict_id()
    except (zstd.ZstdError, TypeError, ValueError) as err:
        raise CodecError(f"{where}: not a usable zstd dictionary: {err}") from err
    if dict_id == 0:
        raise CodecError(f"{where}: the zstd dictionary has no dictionary id (raw content?); "
                         "use train_dictionary()")
    return zdict


def dictionary_id(dictionary, where: str = "dictionary") -> int:
    """The zstd dictionary id of ``dictionary`` (bytes from :func:`train_dictionary`).

    Raises
    ------
    CodecError
        If the bytes are not a zstd dictionary with a non-zero id.
    """
    return _zstd_dict(dictionary, where).dict_id()


def train_dictionary(sample_items, size: int = VLEN_DEFAULT_DICT_SIZE,
                     level: int = VLEN_DEFAULT_LEVEL) -> bytes:
    """Train a zstd dictionary on sample items, for chunks of many small items.

    Parameters
    ----------
    sample_items : list, object ndarray or StringDType ndarray of str / bytes / None
        Typical items; ``str`` are taken as UTF-8, ``None`` and empty items
        are skipped.  zstd wants many samples (thousands) of total size well
        above ``size``.
    size : int, default 16384
        Dictionary size in bytes, at least 256.
    level : int, default 3
        zstd level the dictionary's statistics are tuned for (1..22).

    Returns
    -------
    bytes
        The dictionary, to pass as ``dictionary=`` to :func:`encode_chunk`
        and :func:`decode_chunk`; it carries a non-zero zstd dictionary id.

    Raises
    ------
    ValueError
        If ``size`` is below 256 or ``level`` is not in 1..22.
    TypeError
        If an item is not str, bytes-like or None.
    CodecError
        If zstd cannot train a dictionary from these samples (too few, too
        small, too uniform).

    Notes
    -----
    A dictionary pays off for small chunks only: on 40 short e-mail-like
    items it took a chunk from 201 to 161 bytes, but on 1,000 such items the
    chunk grew from 414 to 585 bytes (zstd starts from the dictionary's
    statistics instead of fitting its own).  Measure on real chunks.
    """
    if not isinstance(size, (int, np.integer)) or size < 256:
        raise ValueError(f"dictionary size must be an integer >= 256, not {size!r}")
    _check_level(level)
    lst, na = _item_list(sample_items, "bytes", strict=False)
    samples = [s.encode("utf-8") if isinstance(s, str) else bytes(s)
               for s in lst if s is not na and s is not None and len(s)]
    try:
        zdict = zstd.train_dictionary(int(size), samples, level=level)
    except zstd.ZstdError as err:
        raise CodecError(f"zstd could not train a {size}-byte dictionary from {len(samples)} "
                         f"samples: {err}") from err
    return zdict.as_bytes()


def train_chunk_dictionary(items, kind: str, size: int = VLEN_DEFAULT_DICT_SIZE,
                           level: int = VLEN_DEFAULT_LEVEL, group: int = 256,
                           max_samples: int = 4096) -> bytes:
    """Train a zstd dictionary on chunk payloads made of runs of ``items``.

    zstd compresses a chunk's whole payload (the items end to end, then their
    index), so a dictionary trained on such payloads, built from ``group``
    consecutive items at a time, fits what it will see; one trained on the
    items one by one does not (on 2 million tickers it made chunks of 4,096
    of them 2% larger, this one 4% smaller).

    Parameters
    ----------
    items : list, object ndarray or StringDType ndarray
        Consecutive items of the column (missing ones allowed).
    kind : {'str', 'bytes'}
    size : int, default 16384
        Dictionary size in bytes, at least 256.
    level : int, default 3
        zstd level the dictionary is tuned for (1..22).
    group : int, default 256
        Items per sample payload.
    max_samples : int, default 4096
        At most this many payloads, spread evenly over ``items``.

    Returns
    -------
    bytes
        The dictionary (with a non-zero zstd dictionary id).

    Raises
    ------
    ValueError
        A bad ``size``, ``level``, ``kind`` or ``group``.
    TypeError
        Items of another kind.
    CodecError
        When zstd cannot train a dictionary from these payloads (too few or
        too small: give more items).
    """
    kind_code(kind)
    _check_level(level)
    if not isinstance(size, (int, np.integer)) or size < 256:
        raise ValueError(f"dictionary size must be an integer >= 256, not {size!r}")
    if not isinstance(group, (int, np.integer)) or group < 1:
        raise ValueError(f"group must be a positive integer, not {group!r}")
    n = len(items)
    starts = range(0, n, group)
    step = max(len(starts) // max_samples, 1)
    samples = []
    for start in starts[::step]:
        data, manifest, bitmap, _ = _payload_parts(items[start:start + group], kind)
        samples.append(b"".join((data, manifest, bitmap)))
    try:
        zdict = zstd.train_dictionary(int(size), samples, level=int(level))
    except zstd.ZstdError as err:
        raise CodecError(f"zstd could not train a {size}-byte dictionary from {len(samples)} "
                         f"payloads of {group} items: {err}") from err
    return zdict.as_bytes()


# ---------------------------------------------------------------- encode

def _check_level(level) -> None:
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or not 1 <= level <= 22:
        raise ValueError(f"zstd level must be an integer in 1..22, not {level!r}")


def _item_list(items, kind: str, strict: bool = True):
    """The items as a list, and the object that marks a missing item in it."""
    if isinstance(items, np.ndarray):
        if items.ndim != 1:
            raise ValueError(f"vlen items must be one-dimensional, not shape {items.shape}")
        if items.dtype.kind == "T":
            if strict and kind != "str":
                raise TypeError("a StringDType array can only be stored in a 'str' chunk")
            return items.tolist(), getattr(items.dtype, "na_object", None)
        if items.dtype.kind not in "OUS":
            raise TypeError(f"cannot store a {items.dtype} array in a vlen chunk")
        return items.tolist(), None
    if isinstance(items, (str, bytes)):
        raise TypeError("vlen items must be a sequence of items, not a single str/bytes")
    return (items if isinstance(items, list) else list(items)), None


def _lengths(items):
    """``len`` of every item, or None when some item has none (a missing item)."""
    try:
        return np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    except TypeError:
        return None


def _join_str(items, nchars, positions):
    """UTF-8 data region and byte lengths of str items.

    ``nchars`` are the items' lengths in characters; ``positions`` maps an
    index into ``items`` to the item's position in the chunk (for messages).
    """
    try:
        text = "".join(items)
    except TypeError as err:
        raise TypeError(f"items of a 'str' chunk must be str or None ({err})") from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        i = int(np.searchsorted(np.cumsum(nchars), err.start, side="right"))
        raise ValueError(f"item {positions(i)} cannot be encoded as UTF-8: {err.reason}") from None
    if len(data) == len(text):  # every item is ASCII: bytes == characters
        return data, nchars
    wide = np.fromiter(map(str.isascii, items), dtype=bool, count=len(items))
    np.logical_not(wide, out=wide)
    sub = list(itertools.compress(items, wide.tolist()))
    nbytes = nchars.copy()
    nbytes[wide] = np.fromiter(map(len, map(str.encode, sub)), dtype=np.int64, count=len(sub))
    return data, nbytes


def _join_bytes(items, nbytes):
    try:
        data = b"".join(items)
    except TypeError as err:
        raise TypeError(f"items of a 'bytes' chunk must be bytes-like or None ({err})") from None
    if nbytes is None or int(nbytes.sum()) != len(data):
        raise TypeError("items of a 'bytes' chunk must be byte buffers (itemsize 1)")
    return data, nbytes


def _payload_parts(items, kind: str):
    """(data region, manifest, bitmap, nitems) of the items."""
    lst, na = _item_list(items, kind)
    n = len(lst)
    present, valid = lst, None
    # Fast path: when every item has a len(), none is None (a sentinel
    # na_object is looked for by identity instead).
    lengths = _lengths(lst) if na is None else None
    if lengths is None:
        valid = np.fromiter(map(operator.is_not, lst, itertools.repeat(na)), dtype=bool, count=n)
        if valid.all():
            valid = None
        else:
            present = list(itertools.compress(lst, valid.tolist()))
        lengths = _lengths(present)
    index = np.flatnonzero(valid) if valid is not None else None
    if kind == "str":
        data, nbytes = _join_str(present, lengths,
                                 lambda i: int(index[i]) if index is not None else i)
    else:
        data, nbytes = _join_bytes(present, lengths)
    if valid is not None:
        full = np.zeros(n, dtype=np.int64)
        full[valid] = nbytes
        nbytes = full
    manifest = pack_index(np.cumsum(nbytes), filtered=True)
    bitmap = b"" if valid is None else np.packbits(valid, bitorder="little").tobytes()
    return data, manifest, bitmap, n


def encode_chunk(items, kind: str, level: int = VLEN_DEFAULT_LEVEL, dictionary=None) -> bytes:
    """Encode variable-length items as one vlen chunk (layout in the module docstring).

    Parameters
    ----------
    items : list, 1-D object ndarray, or 1-D StringDType ndarray
        ``str`` (kind 'str') or bytes-like (kind 'bytes') items, of any
        length; ``None`` (or the StringDType's ``na_object``) for a missing
        item.  Fixed-width ``U``/``S`` arrays are accepted as numpy's
        ``tolist`` gives them (trailing NULs dropped).
    kind : {'str', 'bytes'}
        'str' stores UTF-8; 'bytes' stores the bytes as they are.
    level : int, default 3
        zstd compression level, 1..22.
    dictionary : bytes, optional
        A zstd dictionary from :func:`train_dictionary`; its id is recorded
        in the header and the same dictionary must be given to decode.

    Returns
    -------
    bytes
        The chunk: 32-byte header and one zstd frame.

    Raises
    ------
    ValueError
        If ``kind`` or ``level`` is invalid, an array is not one-dimensional,
        a str cannot be encoded as UTF-8 (lone surrogate), or the payload
        would exceed 2 GiB (split the items over more chunks).
    TypeError
        If an item is not of the kind's type (or None).
    CodecError
        If ``dictionary`` is not a zstd dictionary with an id, or zstd fails.

    Examples
    --------
    >>> decode_chunk(encode_chunk(["a", None, ""], "str"), "str").tolist()
    ['a', None, '']
    """
    kind_code(kind)
    _check_level(level)
    data, manifest, bitmap, nitems = _payload_parts(items, kind)
    rawbytes = len(data) + len(manifest) + len(bitmap)
    if rawbytes > VLEN_MAX_RAWBYTES:
        raise ValueError(f"{nitems} items take {rawbytes} bytes, above the {VLEN_MAX_RAWBYTES}"
                         "-byte limit of one vlen chunk; use more chunks")
    zdict = _zstd_dict(dictionary) if dictionary is not None else None
    params = dict(level=int(level), write_checksum=True, write_content_size=True,
                  write_dict_id=True)
    try:
        if zdict is not None:
            params["dict_data"] = zdict
        cctx = zstd.ZstdCompressor(**params)
        frame = cctx.compress(b"".join((data, manifest, bitmap)))
    except zstd.ZstdError as err:
        raise CodecError(f"zstd could not compress {rawbytes} bytes: {err}") from err
    flags = VLEN_FLAG_INDEX_FILTER | (VLEN_FLAG_VALIDITY if bitmap else 0)
    header = VlenHeader(VLEN_FORMAT_VERSION, kind, flags, VLEN_CODEC_ZSTD, nitems, rawbytes,
                        zdict.dict_id() if zdict is not None else 0, len(frame))
    return pack_vlen_header(header) + frame


# ---------------------------------------------------------------- decode

def _decompress(frame, hdr: VlenHeader, dictionary, where: str) -> bytes:
    """The payload, after checking the frame against the header."""
    zdict = None
    if hdr.dict_id:
        if dictionary is None:
            raise CodecError(f"{where}: chunk was compressed with zstd dictionary {hdr.dict_id}; "
                             "pass that dictionary to decode it")
        zdict = _zstd_dict(dictionary, where)
        if zdict.dict_id() != hdr.dict_id:
            raise CodecError(f"{where}: chunk needs zstd dictionary {hdr.dict_id}, "
                             f"the one given has id {zdict.dict_id()}")
    try:
        params = zstd.get_frame_parameters(frame)
    except zstd.ZstdError as err:
        raise CodecError(f"{where}: not a zstd frame: {err}") from err
    if params.content_size != hdr.rawbytes:
        raise FormatError(f"{where}: zstd frame declares {params.content_size} bytes, "
                          f"header says {hdr.rawbytes}")
    if params.dict_id != hdr.dict_id:
        raise FormatError(f"{where}: zstd frame names dictionary {params.dict_id}, "
                          f"header says {hdr.dict_id}")
    if not params.has_checksum:
        raise FormatError(f"{where}: zstd frame has no content checksum")
    # the payload, and the items made from it (docs/durability.md, memory)
    check_alloc(2 * hdr.rawbytes, f"{where}: decoding a vlen chunk of {hdr.rawbytes} bytes")
    try:
        if zdict is not None:
            dctx = zstd.ZstdDecompressor(dict_data=zdict)
        else:
            dctx = zstd.ZstdDecompressor()
        raw = dctx.decompress(frame, max_output_size=hdr.rawbytes, allow_extra_data=False)
    except zstd.ZstdError as err:
        raise CodecError(f"{where}: zstd could not decompress the chunk: {err}") from err
    except MemoryError:
        raise LimitError(f"{where}: no memory to decompress {hdr.rawbytes} bytes") from None
    if len(raw) != hdr.rawbytes:
        raise FormatError(f"{where}: decompressed {len(raw)} bytes, header says {hdr.rawbytes}")
    return raw


def _read_validity(raw: bytes, hdr: VlenHeader, ends: np.ndarray, where: str):
    """The validity mask (None when no item is missing), checked."""
    if not hdr.has_validity:
        return None
    n = hdr.nitems
    bits = np.frombuffer(raw, dtype=np.uint8, count=hdr.bitmap_nbytes,
                         offset=len(raw) - hdr.bitmap_nbytes)
    valid = np.unpackbits(bits, bitorder="little").view(bool)
    if valid[n:].any():
        raise FormatError(f"{where}: validity bitmap has padding bits set")
    valid = valid[:n]
    if valid.all():
        raise FormatError(f"{where}: validity bitmap present but no item is missing")
    lengths = np.diff(ends, prepend=0)
    bad = np.flatnonzero(~valid & (lengths != 0))
    if bad.size:
        raise FormatError(f"{where}: missing item {int(bad[0])} has {int(lengths[bad[0]])} bytes")
    return valid


def open_chunk(buf, kind: str, where: str, dictionary=None):
    """``(header, payload, ends, validity)`` of the vlen chunk ``buf`` of ``kind``
    items: its header checked, its frame decompressed, its manifest parsed
    (``ends``: the end of each item in the data region) and its validity
    bitmap read (None when every item is present).

    Raises
    ------
    FormatError, CodecError, LimitError
        As :func:`decode_chunk`.
    """
    hdr = parse_vlen_header(buf, where)
    if hdr.kind != kind:
        raise FormatError(f"{where}: chunk holds {hdr.kind} items, expected {kind}")
    raw = _decompress(memoryview(buf)[VLEN_HEADER_LENGTH:], hdr, dictionary, where)
    ends = parse_index(memoryview(raw)[:hdr.rawbytes - hdr.bitmap_nbytes], where,
                       filtered=hdr.index_filtered)
    if ends.size != hdr.nitems:
        raise FormatError(f"{where}: manifest holds {ends.size} items, header says {hdr.nitems}")
    return hdr, raw, ends, _read_validity(raw, hdr, ends, where)


def decode_chunk(buf, kind: str, where: str = "vlen chunk", dictionary=None,
                 out=None) -> np.ndarray:
    """Decode a vlen chunk written by :func:`encode_chunk`.

    Safe on hostile input: any chunk that is not exactly what
    :func:`encode_chunk` writes raises FormatError or CodecError, and memory
    use is the payload (the header's ``rawbytes``: at most 2 GiB and 32768
    times the chunk size) and its items, checked against the memory ceiling
    before decompressing (docs/durability.md).

    Parameters
    ----------
    buf : bytes-like
        The whole chunk.
    kind : {'str', 'bytes'}
        The kind the caller expects; must match the header.
    where : str, default "vlen chunk"
        Names the file or chunk in error messages.
    dictionary : bytes, optional
        The zstd dictionary the chunk was written with (ignored for chunks
        written without one).
    out : numpy.ndarray, optional
        Where to write the items: one-dimensional, ``nitems`` long, of the
        dtype the chunk decodes to or a ``StringDType`` with
        ``na_object=None`` (so that a whole read needs no second copy).

    Returns
    -------
    numpy.ndarray, shape (nitems,)
        kind 'str': ``StringDType()`` on numpy >= 2, ``StringDType(na_object=None)``
        when the chunk has missing items (they read as None); an object array
        of str (None for missing) on older numpy.  kind 'bytes': an object
        array of bytes, None for missing items.

    Raises
    ------
    ValueError
        If ``kind`` is not 'str' or 'bytes'.
    FormatError
        If the header, the zstd frame's parameters, the manifest, the
        validity bitmap or the UTF-8 are malformed, or the header's kind is
        not ``kind``.
    CodecError
        If zstd cannot decompress the frame (corrupt, checksum mismatch), or
        the chunk needs a dictionary that was not given or differs.
    LimitError
        If the payload and its items (twice ``rawbytes``, plus the longest
        str item) are over :func:`bcolz_store.limits.memory_ceiling`.
    """
    kind_code(kind)
    hdr, raw, ends, valid = open_chunk(buf, kind, where, dictionary)
    dtype = vlen_result_dtype(kind, valid is not None)
    if kind == "str" and ends.size:     # a str is made of an item on its way to the result
        longest = int(np.diff(ends, prepend=0).max())
        if longest > 1 << 20:
            check_alloc(2 * hdr.rawbytes + longest, f"{where}: decoding an item of {longest} bytes")
    if out is not None:
        if out.shape != (hdr.nitems,):
            raise ValueError(f"out has shape {out.shape}, the chunk holds {hdr.nitems} items")
        if valid is not None and out.dtype.kind == "T" and not hasattr(out.dtype, "na_object"):
            raise ValueError("out cannot hold missing items (a StringDType without na_object)")
    try:
        out = rebuild_items(raw, ends, kind, dtype, where, out)
    except MemoryError:
        raise LimitError(f"{where}: no memory for the {hdr.nitems} items of "
                         f"{hdr.rawbytes} bytes") from None
    if valid is not None:
        out[~valid] = None
    return out
