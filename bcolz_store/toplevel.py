"""Functions that create, open, walk and iterate carrays and ctables.

``open``, ``zeros``, ``ones``, ``fill``, ``arange``, ``fromiter``,
``iterblocks``, ``walk``, ``set_nthreads``, ``detect_number_of_cores`` and
``print_versions``, with bcolz 1.x's signatures.  Containers are written
block by block: ``zeros(5e9, dtype='i1', rootdir=...)`` never holds more than
a few megabytes of uncompressed data.

Source: bcolz 1.x ``toplevel.py`` (signatures, defaults and behaviour).
"""

from __future__ import annotations

import importlib.metadata
import itertools
import math
import operator
import os
import platform
import sys

import numpy as np

from .carray import carray
from .chunks import codec
from .ctable import ctable
from .errors import DatasetNotFoundError
from .storage.base import Store
from .storage.dataset import DatasetStore
from .storage.urls import open_store

__all__ = [
    "arange",
    "detect_number_of_cores",
    "fill",
    "fromiter",
    "iterblocks",
    "ones",
    "open",
    "print_versions",
    "set_nthreads",
    "walk",
    "zeros",
]

ROOTDIRS = "__rootdirs__"
"""File whose presence marks a ctable rootdir (FORMAT-NOTES.md)."""

# Uncompressed bytes written per append when filling or generating.
_WRITE_BLOCK_BYTES = 4 * 2 ** 20


def _is_ctable_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, ROOTDIRS))


def _dataset_kind(dataset) -> str:
    """``"ctable"``, ``"carray"`` or ``"missing"`` for the committed state of
    ``dataset`` (a :class:`DatasetStore` whose journal just recovered).

    A commit that replaced a carray by a ctable (or back) may be committed but
    not yet applied when its writer was killed: a writer finishes it first, a
    reader looks through it (see :mod:`bcolz_store.storage.journal`).
    """
    journal = dataset.journal
    found, blob = journal.lookup(ROOTDIRS)
    if found:
        return "ctable" if blob is not None else "carray"
    if journal.metadata(ROOTDIRS) is not None:
        return "ctable"
    if journal.metadata("meta/sizes") is not None:
        return "carray"
    store = dataset.store
    if store.exists(ROOTDIRS):
        return "ctable"
    return "carray" if store.root_state() == "folder" else "missing"


def _is_carray_dir(path: str) -> bool:
    return (os.path.isfile(os.path.join(path, "meta", "sizes"))
            and os.path.isfile(os.path.join(path, "meta", "storage")))


