"""datadings datasets (msgpack samples plus their index) <-> ctable.

msgpack is an optional extra (``pip install 'bcolz_store[datadings]'``),
imported only when these functions run; datadings itself is not needed.

Source: the datadings file format (seeds/000_7539750c326b609e.txt); the
index files are made as datadings 3.4 makes them (``datadings.index``,
``datadings.writer``, simplebloom 1.1), which tests/interop/test_datadings.py
checks byte for byte against datadings' own writer and reader when they are
installed.  A dataset ``NAME.msgpack`` is six files::

    NAME.msgpack             <sample 0><sample 1>...  one msgpack map per row
    NAME.msgpack.offsets     n + 1 start offsets, uint64 big-endian: 0 ... file size
    NAME.msgpack.keys        a msgpack array of the n keys (str)
    NAME.msgpack.key_hashes  8-byte salt, then n uint64 big-endian:
                             blake2s(key, salt=salt)[:8]; salt = blake2s(str(i))[:8]
                             for the first i = 0, 1... giving no collision
    NAME.msgpack.filter      a simplebloom Bloom filter of the keys:
                             +----------+-----------+----------+----------+---------------+
                             | SIMPBLOO | size >Q   | n >Q     | p >d     | bits          |
                             | 8 bytes  | all bytes | max(2,#) | 1/n      | m/8 bytes     |
                             +----------+-----------+----------+----------+---------------+
                             m = ceil(n ln p / -(ln 2)^2 / 8) * 8 bits, k = round(m/n ln 2)
                             hashes; key sets bits (h1 + i*h2 mod 2^64) mod m, i < k,
                             h1, h2 = blake2s(key)[:16] as two uint64 big-endian;
                             bit b is bit (b & 7) of byte b >> 3
    NAME.msgpack.md5         "<md5 hex>  <file name>\\n" for the data file, then
                             offsets, keys, key_hashes and filter

Each row is a sample ``{"key": <unique str>, "<column>": value, ...}``: the
key comes from a column ``key`` when there is one, else from the row number
(``"0"``, ``"1"``...).  How a column's values are packed (the one place:
:func:`value_encoder`)::

    bool, int64, float64          msgpack bool / int / float
    S<n>, U<n>                    msgpack bin / str
    other numbers, datetime64,    msgpack-numpy scalar:
    timedelta64                     {b"nd": False, b"type": dtype.str, b"data": bytes}
    rows of shape (a, b)          msgpack-numpy array:
                                    {b"nd": True, b"type": dtype.str, b"kind": b"",
                                     b"shape": [a, b], b"data": C-order bytes}
    object                        refused (TypeError)

Reading takes every sample's fields as the columns (all samples must have
the same ones); msgpack-numpy arrays and scalars are decoded here, never
unpickled (their ``kind`` ``O`` is refused).  What a datadings dataset
cannot keep: attrs (refused unless ``drop_attrs=True``), the kind (a carray
travels as a column ``data`` and comes back as a ctable), and the width of
S/U columns (they come back as wide as their longest value).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from pathlib import Path

import numpy as np

from ..errors import (BcolzStoreError, DatasetExistsError, DatasetNotFoundError, FormatError,
                      LimitError)
from ..limits import MAX_NDIM
from ..interop.columns import check_fixed_width, columns_of, row_blocks
from ._common import refuse_arrow_kinds, Sink, check_attrs_kept, progress_bar
from .base import Converter, register_converter, require
from .datadings_index import BLOOM_MAGIC, bloom_filter, key_hashes, read_offsets, write_index

__all__ = ["BLOOM_MAGIC", "DATADINGS_SUFFIXES", "DatadingsConverter", "bloom_filter",
           "from_datadings", "key_hashes", "to_datadings", "value_encoder"]

RESERVED_KEYS = ("key", "nd", "complex")
MAX_SAMPLE_BYTES = 256 << 20        # the largest sample the reader buffers
# Files beside a datadings ``NAME.msgpack`` that belong to it (the legacy index too).
DATADINGS_SUFFIXES = ("", ".offsets", ".keys", ".key_hashes", ".filter", ".md5", ".index")
BLOCK_BYTES = 16 << 20


def _msgpack():
    return require("msgpack", "datadings", "datadings conversions")


def _files(path: Path) -> dict:
    """``{suffix: path}`` of the files of the dataset at ``path``."""
    return {suffix: path.with_name(path.name + suffix) for suffix in DATADINGS_SUFFIXES}


# --- ctable -> samples --------------------------------------------------------------

def _encode_numpy(obj):
    """msgpack ``default``: numpy arrays and scalars in msgpack-numpy's layout."""
    if isinstance(obj, np.ndarray) and not obj.dtype.hasobject:
        kind, descr = (b"V", obj.dtype.descr) if obj.dtype.kind == "V" else (b"", obj.dtype.str)
        return {b"nd": True, b"type": descr, b"kind": kind, b"shape": list(obj.shape),
                b"data": np.ascontiguousarray(obj).tobytes()}
    if isinstance(obj, np.generic) and obj.dtype.kind != "V" and not obj.dtype.hasobject:
        return {b"nd": False, b"type": obj.dtype.str, b"data": obj.tobytes()}
    if isinstance(obj, np.void):
        return _encode_numpy(np.asarray(obj))
    raise TypeError(f"cannot pack {type(obj).__name__} values")


