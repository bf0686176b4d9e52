"""vlen chunks (:mod:`bcolz_store.kinds.vlen.chunk`) straight from and to Arrow's
buffers: offsets, the items' bytes end to end, a validity.

:func:`encode_buffers` writes exactly the bytes :func:`~.vlen.encode_chunk`
writes for the same items, with no Python object per item: the data region
is the items' bytes as they are (a missing item's bytes, which Arrow allows,
are dropped), the IndexedData manifest is packed from the offsets with
numpy, the bitmap is the validity's.  :func:`decode_buffers` gives a chunk's
rows back as ``(ends, data, validity)``, after the checks
:func:`~.vlen.decode_chunk` makes (header, frame, manifest, bitmap, UTF-8).

:func:`check_utf8` tells whether items are each valid UTF-8 (one C decode of
their bytes, and no item starting on a continuation byte); ASCII data is
found by one numpy pass.
"""

from __future__ import annotations

import codecs

import numpy as np
import zstandard as zstd

from ...errors import CodecError, FormatError
from ...format.idata import pack_index
from ...format.stats_meta import MAX_STATS_TEXT, NOT_KEPT
from .chunk_header import (VLEN_CODEC_ZSTD, VLEN_FLAG_INDEX_FILTER, VLEN_FLAG_VALIDITY,
                                  VLEN_FORMAT_VERSION, VLEN_MAX_RAWBYTES, VlenHeader, kind_code,
                                  pack_vlen_header)
from .chunk import _check_level, _zstd_dict, open_chunk

__all__ = ["arrow_rows", "arrow_stats", "bad_utf8_item", "decode_buffers", "encode_buffers",
           "payload_of_buffers"]


def bad_utf8_item(offsets: np.ndarray, data: np.ndarray) -> int | None:
    """The first row whose bytes are not valid UTF-8, or None when every row's are.

    ``offsets`` (``n + 1`` of them, any start) index ``data`` (``uint8``).
    """
    lo, hi = int(offsets[0]), int(offsets[-1])
    region = data[lo:hi]
    if region.size == 0 or int(region.max()) < 0x80:
        return None
    try:
        codecs.utf_8_decode(region, "strict", True)
    except UnicodeDecodeError as err:
        return max(int(np.searchsorted(offsets, lo + err.start, side="right")) - 1, 0)
    starts = offsets[:-1]
    nonempty = starts < offsets[1:]
    cont = np.zeros(starts.size, dtype=bool)
    cont[nonempty] = (data[starts[nonempty]] & 0xC0) == 0x80
    found = np.flatnonzero(cont)
    return int(found[0]) if found.size else None


def _present_bytes(offsets: np.ndarray, data: np.ndarray, validity: np.ndarray,
                   lengths: np.ndarray) -> np.ndarray:
    """The bytes of the present rows (``validity`` True) of ``offsets``
    (int64, ``n + 1``) into ``data``, end to end: pyarrow's ``drop_null`` of
    the rows when pyarrow is installed (one copy per row run), else a byte
    mask."""
    try:
        import pyarrow as pa
    except ImportError:             # pragma: no cover - pyarrow is optional
        pa = None
    if pa is not None:
        bits = np.packbits(validity, bitorder="little")
        rows = pa.Array.from_buffers(
            pa.large_binary(), len(validity),
            [pa.py_buffer(bits), pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64)),
             pa.py_buffer(np.ascontiguousarray(data))]).drop_null()
        if not len(rows) or rows.buffers()[2] is None:
            return np.empty(0, dtype=np.uint8)
        kept = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset:]
        values = np.frombuffer(rows.buffers()[2], dtype=np.uint8)
        return values[int(kept[0]):int(kept[len(rows)])]
    lo, hi = int(offsets[0]), int(offsets[-1])
    return data[lo:hi][np.repeat(validity, lengths)]


