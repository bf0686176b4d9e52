"""The blobs of a committed record not applied yet: checked before it is
rolled forward (:func:`check_blobs`), removed after (:func:`forget_blobs_of`),
and a record that can never be completed recognised and set aside.

A committed record that is not applied yet (the consolidated metadata still
holds the generation before it) is rolled forward by the next writer, under
the commit lock, with the blobs it names.  Blobs leave the journal only by
being applied: on a local disk each is moved onto its bcolz name, one step of
:func:`~.records.commit_order` after the other, the consolidated metadata
last; on a remote store they are copied and removed only once the
consolidated metadata says the record's generation.  A record whose blobs are
gone otherwise (its writer gave up after creating it and discarded them, or
someone removed the journal's folders) can never be completed: rolling it
forward writes nothing, the consolidated metadata keeps the generation
before it, and every writer would find the next generation taken, rebase and
fail at its timeout.

:func:`set_aside_if_incomplete` tells such a record by what the journal
holds (a blob gone while the consolidated metadata does not say the record's
generation, where no blob can be moved yet: the consolidated metadata's own,
one of a step after which an earlier step's blob is still there, one whose
target does not exist, or any blob on a remote store), and renames it
``unfinishable-commit-<generation>-<writer>.json`` in the journal: nothing
is deleted (contents a record carries inline stay in it), garbage collection
keeps it, and the dataset stays at its last committed state, which its
readers read.  A :class:`~bcolz_store.errors.IntegrityWarning` names both.
"""

from __future__ import annotations

import re
import warnings

from ..errors import FormatError, IntegrityWarning
from ..format.layout import CONSOLIDATED_FILE, commit_key_limit
from .records import JOURNAL_PREFIX, commit_order

__all__ = ["ASIDE_NAME", "check_blobs", "forget_blobs_of", "gone_for_good",
           "set_aside_if_incomplete"]

#: The name (inside the journal folder) of a record set aside.
ASIDE_NAME = re.compile(r"unfinishable-commit-[0-9]{12}-[0-9a-z]{1,16}\.json")


def check_blobs(store, entries: list) -> dict:
    """``{key: blob key, content or None}`` of the validated record ``entries``
    once every blob it names is a plain object (or gone) of a size its key
    allows.

    Raises
    ------
    FormatError
        Naming the first blob that is not a file, or too large for its key.
    """
    blobs = {}
    for key, blob in entries:
        if blob is None or isinstance(blob, bytes):
            blobs[key] = blob
            continue
        blob_key = JOURNAL_PREFIX + blob
        try:
            size = store.size(blob_key)
        except FormatError as err:
            raise FormatError(f"{store.path(blob_key)}: a commit blob must be a "
                              f"file ({err})") from err
        if size is not None and size > commit_key_limit(key, store.url):
            raise FormatError(f"{store.path(blob_key)}: holds {size} bytes, more "
                              f"than {key} may hold")
        blobs[key] = blob_key
    return blobs


def forget_blobs_of(store, entries: list) -> None:
    """Remove the blob folders a rolled-forward record used."""
    for folder in {blob.partition("/")[0] for _key, blob in entries
                   if isinstance(blob, str) and "/" in blob}:
        store.delete_prefix(f"{JOURNAL_PREFIX}{folder}/")


def gone_for_good(store, entries: list):
    """The key of a blob of ``entries`` that was neither applied nor can be
    (see the module docstring), or None when the record can be completed.

    Parameters
    ----------
    store : Store
        The dataset's store; the consolidated metadata there does not say the
        record's generation yet.
    entries : list
        The record's validated entries (``[key, blob name, content or None]``).
    """
    blobs = [(key, blob) for key, blob in entries if isinstance(blob, str)]
    if not blobs:
        return None
    present = set(store.list_times(JOURNAL_PREFIX))
    gone = [(key, blob) for key, blob in blobs if JOURNAL_PREFIX + blob not in present]
    if not gone:
        return None
    if store.remote:            # copied, never moved: a blob leaves only after the commit
        return JOURNAL_PREFIX + gone[0][1]
    last = max(commit_order(key)[0] for key, _blob in gone)
    for key, blob in gone:
        if key == CONSOLIDATED_FILE or not store.exists(key):
            return JOURNAL_PREFIX + blob
    for key, blob in blobs:
        if commit_order(key)[0] < last and JOURNAL_PREFIX + blob in present:
            return JOURNAL_PREFIX + gone[0][1]      # a later step moved before this one
    return None


def set_aside_if_incomplete(store, key: str, entries: list, generation: int,
                            writer=None) -> bool:
    """Under the commit lock: rename the record ``key`` of ``generation`` if it
    can never be completed (:func:`gone_for_good`).

    Parameters
    ----------
    store : Store
    key : str
        The record's key.
    entries : list
        Its validated entries.
    generation : int
        Its generation (the consolidated metadata holds the one before).
    writer : str, optional
        Its writer token (a record of an earlier version has none).

    Returns
    -------
    bool
        True when it was set aside: the state stays at ``generation - 1``.

    Warns
    -----
    IntegrityWarning
        Naming the record, the blob that is gone and where the record went.
    """
    missing = gone_for_good(store, entries)
    if missing is None:
        return False
    aside = f"{JOURNAL_PREFIX}unfinishable-commit-{generation:012d}-{writer or 'legacy'}.json"
    store.move(key, aside)
    if store.exists(key):       # (else recovery would look at it again and again)
        raise FormatError(f"{store.path(key)}: a commit record that can never be completed "
                          f"({missing} is gone) could not be moved to {store.path(aside)}; "
                          f"move it out of the journal folder by hand")
    warnings.warn(IntegrityWarning(
        f"{store.path(key)}: this commit record can never be completed ({missing} is gone, "
        f"not applied); it was set aside as {store.path(aside)} and the dataset stays at its "
        f"last committed state (generation {generation - 1}); remove that file once it is "
        f"of no use"), stacklevel=2)
    return True