_NATIVE = {np.dtype("?"), np.dtype("=i8"), np.dtype("=f8")}


def value_encoder(atom):
    """How a column's block becomes one sample value per row.

    Parameters
    ----------
    atom : numpy.dtype
        The column's dtype (a subarray shape is the row shape).

    Returns
    -------
    callable
        ``block -> list`` of Python or numpy values that msgpack (with
        msgpack-numpy's layout) packs; see the module's table.

    Raises
    ------
    TypeError
        For object columns.
    """
    atom = np.dtype(atom)
    if atom.base.hasobject:
        raise TypeError("object values have no datadings encoding that keeps them")
    if atom.shape or atom.base.kind == "V":
        return list                             # rows as arrays
    if atom in _NATIVE or atom.kind in "SU":
        return np.ndarray.tolist                # bool, int, float, bytes, str
    return list                                 # numpy scalars


def _key_values(name, col, block) -> list:
    kind = col.dtype.kind
    if len(col.shape) > 1 or kind not in "USiu":
        raise TypeError(f"column {name!r} cannot give datadings keys: expected str, bytes "
                        f"or integers, found {col.dtype} rows shaped {col.shape[1:]}")
    if kind == "S":
        try:
            return [value.decode() for value in block.tolist()]
        except UnicodeDecodeError as err:
            raise ValueError(f"column {name!r}: a key that is not UTF-8: {err}") from None
    return [str(value) for value in block.tolist()]


def to_datadings(obj, path, *, key_column="key", drop_attrs=False, overwrite=False,
                 progress=None):
    """Write a ctable (or carray) as a datadings dataset, one sample per row.

    Parameters
    ----------
    obj : ctable or carray
        A carray is written as one column ``data``.
    path : str or os.PathLike
        The data file, conventionally ``NAME.msgpack``; the index files go
        beside it.
    key_column : str or None, default 'key'
        The column holding the sample keys (written as ``"key"``); when the
        table has no such column, or None, the keys are the row numbers.
    drop_attrs : bool, default False
        Write even though attrs (and column attrs) are not kept.
    overwrite : bool, default False
        Replace an existing dataset (all six files).
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).

    Returns
    -------
    list of pathlib.Path
        The six files written.

    Raises
    ------
    ImportError
        When msgpack is not installed (``pip install 'bcolz_store[datadings]'``).
    DatasetExistsError
        When a file of the dataset exists and ``overwrite`` is False.
    ValueError
        Attrs without ``drop_attrs``; duplicate or non-UTF-8 keys; a column
        named ``nd`` or ``complex`` (reserved by datadings), or ``key``
        beside another ``key_column``.
    TypeError
        Object columns; a key column that is not str, bytes or integer.
    OSError
        When a file cannot be written.

    Notes
    -----
    Nothing is left behind when writing fails.
    """
    refuse_arrow_kinds(obj, "datadings")
    msgpack = _msgpack()
    check_attrs_kept(obj, drop_attrs, "a datadings dataset")
    files = _files(Path(os.fspath(path)))
    existing = [p for p in files.values() if os.path.lexists(p)]
    if existing and not overwrite:
        raise DatasetExistsError(f"{existing[0]}: exists; pass overwrite=True to replace it")
    columns = columns_of(obj)
    names = [name for name, _ in columns]
    clash = [n for n in names if n in RESERVED_KEYS[1:]] + \
        (["key"] if "key" in names and key_column not in (None, "key") else [])
    if clash:
        raise ValueError(f"the columns {clash} clash with keys that datadings reserves "
                         f"('key', 'nd', 'complex'); rename them first")
    keyed = key_column if key_column in names else None
    encoders = []
    for name, col in columns:
        try:
            encoders.append(value_encoder(np.dtype((col.dtype, col.shape[1:]))))
        except TypeError as err:
            raise TypeError(f"column {name!r}: {err}") from None
    for stale in existing:
        os.unlink(stale)
    try:
        return _write_samples(msgpack, obj, files, columns, encoders, keyed, progress)
    except BaseException:
        for leftover in files.values():
            with contextlib.suppress(OSError):
                os.unlink(leftover)
        raise


