"""Arrow buffers <-> the chunks of a vlen carray (:mod:`bcolz_store.kinds.vlen.chunk`).

Rows are encoded from Arrow's layout (offsets, the items' bytes, a
validity) straight into vlen chunks (:meth:`VlenEngine.encode_rows
<bcolz_store.kinds.vlen.engine.VlenEngine.encode_rows>`: the bytes the
items' own encoding writes), several chunks at a time on the pool of
:mod:`bcolz_store.threads`; they fill the engine's leftover first, and the
rows after the last full chunk become its new leftover.  Reads decode the
chunks a range covers to their data regions and ends
(:meth:`VlenEngine.chunk_rows
<bcolz_store.kinds.vlen.engine.VlenEngine.chunk_rows>`), joined into one
set of buffers.  Python objects are made only for the leftover's items and
for :func:`rows_to_items` (a caller's ``c[:]``).
"""

from __future__ import annotations

import numpy as np

from ... import threads
from .chunk_buffers import arrow_stats, bad_utf8_item
from .chunk_rebuild import rebuild_items
from ..buffers import ArrowBuffers, concat_buffers

__all__ = ["arrow_items", "decode_rows", "encode_rows", "rows_to_items"]


def _compact(buffers: ArrowBuffers) -> ArrowBuffers:
    """``buffers`` with int64 offsets from 0 and the validity None when every row
    is present."""
    buffers = buffers.compact_offsets()
    offsets = np.asarray(buffers.offsets, dtype=np.int64)
    validity = buffers.validity
    if validity is not None and buffers.null_count == 0:
        validity = None
    values = buffers.values if buffers.values is not None else np.empty(0, dtype=np.uint8)
    return ArrowBuffers(buffers.length, validity, offsets, values.view(np.uint8), type=buffers.type)


def rows_to_items(buffers: ArrowBuffers, kind: str, dtype) -> np.ndarray:
    """The rows of ``buffers`` as a numpy array of ``dtype`` (a ``StringDType``,
    or object for bytes), missing rows None; no Python loop per row."""
    rows = _compact(buffers)
    n = rows.length
    lengths = np.diff(rows.offsets)
    data = rows.values[:int(rows.offsets[-1])] if n else rows.values[:0]
    if rows.validity is not None:
        dropped = lengths * ~rows.validity
        if dropped.any():
            data = data[np.repeat(rows.validity, lengths)]
            lengths = lengths - dropped
    ends = np.cumsum(lengths) if n else lengths
    out = rebuild_items(data.tobytes(), ends, kind, dtype, "Arrow rows")
    if rows.validity is not None:
        out[~rows.validity] = None
    return out


def _entry(rows: ArrowBuffers, kind: str, stats):
    """The statistics of a chunk of ``rows`` as ``stats.of`` gives them for its items."""
    try:
        import pyarrow as pa
    except ImportError:     # pragma: no cover - pyarrow made the buffers, mostly
        return stats.of(rows_to_items(rows, kind, np.dtypes.StringDType(na_object=None)
                                      if kind == "str" else np.dtype(object)))
    from ..arrow import to_pyarrow
    return arrow_stats(to_pyarrow(pa, rows, pa.large_string() if kind == "str"
                                  else pa.large_binary()))


