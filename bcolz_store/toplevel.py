"""Functions that open, walk, iterate and evaluate over carrays and ctables.

``open``, ``iterblocks``, ``walk``, ``eval``, ``set_nthreads``,
``detect_number_of_cores`` and ``print_versions``, with bcolz 1.x's
signatures (the constructors are in :mod:`bcolz_store.constructors`).

Source: bcolz 1.x ``toplevel.py`` (signatures, defaults and behaviour).
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from collections import ChainMap

import numpy as np

from .carray import carray
from . import threads
from .chunks import codec
from .ctable import ctable
from .columns import make_rows
from ._version import __version__
from .errors import DatasetNotFoundError
from .options import OpenOptions
from .query.eval import evaluate
from .storage import locking as _locking
from .storage.base import Store
from .storage.dataset import DatasetStore
from .storage.urls import open_store

__all__ = [
    "detect_number_of_cores",
    "eval",
    "from_dask",
    "iterblocks",
    "open",
    "print_versions",
    "set_nthreads",
    "walk",
]

ROOTDIRS = "__rootdirs__"
"""File whose presence marks a ctable rootdir (FORMAT-NOTES.md)."""


def _is_ctable_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, ROOTDIRS))


def _dataset_kind(dataset) -> str:
    """``"ctable"``, ``"carray"`` or ``"missing"`` for the committed state of
    ``dataset`` (a :class:`DatasetStore` that just loaded it).

    A commit that replaced a carray by a ctable (or back) may be committed but
    not yet applied when its writer was killed: a writer finishes it first, a
    reader looks through it (see :mod:`bcolz_store.storage.journal`).
    """
    found, blob = dataset.lookup(ROOTDIRS)
    if found:
        return "ctable" if blob is not None else "carray"
    if dataset.committed_metadata(ROOTDIRS) is not None:
        return "ctable"
    if dataset.committed_metadata("meta/sizes") is not None:
        return "carray"
    store = dataset.store
    if store.exists(ROOTDIRS):
        return "ctable"
    return "carray" if store.root_state() == "folder" else "missing"


def _is_carray_dir(path: str) -> bool:
    return (os.path.isfile(os.path.join(path, "meta", "sizes"))
            and os.path.isfile(os.path.join(path, "meta", "storage")))


# ------------------------------------------------------------------- open

def open(rootdir, mode="a", *, verify=False, allow_pickle=False, lock=False,
         storage_options=None, consolidated=None):
    """Open the carray or ctable stored in ``rootdir``.

    Parameters
    ----------
    rootdir : str, os.PathLike or Store
        The dataset's directory; a URL (``s3://bucket/x.bcolz``, ``gs://``,
        ``memory://``, ``https://`` read-only...) opened through fsspec; a
        ``.zip`` pack (read-only); or a :class:`bcolz_store.storage.base.Store`.
    mode : {'a', 'r', 'w'}, optional
        'r' read-only, 'a' read and write (default; a read-only store, such
        as a pack, is opened in 'r' and says so in ``.mode``), 'w' empty the
        existing data first.
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
    options = OpenOptions(verify=verify, allow_pickle=allow_pickle, lock=lock,
                          storage_options=storage_options, consolidated=consolidated)
    store = open_store(rootdir, mode == "r", storage_options)
    if store.readonly and mode == "a":
        mode = "r"                      # a pack: read-only, and says so
    state = "folder" if store.remote else store.root_state()
    if state == "other":
        raise DatasetNotFoundError(f"{store.url}: not a bcolz dataset (a file, not a folder)")
    if state != "folder":
        raise DatasetNotFoundError(f"{store.url}: no carray or ctable here (the path does not "
                                   f"exist)")
    # The lock, when asked for, is taken before the committed state is loaded:
    # a writer that waited for it starts from the state the last one left.
    held = _locking.acquire(store, lock)
    try:
        dataset = DatasetStore(store, readonly=mode == "r", verify=verify,
                               consolidated=consolidated, locked=held)
        dataset.recover()       # the container reads this state (its first read_consistently)
        kind = _dataset_kind(dataset)
        if kind == "missing":
            raise DatasetNotFoundError(f"{store.url}: no carray or ctable here (the path does "
                                       f"not exist)")
        return (ctable if kind == "ctable" else carray)(rootdir=store, mode=mode,
                                                        options=options, _dataset=dataset,
                                                        _lock=held)
    except BaseException:
        _locking.release(held)
        raise


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
    rows without the leading dimension of length 1 (a numpy scalar, or a 0-d
    array where a scalar would not keep the dtype: a big-endian one).

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
        if blen != 1:
            yield block
            continue
        row = block[0]
        if isinstance(row, np.generic) and row.dtype != block.dtype:
            row = block.reshape(block.shape[1:])    # (a numpy scalar would be native-endian)
        yield row