def _write_samples(msgpack, obj, files, columns, encoders, keyed, progress) -> list:
    packer = msgpack.Packer(default=_encode_numpy)
    md5, keys, seen, offsets = hashlib.md5(), [], set(), [0]
    rowbytes = sum(max(col.dtype.itemsize, 1) * int(np.prod(col.shape[1:])) for _, col in columns)
    blen = max(1, BLOCK_BYTES // max(rowbytes, 1))
    fields = [name for name, _ in columns]
    keyed_at = fields.index(keyed) if keyed is not None else None
    with open(files[""], "wb") as out, progress_bar(progress, len(obj), "to datadings") as bar:
        for blocks in row_blocks(obj, blen):
            nrows = len(blocks[0]) if blocks else 0
            start = len(keys)
            if keyed_at is not None:
                block_keys = _key_values(keyed, columns[keyed_at][1], blocks[keyed_at])
            else:
                block_keys = [str(i) for i in range(start, start + nrows)]
            values = [(field, encode(block)) for field, encode, block
                      in zip(fields, encoders, blocks) if field != keyed]
            for row, key in enumerate(block_keys):
                if key in seen:
                    raise ValueError(f"duplicate key {key!r} (row {start + row}); datadings "
                                     f"keys must be unique")
                seen.add(key)
                sample = {"key": key}
                sample.update((field, vals[row]) for field, vals in values)
                packed = packer.pack(sample)
                out.write(packed)
                md5.update(packed)
                offsets.append(offsets[-1] + len(packed))
            keys.extend(block_keys)
            bar.update(nrows)
    return write_index(msgpack, files, keys, offsets, md5.hexdigest())


# --- samples -> ctable --------------------------------------------------------------

class _BadValue(ValueError):
    """A msgpack-numpy value that cannot be decoded safely."""


def _decode_numpy(obj: dict):
    """msgpack ``object_hook``: msgpack-numpy arrays/scalars/complex, without pickle."""
    if b"nd" in obj:
        try:
            data = obj[b"data"]
            if obj[b"nd"] is True:
                kind = obj.get(b"kind", b"")
                if kind == b"O":
                    raise _BadValue("a pickled object array (refused: unpickling runs code)")
                descr = obj[b"type"]
                if kind == b"V":
                    descr = [tuple(t.decode() if isinstance(t, bytes) else t for t in d)
                             for d in descr]
                dtype, shape = np.dtype(descr), tuple(int(n) for n in obj[b"shape"])
            elif obj[b"nd"] is False:
                dtype, shape = np.dtype(obj[b"type"]), None
            else:
                return obj
            if dtype.hasobject or dtype.itemsize == 0 or any(n < 0 for n in shape or ()):
                raise _BadValue(f"an array of {dtype} shaped {shape}")
            expected = dtype.itemsize * (math.prod(shape) if shape is not None else 1)
            if not isinstance(data, bytes) or len(data) != expected:
                raise _BadValue(f"{dtype} data of {len(data)} bytes, expected {expected}")
            values = np.frombuffer(data, dtype=dtype)
            return values[0] if shape is None else values.reshape(shape)
        except (KeyError, TypeError, ValueError) as err:
            raise _BadValue(f"a malformed msgpack-numpy value: {err}") from None
    if obj.get(b"complex") is True:
        text = obj.get(b"data")
        try:
            return complex(text.decode() if isinstance(text, bytes) else text)
        except (AttributeError, TypeError, ValueError) as err:
            raise _BadValue(f"a malformed complex value: {err}") from None
    return obj


def _too_deep(where, name, ndim) -> LimitError:
    return LimitError(f"{where}: field {name!r} holds values of {ndim}+ dimensions; a column "
                      f"has at most {MAX_NDIM} (its length included), so it cannot be "
                      f"converted")


def _check_depth(value: list, name: str, where: str) -> None:
    """LimitError when nested lists would make rows of too many dimensions
    (checked along the first items, before numpy sees the list)."""
    depth = 0
    while isinstance(value, list):
        depth += 1
        if depth + 1 > MAX_NDIM:
            raise _too_deep(where, name, depth)
        if not value:
            return
        value = value[0]


class _Column:
    """What the samples' values of one field have been: dtype and row shape."""

    def __init__(self, name):
        self.name, self.dtype, self.shape = name, None, None
        self.low, self.high = 0, 0              # range of plain ints
        self.count, self.held = 0, 0            # str/bytes values and their lengths

    def add(self, value, where) -> None:
        if isinstance(value, bool):
            dtype, shape = np.dtype("?"), ()
        elif isinstance(value, int):
            dtype, shape = np.dtype("i8"), ()
            self.low, self.high = min(self.low, value), max(self.high, value)
        elif isinstance(value, (str, bytes)):
            if value.endswith("\x00" if isinstance(value, str) else b"\x00"):
                raise FormatError(f"{where}: field {self.name!r}: a value ending in NUL, "
                                  f"which a fixed-width column would cut")
            dtype, shape = np.asarray(value).dtype, ()
            self.count, self.held = self.count + 1, self.held + len(value)
        elif isinstance(value, (float, complex, np.generic, np.ndarray)):
            arr = np.asarray(value)
            dtype, shape = arr.dtype, arr.shape
            if arr.ndim + 1 > MAX_NDIM:
                raise _too_deep(where, self.name, arr.ndim)
        elif isinstance(value, list):
            _check_depth(value, self.name, where)
            try:
                arr = np.asarray(value)
                exact = not arr.dtype.hasobject and arr.tolist() == value
            except ValueError:
                exact = False
            if not exact:
                raise FormatError(f"{where}: field {self.name!r} holds a list that is not an "
                                  f"array of one type and shape")
            dtype, shape = arr.dtype, arr.shape
        else:
            raise FormatError(f"{where}: field {self.name!r} holds a {type(value).__name__}, "
                              f"which has no bcolz column kind")
        self._merge(dtype, shape, where)

    def _merge(self, dtype, shape, where) -> None:
        if self.dtype is None:
            self.dtype, self.shape = dtype, shape
            return
        if shape != self.shape:
            raise FormatError(f"{where}: field {self.name!r} is shaped {shape}, earlier "
                              f"samples {self.shape}")
        if dtype.kind in "SU" and dtype.kind == self.dtype.kind:
            self.dtype = max(dtype, self.dtype, key=lambda d: d.itemsize)
        elif dtype != self.dtype:
            raise FormatError(f"{where}: field {self.name!r} is {dtype}, earlier samples "
                              f"{self.dtype}")

    def atom(self, where) -> np.dtype:
        dtype = self.dtype
        if dtype == np.dtype("i8") and self.high > np.iinfo(np.int64).max:
            if self.low < 0:
                raise FormatError(f"{where}: field {self.name!r} holds integers beyond both "
                                  f"int64 and uint64")
            dtype = np.dtype("u8")
        if dtype.kind in "SU" and not self.shape:
            check_fixed_width(where, self.name, dtype, self.count, self.held)
        return np.dtype((dtype, self.shape)) if self.shape else dtype


def _samples(msgpack, files: dict, where: str):
    """Yield ``(index, sample)`` for each sample, checking the offsets file."""
    size = files[""].stat().st_size
    offsets = read_offsets(files, size, where)
    with open(files[""], "rb") as f:
        unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False,
                                    object_hook=_decode_numpy, max_buffer_size=MAX_SAMPLE_BYTES)
        index = 0
        while (pos := unpacker.tell()) < size:
            if offsets is not None and (index >= len(offsets) - 1 or offsets[index] != pos):
                raise FormatError(f"{files['.offsets']}: sample {index} starts at byte {pos}, "
                                  f"which the offsets do not say")
            try:
                sample = unpacker.unpack()
            except msgpack.OutOfData:
                raise FormatError(f"{where}: truncated: sample {index} at byte {pos} is cut "
                                  f"off by the end of the file") from None
            except BcolzStoreError:
                raise
            except (ValueError, TypeError, msgpack.UnpackException) as err:
                # TypeError: a map or an array as a map's key (unhashable)
                raise FormatError(f"{where}: sample {index} at byte {pos} is not msgpack "
                                  f"datadings can read: {err}") from err
            yield index, sample
            index += 1
        if offsets is not None and index != len(offsets) - 1:
            raise FormatError(f"{files['.offsets']}: {len(offsets) - 1} offsets for {index} "
                              f"samples")