def encode_rows(engine, buffers: ArrowBuffers) -> None:
    """Append the rows ``buffers`` (string or binary layout) to the vlen
    ``engine``.

    Raises
    ------
    ValueError
        A missing row where the carray may have none, or a str row that is
        not valid UTF-8 (before anything changes); rows too large for a chunk.
    """
    rows = _compact(buffers)
    n, kind, cl = rows.length, engine.vlen.kind, engine.chunklen
    if n == 0:
        return
    if rows.validity is not None and not engine.vlen.nullable:
        first = int(np.flatnonzero(~rows.validity)[0])
        raise ValueError(f"row {first} is missing (null): this vlen carray was created "
                         f"without missing items (nullable=False)")
    if kind == "str":
        bad = bad_utf8_item(rows.offsets, rows.values)
        if bad is not None:
            raise ValueError(f"row {bad} is not valid UTF-8")
    pos = 0
    if engine.nleft:            # fill the leftover: its items are numpy items already
        take = min(cl - engine.nleft, n)
        engine.append(rows_to_items(rows.slice(0, take), kind, engine.atom))
        pos = take
        if pos == n:
            return
    nfull = (n - pos) // cl
    starts = list(range(pos, pos + nfull * cl, cl))
    keep_stats = engine.stats is not None

    def encode(start):
        part = rows.slice(start, start + cl)
        data = engine.encode_rows(part.offsets, part.values, part.validity)
        return data, (_entry(part, kind, engine.stats) if keep_stats else None)

    done = list(threads.map_ordered(encode, starts))
    rest = rows.slice(pos + nfull * cl, n)
    items = rows_to_items(rest, kind, engine.atom) if rest.length else \
        np.empty(0, dtype=engine.atom)
    rest_chunk = engine.encode_rows(rest.offsets, rest.values, rest.validity) \
        if rest.length else None
    engine.append_encoded([d for d, _ in done], [e for _, e in done], items, rest_chunk)


def decode_rows(engine, start: int, stop: int) -> ArrowBuffers:
    """Rows ``[start, stop)`` of the vlen ``engine`` as Arrow buffers (int64
    offsets from 0, the validity None when every row is present).

    Raises
    ------
    ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
        As the chunk reads.
    """
    if stop <= start:
        return ArrowBuffers(0, None, np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint8))
    cl, nfull = engine.chunklen, engine.nchunks
    first, last = start // cl, (stop - 1) // cl
    full = list(range(first, min(last + 1, nfull)))
    parts = list(threads.map_ordered(engine.chunk_rows, full))
    if last >= nfull:
        parts.append(engine.chunk_rows(nfull))
    out = []
    for c, (ends, data, valid) in zip(range(first, last + 1), parts):
        lo, hi = max(start, c * cl) - c * cl, min(stop, (c + 1) * cl) - c * cl
        offsets = np.empty(hi - lo + 1, dtype=np.int64)
        offsets[0] = ends[lo - 1] if lo else 0
        offsets[1:] = ends[lo:hi]
        out.append(ArrowBuffers(hi - lo, None if valid is None else valid[lo:hi], offsets, data))
    return _compact(concat_buffers(out))


def arrow_items(array, request):
    """``(ArrowBuffers, item_nbytes)`` of the initial items of a new vlen carray
    given as a list (or tuple) of str (or of bytes) and None, built by
    pyarrow: the rows its encoder takes, and the average bytes of an item as
    :func:`~.chunk_items.average_nbytes` samples them (so the chunk length is
    the one the items would get).

    None when pyarrow is not installed, the items are not all of
    ``request``'s kind (or None), ``request`` trains a dictionary on them, or
    holds no missing item while some are None: the caller's own conversion
    then takes them, and raises its errors.
    """
    if not isinstance(array, (list, tuple)) or not array or request.dictionary is not False:
        return None
    try:
        import pyarrow as pa
    except ImportError:                 # pragma: no cover (the optional dependency)
        return None
    item = str if request.kind == "str" else bytes
    if not set(map(type, array)) <= {item, type(None)}:   # (pyarrow would convert others)
        return None
    typ = pa.large_string() if request.kind == "str" else pa.large_binary()
    try:
        arr = pa.array(array, type=typ)
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError):
        return None
    if arr.null_count and request.nullable is False:
        return None
    from ..arrow import from_pyarrow
    rows = from_pyarrow(pa, arr)
    step = max(len(arr) // 4096, 1)           # (average_nbytes' sample)
    lengths = np.diff(rows.offsets)[::step]
    if rows.validity is not None:
        lengths = lengths[rows.validity[::step]]
    return rows, float(lengths.mean()) if len(lengths) else 1.0
