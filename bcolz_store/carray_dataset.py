"""The dataset part of a stored carray: where its files are, its store view,
its writer lock and its attrs, and the steps of creating, opening, loading,
committing and removing it.

A carray in memory has one too, with no store.  The carray
(:mod:`bcolz_store.carray`) decides what to write; this part knows how a
write reaches the dataset: through :class:`bcolz_store.storage.dataset.DatasetStore`,
whose commits are one record each (see docs/durability.md).

Source: bcolz 1.x's rootdir and mode rules (``DatasetExistsError`` for an
existing rootdir unless mode 'w'; a creation writes even in mode 'r').
"""

from __future__ import annotations

import contextlib

from . import attrs as _attrs
from .datasets.carray_files import load_carray, new_engine
from .defaults import defaults
from .errors import BcolzStoreError, DatasetExistsError, DatasetNotFoundError
from .storage import locking as _locking
from .storage.dataset import DatasetOwner, DatasetStore
from .storage.urls import describe_rootdir, open_store

__all__ = ["CarrayDataset"]


class CarrayDataset:
    """Where one carray's files are, and how its writes reach them.

    Parameters
    ----------
    root_arg : str, os.PathLike, Store or None
        The ``rootdir`` the user gave (None: in memory).
    options : OpenOptions
        How the dataset is opened.
    given : DatasetStore, optional
        A ctable column's view of its table's dataset: the table commits, and
        holds the writer lock.
    prepared : DatasetStore, optional
        The view ``bcolz_store.open`` made and loaded.
    lock : lock, optional
        The writer lock ``bcolz_store.open`` took (else ``options.lock`` is
        taken here).

    Raises
    ------
    LockTimeoutError
        When another writer keeps the lock past the timeout.
    ValueError
        A lock asked for an in-memory carray.
    """

    def __init__(self, root_arg, options, given=None, prepared=None, lock=None):
        self.root_arg = root_arg
        self.rootdir = describe_rootdir(root_arg) if root_arg is not None else None
        self.options = options
        self.given = given
        self.prepared = prepared
        self.store = None          # the DatasetStore, once created or opened
        self.attrs = None
        self.existed = None        # what creation found at the rootdir
        wanted = lock if lock is not None else (options.lock if given is None else False)
        self.lock = _locking.acquire(root_arg, wanted, storage_options=options.storage_options)

    def new_store(self, readonly: bool = False) -> DatasetStore:
        """A view of the carray's own dataset (a standalone carray)."""
        options = self.options
        return DatasetStore(open_store(self.root_arg, readonly, options.storage_options),
                            readonly=readonly, verify=options.verify,
                            consolidated=options.consolidated, locked=self.lock)

    # ------------------------------------------------------------ creating

    def begin_creation(self, mode: str) -> DatasetStore:
        """Prepare the rootdir for a new carray: what is there is staged for
        removal in the creation's one commit (mode 'w'), so a killed writer
        leaves the old dataset whole.

        Raises
        ------
        DatasetExistsError
            Something is at the rootdir and ``mode`` is not 'w'.
        """
        store = self.store = self.given or self.new_store()
        self.existed = store.state()
        if self.existed != "missing":
            if mode != "w":
                raise DatasetExistsError(
                    f"specified rootdir path '{self.rootdir}' already exists "
                    f"and creation mode is '{mode}'")
            if self.existed == "other":
                store.store.remove_root()    # a file, or a broken link: not a dataset
                self.existed = "missing"
            else:
                if self.given is None:
                    store.recover()          # finish a commit left by a killed writer
                store.remove_all()
        store.makedirs("data", "meta")
        if self.existed == "missing" and self.given is None:
            store.recover()     # the (empty) committed state, loaded before any blob is staged
        return store

    def abandon_creation(self) -> None:
        """After a failed creation: nothing of the new dataset stays stored."""
        store = self.store
        if store is not None and self.given is None:
            store.discard()
            if self.existed == "missing":
                with contextlib.suppress(OSError, BcolzStoreError):
                    store.store.remove_root()

    def commit_creation(self, mode: str) -> None:
        """Commit the creation (meta, chunks, attrs, and the removal of what was
        at the rootdir); a ctable column's is deferred to its table's batch."""
        self.store.note("create")
        self.store.commit()
        if self.given is None and self.existed == "folder":
            self.store.store.prune_empty_folders(keep=("data", "meta"))
        self.store.readonly = mode == "r"

    # ------------------------------------------------------------ opening

    def open(self, mode: str) -> str:
        """Find the dataset; return the mode (a read-only pack opens in 'r').

        Raises
        ------
        DatasetNotFoundError
            Nothing at the rootdir.
        """
        if self.given is not None:
            self.store = self.given
            return mode
        if self.prepared is not None:       # open() made it (and loaded the state)
            self.store = self.prepared
        else:
            self.store = self.new_store(readonly=mode == "r")
            if self.store.state() != "folder":
                raise DatasetNotFoundError(f"{self.rootdir}: no carray here (directory "
                                           f"does not exist)")
        if self.store.store.readonly and mode == "a":
            mode = "r"
            self.store.readonly = True
        return mode

    def load(self, read, just_loaded: bool = False) -> None:
        """Run ``read`` on one committed state: an interrupted commit is
        finished or discarded first, and ``read`` runs again if a writer
        committed meanwhile (``just_loaded``: ``open()`` has loaded the state).
        A ctable column reads as its table loads.
        """
        if self.given is not None:
            read()
            return
        self.store.read_consistently(read, just_loaded)
        self.store.warn_if_unverifiable()

    def load_attrs(self, mode: str, new: bool):
        """The attrs object, reloaded in place when it is this store's
        (callers may hold it)."""
        if self.attrs is not None and self.attrs._store is self.store and not new:
            self.attrs.reload()
        else:
            self.attrs = _attrs.attrs(self.rootdir, mode, _new=new, _store=self.store)
        return self.attrs

    def read_state(self, mode: str, engine=None):
        """The committed metadata and a chunk engine over it (keeping the cache
        budget of ``engine``, the one it replaces); the attrs reloaded.

        Raises
        ------
        FormatError, DatasetNotFoundError
            Metadata that is corrupt or missing.
        """
        self.load_attrs(mode, new=False)
        meta = load_carray(self.store)
        budget = engine.cache_budget if engine is not None else defaults.cache_budget
        engine = new_engine(meta, self.store, budget)
        if mode != "r":       # one committed state: nothing read lazily later
            engine.load_for_writing()
        return meta, engine

    def replace_with(self, build) -> None:
        """Replace the dataset's files, in one commit, by those of the carray
        ``build(store)`` writes into a scratch folder of this writer's journal
        (whose files become the commit's blobs: a killed writer leaves the old
        dataset whole)."""
        store = self.store
        with self.writing():
            folder = store.scratch_folder("reshape")
            new_files = build(store.store.child(folder)).dataset.recorded_checksums()
            store.remove_all()
            for key, digest in new_files.items():
                store.stage_moved(key, folder + key, digest)
            store.commit()

    def attach(self, owner: DatasetOwner) -> None:
        """Attach a standalone carray to its dataset's commits (a failed write
        returns it to its last committed state; an overtaken append is
        replayed on the new state)."""
        if self.store is not None and self.given is None:
            self.store.attach(owner)

    # ------------------------------------------------------------ writing

    def writing(self, op=None):
        """The context of one write (``op``: what it does, for the commit
        record); in memory a no-op."""
        if self.store is None:
            return contextlib.nullcontext()
        return self.store.operation(op)

    def set_mode(self, mode: str) -> None:
        """Say read-only (or not) to the store and the attrs."""
        if self.store is not None:
            self.store.readonly = mode == "r"
        self.attrs.mode = mode
        if self.attrs._store is not None:
            self.attrs._store.readonly = mode == "r"

    def purge(self) -> None:
        """Remove the files (one commit); a standalone carray's folder goes too.

        Raises
        ------
        DatasetNotFoundError
            The rootdir is gone already.
        """
        if self.store.state() != "folder":
            raise DatasetNotFoundError(f"{self.rootdir}: nothing to purge, directory is gone")
        self.store.remove_all()
        if self.given is None:
            with self.writing():
                self.store.commit()
            self.store.forget_all()
            self.store.store.remove_root()

    def relocate(self, root_arg, mode: str) -> DatasetStore:
        """Send later writes to ``root_arg`` (bcolz's ``rootdir`` setter: no file
        is moved); return the new store view."""
        self.rootdir = describe_rootdir(root_arg)
        self.root_arg = root_arg
        self.given = None
        self.store = self.new_store(readonly=mode == "r")
        self.attrs._store = self.store
        self.attrs.rootdir = self.rootdir
        return self.store

    def release(self) -> None:
        """Release the writer lock, if held."""
        _locking.release(self.lock)
        self.lock = None