def _rows_per_write(chunklen: int, rowbytes: int) -> int:
    """A whole number of chunks holding about ``_WRITE_BLOCK_BYTES``."""
    nchunks = max(_WRITE_BLOCK_BYTES // max(chunklen * max(rowbytes, 1), 1), 1)
    return chunklen * nchunks


# ------------------------------------------------------------------- open

def open(rootdir, mode="a", *, verify=False, allow_pickle=False, lock=False,
         storage_options=None, consolidated=None):
    """Open the carray or ctable stored in ``rootdir``.

    Parameters
    ----------
    rootdir : str, os.PathLike or Store
        The dataset's directory; a URL (``s3://bucket/x.bcolz``, ``gs://``,
        ``memory://``, ``https://`` read-only...) opened through fsspec; a
        ``.zip`` pack (read-only); or a :class:`bcolz_store.storage.Store`.
    mode : {'a', 'r', 'w'}, optional
        'r' read-only, 'a' read and write (default), 'w' empty the existing
        data first.
    verify : bool, default False
        Check every file read against the dataset's checksum file
        (``bcolz_store.md5``); a mismatch raises ``IntegrityError``.
    allow_pickle : bool, default False
        Allow reading object carrays, which bcolz stores as pickles (unpickling
        can run code), as in ``numpy.load``.
    lock : bool or float, default False
        Hold the dataset's writer lock until ``close()`` (True waits up to 60 s,
        a number that many seconds), to serialize several writers (local
        folders only).
    storage_options : dict, optional
        Passed to fsspec for a URL (credentials, ``client_kwargs``...).
    consolidated : bool, optional
        Read the metadata from the consolidated metadata file (one request
        instead of three per column); default: for remote stores.

    Returns
    -------
    carray or ctable
        A ctable when ``rootdir`` holds a ``__rootdirs__`` file, else a carray.

    Raises
    ------
    DatasetNotFoundError
        If ``rootdir`` does not exist, or is not a carray or ctable (a
        ``FileNotFoundError``; bcolz raised ``IOError``).
    ValueError
        For a bad ``mode`` (and, as bcolz, ``mode='w'`` on a ctable).
    FormatError
        If the metadata is malformed.

    Examples
    --------
    >>> import os, tempfile
    >>> import bcolz_store as bcolz
    >>> path = os.path.join(tempfile.mkdtemp(), "a")
    >>> _ = bcolz.arange(10, rootdir=path)
    >>> int(bcolz.open(path, mode="r")[3])
    3
    """
    store = open_store(rootdir, mode == "r", storage_options)
    if not store.remote and store.root_state() != "folder":
        raise DatasetNotFoundError(f"{store.url}: no carray or ctable here (the path does not "
                                   f"exist)")
    dataset = DatasetStore(store, readonly=mode == "r", verify=verify, consolidated=consolidated)
    dataset.journal.recover()
    dataset.journal.fresh = True      # the container uses this state instead of recovering
    kind = _dataset_kind(dataset)
    if kind == "missing":
        raise DatasetNotFoundError(f"{store.url}: no carray or ctable here (the path does not "
                                   f"exist)")
    kwargs = dict(mode=mode, verify=verify, allow_pickle=allow_pickle, lock=lock,
                  consolidated=consolidated, _dataset=dataset)
    return (ctable if kind == "ctable" else carray)(rootdir=store, **kwargs)


# ------------------------------------------------------ fill / zeros / ones

def _normalise_shape(shape) -> tuple:
    if isinstance(shape, (int, float, np.integer, np.floating)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(operator.index(n) if not isinstance(n, (float, np.floating)) else int(n)
                      for n in shape)
    except TypeError as err:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from err
    if not shape:
        raise ValueError("shape must have at least one dimension")
    if any(n < 0 for n in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return shape


def _fill_carray(obj, length: int) -> None:
    """Append ``length`` rows of ``obj.dflt`` block by block."""
    atom = obj.dtype.shape if obj.dtype.shape else tuple(obj.shape[1:])
    rows = max(min(length, _rows_per_write(obj.chunklen, obj.dtype.itemsize * math.prod(atom))), 1)
    block = np.empty((rows,) + atom, dtype=obj.dtype.base)
    block[...] = obj.dflt
    for start in range(0, length, rows):
        obj.append(block[:min(rows, length - start)])
    obj.flush()


def _fill_ctable(obj, dtype: np.dtype, length: int, dflt) -> None:
    row = np.zeros((), dtype=dtype)
    if dflt is not None:
        row[()] = dflt
    chunklen = min(obj.cols[name].chunklen for name in obj.names)
    rows = max(min(length, _rows_per_write(chunklen, dtype.itemsize)), 1)
    block = np.empty(rows, dtype=dtype)
    block[...] = row
    for start in range(0, length, rows):
        obj.append(block[:min(rows, length - start)])
    obj.flush()


def fill(shape, dflt=None, dtype=float, **kwargs):
    """Return a new carray (or ctable, for a structured dtype) filled with ``dflt``.

    Parameters
    ----------
    shape : int or tuple of ints
        ``n`` or ``(n, d1, d2...)``: n rows of atoms of shape ``(d1, d2...)``.
        Floats are truncated (``1e6`` works).
    dflt : scalar, optional
        The fill value, also the result's ``dflt``.  Default zero.
    dtype : numpy dtype, optional
        Default float64.  A structured dtype (without a subarray shape)
        makes a ctable with one column per field.
    **kwargs
        Passed to the carray/ctable constructor: ``rootdir``, ``mode``,
        ``cparams``, ``chunklen``, ``expectedlen`` (default: the length).

    Returns
    -------
    carray or ctable
        Of ``shape[0]`` rows.

    Raises
    ------
    TypeError, ValueError
        For a bad shape (negative dimension, not integers).
    DatasetExistsError, ReadOnlyError
        As the carray constructor for ``rootdir``/``mode`` (an existing
        rootdir in mode 'a', mode 'r').

    Notes
    -----
    Compatibility: as bcolz, except that a structured ``dflt`` is honoured
    for ctables (bcolz always filled ctables with zeros, even in ``ones``).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.fill((4, 2), dflt=7, dtype="i2")[:]
    array([[7, 7],
           [7, 7],
           [7, 7],
           [7, 7]], dtype=int16)
    """
    dtype = np.dtype(dtype)
    shape = _normalise_shape(shape)
    if len(shape) > 1:
        dtype = np.dtype((dtype.base, shape[1:] + dtype.shape))
    length = shape[0]
    kwargs.setdefault("expectedlen", length)
    if dtype.kind == "V" and dtype.names is not None and dtype.shape == ():
        obj = ctable(np.zeros(0, dtype=dtype), **kwargs)
        _fill_ctable(obj, dtype, length, dflt)
        return obj
    obj = carray([], dtype=dtype, dflt=dflt, **kwargs)
    _fill_carray(obj, length)
    return obj


def zeros(shape, dtype=float, **kwargs):
    """Return a new carray (or ctable) of ``shape`` filled with zeros.

    Parameters and errors as :func:`fill` (with ``dflt`` zero).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.zeros(3, dtype="i4")[:]
    array([0, 0, 0], dtype=int32)
    """
    dtype = np.dtype(dtype)
    return fill(shape, dflt=np.zeros((), dtype=dtype.base), dtype=dtype, **kwargs)


def ones(shape, dtype=float, **kwargs):
    """Return a new carray (or ctable) of ``shape`` filled with ones.

    Parameters and errors as :func:`fill` (with ``dflt`` one).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.ones(3)[:]
    array([1., 1., 1.])
    """
    dtype = np.dtype(dtype)
    return fill(shape, dflt=np.ones((), dtype=dtype.base), dtype=dtype, **kwargs)


# ------------------------------------------------------------------ arange

def _arange_dtype(start, stop, step) -> np.dtype:
    """The dtype numpy's arange gives for these argument types, without a big array."""
    try:
        return np.arange(type(start)(0), type(stop)(0), type(step)(1)).dtype
    except (TypeError, ValueError):
        return np.arange(start, start, step).dtype


def _arange_length(start, stop, step) -> int:
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        start, stop, step = int(start), int(stop), int(step)
        return max(-((start - stop) // step), 0)
    return max(math.ceil((stop - start) / step), 0)


def _wrap64(value: int) -> np.int64:
    return np.int64(((int(value) + 2 ** 63) % 2 ** 64) - 2 ** 63)


class _ArangeBlocks:
    """Values ``first + i*delta`` as numpy computes them, for any range of i."""

    def __init__(self, start, step, dtype: np.dtype):
        self.dtype = dtype
        if dtype.kind in "iu":
            first, second = int(start), int(start + step)
            self.first, self.delta = _wrap64(first), _wrap64(second - first)
        elif dtype.kind in "fc":
            self.first = dtype.type(start)
            self.delta = dtype.type(start + step) - self.first
        else:
            self.start, self.step = start, step

    def __call__(self, i: int, j: int) -> np.ndarray:
        kind = self.dtype.kind
        if kind in "iu":
            with np.errstate(over="ignore"):
                values = np.arange(i, j, dtype=np.int64) * self.delta + self.first
            return values.astype(self.dtype)
        if kind in "fc":
            return np.arange(i, j).astype(self.dtype) * self.delta + self.first
        return np.arange(self.start + i * self.step, self.start + j * self.step, self.step,
                         dtype=self.dtype)[:j - i]


def arange(start=None, stop=None, step=None, dtype=None, **kwargs):
    """Return a carray of evenly spaced values in ``[start, stop)``, as numpy.arange.

    Called as ``arange(stop)``, ``arange(start, stop)`` or
    ``arange(start, stop, step)``.

    Parameters
    ----------
    start : number, optional
        First value (default 0).
    stop : number
        End of the interval (excluded).
    step : number, optional
        Spacing (default 1); may be negative, not zero.
    dtype : numpy dtype, optional
        Default: what ``numpy.arange`` infers from the arguments.
    **kwargs
        Passed to the carray constructor (``rootdir``, ``mode``, ``cparams``,
        ``chunklen``, ``expectedlen``...).

    Returns
    -------
    carray
        One-dimensional, ``ceil((stop - start) / step)`` values, equal to
        ``numpy.arange(start, stop, step, dtype)``.

    Raises
    ------
    ValueError
        Without a ``stop``, with ``step == 0``, or with a structured dtype
        (ctables are not supported).

    Notes
    -----
    Compatibility: bcolz truncated ``stop`` to an integer
    (``arange(0, 2.5, 0.5)`` missed ``2.0``); numpy's length rule is used
    here.  Values are generated one block at a time.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.arange(2, 11, 3)[:]
    array([2, 5, 8])
    """
    if start is None and stop is None:
        raise ValueError("You must pass a `stop` value at least.")
    if stop is None:
        start, stop = 0, start
    elif start is None:
        start = 0
    if step is None:
        step = 1
    if step == 0:
        raise ValueError("arange: step must not be zero")
    dtype = _arange_dtype(start, stop, step) if dtype is None else np.dtype(dtype)
    if dtype.kind == "V":
        raise ValueError("arange does not support ctables yet.")
    length = _arange_length(start, stop, step)
    kwargs.setdefault("expectedlen", length)
    obj = carray(np.empty(0, dtype=dtype), **kwargs)
    values = _ArangeBlocks(start, step, dtype)
    rows = _rows_per_write(obj.chunklen, dtype.itemsize)
    for i in range(0, length, rows):
        obj.append(values(i, min(i + rows, length)))
    obj.flush()
    return obj


# ---------------------------------------------------------------- fromiter

def fromiter(iterable, dtype, count, **kwargs):
    """Build a carray (or ctable, for a structured dtype) from an iterable.

    Parameters
    ----------
    iterable : iterable
        Yields values convertible to ``dtype`` (tuples for structured dtypes).
    dtype : numpy dtype
        Of the result.  A structured dtype makes a ctable.
    count : int
        Items to read; -1 reads until the iterable is exhausted.  Reading
        stops early, without error, if the iterable ends first.
    **kwargs
        Passed to the carray/ctable constructor (``rootdir``, ``mode``,
        ``cparams``, ``chunklen``, ``expectedlen``: default ``count``, or the
        iterable's length hint).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ValueError
        If ``count`` is below -1, or an item cannot be converted to ``dtype``.

    Notes
    -----
    Compatibility: bcolz read the whole iterable whatever ``count`` said;
    here at most ``count`` items are consumed, as ``numpy.fromiter`` does.
    Items are read and appended one chunk at a time.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.fromiter((i * i for i in range(5)), dtype="i8", count=5)[:]
    array([ 0,  1,  4,  9, 16])
    """
    count = operator.index(count)
    if count < -1:
        raise ValueError(f"count must be -1 (read all) or >= 0, got {count}")
    iterator = iter(iterable)
    if count == -1:
        hint = operator.length_hint(iterator, -1)
        expected = hint if hint >= 0 else None
    else:
        expected = count
        iterator = itertools.islice(iterator, count)
    if expected is not None:
        kwargs.setdefault("expectedlen", expected)
    dtype = np.dtype(dtype)
    if dtype.kind == "V" and dtype.names is not None and dtype.shape == ():
        obj = ctable(np.zeros(0, dtype=dtype), **kwargs)
        blen = max(sum(obj.cols[name].chunklen for name in obj.names) // len(obj.names), 1)
    else:
        obj = carray(np.empty(0, dtype=dtype), **kwargs)
        blen = obj.chunklen
    while True:
        block = np.fromiter(itertools.islice(iterator, blen), dtype=dtype)
        if len(block) == 0:
            break
        obj.append(block)
    obj.flush()
    return obj


# -------------------------------------------------------------- iterblocks

def iterblocks(cobj, blen=None, start=0, stop=None):
    """Iterate over a carray or ctable in numpy blocks of ``blen`` rows.

    Parameters
    ----------
    cobj : carray or ctable
        What to read.
    blen : int, optional
        Rows per block.  Default the carray's chunklen, or the smallest
        column chunklen of a ctable.
    start : int, optional
        First row (default 0; negative counts from the end).
    stop : int, optional
        Row to stop before (default: the end; values past the end are
        clipped).

    Returns
    -------
    iterator of numpy.ndarray
        Blocks of ``blen`` rows (the last may be shorter): the carray's
        dtype and atom shape, or a structured array for a ctable.

    Raises
    ------
    TypeError
        If ``cobj`` is neither a carray nor a ctable.
    ValueError
        If ``blen`` is not a positive integer.

    Notes
    -----
    Compatibility: as bcolz, a carray iterated with ``blen=1`` yields its
    rows without the leading dimension of length 1.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> [int(b.sum()) for b in bcolz.iterblocks(bcolz.arange(10), blen=4)]
    [6, 22, 17]
    """
    if isinstance(cobj, ctable):
        default_blen = lambda: min(cobj.cols[name].chunklen for name in cobj.names)  # noqa: E731
    elif isinstance(cobj, carray):
        default_blen = lambda: cobj.chunklen  # noqa: E731
    else:
        raise TypeError(f"iterblocks needs a carray or a ctable, not {type(cobj).__name__}")
    if blen is None:
        blen = default_blen()
    if isinstance(blen, bool) or not isinstance(blen, (int, np.integer)) or blen < 1:
        raise ValueError(f"blen must be a positive integer, got {blen!r}")
    start, stop, _ = slice(start, stop).indices(len(cobj))
    if isinstance(cobj, ctable):
        return _ctable_blocks(cobj, int(blen), start, stop)
    return _carray_blocks(cobj, int(blen), start, stop)


def _carray_blocks(obj, blen, start, stop):
    for i in range(start, stop, blen):
        block = obj[i:min(i + blen, stop)]
        yield block[0] if blen == 1 else block


def _ctable_blocks(obj, blen, start, stop):
    for i in range(start, stop, blen):
        j = min(i + blen, stop)
        block = np.empty(j - i, dtype=obj.dtype)
        for name in obj.names:
            block[name] = obj.cols[name][i:j]
        yield block


# -------------------------------------------------------------------- walk

def walk(dir, classname=None, mode="a", *, storage_options=None):
    """Yield every carray and ctable stored under ``dir``, recursively.

    The datasets directly in a directory come first (in name order), then
    those of its subdirectories.  The columns of a ctable are not yielded
    on their own, and a dataset's directory is not searched further.

    Parameters
    ----------
    dir : str, os.PathLike or Store
        Where to start: a folder, a URL (``s3://bucket/prefix``) or a pack.
    classname : {'carray', 'ctable'}, optional
        Yield only objects of this class.
    mode : {'a', 'r'}, optional
        Mode each object is opened in (default 'a').
    storage_options : dict, optional
        Passed to fsspec for a URL.

    Returns
    -------
    iterator of carray or ctable

    Raises
    ------
    DatasetNotFoundError
        If ``dir`` is not a directory.
    ValueError
        If ``classname`` is not None, 'carray' or 'ctable'.
    FormatError
        If a directory looks like a dataset but its metadata is malformed.

    Notes
    -----
    Compatibility: bcolz silently skipped directories it failed to open as
    datasets; here a damaged dataset raises, so it is not overlooked.

    Examples
    --------
    >>> import os, tempfile
    >>> import bcolz_store as bcolz
    >>> top = tempfile.mkdtemp()
    >>> _ = bcolz.zeros(3, rootdir=os.path.join(top, "sub", "a"))
    >>> [type(o).__name__ for o in bcolz.walk(top)]
    ['carray']
    """
    if classname not in (None, "carray", "ctable"):
        raise ValueError(f"classname must be None, 'carray' or 'ctable', got {classname!r}")
    store = open_store(dir, mode == "r", storage_options)
    if store.root_state() != "folder":
        raise DatasetNotFoundError(f"{store.url}: not a directory, cannot walk it")
    if getattr(store, "root", None) is not None and type(store).__name__ == "LocalStore":
        return _walk(store.root, classname, mode)
    return _walk_store(store, classname, mode)


def _walk(top, classname, mode):
    subdirs = []
    for entry in sorted(os.scandir(top), key=lambda e: e.name):
        if not entry.is_dir():
            continue
        if _is_ctable_dir(entry.path):
            if classname in (None, "ctable"):
                yield ctable(rootdir=entry.path, mode=mode)
        elif _is_carray_dir(entry.path):
            if classname in (None, "carray"):
                yield carray(rootdir=entry.path, mode=mode)
        else:
            subdirs.append(entry.path)
    for path in subdirs:
        yield from _walk(path, classname, mode)


def _dataset_roots(keys) -> list:
    """``[(prefix, kind)]`` of the datasets among ``keys`` (ctable columns and
    datasets inside datasets excluded), in walk order."""
    keys = set(keys)
    tables = {k[:-len(ROOTDIRS)] for k in keys if k.rpartition("/")[2] == ROOTDIRS}
    arrays = {k[:-len("meta/sizes")] for k in keys if k.endswith("meta/sizes")
              and (k == "meta/sizes" or k.endswith("/meta/sizes"))
              and k[:-len("sizes")] + "storage" in keys}
    roots = [(p, "ctable") for p in tables] + [(p, "carray") for p in arrays - tables]
    roots = [(p, kind) for p, kind in roots
             if not any(p != q and p.startswith(q) for q, _k in roots)]

    def order(item):
        parts = item[0].rstrip("/").split("/")
        return [(1, part) for part in parts[:-1]] + [(0, parts[-1])]
    return sorted(roots, key=order)


def _walk_store(store: Store, classname, mode):
    for prefix, kind in _dataset_roots(store.list("")):
        if not prefix or classname not in (None, kind):
            continue
        child = store.child(prefix)
        yield (ctable if kind == "ctable" else carray)(rootdir=child, mode=mode)


# ----------------------------------------------------------------- threads

def set_nthreads(nthreads):
    """Set the threads Blosc (and numexpr, when installed) use; return the previous Blosc value.

    Parameters
    ----------
    nthreads : int
        A positive number of threads.

    Returns
    -------
    int
        The previous number of Blosc threads.

    Raises
    ------
    ValueError
        If ``nthreads`` is not a positive integer.
    """
    previous = codec.blosc_set_nthreads(nthreads)
    if _installed("numexpr"):
        import numexpr
        numexpr.set_num_threads(int(nthreads))
    return previous


def detect_number_of_cores() -> int:
    """Return the number of cores this process may run on (at least 1)."""
    return max(int(codec.cpu_count()), 1)


def _installed(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def _version_of(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def print_versions():
    """Print the versions of bcolz_store, Python and the libraries it uses.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.print_versions()  # doctest: +ELLIPSIS
    -=-=...
    bcolz_store version: ...
    """
    from . import __version__
    blosc_version, blosc_date = codec.blosc_version()
    rows = [
        ("bcolz_store version", __version__),
        ("NumPy version", np.__version__),
        ("Blosc version", f"{blosc_version} ({blosc_date})"),
        ("Blosc compressors", codec.blosc_compressor_list()),
        ("python-blosc version", _version_of("blosc")),
        ("Numexpr version", _version_of("numexpr")),
        ("Dask version", _version_of("dask")),
        ("pandas version", _version_of("pandas")),
        ("Python version", sys.version.replace("\n", " ")),
        ("Platform", f"{sys.platform}-{platform.machine()}"),
        ("Byte-ordering", sys.byteorder),
        ("Detected cores", detect_number_of_cores()),
    ]
    print("-=" * 38)
    for label, value in rows:
        print(f"{label + ':':<21}{value}")
    print("-=" * 38)
