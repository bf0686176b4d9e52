"""Items for a carray of variable-length ``str`` or ``bytes``: what is accepted,
how it is converted, and how many items make a chunk.

:func:`as_items` is the one conversion of user data into the dtype of a vlen
carray (``StringDType`` on numpy 2, object otherwise): a list of str, an
object array of str, a ``StringDType`` array or a fixed-width ``U`` array for
'str'; bytes-like items or an ``S`` array for 'bytes'; ``None`` for a missing
item where the carray allows them.  numpy itself turns ``None`` into
``'None'`` and ``3`` into ``'3'`` when casting to ``StringDType``; this never
does: any other item is a TypeError naming its position (a
:class:`~bcolz_store.errors.KindMismatchError` for bytes where str are kept,
or str where bytes are).
"""

from __future__ import annotations

import numpy as np

from ...chunks.missing import NAN_STRING, missing_mask
from ...errors import KindMismatchError

__all__ = ["NAN_STRING", "VLEN_CHUNK_TARGET_BYTES", "as_items", "average_nbytes",
           "missing_mask", "nbytes_estimate", "vlen_chunklen"]

# Item bytes a chunk holds, by default: large enough for zstd to find the
# repeats of many short items, small enough that reading one item decodes
# little.
VLEN_CHUNK_TARGET_BYTES = 1 << 20
_MIN_CHUNKLEN = 64
_MAX_CHUNKLEN = 1 << 20