def _ctable_blocks(obj, blen, start, stop):
    for i in range(start, stop, blen):
        j = min(i + blen, stop)
        # (a masked array when a column is nullable)
        yield make_rows(obj.dtype, j - i, obj.names, [obj.cols[name][i:j] for name in obj.names])


# -------------------------------------------------------------------- eval

def eval(expression, vm=None, out_flavor=None, user_dict=None, blen=None, **kwargs):
    """Evaluate an expression over carrays, numpy arrays and scalars, block by block.

    Parameters
    ----------
    expression : str
        A Python expression, e.g. ``'2*a + 3*b'``.  Its variables are looked
        up in ``user_dict``, then in the caller's local, then global
        variables.
    vm : {'numexpr', 'python', 'dask'}, optional
        Engine; default ``defaults.vm`` (numexpr when installed).
    out_flavor : {'bcolz', 'carray', 'numpy'}, optional
        Result container; default ``defaults.out_flavor`` ('bcolz', a carray).
    user_dict : dict, optional
        Variables looked up first.
    blen : int, optional
        Rows evaluated per block (see :func:`bcolz_store.query.eval.evaluate`).
    **kwargs
        Passed to the result carray (``rootdir``, ``cparams``, ``chunklen``...).

    Returns
    -------
    carray, numpy.ndarray or scalar
        A carray (or numpy array with ``out_flavor='numpy'``) with one row
        per operand row; a numpy scalar or array for scalar expressions and
        reductions.

    Raises
    ------
    QueryError
        The expression is invalid or cannot be evaluated (a ``ValueError``:
        also raised for list operands and operands of different lengths,
        as bcolz did).
    NameError
        A variable cannot be found.
    ImportError
        The chosen engine is not installed.

    Notes
    -----
    Compatibility: as bcolz's ``eval``, with these differences where bcolz
    failed: empty operands give an empty result (bcolz crashed), top-level
    reductions over several blocks combine with their own operation (bcolz
    always added), other reductions over several blocks raise QueryError
    (bcolz returned a wrong value), uint64 operands switch numexpr to the
    'python' engine (bcolz raised NotImplementedError), and the 'python'
    engine runs without Python's builtins.

    Examples
    --------
    >>> import numpy as np
    >>> import bcolz_store as bcolz
    >>> a = bcolz.arange(5)
    >>> b = np.arange(5) * 10
    >>> bcolz.eval("a + b", out_flavor="numpy")
    array([ 0, 11, 22, 33, 44])
    >>> int(bcolz.eval("sum(a)", vm="python"))
    10
    """
    frame = sys._getframe(1)
    try:
        namespace = ChainMap(user_dict if user_dict is not None else {},
                             frame.f_locals, frame.f_globals)
    finally:
        del frame
    return evaluate(expression, namespace, vm=vm, out_flavor=out_flavor, blen=blen,
                    make_result=carray, **kwargs)


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


# ----------------------------------------------------------------- dask

