"""The committed files of a dataset as a writer or reader loaded them: their
checksums (the checksum file, or computed from the files once when there is
none) and the metadata files the consolidated metadata holds.

:class:`CommittedFiles` is the base class of
:class:`~.committed.CommittedState`, whose :meth:`~.committed.CommittedState.recover`
loads the state these describe.
"""

from __future__ import annotations

from ..errors import DatasetChangedError, DatasetNotFoundError, FormatError
from ..format.layout import CHECKSUM_FILE, MAX_OWN_FILE_BYTES, is_metadata_key
from .checksums import load_checksums, md5_hex, read_limit
from .records import UNSET

__all__ = ["CommittedFiles"]


class CommittedFiles:
    """Checksums and metadata files of the committed state (a base class of
    :class:`~.committed.CommittedState`, whose constructor and
    :meth:`~.committed.CommittedState.recover` set the attributes used here)."""

    def list_files(self, prefix: str = "") -> list:
        """Keys of the files under ``prefix`` (our own files excluded), unread."""
        return self.store.list(prefix)

    def _scan(self, prefix: str = "") -> dict:
        """md5 of every bcolz file under ``prefix`` as it is now.

        Only plain files are read, each within the size its name allows.

        Raises
        ------
        FormatError
            Naming the first file that is a symlink, a FIFO, a device, too
            large, or unreadable.
        """
        keys = self.store.list(prefix)
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

    def _metadata_files(self) -> dict:
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
