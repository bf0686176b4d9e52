"""The exceptions bcolz_store raises.

Every error has one root, :class:`BcolzStoreError`.  Where bcolz raised a
built-in exception, the matching class here also inherits that built-in, so
code written for bcolz (``except ValueError``, ``except IOError``) keeps
working::

    BcolzStoreError
    ├── FormatError(ValueError)           a file is not what the format says
    ├── ReadOnlyError(PermissionError)    a write to a dataset opened with mode 'r'
    ├── DatasetNotFoundError(FileNotFoundError)   no dataset at a path
    │   ├── ChunkNotFoundError(ValueError)   a chunk file is missing
    │   └── TableNotFoundError(KeyError)  no ctable at a rootdir opened with mode 'r'
    ├── MissingDependencyError(ImportError)   an optional library is not installed
    ├── DatasetExistsError(FileExistsError)       creating where a dataset exists
    ├── IntegrityError                    checksums do not match
    ├── DatasetChangedError               a writer committed under a reader
    ├── WriteFailedError                  writes refused after a failed write
    ├── ConcurrentWriteError              another writer committed first
    │   ├── ConflictError                 ... a change that cannot be rebased on it
    │   └── LockTimeoutError(TimeoutError)   ... or held a lock past the timeout
    ├── LockLostError                     another writer took over a stalled lock
    ├── CodecError(ValueError)            Blosc refused to compress/decompress
    ├── UnsafeDataError(ValueError)       pickled objects read without allow_pickle
    ├── QueryError(ValueError)            an expression cannot be evaluated
    ├── IndexNotFoundError(KeyError)      a column has no index (drop_index)
    ├── ColumnNotFoundError(KeyError, NameError)   t['name'] of a column the table lacks
    ├── KindMismatchError(TypeError)      str items where bytes are kept, or bytes for str
    ├── NodeKindError(TypeError)          an HDF5 node of another kind than the reading takes
    ├── UnknownFormatError(ValueError)    a conversion format no converter has
    ├── RemoteFormatError(ValueError)     a URL for a format of local files only
    ├── DuplicateConverterError(ValueError)   a converter's name or suffix is taken
    └── LimitError(ValueError)            an input asks for more than a documented limit

Messages say where (path, chunk number), what was expected and what was found.

Warnings: :class:`IntegrityWarning` (a ``UserWarning``) when ``verify=True``
cannot check anything because a dataset has no checksum file.

Besides these, the built-in exceptions of Python's data model keep their
meaning: ``TypeError``/``ValueError``/``IndexError``/``KeyError`` for bad
arguments (as numpy and bcolz raise them), ``OSError`` (naming the file) when
the operating system refuses a write.
"""

from __future__ import annotations

import os

__all__ = [
    "BcolzStoreError",
    "ChunkNotFoundError",
    "CodecError",
    "ColumnNotFoundError",
    "ConcurrentWriteError",
    "ConflictError",
    "DatasetChangedError",
    "DatasetExistsError",
    "DatasetNotFoundError",
    "DuplicateConverterError",
    "FormatError",
    "IndexNotFoundError",
    "IntegrityError",
    "IntegrityWarning",
    "KindMismatchError",
    "LimitError",
    "LockLostError",
    "LockTimeoutError",
    "MissingDependencyError",
    "NodeKindError",
    "QueryError",
    "ReadOnlyError",
    "RemoteFormatError",
    "TableNotFoundError",
    "UnknownFormatError",
    "UnsafeDataError",
    "WriteFailedError",
]


class BcolzStoreError(Exception):
    """Root of every error raised by bcolz_store.

    Never raised itself: ``except bcolz.BcolzStoreError`` catches each of
    the classes below.
    """


class FormatError(BcolzStoreError, ValueError):
    """A file read is not what its format says.

    Raised when reading a dataset's files (bad magic, truncated, bad JSON,
    sizes that disagree...), and when a file being converted (HDF5, Parquet,
    Arrow, npz, zarr, datadings) is damaged or not of the kind named.
    """


class ReadOnlyError(BcolzStoreError, PermissionError):
    """A write was attempted on a dataset opened in mode ``'r'``.

    Raised by any write (assignment, append, resize, attrs, flush...) to a
    container opened in mode ``'r'``, or on a store that is read-only (a
    ``.zip`` pack, an ``https://`` URL).

    Compatibility: bcolz raised ``IOError`` here; ``PermissionError`` is a
    subclass of ``OSError`` (which ``IOError`` aliases), so old handlers match.
    """


class DatasetNotFoundError(BcolzStoreError, FileNotFoundError):
    """No bcolz dataset exists at the given path.

    Raised by ``open``, ``verify`` and the containers' constructors opening
    an existing dataset (a ``rootdir`` and no data) when the path does not
    exist or holds no dataset, and by the converters when their source file
    is missing.
    """