def from_dask(x, rootdir, *, cparams=None, chunklen=None, expectedlen=None, mode="a",
              storage_options=None):
    """Write a dask array as a carray, or a dask DataFrame as a ctable, in parallel.

    dask's workers (threads, processes, or the machines of a
    ``dask.distributed`` cluster) compress the whole chunks inside their
    blocks or partitions and write them into the writer's folder of the
    dataset's journal themselves; the caller joins the chunks cut by block
    boundaries and commits once, so every chunk file becomes visible at the
    same moment.  Killed before that commit, the previous state at
    ``rootdir`` stays as it was.  The files are those ``carray(x.compute(),
    ...)`` or ``ctable.fromdataframe(x.compute(), ...)`` with the same
    parameters write, byte for byte (see
    :mod:`bcolz_store.interop.dask_write`).

    Parameters
    ----------
    x : dask.array.Array or dask.dataframe.DataFrame
        An array of known block lengths (rows along the first dimension, any
        dtype but object), or a DataFrame whose columns are numeric
        (bool, int, float, complex, datetime64, timedelta64) or hold only str
        or only bytes (stored as ``U<n>``/``S<n>``, n the longest value; the
        partitions are computed twice for those and for the partitions'
        lengths).  The index is not stored.
    rootdir : str, os.PathLike or Store
        A folder, or a URL (``s3://...``) that every worker can reach.
    cparams : cparams or dict, optional
        Default ``bcolz_store.defaults.cparams``.
    chunklen : int, optional
        Rows per chunk (default: chosen from ``expectedlen`` as bcolz does,
        per column).
    expectedlen : int, optional
        Default: the number of rows.
    mode : {'a', 'w'}, default 'a'
        'a' creates and refuses an existing dataset; 'w' replaces it.
    storage_options : dict, optional
        fsspec options for a URL ``rootdir`` (handed to the workers too).

    Returns
    -------
    carray or ctable
        The new dataset, opened in mode 'a'.

    Raises
    ------
    TypeError
        ``x`` is neither a dask array nor a dask DataFrame.
    ValueError
        A bad ``mode``, unknown block lengths, an object array, columns of
        unsupported values or of labels that are not distinct strings.
    DatasetExistsError
        ``rootdir`` holds something and ``mode`` is 'a'.
    IntegrityError
        The workers did not write every chunk where this process commits
        (nothing is committed).
    ImportError
        When dask is not installed (extra ``bcolz_store[dask]``).

    Examples
    --------
    >>> import dask.array as da, bcolz_store as bcolz
    >>> c = bcolz.from_dask(da.arange(10, chunks=4), "/tmp/arange.bcolz", mode="w")  # doctest: +SKIP
    >>> c[:].tolist()  # doctest: +SKIP
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    from .carray_ops import adopt_chunks, stage_chunk
    from .interop.dask_write import from_dask as write
    return write(x, rootdir, carray, ctable, cparams=cparams, chunklen=chunklen,
                 expectedlen=expectedlen, mode=mode, storage_options=storage_options,
                 chunk_calls=(stage_chunk, adopt_chunks))


# ----------------------------------------------------------------- threads

def set_nthreads(nthreads):
    """Set the threads that encode and decode chunks (and numexpr's, when installed).

    Full reads, slices and gathers over several chunks, ``sum``, ``eval``
    and queries, ``todataframe``, ``copy`` and writes of many chunks decode
    or encode their chunks on a pool of ``nthreads`` threads, each running
    Blosc on whole chunks straight into the output (Blosc's own threads stay
    at 1, see :func:`blosc_set_nthreads`).  The default is the number of
    cores (:func:`detect_number_of_cores`).  Results and the bytes written
    are the same for every number of threads.

    Parameters
    ----------
    nthreads : int
        A positive number of threads; 1 does all the work in the calling thread.

    Returns
    -------
    int
        The previous number of threads.

    Raises
    ------
    ValueError
        If ``nthreads`` is not a positive integer.
    """
    previous = threads.set_nthreads(nthreads)
    if _installed("numexpr"):
        import numexpr
        numexpr.set_num_threads(int(nthreads))
    return previous


def detect_number_of_cores() -> int:
    """Return the number of cores this process may run on (at least 1)."""
    return threads.cpu_count()


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
