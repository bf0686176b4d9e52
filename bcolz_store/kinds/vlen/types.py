"""The type of a carray (or ctable column) of variable-length ``str`` or ``bytes``
items, and the metadata of a new one.

A carray holds variable-length items when it is created from a numpy
``StringDType`` array, or with ``dtype`` one of ``'vlen-str'``,
``'vlen-bytes'``, a ``StringDType`` or a :class:`vlen` (which also sets the
zstd level, a trained dictionary and whether items may be missing)::

    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray(["AAPL", "MSFT", "GOOG"], dtype=bcolz.vlen("str", level=9))
    >>> c[1]
    'MSFT'

Lists of str and ``U`` arrays given without such a ``dtype`` stay
fixed-width ``U`` carrays, as in bcolz.  The layout on disk is in
:mod:`bcolz_store.kinds.vlen.meta`; the engine in
:mod:`bcolz_store.kinds.vlen.engine`.
"""

from __future__ import annotations

import base64
import binascii

import numpy as np

from .chunk import VLEN_DEFAULT_DICT_SIZE, dictionary_id, train_chunk_dictionary
from .chunk_items import as_items, average_nbytes, missing_mask, vlen_chunklen
from ...datasets.carray_files import CarrayMeta
from .files import MAX_VLEN_CHUNKLEN
from .meta import VLEN_DEFAULT_LEVEL, VlenMeta, vlen_result_dtype
from ...indexing import is_int, iterates_blocks

__all__ = ["MAX_VLEN_CHUNKLEN", "new_vlen_meta", "vlen", "vlen_request"]

# Bytes of items a dictionary is trained on: zstd advises about 100 times its size.
_TRAIN_BYTES_PER_DICT_BYTE = 100
_VLEN_NAMES = {"vlen-str": "str", "vlen-bytes": "bytes"}


class vlen:
    """vlen(kind='str', level=1, dictionary=False, nullable=True, dict_size=16384)

    The dtype of a carray or ctable column of variable-length items.

    Pass it as ``dtype`` to :class:`~bcolz_store.carray`, ``ctable.addcol``
    or ``fromdataframe(..., strings=vlen(...))``.

    Parameters
    ----------
    kind : {'str', 'bytes'} (or the type ``str`` or ``bytes``), default 'str'
        'str' stores text as UTF-8 (reads give ``StringDType`` arrays on
        numpy 2, object arrays of str on numpy 1.x); 'bytes' stores bytes as
        they are (reads give object arrays of bytes).
    level : int, default 1
        zstd compression level of the chunks, 1..22 (1, Parquet's zstd
        level in pyarrow, writes at Parquet's speed; 3 took 0.7% more room
        and 1.3 times the time on 500,000 random words, 6 2% more and 1.8
        times; repetitive text gains more from higher levels; reads do not
        depend on it).
    dictionary : bool or bytes, default False
        True: train a zstd dictionary (``dict_size`` bytes) on chunk payloads
        made of runs of the initial items (see
        :func:`bcolz_store.kinds.vlen.chunk.train_chunk_dictionary`) and use it for
        every chunk; bytes: use this dictionary.  The
        dictionary is stored once, in the carray's ``meta/storage``.
    nullable : bool, default True
        Whether items may be missing (None, kept apart from empty items), as
        in pandas and Arrow strings; the type does not depend on the data a
        column is created with.  ``nullable=False`` refuses ``None``, and
        reads give ``StringDType()`` instead of
        ``StringDType(na_object=None)``.  None stands for the default.
    dict_size : int, default 16384
        Size of a trained dictionary in bytes (at least 256).

    Raises
    ------
    ValueError
        An unknown ``kind``, a ``level`` outside 1..22, a ``dict_size``
        below 256.
    TypeError
        A ``dictionary`` that is neither a bool nor bytes, a ``nullable``
        that is not a bool or None.

    Examples
    --------
    >>> vlen("bytes", level=19)
    vlen('bytes', level=19, dictionary=False, nullable=True)
    >>> vlen(nullable=False).nullable
    False
    >>> vlen().level
    1
    """

    __slots__ = ("kind", "level", "dictionary", "nullable", "dict_size")

    def __init__(self, kind="str", level=VLEN_DEFAULT_LEVEL, dictionary=False, nullable=True,
                 dict_size=VLEN_DEFAULT_DICT_SIZE):
        kind = {str: "str", bytes: "bytes"}.get(kind, kind) if isinstance(kind, type) else kind
        if kind not in ("str", "bytes"):
            raise ValueError(f"vlen kind must be 'str' or 'bytes', not {kind!r}")
        if not is_int(level) or isinstance(level, bool) or not 1 <= level <= 22:
            raise ValueError(f"zstd level must be an integer in 1..22, not {level!r}")
        if dictionary is None:
            dictionary = False
        if not isinstance(dictionary, (bool, bytes, bytearray)):
            raise TypeError(f"dictionary must be True, False or the bytes of a zstd "
                            f"dictionary, not {type(dictionary).__name__}")
        if nullable is not None and not isinstance(nullable, bool):
            raise TypeError(f"nullable must be True, False or None, not {nullable!r}")
        if not is_int(dict_size) or dict_size < 256:
            raise ValueError(f"dict_size must be an integer >= 256, not {dict_size!r}")
        self.kind = kind
        self.level = int(level)
        self.dictionary = bytes(dictionary) if isinstance(dictionary, bytearray) else dictionary
        self.nullable = True if nullable is None else nullable
        self.dict_size = int(dict_size)

    def __repr__(self):
        shown = "<bytes>" if isinstance(self.dictionary, bytes) else self.dictionary
        return (f"vlen({self.kind!r}, level={self.level}, dictionary={shown}, "
                f"nullable={self.nullable})")

    def __eq__(self, other):
        return isinstance(other, vlen) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self):
        return hash(tuple(getattr(self, k) for k in self.__slots__))