class DatasetExistsError(BcolzStoreError, FileExistsError):
    """Creating a dataset where something already exists, without mode 'w'.

    Raised by the containers' constructors (``carray``, ``ctable``, ``zeros``,
    ``fromiter``...) given a ``rootdir`` that exists in mode ``'a'``, by
    ``copy`` to its own rootdir, and by the converters writing to a path
    that exists without ``overwrite=True``.

    Compatibility: bcolz raised ``IOError``; this is an ``OSError`` too.
    """


class ChunkNotFoundError(DatasetNotFoundError, ValueError):
    """A chunk file that ``meta/sizes`` promises is missing.

    Raised by a read that needs that chunk, from the thread that asked for
    it (a read on the thread pool raises it again there, with a short
    traceback).

    Compatibility: bcolz raised ``ValueError`` here (its Blosc call failed
    on the missing bytes), so this is a ``ValueError`` as well as a
    ``DatasetNotFoundError`` (a ``FileNotFoundError``).
    """


class TableNotFoundError(DatasetNotFoundError, KeyError):
    """No ctable at a rootdir opened with mode 'r'.

    Raised by ``ctable(rootdir=..., mode='r')``.  Compatibility: bcolz raised
    ``KeyError`` here; this is also a ``DatasetNotFoundError`` (a
    ``FileNotFoundError``).
    """

    __str__ = DatasetNotFoundError.__str__


class IntegrityError(BcolzStoreError):
    """The bytes on disk do not match their recorded checksum.

    Raised, on datasets opened with ``verify=True``, by reading a file whose
    md5 differs from the one the checksum file records, or that the checksum
    file lists but is missing (``verify()`` reports such files instead); and
    by the dask writer when the chunks its tasks wrote do not add up to the
    array.
    """


class CodecError(BcolzStoreError, ValueError):
    """Blosc could not compress or decompress a buffer.

    Raised on writing a chunk Blosc refuses to compress, and on reading a
    chunk whose compressed bytes Blosc cannot decompress or that decompress
    to a size other than the header says.
    """


class QueryError(BcolzStoreError, ValueError):
    """An expression could not be parsed or evaluated.

    Raised by ``eval``, ``ctable.eval`` and ``ctable.where``/``whereblocks``
    for a syntax error, an operand that cannot be evaluated (an object
    array, something that is not an array, operands of different lengths),
    a failure while evaluating, or a bad ``vm``, ``out_flavor`` or ``blen``.
    (An unknown name raises ``NameError``, as Python's ``eval`` does.)
    """