def _fields(sample, index, where, expected):
    here = f"{where}: sample {index}"
    if not isinstance(sample, dict) or not all(isinstance(k, str) for k in sample):
        raise FormatError(f"{here} is not a map with str keys")
    if not isinstance(sample.get("key"), str):
        raise FormatError(f"{here} has no str 'key'")
    if expected is not None and list(sample) != expected and set(sample) != set(expected):
        raise FormatError(f"{here} has the fields {sorted(sample)}, earlier samples "
                          f"{sorted(expected)}; every sample must have the same")
    return here


def _next_key(msgpack, keys, keys_file):
    try:
        return next(keys, None)
    except (ValueError, TypeError, msgpack.UnpackException) as err:
        raise FormatError(f"{keys_file}: malformed keys: {err}") from err


def _scan(msgpack, files, where, key_column, progress) -> tuple:
    """First pass: check every sample; return (field order, columns, count)."""
    expected, columns, seen = None, {}, set()
    keys_file = files[".keys"]
    with contextlib.ExitStack() as stack, progress_bar(progress, None, "check") as bar:
        keys = None
        if keys_file.is_file():
            keys = msgpack.Unpacker(stack.enter_context(open(keys_file, "rb")), raw=False)
            try:
                nkeys = keys.read_array_header()
            except (ValueError, TypeError, msgpack.UnpackException, msgpack.OutOfData) as err:
                raise FormatError(f"{keys_file}: not a msgpack array of keys: {err}") from err
        count = 0
        for index, sample in _samples(msgpack, files, where):
            here = _fields(sample, index, where, expected)
            if expected is None:
                expected = list(sample)
                columns = {name: _Column(name) for name in expected}
            if sample["key"] in seen:
                raise FormatError(f"{here}: duplicate key {sample['key']!r}")
            seen.add(sample["key"])
            if keys is not None and (index >= nkeys or _next_key(msgpack, keys, keys_file)
                                     != sample["key"]):
                raise FormatError(f"{keys_file}: key {index} is not the key of sample {index}")
            for name, value in sample.items():
                columns[name].add(value, here)
            count += 1
            bar.update(1)
        if keys is not None and count != nkeys:
            raise FormatError(f"{keys_file}: {nkeys} keys for {count} samples")
    if key_column not in (None, "key") and key_column in (expected or ()):
        raise ValueError(f"{where}: the samples have a field {key_column!r}; choose another "
                         f"key_column")
    return expected or ["key"], columns, count