def train_dictionary(items, kind="str", size=VLEN_DEFAULT_DICT_SIZE, level=VLEN_DEFAULT_LEVEL):
    """Train a zstd dictionary for vlen columns on a sample of their items.

    The dictionary learns from chunk payloads built of runs of 256 items
    (what zstd will compress), to be passed as ``vlen(dictionary=...)`` to
    any number of columns.  ``vlen(dictionary=True)`` does this on the
    column's own initial items.

    Parameters
    ----------
    items : sequence, object ndarray or StringDType ndarray
        Consecutive items, as they will be stored (thousands of them).
    kind : {'str', 'bytes'}, default 'str'
    size : int, default 16384
        Dictionary size in bytes, at least 256.
    level : int, default 6
        The zstd level it is tuned for.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError, TypeError, CodecError
        As :func:`bcolz_store.kinds.vlen.chunk.train_chunk_dictionary` (too few
        items to train on is a CodecError).
    """
    values = as_items(items, kind, vlen_result_dtype(kind, True), True, where="sample")
    group = max(min(len(values) // 64, 256), 1)
    return train_chunk_dictionary(values, kind, size=size, level=level, group=group)


def vlen_to_json(v) -> dict:
    """A :class:`vlen` type as JSON (how other formats' metadata record it):
    ``{"kind", "level", "nullable", "dictionary"}``, the dictionary as base64."""
    dictionary = v.dictionary if isinstance(v.dictionary, bytes) else None
    return {"kind": v.kind, "level": v.level, "nullable": bool(v.nullable),
            "dictionary": base64.b64encode(dictionary).decode("ascii") if dictionary else None}


def vlen_from_json(obj) -> "vlen":
    """The :class:`vlen` type :func:`vlen_to_json` recorded.

    Raises
    ------
    ValueError, TypeError
        When ``obj`` is not such a record.
    """
    if not isinstance(obj, dict):
        raise TypeError(f"a vlen type record is a JSON object, not {type(obj).__name__}")
    text = obj.get("dictionary")
    try:
        dictionary = base64.b64decode(text.encode("ascii"), validate=True) if text else False
    except (AttributeError, UnicodeEncodeError, binascii.Error) as err:
        raise ValueError(f"the recorded dictionary is not base64 ({err})") from None
    return vlen(obj.get("kind"), obj.get("level", VLEN_DEFAULT_LEVEL), dictionary,
                obj.get("nullable"))


def vlen_of(meta):
    """The :class:`vlen` type described by a ``VlenMeta`` (None for None)."""
    if meta is None:
        return None
    return vlen(meta.kind, meta.level, meta.dictionary or False, meta.nullable)


def vlen_request(array, dtype):
    """The :class:`vlen` type a new carray of ``array`` and ``dtype`` asks for, or None.

    ``dtype`` a :class:`vlen`, ``'vlen-str'``/``'vlen-bytes'`` (nullable) or a
    ``StringDType`` (nullable when it has an ``na_object``, as numpy's own
    missing values); or no ``dtype`` and ``array`` a ``StringDType`` array or
    a vlen carray (whose type is kept: kind, level, dictionary, nullable).
    """
    if isinstance(dtype, vlen):
        return dtype
    if isinstance(dtype, str) and dtype in _VLEN_NAMES:
        return vlen(_VLEN_NAMES[dtype])
    if dtype is None:
        found = getattr(array, "vlen", None)     # a vlen carray's own type
        if isinstance(found, vlen):
            return found
        dtype = array.dtype if isinstance(array, np.ndarray) else None
    if isinstance(dtype, np.dtype) and dtype.kind == "T":
        return vlen("str", nullable=hasattr(dtype, "na_object"))
    return None


def _fill_value(dflt, kind: str, nullable: bool):
    if dflt is None:
        return "" if kind == "str" else b""
    if isinstance(dflt, np.ndarray) and dflt.ndim == 0:
        dflt = dflt[()]
    if dflt is None or (isinstance(dflt, str) and kind == "str") or \
            (isinstance(dflt, bytes) and kind == "bytes"):
        if dflt is None and not nullable:
            raise ValueError("dflt None (a missing item) needs a nullable vlen carray")
        if isinstance(dflt, str):
            try:
                dflt.encode("utf-8")
            except UnicodeEncodeError as err:
                raise ValueError(f"dflt {dflt!r:.40} cannot be stored as UTF-8 "
                                 f"({err.reason})") from None
        return dflt
    raise TypeError(f"dflt of a vlen {kind} carray must be {kind} (or None when nullable), "
                    f"not {type(dflt).__name__}")


def _dictionary(request: vlen, items: np.ndarray):
    if request.dictionary is False:
        return None
    if request.dictionary is not True:
        dictionary_id(request.dictionary)       # CodecError unless a zstd dictionary
        return request.dictionary
    present = items
    mask = missing_mask(items) if len(items) else None
    if mask is not None and mask.any():
        present = items[~mask]
    if len(present) == 0:
        raise ValueError("dictionary=True trains a zstd dictionary on the initial items, and "
                         "there are none; create the carray with data, or pass a dictionary "
                         "trained with bcolz_store.train_dictionary()")
    want = request.dict_size * _TRAIN_BYTES_PER_DICT_BYTE
    per_item = max(average_nbytes(present, request.kind), 1.0)
    group = max(min(int(len(present) // 64), 256), 1)       # at least 64 payloads
    return train_chunk_dictionary(items, request.kind, size=request.dict_size,
                                  level=request.level, group=group,
                                  max_samples=max(int(want / per_item / group), 64))


def new_vlen_meta(request: vlen, array, cparams, dflt, expectedlen, chunklen,
                  item_nbytes=None):
    """The metadata of a new vlen carray, and its initial items.

    Parameters
    ----------
    request : vlen
    array : sequence, numpy array or vlen carray
        The initial items (a carray's are appended by the caller, block by
        block; then the returned items are empty).
    cparams : cparams
        Kept in ``meta/storage`` (Blosc parameters do not apply to vlen chunks).
    dflt : str, bytes or None
        The fill value of ``resize`` (default an empty item).
    expectedlen, chunklen : int or None
        As for any carray; the default chunklen holds about 1 MiB of items.
    item_nbytes : float, optional
        The items' average size in bytes, when known otherwise than from
        ``array`` (Arrow rows appended after).

    Returns
    -------
    (CarrayMeta, numpy.ndarray)

    Raises
    ------
    TypeError
        Items or ``dflt`` of another type.
    ValueError
        Missing items when ``nullable=False``, a bad chunklen, a lone
        surrogate, or ``dictionary=True`` without initial items.
    CodecError
        A dictionary zstd cannot use, or cannot train from these items.
    """
    kind = request.kind
    if iterates_blocks(array):    # a carray: its items come block by block
        sample = as_items(array[:min(len(array), 1 << 16)], kind, vlen_result_dtype(kind, True),
                          True, where="new carray")
        items = sample[:0]
        nullable = request.nullable
        avg = average_nbytes(sample, kind)
    else:
        items = as_items(array, kind, vlen_result_dtype(kind, True), True, where="new carray")
        mask = missing_mask(items)
        if request.nullable is False and mask is not None and mask.any():
            raise ValueError("new carray: missing items (None) given with nullable=False")
        nullable = request.nullable
        avg = average_nbytes(items, kind)
        sample = items
    dtype = vlen_result_dtype(kind, nullable)
    if dtype != items.dtype:
        items = items.astype(dtype)
    length = len(array)
    expectedlen = int(length if expectedlen is None else expectedlen)
    if chunklen is None:
        chunklen = vlen_chunklen(expectedlen, avg if item_nbytes is None else item_nbytes)
    elif not is_int(chunklen) or chunklen < 1:
        raise ValueError("chunklen must be a positive integer")
    elif chunklen > MAX_VLEN_CHUNKLEN:
        raise ValueError(f"chunklen {chunklen} is above {MAX_VLEN_CHUNKLEN}, the most items a "
                         f"vlen chunk may hold")
    meta = VlenMeta(kind, request.level, nullable, _dictionary(request, sample))
    fill = np.empty((), dtype=dtype)
    fill[()] = _fill_value(dflt, kind, nullable)
    return CarrayMeta(dtype, cparams, int(chunklen), expectedlen, fill, kind=meta), items