class IndexNotFoundError(BcolzStoreError, KeyError):
    """A column (or carray) has no secondary index.

    Raised by ``ctable.drop_index`` for a column without an index (a
    ``KeyError``, as for a missing key).
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class ColumnNotFoundError(BcolzStoreError, KeyError, NameError):
    """A ctable has no column of the name asked for.

    Raised by ``t['name']`` (a string that is a bare name, neither a column
    nor a variable of the caller's), ``t[['a', 'name']]`` and
    ``t.cols['name']``; the message lists the table's columns.
    Compatibility: bcolz evaluated ``t['name']`` as an expression and raised
    ``NameError``; this is also the ``KeyError`` a missing key raises.
    """

    __str__ = BcolzStoreError.__str__


class KindMismatchError(BcolzStoreError, TypeError):
    """Items of one kind, str or bytes, given to a vlen or categorical carray
    (or ctable column) of the other kind.

    Raised by ``append``, assignment and creation for an array of the other
    kind (a ``StringDType`` or ``U`` array where bytes are kept, an ``S``
    array where str are), an item of the other kind (naming its position),
    and by ``append`` of a carray of the other kind (a vlen or categorical
    carray, or a fixed-width one) before anything is written.  Nothing is
    converted silently: encode or decode the items first.  A categorical
    carray with no categories holds only missing items and fits either kind.
    It is a ``TypeError``, as data of the wrong type is in numpy and bcolz.
    """


class NodeKindError(BcolzStoreError, TypeError):
    """A node of an HDF5 file is of another kind than the reading takes.

    Raised by ``ctable.fromhdf5`` for a node that is not a Table (an Array,
    CArray, EArray or a group), and by the HDF5 converter for a group.  The
    message names the file, the node, its kind and what is read instead.
    It is a ``TypeError``, as it was before it had a class of its own.
    """


class UnsafeDataError(BcolzStoreError, ValueError):
    """Reading pickled objects from disk without ``allow_pickle=True``.

    Raised by reads of an object carray (and by the npz and zarr readers
    meeting Python objects) opened without ``allow_pickle=True``.
    Unpickling can run arbitrary code, so as in ``numpy.load`` it is opt-in.
    """


class DatasetChangedError(BcolzStoreError):
    """A writer committed a new state after a read-only reader opened the dataset.

    Raised by a read-only reader's read that cannot be served from the state
    it opened (readers never see a mix of two states); ``refresh()`` moves to
    the new state.
    """


class WriteFailedError(BcolzStoreError):
    """A write failed, and reloading the last committed state failed too.

    After any failed write a container returns to its last committed state;
    when even that cannot be read (the disk keeps failing), it is raised by
    every further write until ``refresh()`` succeeds, so nothing is committed
    from a state that mixes old and new.
    """


class IntegrityWarning(UserWarning):
    """``verify=True`` on a dataset that has no checksum file checks nothing.

    Issued (with ``warnings.warn``, not raised) when such a dataset is
    opened with ``verify=True``.
    """


class ConcurrentWriteError(BcolzStoreError):
    """Another writer committed to the dataset since this one loaded it.

    Raised by a write's commit (at ``flush()``, or by a write that commits)
    when the dataset's newest committed state is not the one this writer
    loaded.  Nothing of this writer's change is committed; it is discarded, the
    container returns to the newest committed state, and the change can be
    made again.  Pass ``lock=True`` (local folders) to serialise writers.
    """


class ConflictError(ConcurrentWriteError):
    """Another writer committed a change that this writer's change conflicts with.

    Raised by a commit that cannot be rebased on the other writer's commit.
    A commit that only appended rows is rebased on another writer's commit
    (its rows go after the other writer's) and retried, so appends never
    conflict with appends or assignments.  Everything else conflicts with
    any other commit, as does an append with a commit that trimmed, resized
    or replaced the dataset or added or removed a column: nothing of this
    writer's change is committed, and the message names both operations.

    Attributes
    ----------
    ours : tuple of str
        What this writer's change did ("append", "setitem", "trim", ...).
    theirs : tuple of str or None
        What the other writers' commits did (None: not known, a commit
        written by an earlier version).
    """

    def __init__(self, message: str, ours=(), theirs=None):
        super().__init__(message)
        self.ours = tuple(ours)
        self.theirs = None if theirs is None else tuple(theirs)


class LockTimeoutError(ConcurrentWriteError, TimeoutError):
    """Another writer held a dataset's lock for longer than the timeout.

    Raised by a writer waiting for the writer lock of ``lock=True``, or for
    the commit lock that writers hold for the few milliseconds of a commit
    (see docs/durability.md).  Nothing of this writer's change is committed.
    A :class:`ConcurrentWriteError` (another writer's work kept this one from
    committing), so the way out of one serves: ``refresh()`` and write again.
    """


class LockLostError(BcolzStoreError):
    """A lock object of a store without OS locks (the commit lock, or the
    writer lock of ``lock=True``) was taken over by another writer, because
    this one stalled for longer than the lease (``BCOLZ_STORE_LOCK_LEASE``).
    Raised before any further write: a commit whose record was not created
    is not committed; one whose record stands is applied by the next holder."""


class LimitError(BcolzStoreError, ValueError):
    """An input asks for more than one of bcolz_store's documented limits allows.

    Raised instead of allocating: a file or a conversion source that would
    need more memory, more dimensions or deeper nesting than the limit named
    in the message (``bcolz_store.limits`` lists them, docs/durability.md
    says why).  The input may be valid; it is refused, never changed.
    """


def raised_in(err: BaseException) -> str:
    """The file of the innermost Python frame ``err`` was raised from, to
    tell which library raised a built-in exception (zipfile, zarr, PyTables,
    bcolz_store...); '' when it has no traceback."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return os.path.abspath(tb.tb_frame.f_code.co_filename) if tb is not None else ""


class MissingDependencyError(BcolzStoreError, ImportError):
    """An optional library a feature needs is not installed.

    Raised by the converters (``bcolz_store.converters.convert`` and the
    format functions) and the features of the extras; the message names the
    pip extra that installs it (``pip install 'bcolz_store[arrow]'``).
    """


class UnknownFormatError(BcolzStoreError, ValueError):
    """A conversion format name, or a path's suffix, that no registered
    converter has, or a destination whose suffix names another format than
    ``to=`` asks for.

    Raised by ``bcolz_store.converters.convert`` and ``detect_format``.
    """


class RemoteFormatError(BcolzStoreError, ValueError):
    """A URL given to a conversion whose format reads and writes local paths
    only.

    Raised by ``bcolz_store.converters.convert``.
    """


class DuplicateConverterError(BcolzStoreError, ValueError):
    """A converter registered under a name or suffix another one has.

    Raised by ``bcolz_store.converters.register_converter``.
    """