def from_datadings(path, rootdir=None, mode="w", *, key_column="key", progress=None,
                   **kwargs):
    """A ctable holding a datadings dataset: one row per sample.

    Parameters
    ----------
    path : str or os.PathLike
        The data file ``NAME.msgpack``.  Its offsets file, when present, is
        checked against the samples, and so is its keys file; without them
        the samples are read one after the other.
    rootdir : str or os.PathLike, optional
        Where to store it (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    key_column : str or None, default 'key'
        The column that receives the sample keys; None drops them.
    progress : bool or None, default None
        Progress bars on stderr (None: when stderr is a terminal).
    **kwargs
        Other ctable parameters (``cparams``, ``chunklen``...).

    Returns
    -------
    ctable
        One column per field, in the first sample's order; msgpack-numpy
        arrays become columns of that row shape.

    Raises
    ------
    ImportError
        When msgpack is not installed (``pip install 'bcolz_store[datadings]'``).
    DatasetNotFoundError
        When ``path`` does not exist.
    FormatError
        Naming the file: truncated or malformed msgpack, offsets or keys
        that do not match the samples, a sample that is not a map with a
        str ``key``, duplicate keys, samples with other fields, or fields
        whose type or shape differs between samples, holds maps, None,
        mixed lists or pickled objects.
    LimitError
        Naming the file and the field, before anything is written: values
        of more dimensions than a column can have (nested lists or arrays
        of 32 or more levels: ``MAX_NDIM`` counts the length too), or
        strings that a fixed width would pad absurdly.
    ValueError
        Field names that are not identifiers; a ``key_column`` that is
        also a field; a bad ``mode``.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    """
    msgpack = _msgpack()
    files = _files(Path(os.fspath(path)))
    where = str(files[""])
    if not files[""].is_file():
        raise DatasetNotFoundError(f"{where}: no such file")
    order, columns, count = _scan(msgpack, files, where, key_column, progress)
    names = [n for n in order if n != "key" or key_column is not None]
    atoms = {(key_column if n == "key" else n): columns[n].atom(where) if n in columns
             else np.dtype("U1") for n in names}
    rowbytes = sum(atom.itemsize for atom in atoms.values())
    blen = max(1, BLOCK_BYTES // max(rowbytes, 1))
    with Sink("ctable", atoms, rootdir, mode, expectedlen=count, **kwargs) as sink, \
            progress_bar(progress, count, f"from {files[''].name}") as bar:
        pending = {name: [] for name in names}
        for index, sample in _samples(msgpack, files, where):
            _fields(sample, index, where, order)
            for name in names:
                pending[name].append(sample[name])
            if len(pending[names[0]]) >= blen or index == count - 1:
                sink.append([_stack(pending[n], atoms[key_column if n == "key" else n])
                             for n in names])
                bar.update(len(pending[names[0]]))
                pending = {name: [] for name in names}
        return sink.finish()


def _stack(values: list, atom: np.dtype) -> np.ndarray:
    if not atom.shape:
        return np.array(values, dtype=atom.base)
    out = np.empty((len(values),) + atom.shape, dtype=atom.base)
    for row, value in enumerate(values):
        out[row] = value
    return out


@register_converter
class DatadingsConverter(Converter):
    """datadings datasets: ``NAME.msgpack`` and its index files
    (:func:`from_datadings`, :func:`to_datadings`).  A carray comes back as a
    ctable of one column ``data``; attrs are refused unless ``drop_attrs``."""

    name = "datadings"
    suffixes = (".msgpack",)
    description = "datadings (``.msgpack`` and its index files)"
    extra = "datadings"
    requires = "msgpack"
    keeps_kind = False
    keeps_attrs = False
    keeps_column_attrs = False
    read = staticmethod(from_datadings)
    write = staticmethod(to_datadings)

    def outputs(self, path) -> list:
        """The data file and the index files beside it.

        Parameters
        ----------
        path : str or os.PathLike
            The data file ``NAME.msgpack``.

        Returns
        -------
        list of pathlib.Path
        """
        return list(_files(Path(os.fspath(path))).values())
