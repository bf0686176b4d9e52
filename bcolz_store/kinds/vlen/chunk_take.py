"""A few items of a vlen chunk, without building the others.

A query that gathers a handful of rows from every chunk of a vlen column
(``fetchwhere`` of a selective condition) needs the chunk's payload and its
manifest, but only the selected items: :func:`take_items` decompresses and
checks the chunk as :func:`.vlen.decode_chunk` does, then rebuilds the
selected items alone (their bytes packed together, one rebuild).
"""

from __future__ import annotations

import numpy as np

from ...errors import FormatError, LimitError
from .meta import vlen_result_dtype
from .chunk import open_chunk
from .chunk_rebuild import rebuild_items

__all__ = ["take_items"]


def take_items(buf, kind: str, rows: np.ndarray, where: str = "vlen chunk",
               dictionary=None) -> np.ndarray:
    """Items ``rows`` (int64 positions in the chunk, any order) of a vlen chunk.

    Parameters
    ----------
    buf : bytes-like
        The whole chunk (as :func:`.vlen.encode_chunk` writes it).
    kind : {'str', 'bytes'}
        The kind the caller expects.
    rows : numpy.ndarray of int64
        Positions in ``0..nitems-1``.
    where : str
        Names the chunk in error messages.
    dictionary : bytes, optional
        The zstd dictionary the chunk was written with.

    Returns
    -------
    numpy.ndarray
        ``len(rows)`` items, of the dtype :func:`.vlen.decode_chunk` gives
        for the chunk.

    Raises
    ------
    FormatError
        A malformed header, manifest, validity bitmap or selected item (UTF-8),
        a header of another kind, or a position outside the chunk.
    CodecError
        As :func:`.vlen.decode_chunk` (zstd, dictionary).
    LimitError
        No memory for the payload.
    """
    _, raw, ends, valid = open_chunk(buf, kind, where, dictionary)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= ends.size):
        raise FormatError(f"{where}: item positions outside the chunk's {ends.size} items")
    dtype = vlen_result_dtype(kind, valid is not None)
    starts = np.where(rows > 0, ends[np.maximum(rows - 1, 0)], 0)
    stops = ends[rows]
    lengths = stops - starts
    new_ends = np.cumsum(lengths)
    total = int(new_ends[-1]) if rows.size else 0
    # the selected items' bytes, packed: each byte's source offset
    first = np.repeat(starts - (new_ends - lengths), lengths)
    u8 = np.frombuffer(raw, dtype=np.uint8)
    packed = u8[np.arange(total, dtype=np.int64) + first].tobytes()
    try:
        out = rebuild_items(packed, new_ends, kind, dtype, where)
    except MemoryError:
        raise LimitError(f"{where}: no memory for {rows.size} items") from None
    if valid is not None:
        out[~valid[rows]] = None
    return out
