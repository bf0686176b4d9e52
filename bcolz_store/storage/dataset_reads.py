"""How one dataset view (a carray, a ctable, or a column of one) reads its
files through the dataset's journal.

A :class:`DatasetReads` is the reading side of a
:class:`~.dataset.DatasetStore`, which makes one and holds it as ``reads``:
it knows where the view is (the store, the shared journal, the view's
prefix) and how it reads (``verify``, ``check_contents``, and whether the
view is read-only), and does the key paths, the bounded reads, the checksum
checks and the listing.  Reads see this writer's staged changes, or (for a
reader) a committed but unapplied commit, else the committed bcolz files.
With ``verify=True`` every file read is checked against the dataset's
checksum file.  On a remote store a reader checks every chunk it reads
against the checksum file anyway (an md5 costs less than a request): that is
how it notices a writer's commit without asking the store before each read.
It never writes: staging and committing are the view's own.
"""

from __future__ import annotations

from ..errors import DatasetChangedError, DatasetNotFoundError, FormatError, IntegrityError
from ..format.layout import OPTIONAL_FILES, is_metadata_key
from .base import Store
from .checksums import md5_hex, read_limit
from .journal import Journal
from .ranges import check_ranges

__all__ = ["DatasetReads", "USELESS_REFUSALS"]

#: Conditional ranged reads refused in a row, each of a file whose whole
#: content then had the md5 asked for, after which a view stops trying them.
USELESS_REFUSALS = 2


