"""Applying a commit record: its blobs moved (or copied) onto bcolz's names,
its inline contents written, its deletions made, in an order that keeps the
dataset readable by the real bcolz meanwhile.

Only the holder of the commit lock applies (:mod:`~.commit_lock`), and it
confirms the lock before each write: no two writers ever apply at once.  See
:mod:`bcolz_store.storage.journal` for the protocol.
"""

from __future__ import annotations

import itertools

from ..errors import DatasetNotFoundError
from ..format.layout import CONSOLIDATED_FILE
from .records import JOURNAL_PREFIX, commit_order

__all__ = ["apply_record"]


def apply_record(store, entries: list, confirm, sync: bool, superseded=None) -> None:
    """Move each blob of ``entries`` (``[key, blob name, content or None]``)
    onto its key, write the contents carried inline and make the deletions.

    On a local disk in the commit order, one step after the other: data,
    metadata, ``meta/sizes``, the checksum file, the consolidated metadata
    (so the real bcolz, reading during a commit, finds the chunks before the
    sizes that count them).  On a remote store everything but the
    consolidated metadata at once, then the consolidated metadata: its
    readers take that object as the end of the commit and read through the
    commit record until then, and the real bcolz cannot read there.

    Parameters
    ----------
    store : Store
    entries : list
        The validated entries of a record, in :func:`~.records.commit_order`.
    confirm : callable
        Called before each write; raises when the commit lock is lost.
    sync : bool
        Sync the touched folders at the end (local disks).
    superseded : callable, optional
        Asked before each step: True stops applying (a writer applying
        another's record that was applied, or overtaken, meanwhile).

    Raises
    ------
    LockLostError
        From ``confirm``: nothing more is written.
    OSError
        When the medium refuses a write, naming the file.
    """
    keys = [key for key, _blob in entries]
    store.check_targets(keys)
    if store.remote:
        steps = [[e for e in entries if e[0] != CONSOLIDATED_FILE],
                 [e for e in entries if e[0] == CONSOLIDATED_FILE]]
    else:
        steps = [list(group) for _order, group in
                 itertools.groupby(entries, key=lambda e: commit_order(e[0])[0])]
    for step in steps:
        confirm()
        if superseded is not None and superseded():
            return
        _apply_step(store, step, confirm)
    if sync:
        store.sync_folders(keys)


def _apply_step(store, group: list, confirm) -> None:
    """Deletions, inline contents and blob moves of one step (concurrently on
    remote stores); a blob that is gone was moved already."""
    tasks = []
    deletes = [key for key, blob in group if blob is None]
    if deletes:
        tasks.append(lambda: store.delete_many(deletes))
    tasks += [lambda item=(key, blob): store.put(*item)
              for key, blob in group if isinstance(blob, bytes)]
    moves = [(JOURNAL_PREFIX + blob, key) for key, blob in group if isinstance(blob, str)]
    if moves and store.remote:
        # Copies only: the blobs go all at once afterwards (the writer's one
        # bulk delete, or recovery's removal of the record's blob folders).
        tasks += [lambda pair=pair: _copy_unless_moved(store, *pair) for pair in moves]
    elif moves:
        tasks.append(lambda: store.move_many(moves, missing_ok=True))
    store.for_each(lambda task: (confirm(), task()), tasks)


def _copy_unless_moved(store, src: str, dst: str) -> None:
    """Copy a blob onto its key; a blob that is gone was applied already."""
    try:
        store.copy(src, dst)
    except DatasetNotFoundError:
        pass
