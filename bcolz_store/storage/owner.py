"""What the containers of a dataset do for its commits.

A carray, or a ctable for all its columns, holds more than the store does:
rows appended but not yet staged, and the metadata it loaded.  The commit
machinery (:class:`~.journal.Journal`) calls on them through a
:class:`DatasetOwner` that the container gives its
:class:`~.dataset.DatasetStore` (:meth:`~.dataset.DatasetStore.attach`) once it
exists: before that, a failed write or a commit has no container to call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["DatasetOwner"]


@dataclass(frozen=True)
class DatasetOwner:
    """The containers of one dataset, as its commits call on them.

    Parameters
    ----------
    reload : callable
        ``reload()`` loads the committed state (metadata, attrs, chunks) into
        the containers, in place.  Called after a failed write (the staged
        changes are discarded first), for a rebase, and by ``refresh()`` after
        such a failure; again while a commit began meanwhile (see
        :meth:`~.committed.CommittedState.read_consistently`).
    stage_pending : callable
        ``stage_pending()`` stages what the containers hold but have not
        staged (the leftover and ``meta/sizes`` of appends): every commit of
        the dataset includes it, so that no commit holds chunk files its
        ``meta/sizes`` does not count.
    capture_appends : callable
        ``capture_appends()`` reads back the rows appended since the last
        commit and returns a function, without arguments, that appends them
        again; the journal calls it once the newer committed state is loaded
        (an append that another writer's commit overtook is rebased).
    committed : callable
        ``committed()`` is called after each commit the journal makes.
    """

    reload: Callable[[], None]
    stage_pending: Callable[[], None]
    capture_appends: Callable[[], Callable[[], None]]
    committed: Callable[[], None]