def vlen_chunklen(expectedlen: int, avg_item_bytes: float) -> int:
    """Items per chunk for about 1 MiB of items (1 byte counted per empty item).

    Parameters
    ----------
    expectedlen : int
        Items the carray is expected to hold; a carray expected to stay
        small gets chunks of about its length.
    avg_item_bytes : float
        Average encoded size of an item (from the initial data; 16 when
        there is none).

    Returns
    -------
    int
        Between 64 and 2**20.
    """
    per_item = max(float(avg_item_bytes), 1.0) + 1.0
    chunklen = int(VLEN_CHUNK_TARGET_BYTES // per_item)
    chunklen = min(chunklen, max(int(expectedlen), _MIN_CHUNKLEN))
    return int(min(max(chunklen, _MIN_CHUNKLEN), _MAX_CHUNKLEN))


def average_nbytes(items: np.ndarray, kind: str, sample: int = 4096) -> float:
    """Average encoded size (UTF-8 for str) of a sample of ``items``; 16 when empty."""
    n = len(items)
    if n == 0:
        return 16.0
    step = max(n // sample, 1)
    picked = [v for v in items[::step].tolist() if v is not None]
    if not picked:
        return 1.0
    if kind == "str":
        return sum(len(v.encode("utf-8", "surrogatepass")) for v in picked) / len(picked)
    return sum(len(v) for v in picked) / len(picked)


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_bad(items, ok, what: str, where: str, other: tuple):
    """The error for the first item not ``ok``: a KindMismatchError when it is
    of the ``other`` kind (an instance of one of those types)."""
    for i, v in enumerate(items):
        if not ok(v):
            error = KindMismatchError if isinstance(v, other) else TypeError
            return error(f"{where}: item {i} is {_describe(v)} ({type(v).__name__}); {what}")
    return None  # pragma: no cover - called only when some item is bad


def _refuse_missing(where: str) -> ValueError:
    return ValueError(f"{where}: missing items (None) are not allowed here: the carray was "
                      f"created without them (pass nullable=True, or a vlen type with "
                      f"nullable=True, when creating it)")


def _str_items(value, dtype, nullable: bool, where: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "T":
            mask = missing_mask(value)
            if mask is not None and mask.any():
                if not nullable:
                    raise _refuse_missing(where)
                if dtype.kind == "O":      # pragma: no cover - numpy 1.x has no StringDType
                    return value.astype(object)
                out = value.astype(dtype)
                out[mask] = None
                return out
            return value.astype(dtype)
        if value.dtype.kind == "U":
            return value.astype(dtype)
        if value.dtype.kind == "S":
            raise KindMismatchError(f"{where}: a bytes ({value.dtype}) array cannot be stored "
                                    f"as str items; decode it first, or use a 'bytes' vlen "
                                    f"carray")
        if value.dtype.kind != "O":
            raise TypeError(f"{where}: a {value.dtype} array cannot be stored as str items")
        items = value.tolist()
    else:
        items = value if isinstance(value, list) else list(value)
    types = set(map(type, items))
    if not types <= {str, type(None)}:
        if not all(isinstance(v, str) or v is None for v in items):
            raise _first_bad(items, lambda v: isinstance(v, str) or v is None,
                             "str items (or None) expected", where,
                             (bytes, bytearray, memoryview))
        items = [v if v is None or type(v) is str else str(v) for v in items]
    if type(None) in types and not nullable:
        raise _refuse_missing(where)
    try:
        out = np.array(items, dtype=dtype) if items else np.empty(0, dtype=dtype)
    except UnicodeEncodeError as err:
        pos = next(i for i, v in enumerate(items) if v is not None and _not_utf8(v))
        raise ValueError(f"{where}: item {pos} cannot be stored as UTF-8 ({err.reason})") \
            from None
    if dtype.kind == "O":
        for pos, v in enumerate(items):
            if v is not None and _not_utf8(v):
                raise ValueError(f"{where}: item {pos} cannot be stored as UTF-8 "
                                 f"(surrogates not allowed)")
    return out


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _bytes_ok(v) -> bool:
    return v is None or isinstance(v, (bytes, bytearray, memoryview))


def _bytes_items(value, nullable: bool, where: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SO":
            items = value.tolist()
        elif value.dtype.kind in "TU":
            raise KindMismatchError(f"{where}: a str ({value.dtype}) array cannot be stored as "
                                    f"bytes items; encode it first, or use a 'str' vlen carray")
        else:
            raise TypeError(f"{where}: a {value.dtype} array cannot be stored as bytes items")
    else:
        items = value if isinstance(value, list) else list(value)
    types = set(map(type, items))
    if not types <= {bytes, type(None)}:
        if not all(map(_bytes_ok, items)):
            raise _first_bad(items, _bytes_ok, "bytes-like items (or None) expected", where,
                             (str,))
        items = [v if v is None or type(v) is bytes else bytes(v) for v in items]
    if not nullable and any(v is None for v in items):
        raise _refuse_missing(where)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def as_items(value, kind: str, dtype: np.dtype, nullable: bool, arrlen=None,
             where: str = "vlen carray") -> np.ndarray:
    """``value`` as a 1-D array of ``dtype`` holding ``kind`` items.

    Parameters
    ----------
    value : str, bytes, None, sequence, or numpy array
        One item (str/bytes/None) or a sequence of them: a list or tuple, an
        object array, a ``StringDType`` array (its missing items stay
        missing), a ``U`` array ('str'), an ``S`` array ('bytes'; numpy
        drops trailing NUL bytes of ``S`` items), or any iterable.
    kind : {'str', 'bytes'}
    dtype : numpy.dtype
        The carray's dtype (``StringDType`` or object).
    nullable : bool
        Whether None (a missing item) is allowed.
    arrlen : int, optional
        The number of items wanted: one item is repeated ``arrlen`` times,
        a sequence must have that length.
    where : str
        Names the carray in messages.

    Returns
    -------
    numpy.ndarray, shape (n,), of ``dtype``

    Raises
    ------
    KindMismatchError
        An item, or an array, of the other kind (bytes for 'str', str for
        'bytes'); a ``TypeError``.
    TypeError
        An item of another type (the message gives its position), or an
        array of another dtype kind.
    ValueError
        None where missing items are not allowed, a str that cannot be
        encoded as UTF-8 (a lone surrogate), a multidimensional array, or a
        sequence whose length is not ``arrlen``.
    """
    single = value is None or isinstance(value, (str, bytes, bytearray, np.str_, np.bytes_))
    if single:
        value = [value]
    elif isinstance(value, np.ndarray) and value.ndim != 1:
        if value.ndim == 0:
            value = value.reshape(1)
        else:
            raise ValueError(f"{where}: items must be one-dimensional, not shape {value.shape}")
    elif not isinstance(value, (list, tuple, np.ndarray)):
        if not hasattr(value, "__iter__"):
            raise TypeError(f"{where}: {type(value).__name__} is neither an item nor a "
                            f"sequence of items")
        value = list(value)
    if kind == "str":
        out = _str_items(value, dtype, nullable, where)
    else:
        out = _bytes_items(value, nullable, where)
    if arrlen is not None and len(out) != arrlen:
        if len(out) == 1:           # one item, repeated
            full = np.empty(arrlen, dtype=dtype)
            if dtype.kind == "O":
                full.fill(out[0])
            else:
                full[:] = out[0]
            return full
        raise ValueError(f"{where}: cannot assign {len(out)} items to {arrlen} positions")
    return out


def nbytes_estimate(nitems: int, rawbytes: int) -> int:
    """Memory a decoded chunk takes, for the cache budget (16 bytes per item
    plus the items)."""
    return int(rawbytes) + 16 * int(nitems) + 64

