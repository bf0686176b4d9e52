"""A stored carray's secondary index, as the ctable's ``create_index``,
``drop_index`` and ``indexes`` use it (the index itself:
:mod:`bcolz_store.chunks.index`).

Source: the bcolz format has no indexes; these files are this library's
(:mod:`bcolz_store.format.index_meta`), beside bcolz's, which bcolz ignores.
"""

from __future__ import annotations

from .carray_ops import item_engine
from .chunks.index import build_index, drop_index as _drop
from .errors import IndexNotFoundError
from .format.index_meta import INDEX_KINDS

__all__ = ["check_create", "check_drop", "create_index", "drop_index", "index_kind",
           "usable_index"]


def create_index(c, kind: str = "sorted") -> None:
    """Build an index of ``kind`` over the stored carray ``c`` and commit it
    (replacing any index it had).

    Raises
    ------
    ValueError
        An unknown ``kind``, or a carray in memory.
    TypeError
        A carray of a kind that cannot be indexed (vlen items, objects,
        complex numbers, structured or multidimensional atoms, nullable, decimals).
    ReadOnlyError
        In mode 'r'.
    """
    check_create(c, kind)
    store, engine = c._files.store, item_engine(c)
    stats = engine.stats
    with c._writing("create_index"):
        c._flush(commit=False)
        build_index(store, engine, kind, stats.kind)
        store.commit()


def drop_index(c) -> None:
    """Remove the index of ``c`` and commit.

    Raises
    ------
    IndexNotFoundError
        When it has none.
    ReadOnlyError
        In mode 'r'.
    """
    check_drop(c)
    store = c._files.store
    with c._writing("drop_index"):
        c._flush(commit=False)
        _drop(store, item_engine(c))
        store.commit()


def check_create(c, kind: str) -> None:
    """Raise what :func:`create_index` raises before it changes anything."""
    if kind not in INDEX_KINDS:
        raise ValueError(f"kind must be one of {list(INDEX_KINDS)}, not {kind!r}")
    if c._files.store is None:
        raise ValueError("indexes are kept for carrays on disk (give a rootdir)")
    c._check_writable()
    if c.nullable:
        raise TypeError(f"{c.rootdir}: a nullable carray cannot be indexed (its null items "
                        f"hold a fill value an index would find); queries scan it")
    stats = getattr(item_engine(c), "stats", None)
    if stats is None or not c._column.indexable:
        raise TypeError(f"a carray of {c.dtype} cannot be indexed: indexes are kept for "
                        f"numbers, booleans, datetimes, fixed-width text and categoricals")


def check_drop(c) -> None:
    """Raise what :func:`drop_index` raises before it changes anything."""
    if c._files.store is None or getattr(item_engine(c), "index", None) is None:
        raise IndexNotFoundError(f"{c.rootdir}: no index to drop")
    c._check_writable()


def index_kind(c):
    """The kind of the index of ``c`` (``'sorted'``, ``'bitmap'``), or None."""
    index = getattr(item_engine(c), "index", None) if c._files.store is not None else None
    return None if index is None else index.kind


def usable_index(c):
    """The index of ``c`` when it describes exactly its items as they are now
    (no change since its last flush, not damaged), else None."""
    engine = item_engine(c)
    index = getattr(engine, "index", None)
    if index is None or index.damaged is not None or getattr(engine, "stats", None) is None or \
            engine.stats.edited or index.length != engine.length:
        return None
    return index