class DatasetReads:
    """The reads of one dataset view: the files of its folder as the journal
    shows them (a :class:`~.dataset.DatasetStore`'s ``reads``).

    Parameters
    ----------
    store : Store
        The store of the dataset's root.
    journal : Journal
        The journal of the dataset's root (shared by a ctable's columns); only
        read here.
    prefix : str
        The view's folder, its key relative to the root ('' or 'name/').
    readonly : bool
        The view is read-only: a chunk that changed under it is a reader's
        :class:`DatasetChangedError`, not a writer's conflict.
    verify : bool
        Check each file read against the dataset's checksum file and raise
        :class:`IntegrityError` on a mismatch.

    Attributes
    ----------
    root : str
        The view's folder, for messages.
    check_contents : bool
        Check the chunks read against the checksums instead of asking the
        store whether a commit happened before each read (on remote stores).
    conditional_reads : bool
        With ``check_contents``, read ranges of a chunk file only on condition
        that the file has the md5 recorded for it (see
        :meth:`~.base.Store.get_ranges_if_md5`).  Turned off once the store
        has refused :data:`USELESS_REFUSALS` such reads in a row of files whose
        whole content then had that md5 (S3 objects whose ETag is no md5:
        multipart uploads, SSE-KMS), so that reads stop paying a request for
        nothing.
    """

    def __init__(self, store: Store, journal: Journal, prefix: str, readonly: bool,
                 verify: bool):
        self.store = store
        self.journal = journal
        self.prefix = prefix
        self.readonly = bool(readonly)
        self.verify = verify
        self.root = store.path(prefix.rstrip("/")) if prefix else store.url
        # A remote reader checks chunk contents instead of asking the store
        # whether a commit happened before each read.
        self.check_contents = store.remote
        # It reads ranges of a chunk file on condition that the file has the
        # md5 it expects, until the store's refusals prove useless.
        self.conditional_reads = True
        self._refused = set()       # keys whose conditional read answered None
        self._useless = 0           # refusals in a row of files that had their md5

    def path(self, key: str) -> str:
        """Where ``key`` of this dataset is, for messages.

        Raises
        ------
        FormatError
            If ``key`` is absolute or contains ``..``.
        """
        return self.store.path(self.prefix + key)

    # ------------------------------------------------------------ reading

    def get(self, key: str, limit: int | None = None) -> bytes:
        """Read the current content of ``key`` (staged, committed, or stored).

        Parameters
        ----------
        key : str
        limit : int, optional
            Largest size accepted, in bytes (default: what the format allows
            for such a file, see :func:`~.checksums.read_limit`).

        Raises
        ------
        DatasetNotFoundError
            If the file does not exist (a FileNotFoundError).
        FormatError
            If ``key`` is unsafe, names a folder, a FIFO, a device or another
            non-file, is larger than ``limit``, or leads outside the rootdir
            through a symlink.
        IntegrityError
            With ``verify`` on, when the content does not match its checksum.
        DatasetChangedError
            A remote reader whose chunk changed under it (a writer committed).
        """
        full = self.prefix + key
        if limit is None:
            limit = read_limit(key)
        found, blob = self.journal.lookup(full)
        if found:
            if blob is None:
                if self.verify and self.journal.in_overlay(full):
                    self._check_deletion(key)
                raise DatasetNotFoundError(f"{self.path(key)}: no such file")
            if isinstance(blob, bytes):              # carried by the commit record
                if len(blob) > limit:
                    raise FormatError(f"{self.path(key)}: holds {len(blob)} bytes, more than "
                                      f"the {limit} such a file may hold")
                if self.verify and self.journal.in_overlay(full):
                    self.check(key, blob)
                return blob
            try:
                data = self.store.get(blob, limit)   # a blob is never a symlink
            except DatasetNotFoundError:             # moved into place meanwhile by the writer
                return self.get_committed(key, limit)
            if self.verify and self.journal.in_overlay(full):
                self.check(key, data)
            return data
        return self.get_committed(key, limit)

    def get_chunk(self, key: str, limit: int) -> bytes:
        """:meth:`get` for a chunk file, which is never in the consolidated
        metadata: straight from the store when nothing is staged or waits
        in a record, and no content is checked (the read path of every
        chunk of a local reader).

        Raises
        ------
        DatasetNotFoundError, FormatError, IntegrityError, DatasetChangedError
            As :meth:`get`.
        """
        if self.verify or self.check_contents or not self.journal.reads_through():
            return self.get(key, limit)
        return self.store.get(self.prefix + key, limit)

    def get_chunk_range(self, key: str, start: int, stop: int):
        """The bytes ``[start, stop)`` of the chunk file ``key``, read straight
        from the store (see :meth:`~.base.Store.get_range`), or None.

        None whenever :meth:`get_chunk` would not read the whole file straight
        from the store either: with ``verify`` on, when anything is staged or
        a committed record waits to be applied (the key's content may live
        elsewhere), and for a metadata key.  Where contents are checked (a
        remote store's reader notices commits by the md5 of the chunk files
        it reads), the range is read only on condition that the file has the
        md5 the checksums record for it (:meth:`~.base.Store.get_ranges_if_md5`),
        and None when the store does not promise that (the file changed, or
        the store cannot tell cheaply): the whole file's read then raises what
        a changed file means (:class:`DatasetChangedError` for a reader).  A
        file with no checksum recorded is read as a whole file would be, with
        nothing to check.  After None the caller reads the whole file with
        :meth:`get_chunk`.  As after :meth:`get_chunk`, the caller calls
        :meth:`check_reading` once the bytes are read (``failed=True`` after
        an error).

        Parameters
        ----------
        key : str
            The chunk file's key in this view.
        start, stop : int
            The range, ``0 <= start <= stop``.

        Returns
        -------
        bytes or None
            Fewer bytes where the file ends before ``stop``.

        Raises
        ------
        ValueError
            For a range that is not one (None or not).
        DatasetNotFoundError
            When the file does not exist.
        FormatError
            When ``key`` is unsafe, or names a folder, a FIFO or another
            non-file, or a symlink leading outside the rootdir; where
            contents are checked, also when the checksum file is unreadable.
        OSError
            When the store's request fails otherwise.
        """
        got = self.get_chunk_ranges(key, [(start, stop)])
        return None if got is None else got[0]

    def get_chunk_ranges(self, key: str, ranges):
        """Several ranges of the chunk file ``key``, read straight from the
        store (see :meth:`~.base.Store.get_ranges`), or None when the caller
        must read the whole file (see :meth:`get_chunk_range`).

        Parameters
        ----------
        key : str
            The chunk file's key in this view.
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs.

        Returns
        -------
        list of bytes, or None
            The bytes of each range, in their order.

        Raises
        ------
        ValueError, DatasetNotFoundError, FormatError, OSError
            As :meth:`get_chunk_range`.
        """
        ranges = check_ranges(ranges)
        full = self.prefix + key
        if self.verify or is_metadata_key(full) or not self.journal.reads_through():
            return None
        if not self.check_contents:
            return self.store.get_ranges(full, ranges)
        if not self.conditional_reads:
            return None
        expected = self._expected_md5(key)
        if expected is None:                # nothing to check, whole or in part
            return self.store.get_ranges(full, ranges)
        got = self.store.get_ranges_if_md5(full, ranges, expected)
        if got is None:
            self._refused.add(key)          # judged when the whole file is read
        else:
            self._useless = 0
        return got

    def _expected_md5(self, key: str):
        """The md5 that :meth:`_check_unchanged` expects of ``key``, or None."""
        state = self.journal.state
        recorded = state.recorded() if self.readonly else state.checksums()
        return None if recorded is None else recorded.get(self.prefix + key)

    def _judge_refusal(self, key: str, had_md5: bool) -> None:
        """After the whole-file read of ``key`` that a refused conditional read
        asked for: a file that had its md5 all the same was refused for
        nothing; :data:`USELESS_REFUSALS` such in a row turn conditional reads
        off for this view."""
        if key not in self._refused:
            return
        self._refused.discard(key)
        if not had_md5:
            self._useless = 0
            return
        self._useless += 1
        if self._useless >= USELESS_REFUSALS:
            self.conditional_reads = False

    def get_committed(self, key: str, limit: int | None = None) -> bytes:
        """Read ``key`` from its bcolz file (see :meth:`get`)."""
        full = self.prefix + key
        if limit is None:
            limit = read_limit(key)
        data = self.journal.state.metadata(full) if is_metadata_key(full) else None
        if data is None:
            data = self.store.get(full, limit)
            if self.verify:
                self.check(key, data)
            elif self.check_contents and not is_metadata_key(full):
                self._check_unchanged(key, data)
        elif self.verify:
            self.check(key, data)
        return data

    def get_many(self, keys, limit: int) -> dict:
        """``{key: bytes or exception}`` of several files, fetched together
        (concurrently on remote stores); staged or overlaid keys one by one."""
        out, direct = {}, []
        for key in keys:
            if self.journal.lookup(self.prefix + key)[0] or \
                    is_metadata_key(self.prefix + key):
                try:
                    out[key] = self.get(key, limit)
                except Exception as err:  # returned, raised by the caller where it belongs
                    out[key] = err
            else:
                direct.append(key)
        if direct:
            got = self.store.get_many([self.prefix + key for key in direct], limit)
            for key in direct:
                data = got[self.prefix + key]
                if not isinstance(data, Exception):
                    try:
                        if self.verify:
                            self.check(key, data)
                        elif self.check_contents:
                            self._check_unchanged(key, data)
                    except Exception as err:
                        data = err
                out[key] = data
        return out

    def unchecked(self, key: str, data: bytes):
        """Why a writer may not carry over ``data``, the content of ``key`` it
        read (a derived file: chunk statistics, an index), into its next
        commit: the checksum that commit keeps for ``key`` is not ``data``'s
        (changed outside commits, or no checksum is kept); None when it is,
        or when this writer staged ``data`` itself.  A writer rebuilds such
        a file instead: it never commits a checksum for bytes it did not
        check.

        Raises
        ------
        FormatError
            When the checksum file itself is unreadable.
        """
        full = self.prefix + key
        if self.journal.lookup(full)[0] and not self.journal.in_overlay(full):
            return None
        expected = self.journal.state.checksums().get(full)
        if expected is None:
            return f"{self.path(key)}: no checksum recorded for this file (rebuilt)"
        if md5_hex(data) != expected:
            return (f"{self.path(key)}: content does not match its md5 checksum "
                    f"(changed outside commits; rebuilt)")
        return None

    def check(self, key: str, data: bytes) -> None:
        """Compare ``data`` with the recorded checksum of ``key``.

        Does nothing for a dataset without a checksum file (opening it with
        ``verify=True`` warns once, see
        :meth:`~.dataset.DatasetStore.warn_if_unverifiable`).

        Raises
        ------
        IntegrityError
            When the checksum differs, or the file has none recorded.
        FormatError
            When the checksum file itself is unreadable.
        """
        recorded = self.journal.state.recorded()
        if recorded is None:
            return
        expected = recorded.get(self.prefix + key)
        if expected is None:
            raise IntegrityError(f"{self.path(key)}: no checksum recorded for this file")
        if md5_hex(data) != expected:
            raise IntegrityError(f"{self.path(key)}: content does not match its md5 checksum "
                                 f"(damaged, or changed by another program: `bcolz-store "
                                 f"verify {self.store.url}` tells which, and its --reseal "
                                 f"accepts a consistent change)")

    def _check_deletion(self, key: str) -> None:
        """With ``verify`` on: a pending commit deleting ``key`` must come with a
        checksum file that no longer lists it.

        Raises
        ------
        IntegrityError
            When the checksums still list ``key``.
        """
        recorded = self.journal.state.recorded()
        if recorded is not None and self.prefix + key in recorded:
            raise IntegrityError(f"{self.path(key)}: a pending commit deletes it, but the "
                                 f"checksum file lists it")

    def _check_unchanged(self, key: str, data: bytes) -> None:
        """A remote reader's or writer's check that ``key`` is the committed
        file of the state it loaded."""
        state = self.journal.state
        recorded = state.recorded() if self.readonly else state.checksums()
        expected = None if recorded is None else recorded.get(self.prefix + key)
        if expected is None or md5_hex(data) == expected:
            if self._refused:
                self._judge_refusal(key, expected is not None)
            return
        if self._refused:
            self._judge_refusal(key, False)
        if state.appended_since_loaded():
            return      # only a leftover changes so: its reader takes the items it had
        if not state.is_stable(state.reader_marker):     # (UNSET: never stable)
            if not self.readonly:
                raise state.changed_under_writer()
            raise DatasetChangedError(
                f"{self.path(key)}: a writer committed since this reader opened the dataset; "
                f"call refresh() to read the new state")
        raise IntegrityError(f"{self.path(key)}: content does not match its md5 checksum")

    def check_reading(self, failed: bool = False) -> None:
        """After a read: raise :class:`DatasetChangedError` when a writer
        committed since a reader opened.

        Local stores ask the store after every read; remote readers check the
        contents they read against the checksums instead, and ask the store
        only after a read ``failed`` (a missing or malformed chunk file may be
        a writer's commit rather than damage).
        """
        if failed or not self.check_contents:
            self.journal.state.check_reading(failed)

    def exists(self, key: str) -> bool:
        """True when the file ``key`` currently exists (staged, committed, or
        anything stored at its key, so that reading it explains what is wrong).

        Raises
        ------
        IntegrityError
            With ``verify`` on, when the file is missing but the checksum file
            lists it.
        """
        full = self.prefix + key
        found, blob = self.journal.lookup(full)
        if found:
            if blob is None and self.verify and self.journal.in_overlay(full):
                self._check_deletion(key)
            return blob is not None
        if is_metadata_key(full) and self.journal.state.metadata(full) is not None:
            return True
        if full.endswith(OPTIONAL_FILES) and self.journal.state.lacks(full):
            return False            # no statistics or index: no request to ask
        present = self.store.exists(full)
        if not present and self.verify:
            recorded = self.journal.state.recorded()
            if recorded is not None and full in recorded:
                raise IntegrityError(f"{self.path(key)}: missing, but the checksum file "
                                     f"lists it")
        return present

    def listdir(self, folder: str = "") -> list:
        """Names in ``folder`` of this dataset (empty when it does not exist)."""
        lister = getattr(self.store, "listdir", None)
        if lister is not None:
            return lister(self.prefix + folder)
        prefix = self.prefix + (folder.rstrip("/") + "/" if folder else "")
        return sorted({key[len(prefix):].partition("/")[0] for key in self.store.list(prefix)})
