"""The change one writer staged for its next commit.

A :class:`~.journal.Journal` writes new contents into blobs of its own folder
and records them in its :class:`Staging`; its
:class:`~.commit.Committer` reads the staging, commits it and clears it.
The staging is plain state: writing blobs and committing them are the
journal's and the committer's.
"""

from __future__ import annotations

from concurrent.futures import wait

from .checksums import md5_hex
from .records import JOURNAL_PREFIX

__all__ = ["Staging"]


class Staging:
    """The change one writer staged for its next commit, and where its blobs
    live: what a :class:`~.journal.Journal` writes and its
    :class:`~.commit.Committer` commits and clears.

    Attributes
    ----------
    files : dict
        key -> its new content: a blob key, the content itself (bytes,
        carried by the record), or None (the file is deleted).
    sums : dict
        key -> md5 hex of the staged content, or the Future of its
        background write (None: deleted).
    meta : dict
        Metadata key -> its staged bytes.
    inflight : list
        ``(Future, size)`` of the background blob writes, oldest first.
    inflight_bytes : int
        The bytes of those writes.
    unsynced : set
        Small blobs written but not yet synced.
    ops : set
        What the pending change did (:meth:`~.journal.Journal.note`).
    repairs : set
        Metadata keys staged as repairs: committed even where the checksum
        file records their content (the file on disk was damaged since).
    token : str or None
        This writer's token: its blob folder's name, written into its records.
    prefix : str or None
        The key of that folder.
    folder_made : bool
        True once the folder exists.
    scratch_used : bool
        True when files besides blobs may be in the folder.
    counter : int
        The number of the last blob name given out.
    """

    def __init__(self):
        self.files = {}
        self.sums = {}
        self.meta = {}
        self.inflight = []
        self.inflight_bytes = 0
        self.unsynced = set()
        self.ops = set()
        self.repairs = set()
        self.token = self.prefix = None
        self.folder_made = False
        self.scratch_used = False
        self.counter = 0

    def new_folder(self, token: str) -> None:
        """Stage future blobs in the folder named ``token`` (not made yet).

        Parameters
        ----------
        token : str
            The writer token that names the folder (and goes into its records).
        """
        self.token = token
        self.prefix = f"{JOURNAL_PREFIX}{token}/"
        self.folder_made = False
        self.scratch_used = False

    def holds(self, key: str, content: bytes, committed=None) -> bool:
        """True when ``key`` holds ``content`` already: staged so, or (not
        staged) committed so, as ``committed`` (the committed checksums, or
        None: not known) tells.

        Parameters
        ----------
        key : str
        content : bytes
        committed : dict, optional
            ``{key: md5 hex}`` of the committed files.
        """
        if key in self.files:
            return self.meta.get(key) == content
        return committed is not None and committed.get(key) == md5_hex(content)

    def wait_for_blobs(self) -> None:
        """Wait for the background blob writes (their errors are raised when
        the content's checksum is asked for)."""
        for future, _size in list(self.inflight):
            wait([future])
