"""The JSON metadata files of a bcolz rootdir, as bytes <-> values.

A carray rootdir::

    ROOT/__attrs__        {"key": value, ...}\\n              user attributes
    ROOT/meta/sizes       {"shape": [n, *atom], "nbytes": N, "cbytes": C}\\n
    ROOT/meta/storage     {"dtype": str(dtype.base),
                           "cparams": {"clevel", "shuffle", "cname", "quantize"},
                           "chunklen": L, "expectedlen": E, "dflt": dflt.tolist()}\\n
    ROOT/data/__0.blp ... one chunk file per chunk

A ctable rootdir holds ``__rootdirs__`` = ``{"names": [...]}\\n``, its own
``__attrs__`` and one carray rootdir per column, named after the column.

Every file is ``json.dumps(obj, ensure_ascii=True)`` with the default
separators, encoded as ASCII, plus one newline; key order is as shown.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md; the exact bytes
are those bcolz 1.13 writes, checked by tests/format/test_meta.py against
every fixture.  Older bcolz files may lack ``cname`` (meaning ``blosclz``)
or ``quantize`` (meaning 0), and may store ``shuffle`` as true/false.

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import FormatError, LimitError
from .layout import check_column_name

__all__ = [
    "STORAGE_KINDS",
    "SizesMeta",
    "StorageKind",
    "StorageMeta",
    "atom_dtype",
    "decode_dflt",
    "decode_dtype",
    "dump_attrs",
    "dump_rootdirs",
    "dump_sizes",
    "dump_storage",
    "encode_dflt",
    "load_attrs",
    "load_json",
    "load_rootdirs",
    "load_sizes",
    "load_storage",
    "storage_kind",
]

# Limits that keep a hostile meta file from driving huge allocations.
MAX_CHUNKLEN = 2**40
MAX_NDIM = 32
MAX_ATOM_ITEMS = 2**31
# Largest atom (one item with its sub-array shape), in bytes: under Blosc-1's
# 2 GB limit for one chunk.
MAX_ATOM_BYTES = 2**31 - 1
# Largest length a carray may claim: positions are int64 everywhere.
MAX_LENGTH = 2**62
# Largest quantize value: the filter computes 10**-quantize as a double.
MAX_QUANTIZE = 300
KNOWN_CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"


def load_json(data: bytes, where: str) -> Any:
    """Decode one JSON metadata file.

    Raises
    ------
    FormatError
        If ``data`` is not ASCII JSON; the message names ``where``.
    """
    try:
        return json.loads(bytes(data).decode("ascii"))
    except (UnicodeDecodeError, ValueError) as err:
        raise FormatError(f"{where}: not valid JSON ({err})") from err
    except RecursionError as err:
        raise FormatError(f"{where}: JSON nested too deeply") from err


def _require(obj: Any, key: str, kinds: tuple, where: str) -> Any:
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: expected a JSON object, found {type(obj).__name__}")
    if key not in obj:
        raise FormatError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FormatError(f"{where}: {key!r} has the wrong type ({type(value).__name__})")
    return value


# --- dtype ------------------------------------------------------------------

def decode_dtype(text: str, where: str = "meta/storage") -> np.dtype:
    """Parse the ``dtype`` string of ``meta/storage``.

    Accepts every string ``str(numpy.dtype)`` produces, including the
    structured form ``"[('f0', '<i4'), ('f1', '<f8')]"`` that bcolz writes but
    cannot parse itself (a better-than-bcolz case).

    Raises
    ------
    FormatError
        If the string names no numpy dtype, a dtype of zero bytes (``U0``),
        a dtype of 2 GB or more, or one that hides Python objects in a
        structured field or a sub-array (see :func:`storage_kind`).
    """
    if not isinstance(text, str):
        raise FormatError(f"{where}: dtype must be a string, found {type(text).__name__}")
    try:
        if text.startswith("[") or text.startswith("{"):
            dtype = np.dtype(ast.literal_eval(text))
        else:
            dtype = np.dtype(text)
    except (Exception, MemoryError, RecursionError) as err:  # numpy raises many kinds here
        raise FormatError(f"{where}: unknown dtype {text!r:.200}") from err
    if dtype.itemsize == 0:
        raise FormatError(f"{where}: dtype {text!r} has items of zero bytes")
    if dtype.itemsize < 0 or dtype.itemsize > MAX_ATOM_BYTES:   # (numpy 1.x wraps V2**31)
        raise FormatError(f"{where}: dtype {text!r:.200} has items of "
                          f"{dtype.itemsize if dtype.itemsize > 0 else 'more than 2**31'} bytes, "
                          f"more than a Blosc chunk can hold")
    storage_kind(dtype, where)
    return dtype


def storage_kind(dtype: np.dtype, where: str | None = None) -> str:
    """How items of ``dtype`` are stored: ``'pickle'`` or ``'raw'``.

    This is the one place that decides whether chunk bytes may be
    decompressed into an array of ``dtype``: only dtypes that hold no Python
    objects are stored raw.  A plain ``object`` dtype is stored as one pickle
    per item (bcolz's way, read only with ``allow_pickle=True``).  Objects
    anywhere else (a structured field, a sub-array of objects) are refused:
    bcolz never wrote them, and their raw bytes would be object pointers.

    Parameters
    ----------
    dtype : numpy.dtype
        The atom dtype (with its sub-array shape, if any).
    where : str, optional
        The file ``dtype`` was read from; given, a refusal is a FormatError
        naming it, otherwise a TypeError (a caller's dtype).

    Raises
    ------
    FormatError, TypeError
        For a dtype that holds objects other than as a plain ``object`` dtype.
    """
    if not dtype.hasobject:
        return "raw"
    if dtype == np.dtype(object):
        return "pickle"
    message = (f"dtype {dtype} holds Python objects inside a structured field or a "
               f"sub-array; only plain object arrays can be stored (pickled item by item)")
    if where is not None:
        raise FormatError(f"{where}: {message}")
    raise TypeError(message)


def atom_dtype(base: np.dtype, shape: tuple, where: str = "meta/sizes") -> np.dtype:
    """The dtype of one item: ``base`` with the sub-array ``shape`` (``meta/sizes[1:]``).

    Raises
    ------
    FormatError
        If the atom would hold 2 GB or more, or objects (see :func:`storage_kind`).
    """
    if not shape:
        return base
    nitems = 1
    for n in shape:
        nitems *= n
    if nitems == 0:
        raise FormatError(f"{where}: atoms of shape {tuple(shape)} hold no items")
    if base.itemsize * nitems > MAX_ATOM_BYTES:
        raise FormatError(f"{where}: atoms of shape {tuple(shape)} and dtype {base} would "
                          f"hold {base.itemsize * nitems} bytes each, more than a Blosc chunk "
                          f"can hold")
    try:
        dtype = np.dtype((base.base, tuple(shape)))
    except (ValueError, TypeError, OverflowError) as err:
        raise FormatError(f"{where}: atom shape {tuple(shape)} is not valid for {base}") from err
    storage_kind(dtype, where)
    return dtype


# --- dflt -------------------------------------------------------------------

def _jsonable(value: Any, dtype: np.dtype) -> Any:
    """Turn ``dtype``'s scalar value (from ``tolist()``) into JSON-able data."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (list, tuple)):
        if dtype.names and isinstance(value, tuple):
            return [_jsonable(v, dtype.fields[n][0].base) for v, n in zip(value, dtype.names)]
        return [_jsonable(v, dtype) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v, dtype) for v in value.tolist()]
    if isinstance(value, complex):
        return repr(value)
    if isinstance(value, np.floating):  # longdouble: JSON keeps a float64 of it
        return float(value)
    if isinstance(value, np.complexfloating):
        return repr(complex(value))
    return value  # NaN and infinities are written as json does (NaN, Infinity), as bcolz


def encode_dflt(dflt: np.ndarray) -> Any:
    """Return the JSON value stored as ``dflt`` in ``meta/storage``.

    For every dtype bcolz 1.13 can persist this is exactly bcolz's
    ``dflt.tolist()`` (bytes decoded as text).  For the dtypes bcolz cannot
    persist it is a value bcolz can still assign into an array of that dtype
    where possible: datetime64 as ISO text (``"NaT"`` for NaT), timedelta64 as
    its integer count, complex as ``"(re+imj)"``.

    Parameters
    ----------
    dflt : numpy.ndarray, shape ()
        The default value, of the carray's ``dtype.base``.
    """
    dtype = dflt.dtype
    if dtype.kind == "M":
        if dtype == np.dtype("M8[ns]"):
            return int(dflt.view("i8"))  # bcolz's own output: an int
        return str(dflt[()])
    if dtype.kind == "m":
        return int(dflt.view("i8"))
    return _jsonable(dflt.tolist(), dtype)


def _structured(value: Any, dtype: np.dtype) -> Any:
    if dtype.names and isinstance(value, list):
        return tuple(_structured(v, dtype.fields[n][0]) for v, n in zip(value, dtype.names))
    return value


def _too_big(base: np.dtype, where: str) -> LimitError:
    # One item of a V dtype may claim up to 2 GiB (this layer cannot ask limits.py first).
    return LimitError(f"{where}: one item of dtype {base.str} ({base.itemsize:,} bytes) is more "
                      f"than this process can allocate")


def decode_dflt(value: Any, dtype: np.dtype, where: str = "meta/storage") -> np.ndarray:
    """Turn the JSON ``dflt`` of ``meta/storage`` into a 0-d array of ``dtype.base``.

    Raises
    ------
    FormatError
        If the value cannot be converted to ``dtype``.
    LimitError
        If one atom of ``dtype`` is more than this process can allocate.
    """
    base = dtype.base
    try:
        out = np.zeros((), dtype=base)
    except MemoryError:
        raise _too_big(base, where) from None
    if value is None:
        return out
    try:
        if base.kind in "mM" and isinstance(value, int):
            out[()] = np.array(value, dtype="i8").view(base)
        elif base.kind == "S" and isinstance(value, str):
            out[()] = value.encode("latin-1")
        elif base.kind == "V" and not base.names and isinstance(value, str):
            out[()] = np.void(value.encode("latin-1").ljust(base.itemsize, b"\0"))
        elif base.names:
            out[()] = _structured(value, base)
        else:
            out[()] = value
    except (TypeError, ValueError, OverflowError, UnicodeError) as err:
        raise FormatError(f"{where}: dflt {value!r:.80} does not fit dtype {base}") from err
    except MemoryError:
        raise _too_big(base, where) from None
    return out


# --- meta/sizes -------------------------------------------------------------

@dataclass(frozen=True)
class SizesMeta:
    """Contents of ``meta/sizes``: ``shape`` in items, ``nbytes``/``cbytes`` in bytes."""

    shape: tuple
    nbytes: int
    cbytes: int


def dump_sizes(meta: SizesMeta) -> bytes:
    """Serialise ``meta/sizes`` exactly as bcolz 1.13 does."""
    return _dump({"shape": list(meta.shape), "nbytes": int(meta.nbytes), "cbytes": int(meta.cbytes)})


def load_sizes(data: bytes, where: str = "meta/sizes") -> SizesMeta:
    """Parse ``meta/sizes``.

    Raises
    ------
    FormatError
        On invalid JSON, missing keys, or a shape that is not a list of
        non-negative integers.
    """
    obj = load_json(data, where)
    shape = _require(obj, "shape", (list,), where)
    if not shape or len(shape) > MAX_NDIM or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise FormatError(f"{where}: invalid shape {shape!r:.200}")
    if shape[0] > MAX_LENGTH:
        raise FormatError(f"{where}: length {shape[0]} exceeds {MAX_LENGTH}")
    atom = 1
    for n in shape[1:]:
        atom *= n
    if atom >= MAX_ATOM_ITEMS:
        raise FormatError(f"{where}: atom of shape {tuple(shape[1:])} holds {atom} items, "
                          f"{MAX_ATOM_ITEMS} or more")
    nbytes = _require(obj, "nbytes", (int,), where)
    cbytes = _require(obj, "cbytes", (int,), where)
    return SizesMeta(tuple(shape), nbytes, cbytes)


# --- meta/storage -----------------------------------------------------------

class StorageKind:
    """A column kind's entry in the ``meta/storage`` of a carray of bcolz's
    layout (bcolz ignores keys it does not know): how it is read and written.
    A kind's ``meta*.py`` (bcolz_store/kinds/<kind>/) appends one instance of a
    subclass to :data:`STORAGE_KINDS` when imported.

    A kind either marks its carrays by their ``dtype`` text (:meth:`of_text`;
    bcolz refuses such a text, so the carray is not read as something it is
    not), or, with :attr:`plain` set, adds its entry to a carray whose
    ``dtype`` text is bcolz's (read when the key is there).  Its methods:

    ``load(value, parsed, where)``
        The kind's entry from its stored JSON ``value``; ``parsed`` is what
        :meth:`of_text` said, or the carray's dtype for a :attr:`plain` kind
        (raises FormatError naming ``where`` for a malformed entry).
    ``dump(entry)``
        The JSON value stored for ``entry``.
    ``dtype(entry, parsed)``
        A kind marked by its ``dtype`` text: the :attr:`StorageMeta.dtype` of
        its carray with ``entry``.
    """

    #: The key of its entry in ``meta/storage``.
    key = ""
    #: Whether the entry is added to a carray of a plain dtype text.
    plain = False

    def of_text(self, text: str):
        """What the ``dtype`` text ``text`` says of a carray of this kind (passed to
        :meth:`load` and :meth:`dtype`), or None when it is not one."""
        return None

    def load_dflt(self, value, entry, dtype: np.dtype, where: str) -> np.ndarray:
        """The ``dflt`` stored as ``value``, a 0-d array of ``dtype`` (bcolz's
        encoding unless the kind says otherwise).

        Raises
        ------
        FormatError, LimitError
            As :func:`decode_dflt`, or a kind's malformed ``dflt``.
        """
        return decode_dflt(value, dtype, where)

    def dump_dflt(self, dflt: np.ndarray, entry):
        """The JSON value stored as ``dflt`` (bcolz's encoding unless the kind
        says otherwise)."""
        return encode_dflt(dflt)


#: The kinds' entries (:class:`StorageKind`), in the order they were imported.
STORAGE_KINDS: list = []


@dataclass(frozen=True)
class StorageMeta:
    """Contents of ``meta/storage``.

    ``dtype`` is the base dtype (atom dimensions live in ``meta/sizes``);
    ``cparams`` is a plain dict with keys clevel, shuffle, cname, quantize;
    ``dflt`` is a 0-d array of ``dtype``.  A carray of a column kind has
    ``kind`` set (a :class:`StorageKind`) and ``entry`` its entry; a kind that
    marks its carrays by their ``dtype`` text has ``dtype_text`` the text
    written as ``dtype`` and ``dtype`` the dtype the kind says (the dtype
    reads return for a vlen carray, its codes' for a categorical one).
    ``entries`` are more keys a column kind adds (bcolz ignores them).
    """

    dtype: np.dtype
    cparams: dict
    chunklen: int
    expectedlen: int
    dflt: np.ndarray = field(compare=False)
    dtype_text: str | None = None
    kind: StorageKind | None = None
    entry: Any = None
    entries: dict | None = None


def dump_storage(meta: StorageMeta) -> bytes:
    """Serialise ``meta/storage`` exactly as bcolz 1.13 does: its keys, then the
    kind's entry, then the other keys kinds add."""
    cp = meta.cparams
    kind = meta.kind
    out = {
        "dtype": meta.dtype_text or str(meta.dtype),
        "cparams": {"clevel": int(cp["clevel"]), "shuffle": int(cp["shuffle"]),
                    "cname": str(cp["cname"]), "quantize": int(cp["quantize"])},
        "chunklen": int(meta.chunklen),
        "expectedlen": int(meta.expectedlen),
        "dflt": (encode_dflt(meta.dflt) if kind is None
                 else kind.dump_dflt(meta.dflt, meta.entry)),
    }
    if kind is not None:        # an extra key, which bcolz ignores
        out[kind.key] = kind.dump(meta.entry)
    for key, value in (meta.entries or {}).items():
        out.setdefault(key, value)
    return _dump(out)


def _text_kind(text: str) -> tuple:
    """``(kind, parsed)``: the kind that the ``dtype`` text marks, and what it
    says; ``(None, None)`` for bcolz's own text."""
    for kind in STORAGE_KINDS:
        if not kind.plain:
            parsed = kind.of_text(text)
            if parsed is not None:
                return kind, parsed
    return None, None


def load_storage(data: bytes, where: str = "meta/storage") -> StorageMeta:
    """Parse ``meta/storage``, accepting older layouts and the entries of the
    column kinds (:data:`STORAGE_KINDS`).

    Raises
    ------
    FormatError
        On invalid JSON, a missing key, an unknown dtype or compressor, a
        chunklen outside 1..2**40, or a kind's malformed entry or ``dflt``
        (:meth:`StorageKind.load`, :meth:`StorageKind.load_dflt`).
    LimitError
        As :func:`decode_dflt`.
    """
    obj = load_json(data, where)
    text = _require(obj, "dtype", (str,), where)
    kind, parsed = _text_kind(text)
    entry = kind.load(obj.get(kind.key), parsed, where) if kind is not None else None
    dtype = decode_dtype(text, where) if kind is None else kind.dtype(entry, parsed)
    raw = _require(obj, "cparams", (dict,), where)
    clevel = _require(raw, "clevel", (int,), where + " cparams")
    shuffle = raw.get("shuffle", 1)
    if not isinstance(shuffle, (bool, int)) or int(shuffle) not in (0, 1, 2):
        raise FormatError(f"{where}: invalid shuffle {shuffle!r}")
    cname = raw.get("cname", "blosclz")
    if isinstance(cname, bytes):  # pragma: no cover - JSON gives str
        cname = cname.decode()
    if cname not in KNOWN_CNAMES:
        raise FormatError(f"{where}: unknown compressor {cname!r}")
    quantize = raw.get("quantize", 0)
    if quantize is None or quantize is False:
        quantize = 0
    if not isinstance(quantize, int) or isinstance(quantize, bool) or \
            not 0 <= quantize <= MAX_QUANTIZE:
        raise FormatError(f"{where}: quantize {quantize!r:.80} is not an integer in "
                          f"0..{MAX_QUANTIZE}")
    if not 0 <= clevel <= 9:
        raise FormatError(f"{where}: clevel {clevel} is outside 0..9")
    cparams = {"clevel": clevel, "shuffle": int(shuffle), "cname": cname, "quantize": int(quantize)}
    chunklen = _require(obj, "chunklen", (int,), where)
    if not 1 <= chunklen <= MAX_CHUNKLEN:
        raise FormatError(f"{where}: chunklen {chunklen} is outside 1..{MAX_CHUNKLEN}")
    expectedlen = obj.get("expectedlen", chunklen)
    if not isinstance(expectedlen, int):
        expectedlen = chunklen
    if kind is not None:
        dflt = kind.load_dflt(obj.get("dflt"), entry, dtype, where)
        return StorageMeta(dtype, cparams, chunklen, expectedlen, dflt, text, kind, entry)
    dflt = decode_dflt(obj.get("dflt"), dtype, where)
    for plain in STORAGE_KINDS:
        if plain.plain and plain.key in obj:
            return StorageMeta(dtype, cparams, chunklen, expectedlen, dflt, kind=plain,
                               entry=plain.load(obj[plain.key], dtype, where))
    return StorageMeta(dtype, cparams, chunklen, expectedlen, dflt)


# --- __attrs__ and __rootdirs__ ---------------------------------------------

def dump_attrs(attrs: dict) -> bytes:
    """Serialise ``__attrs__`` exactly as bcolz 1.13 does."""
    return _dump(attrs)


def load_attrs(data: bytes, where: str = "__attrs__") -> dict:
    """Parse ``__attrs__``; an empty or blank file means no attributes.

    Raises
    ------
    FormatError
        If the content is not a JSON object.
    """
    if not bytes(data).strip():
        return {}
    obj = load_json(data, where)
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: expected a JSON object, found {type(obj).__name__}")
    return obj


def dump_rootdirs(names: list) -> bytes:
    """Serialise a ctable's ``__rootdirs__`` exactly as bcolz 1.13 does."""
    return _dump({"names": list(names)})


def load_rootdirs(data: bytes, where: str = "__rootdirs__") -> list:
    """Parse ``__rootdirs__`` and return the column names in order.

    Raises
    ------
    FormatError
        On invalid JSON, or a name that is empty, not a string, repeated, or
        that could leave the rootdir (``..``, a path separator, absolute).
    """
    obj = load_json(data, where)
    names = _require(obj, "names", (list,), where)
    seen = set()
    for name in names:
        if not isinstance(name, str) or not name or name in (".", "..") \
                or "/" in name or "\\" in name or "\0" in name:
            raise FormatError(f"{where}: unsafe column name {name!r:.80}")
        check_column_name(name, where)
        if name in seen:
            raise FormatError(f"{where}: column name {name!r} appears twice")
        seen.add(name)
    return list(names)