def payload_of_buffers(offsets: np.ndarray, data: np.ndarray, validity) -> tuple:
    """``(data region, manifest, bitmap)`` of a chunk of the rows ``offsets``
    (``n + 1``, any start) into ``data`` (``uint8``), ``validity`` a bool
    array or None: what :func:`~.vlen.encode_chunk` joins and compresses."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets)
    region = data[lo:hi]
    if validity is not None and bool(validity.all()):
        validity = None
    if validity is not None:
        dropped = lengths * ~validity
        if dropped.any():           # missing rows with bytes: keep only the present rows'
            region = _present_bytes(offsets, data, validity, lengths)
            lengths = lengths - dropped
    ends = np.cumsum(lengths) if lengths.size else lengths
    manifest = pack_index(ends, filtered=True)
    bitmap = b"" if validity is None else np.packbits(validity, bitorder="little").tobytes()
    return region, manifest, bitmap


def encode_buffers(offsets: np.ndarray, data: np.ndarray, validity, kind: str,
                   level: int, dictionary=None) -> bytes:
    """The vlen chunk of the rows ``offsets``/``data``/``validity`` (see
    :func:`payload_of_buffers`): the bytes :func:`~.vlen.encode_chunk` writes
    for the same items.  The items of a 'str' chunk must be valid UTF-8
    (:func:`bad_utf8_item` checks it; not checked here).

    Raises
    ------
    ValueError
        A bad ``kind`` or ``level``, or a payload above a chunk's 2 GiB.
    CodecError
        ``dictionary`` is not a zstd dictionary with an id, or zstd fails.
    """
    kind_code(kind)
    _check_level(level)
    nitems = len(offsets) - 1
    region, manifest, bitmap = payload_of_buffers(offsets, data, validity)
    rawbytes = region.size + len(manifest) + len(bitmap)
    if rawbytes > VLEN_MAX_RAWBYTES:
        raise ValueError(f"{nitems} items take {rawbytes} bytes, above the {VLEN_MAX_RAWBYTES}"
                         "-byte limit of one vlen chunk; use more chunks")
    zdict = _zstd_dict(dictionary) if dictionary is not None else None
    params = dict(level=int(level), write_checksum=True, write_content_size=True,
                  write_dict_id=True)
    payload = np.empty(rawbytes, dtype=np.uint8)
    payload[:region.size] = region
    tail = manifest + bitmap
    payload[region.size:] = np.frombuffer(tail, dtype=np.uint8)
    try:
        if zdict is not None:
            params["dict_data"] = zdict
        frame = zstd.ZstdCompressor(**params).compress(payload)
    except zstd.ZstdError as err:
        raise CodecError(f"zstd could not compress {rawbytes} bytes: {err}") from err
    flags = VLEN_FLAG_INDEX_FILTER | (VLEN_FLAG_VALIDITY if bitmap else 0)
    header = VlenHeader(VLEN_FORMAT_VERSION, kind, flags, VLEN_CODEC_ZSTD, nitems, rawbytes,
                        zdict.dict_id() if zdict is not None else 0, len(frame))
    return pack_vlen_header(header) + frame


def decode_buffers(buf, kind: str, where: str = "vlen chunk", dictionary=None) -> tuple:
    """The rows of the vlen chunk ``buf`` as ``(ends, data, validity)``:
    ``ends`` (``int64``, one per row) the ends of the rows in ``data``
    (``uint8``, the data region, read-only), ``validity`` a bool array or None.

    Raises
    ------
    ValueError
        ``kind`` is not 'str' or 'bytes'.
    FormatError
        The chunk is malformed (as :func:`~.vlen.decode_chunk`), or a 'str'
        row is not valid UTF-8.
    CodecError, LimitError
        As :func:`~.vlen.decode_chunk`.
    """
    kind_code(kind)
    _, raw, ends, valid = open_chunk(buf, kind, where, dictionary)
    ends = ends.astype(np.int64, copy=False)
    data = np.frombuffer(raw, dtype=np.uint8, count=int(ends[-1]) if ends.size else 0)
    if kind == "str" and ends.size:
        offsets = np.concatenate((np.zeros(1, dtype=np.int64), ends))
        bad = bad_utf8_item(offsets, data)
        if bad is not None:
            raise FormatError(f"{where}: item {bad} is not valid UTF-8")
    return ends, data, valid


def arrow_rows(items: np.ndarray, kind: str):
    """``(pyarrow array, offsets, data, validity)`` of numpy items (a
    ``StringDType`` or object array, None for a missing item) made by
    pyarrow, or None when pyarrow is not installed or does not take them (the
    caller then encodes the items one by one, which names a bad one)."""
    if not isinstance(items, np.ndarray) or items.ndim != 1 or items.dtype.kind not in "TO" \
            or (kind == "bytes") != (items.dtype.kind == "O"):
        return None
    try:
        import pyarrow as pa
    except ImportError:         # pragma: no cover - pyarrow is optional
        return None
    try:
        arr = pa.array(items, type=pa.large_string() if kind == "str" else pa.large_binary(),
                       from_pandas=False)
    except Exception:           # noqa: BLE001 - any refusal: the items' own encoding says why
        return None
    n, off, bufs = len(arr), arr.offset, arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[off:off + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else \
        np.empty(0, dtype=np.uint8)
    validity = None
    if arr.null_count:
        bits = np.frombuffer(bufs[0], dtype=np.uint8)
        validity = np.unpackbits(bits, bitorder="little", count=off + n)[off:].view(bool)
    return arr, offsets, data, validity


def arrow_stats(arr) -> tuple:
    """``(min, max, nulls)`` of a pyarrow string or binary array, as
    ``ChunkStats.of`` gives them for the same items (``(None, None, NOT_KEPT)``
    for a least or greatest item longer than ``MAX_STATS_TEXT``)."""
    import pyarrow.compute as pc
    nulls = arr.null_count
    if nulls == len(arr):
        return None, None, nulls
    found = pc.min_max(arr)
    lo, hi = found["min"].as_py(), found["max"].as_py()
    if len(lo) > MAX_STATS_TEXT or len(hi) > MAX_STATS_TEXT:
        return None, None, NOT_KEPT
    return lo, hi, nulls
