"""One committed generation of a dataset as a writer or reader loaded it: its
number, what the consolidated metadata said of it (``rewritten_at``,
``reshaped_at``, the checksum file's md5, the metadata files), a committed but
unapplied record a reader reads through, the checksums (the checksum file, or
computed from the files once when there is none), and whether the commits
since only appended rows.

:class:`LoadedGeneration` is a part of :class:`~.committed.CommittedState`
(its :attr:`~.committed.CommittedState.loaded`), whose
:meth:`~.committed.CommittedState.recover` decides what is loaded (rolling a
dead writer's record forward, reading through it) and tells it here; this
module reads the store only to load that generation's files and to compare
the store now against them.
"""

from __future__ import annotations

from ..errors import DatasetChangedError, DatasetNotFoundError, FormatError, IntegrityError
from ..format.consolidated import load_consolidated
from ..format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, MAX_INDEX_FILE_BYTES,
                             MAX_OWN_FILE_BYTES, is_derived_key, is_metadata_key)
from .base import Store
from .checksums import load_checksums, md5_hex, read_limit
from .records import UNSET, parse_record, record_key

__all__ = ["LoadedGeneration"]


class LoadedGeneration:
    """The files of the committed generation of one dataset root that was
    loaded last: its checksums, metadata files and generation, and a record
    read through.

    Parameters
    ----------
    store : Store
        The dataset's store (its root is the dataset root).
    readonly : bool
        A reader: it reads through a committed but unapplied record instead
        of applying it.
    consolidated : bool, optional
        Serve metadata reads from ``bcolz_store.json`` (one request on an
        object store); default: on remote stores only.

    Attributes
    ----------
    readonly : bool
        As given; the journal changes it with its dataset's mode.
    use_consolidated : bool
        Whether metadata reads are served from the consolidated metadata.
    snapshot : bool
        The state loaded last came from one read of the consolidated metadata
        (a remote store): consistent by itself (see :meth:`note_snapshot`).
    """

    def __init__(self, store: Store, readonly: bool = False, consolidated: bool | None = None):
        self.store = store
        self.root = store.url
        self.readonly = readonly
        self.use_consolidated = store.remote if consolidated is None else bool(consolidated)
        self._overlay = {}         # committed-but-unapplied record (readers): key -> blob key
        self._sums = None          # checksums of the committed files, loaded lazily
        self._recorded = UNSET     # the checksum file as recorded (None: there is none)
        self._meta = None          # committed metadata files {key: bytes}, when complete
        self._generation = None    # generation of the committed state loaded
        self._appends_upto = 0     # commits up to this one are known to have only appended
        self._rewritten_at = None  # the newest commit that did more than append (None: unknown)
        self._reshaped_at = None   # ... more than append, assign or change attrs (None: unknown)
        self.snapshot = False
        self._snapshot_checksums = None  # md5 of that state's checksum file

    # ----------------------------------------------------------- the state

    @property
    def generation(self):
        """The generation of the committed state loaded (None before the first
        :meth:`~.committed.CommittedState.recover`)."""
        return self._generation

    @property
    def rewritten_at(self):
        """The newest commit up to the loaded one that did more than append
        rows (None when not known: a dataset of an earlier version)."""
        return self._rewritten_at

    @property
    def reshaped_at(self):
        """The newest commit up to the loaded one that did more than append
        rows, assign items or change attributes (None when not known)."""
        return self._reshaped_at

    @property
    def overlay(self) -> dict:
        """``{key: blob key, content or None}`` of a committed but unapplied
        record that this reader reads through (empty for a writer, which
        applies it)."""
        return self._overlay

    @property
    def appends_upto(self) -> int:
        """Commits up to this generation are known to have only appended rows
        since the one loaded (see :meth:`appended_since_loaded`)."""
        return self._appends_upto

    # -------------------------------------------------------------- loading

    def load_consolidated(self) -> int:
        """Read the consolidated metadata: what it says of its generation
        (``rewritten_at``, ``reshaped_at``, the checksum file's md5) is kept,
        and its metadata files when they are to be used.

        Returns
        -------
        int
            The generation it records (0 without one); :meth:`mark_loaded`
            says which generation the state loaded is.

        Raises
        ------
        FormatError
            When the consolidated metadata is not a plain file, too large or
            malformed.
        """
        self._rewritten_at = self._reshaped_at = None
        try:
            data = self.store.get(CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES)
        except DatasetNotFoundError:
            return 0
        found, blob = self.lookup(CONSOLIDATED_FILE)
        if found and blob is not None:          # a reader looking through a record
            data = blob if isinstance(blob, bytes) else self.store.get(blob, MAX_OWN_FILE_BYTES)
        loaded = load_consolidated(data, self.store.path(CONSOLIDATED_FILE))
        self._snapshot_checksums = loaded.checksums
        self._rewritten_at = loaded.rewritten_at
        self._reshaped_at = loaded.reshaped_at
        if self.use_consolidated:
            self._meta = loaded.files
        return loaded.generation

    def note_snapshot(self) -> None:
        """Set :attr:`snapshot`: whether the metadata files loaded came from
        the one read of a remote store's consolidated metadata."""
        self.snapshot = bool(self.store.remote and self.use_consolidated and
                             self._meta is not None)

    def read_through(self, blobs: dict) -> None:
        """A reader reads through a committed but unapplied record:
        ``blobs`` is its ``{key: blob key, content or None}`` (see :meth:`lookup`)."""
        self._overlay = blobs

    def drop_metadata(self) -> None:
        """Forget the metadata files loaded (a record was applied since)."""
        self._meta = None

    def mark_loaded(self, generation: int) -> None:
        """The state loaded is ``generation``: every commit up to it is known."""
        self._generation = generation
        self._appends_upto = generation

    def load_checksum_file(self) -> bool:
        """Load the checksums of the state loaded from its checksum file (a
        writer's: a flush with nothing pending is then told apart from a
        change); none when there is no checksum file (read when needed).

        Returns
        -------
        bool
            False, loading nothing, when a newer commit replaced the checksum
            file since the consolidated metadata was read: load the state again.

        Raises
        ------
        FormatError
            When the checksum file is not a plain file, too large, or malformed.
        """
        try:
            data = self.store.get(CHECKSUM_FILE, MAX_OWN_FILE_BYTES)
        except DatasetNotFoundError:
            self._sums = None
            return True
        if self._snapshot_checksums is not None and md5_hex(data) != self._snapshot_checksums:
            return False        # a newer commit's: load the state again
        self._sums = dict(load_checksums(data, self.store.path(CHECKSUM_FILE)))
        return True

    # -------------------------------------------------------- after loading

    def set_committed(self, generation: int, checksums: dict, metadata: dict,
                      rewritten_at: int, reshaped_at: int) -> None:
        """This writer's commit of ``generation`` (its record created) is the
        state loaded now.

        Parameters
        ----------
        generation : int
            The generation committed.
        checksums : dict
            ``{relative path: md5 hex}`` of its files (kept, not copied).
        metadata : dict
            Its metadata files ``{key: bytes}`` (kept, not copied).
        rewritten_at, reshaped_at : int
            What its consolidated metadata records (see :attr:`rewritten_at`,
            :attr:`reshaped_at`).
        """
        self._sums = checksums
        self._recorded = checksums
        self._generation = generation
        self._rewritten_at = rewritten_at
        self._reshaped_at = reshaped_at
        self._meta = metadata

    def unload(self) -> None:
        """Forget the checksums and metadata files loaded (read again when needed)."""
        self._sums = None
        self._recorded = UNSET
        self._meta = None

    def reset(self) -> None:
        """Forget the loaded files, and a record read through (the root is removed)."""
        self._overlay = {}
        self.unload()

    def forget(self, prefix: str) -> None:
        """Drop the checksums and metadata files under ``prefix`` (a folder
        removed outside commits).

        Parameters
        ----------
        prefix : str
            What the keys of the folder's files begin with (``name/``).
        """
        sums = self.checksums()
        for key in [k for k in sums if k.startswith(prefix)]:
            del sums[key]
        if self._meta is not None:
            for key in [k for k in self._meta if k.startswith(prefix)]:
                del self._meta[key]

    def adopt(self, prefix: str) -> None:
        """Checksum the files already under ``prefix`` (a folder moved in),
        checked against the folder's own checksum file when it has one (a
        carray bcolz_store wrote): only then are its derived files (statistics,
        index) adopted too; otherwise they are rebuilt by the next writer.

        Parameters
        ----------
        prefix : str
            What the keys of the folder's files begin with (``name/``).

        Raises
        ------
        FormatError
            Naming the first file there that is not a plain file of a size its
            name allows, or a malformed checksum file of the folder.
        IntegrityError
            Naming the first file whose content differs from the md5 the
            folder's own checksum file records for it.
        """
        sums = self._scan(prefix)
        try:
            own = load_checksums(self.store.get(prefix + CHECKSUM_FILE, MAX_OWN_FILE_BYTES),
                                 self.store.path(prefix + CHECKSUM_FILE))
        except DatasetNotFoundError:
            own = None
        if own is not None:
            derived = [key for key in self.store.list(prefix)
                       if is_derived_key(key) and key[len(prefix):] in own]
            got = self.store.get_many(derived, MAX_INDEX_FILE_BYTES) if derived else {}
            for key in derived:
                if not isinstance(got[key], Exception):
                    sums[key] = md5_hex(got[key])
            for key, digest in sums.items():
                if own.get(key[len(prefix):], digest) != digest:
                    raise IntegrityError(f"{self.store.path(key)}: content does not match the "
                                         f"md5 its folder's {CHECKSUM_FILE} records (damaged)")
        self.checksums().update(sums)
        self._meta = None

    # -------------------------------------------------------------- reading

    def lookup(self, key: str):
        """Where the committed content of ``key`` lives, when a committed but
        unapplied record read through says (staged changes aside: see
        :meth:`~.journal.Journal.lookup`).

        Parameters
        ----------
        key : str
            A bcolz file's key.

        Returns
        -------
        (found, source)
            ``found`` False: read the bcolz file itself.  Else the blob key to
            read, the content itself (bytes, carried inline), or None when the
            key is deleted.
        """
        if key in self._overlay:
            blob = self._overlay[key]
            if blob is None or isinstance(blob, bytes) or self.store.exists(blob):
                return True, blob
        return False, None

    def metadata(self, key: str):
        """The committed bytes of the metadata file ``key`` from the consolidated
        metadata.

        Parameters
        ----------
        key : str
            A metadata file's key.

        Returns
        -------
        bytes or None
            None when they are not to be used or not known.
        """
        if self._meta is None or not self.use_consolidated or key in self._overlay:
            return None
        return self._meta.get(key)

    def lacks(self, key: str) -> bool:
        """True when the consolidated metadata in use is complete and has no
        file ``key`` (a metadata key): the committed state has none."""
        return self._meta is not None and self.use_consolidated and \
            key not in self._overlay and key not in self._meta

    def _scan(self, prefix: str = "") -> dict:
        """md5 of every bcolz file under ``prefix`` as it is now, derived files
        (statistics, indexes) left out: nothing vouches for them, so the
        writers rebuild them (their next commit checksums what they built).

        Only plain files are read, each within the size its name allows.

        Raises
        ------
        FormatError
            Naming the first file that is a symlink, a FIFO, a device, too
            large, or unreadable.
        """
        keys = [key for key in self.store.list(prefix) if not is_derived_key(key)]
        got = self.store.get_many(keys, max(read_limit(k) for k in keys)) if keys else {}
        sums = {}
        for key in keys:
            data = got[key]
            if isinstance(data, Exception):
                raise data
            if len(data) > read_limit(key):
                raise FormatError(f"{self.store.path(key)}: larger than such a file may be")
            sums[key] = md5_hex(data)
        return sums

    def recorded(self):
        """The checksums as the dataset's checksum file records them (through a
        committed record when one is pending), or None when it has none.

        Raises
        ------
        FormatError
            When the checksum file is not a plain file, too large, or malformed.
        """
        if self._recorded is UNSET:
            key = CHECKSUM_FILE
            found, blob = self.lookup(CHECKSUM_FILE)
            if found:
                key = blob
            if found and blob is None:
                self._recorded = None
            elif isinstance(blob, bytes):
                self._recorded = load_checksums(blob, self.store.path(CHECKSUM_FILE))
            else:
                try:
                    data = self.store.get(key, MAX_OWN_FILE_BYTES)
                except DatasetNotFoundError:
                    self._recorded = None
                else:
                    if self.snapshot and self.readonly and not found and \
                            self._snapshot_checksums not in (None, md5_hex(data)) and \
                            not self.appended_since_loaded():
                        raise DatasetChangedError(
                            f"{self.root}: a writer committed since this reader opened the "
                            f"dataset; call refresh() to read the new state")
                    self._recorded = load_checksums(data, self.store.path(key))
        return self._recorded

    def checksums(self) -> dict:
        """``{relative path: md5 hex}`` of the committed bcolz files (read, or
        computed from the files once when the dataset has no checksum file)."""
        if self._sums is None:
            recorded = self.recorded()
            self._sums = dict(recorded) if recorded is not None else self._scan()
        return self._sums

    def metadata_files(self) -> dict:
        """The committed metadata files ``{key: bytes}``, read once (from the
        consolidated metadata on remote stores, else from the files)."""
        if self._meta is None:
            keys = [key for key in self.store.list("") if is_metadata_key(key)]
            got = self.store.get_many(keys, MAX_OWN_FILE_BYTES) if keys else {}
            meta = {}
            for key in keys:
                if isinstance(got[key], Exception):
                    raise got[key]
                meta[key] = got[key]
            self._meta = meta
        return self._meta

    def read_record(self, key: str):
        """``(entries, RecordInfo)`` of the commit record ``key``, validated.

        Parameters
        ----------
        key : str
            The record's key (:func:`~.records.record_key`).

        Raises
        ------
        DatasetNotFoundError
            When there is no such record.
        FormatError
            When it is not a plain file, too large, not JSON, or invalid.
        """
        return parse_record(self.store.get(key, MAX_OWN_FILE_BYTES), self.store.path(key))

    # ------------------------------------------------------ the store now

    def current_generation(self) -> int:
        """The generation the consolidated metadata records now (0 if unreadable)."""
        generation = self.consolidated_generation()
        return 0 if generation is None else generation

    def consolidated_generation(self):
        """The generation the consolidated metadata records now, None when it
        is missing or unreadable."""
        now = self.consolidated_now()
        return None if now is None else now.generation

    def consolidated_now(self):
        """The consolidated metadata now (:class:`~..format.consolidated.Consolidated`),
        None when it is missing or unreadable."""
        try:
            data = self.store.get(CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES)
            return load_consolidated(data, self.store.path(CONSOLIDATED_FILE))
        except (DatasetNotFoundError, FormatError):
            return None

    def appended_since_loaded(self) -> bool:
        """True when every commit since the state loaded only appended rows:
        full chunks are as they were, and so are the leftover's first items.

        The consolidated metadata says since when every commit only appended
        (``rewritten_at``), however many commits ago; a commit being applied
        (its record exists, the consolidated metadata does not say it yet)
        may have replaced files already, so its record is read too.  Data
        files read before this check come from one of those commits: a
        commit's files are written only once its record exists, and records
        stay :data:`~.committed.RETAIN_RECORDS` commits.  A dataset last
        committed by an earlier version, without ``rewritten_at``, is judged
        by the records since (local stores only)."""
        if self._generation is None:
            return False
        now = self.consolidated_now()
        if now is None:
            return False
        if now.rewritten_at is None:
            return self._appended_since_by_records()
        if now.rewritten_at > self._generation:
            return False
        upto = now.generation
        try:
            info = self.read_record(record_key(now.generation + 1))[1]
        except DatasetNotFoundError:
            later = self.consolidated_now()
            if later is None or later.generation > now.generation:
                return False        # records removed meanwhile: not known
        except FormatError:
            return False
        else:
            if info.ops is None or set(info.ops) - {"append"}:
                return False
            upto += 1
        self._appends_upto = max(self._appends_upto, upto)
        return True

    def _appended_since_by_records(self) -> bool:
        """:meth:`appended_since_loaded` from the records of the commits since
        (records stay :data:`~.committed.RETAIN_RECORDS` commits; local stores
        only)."""
        if self.store.remote:
            return False
        checked = max(self._appends_upto, self._generation)
        k = checked + 1
        while True:
            try:
                info = self.read_record(record_key(k))[1]
            except DatasetNotFoundError:
                if self.current_generation() >= k:    # removed: not known
                    return False
                break
            except FormatError:
                return False
            if info.ops is None or set(info.ops) - {"append"}:
                return False
            k += 1
        self._appends_upto = k - 1
        return True
