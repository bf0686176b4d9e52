"""Chunk files of a carray that another program changed since bcolz_store's last
commit, told from damage.

The real bcolz appending to a carray (or to each column of a ctable) that
bcolz_store wrote rewrites the chunk file that held the leftover, adds chunk
files after it and rewrites ``meta/sizes``, but neither ``bcolz_store.md5``
nor ``bcolz_store.json``.  Those files then differ from their checksums
although nothing is damaged.  Such a change is *consistent* when every chunk
file the checksums record is still there, only the last of them and files
after it differ, ``meta/sizes`` accounts for exactly the chunk files there
are, and the changed files decode into its items; anything else is damage.
:func:`foreign_change` says whether files a verification found are such a
change (for :func:`bcolz_store.verify`, which reseals it when asked), and
:func:`stage_foreign_appends` checks and stages them for the commit of
``verify(..., reseal=True)``, which records their checksums.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import BcolzStoreError
from .carray_files import appendable, load_carray, new_engine, stage_stats, stats_engine

__all__ = ["CHANGED", "foreign_change", "restage_derived", "stage_foreign_appends"]

#: How a file another program changed consistently is reported.
CHANGED = "changed by another program (bcolz?)"

_CHUNK_FILE = re.compile(r"data/__(0|[1-9][0-9]{0,18})\.(blp|vlen)")


def _numbers(keys) -> list:
    """Chunk numbers of the chunk file keys among ``keys`` (relative to the carray)."""
    out = []
    for key in keys:
        match = _CHUNK_FILE.fullmatch(key)
        if match:
            out.append(int(match.group(1)))
    return sorted(out)


def _decode_from(store, meta, first_file: int) -> None:
    """Read the items of chunk files ``first_file`` onward through an engine:
    their headers and sizes are checked and every block decompressed."""
    engine = new_engine(meta, store, cache_budget=0)
    for start in range(first_file * meta.chunklen, meta.length, meta.chunklen):
        engine.read_range(start, min(start + meta.chunklen, meta.length))


def foreign_change(store, recorded: dict, changed: set, added: set):
    """Whether the files of the carray in ``store`` that differ from their
    checksums are a consistent change by another program.

    Parameters
    ----------
    store : DatasetStore
        A read-only view of the carray's folder.
    recorded : dict
        ``{key: md5}`` the checksum file records for the carray's own files
        (keys relative to its folder).
    changed, added : set of str
        Its files whose content differs from their checksums, and its files
        the checksums do not list (keys relative to its folder).

    Returns
    -------
    (bool, str)
        True and what changed, or False and why it is damage (or not a
        change of this kind).
    """
    if not changed | added:
        return False, "nothing changed"
    numbers = _numbers(recorded)
    count = len(numbers)
    if numbers != list(range(count)):
        return False, "the checksums record chunk files with gaps"
    others = {key for key in changed | added if key != "meta/sizes"
              and not _CHUNK_FILE.fullmatch(key)}
    if others or "meta/sizes" not in changed:
        return False, "files other than meta/sizes and new chunk files changed"
    rewritten, new = _numbers(changed), _numbers(added)
    if not rewritten + new:
        return False, "meta/sizes changed, but no chunk file did"
    if rewritten and rewritten != [count - 1]:
        return False, f"chunk files {rewritten} changed, not only the last, {count - 1}"
    try:
        meta = load_carray(store)
        if not appendable(meta):
            return False, "a carray of this kind is not checked for such changes"
        nfiles = -(-meta.length // meta.chunklen)
        if nfiles != count + len(new) or new != list(range(count, count + len(new))):
            return False, (f"meta/sizes says {meta.length} items in {nfiles} chunk files; "
                           f"there are {count + len(new)}")
        _decode_from(store, meta, min(rewritten + new, default=nfiles))
    except BcolzStoreError as err:
        return False, str(err)
    return True, (f"{CHANGED}: meta/sizes says {meta.length} items in {nfiles} chunk files "
                  f"(the checksums know {count}); the changed files decode and agree with it")


def stage_foreign_appends(store, meta) -> list:
    """The check ``verify(..., reseal=True)`` makes again, as the writer it
    is, of chunk files another program appended: when the
    carray's ``meta/sizes`` (``meta``) does not match its checksum, the chunk
    files from the last one the checksums record onward whose content they
    do not record are read, decoded, and staged as they are, so that the next
    commit records their checksums; returns their keys.  Files that are not
    a consistent append (see :func:`foreign_change`) are left alone: their
    checksums stay as recorded, and :func:`bcolz_store.verify` reports them.
    """
    reads = getattr(store, "reads", None)
    if reads is None or store.readonly or not appendable(meta):
        return []
    sizes = store.get("meta/sizes")
    recorded_all = store.recorded_checksums()
    if recorded_all is None or reads.unchecked("meta/sizes", sizes) is None:
        return []
    prefix = store.prefix
    recorded = {key[len(prefix):]: md5 for key, md5 in recorded_all.items()
                if key.startswith(prefix)}
    count = len(_numbers(recorded))
    contents, changed, added = {}, {"meta/sizes"}, set()
    for key in (f"data/{name}" for name in store.listdir("data")):
        match = _CHUNK_FILE.fullmatch(key)
        if match is None or int(match.group(1)) < count - 1 or store.lookup(key)[0]:
            continue
        data = store.get(key)
        if key not in recorded:
            added.add(key)
        elif hashlib.md5(data).hexdigest() != recorded[key]:
            changed.add(key)
        else:
            continue
        contents[key] = data
    if not foreign_change(store, recorded, changed, added)[0]:
        return []       # not an append: nothing is vouched for (verify() reports the files)
    contents["meta/sizes"] = sizes
    for key, data in contents.items():
        store.set(key, data)
    return sorted(contents)


def restage_derived(store) -> None:
    """Stage the chunk statistics and index of the carray in ``store`` (a
    writer's view) computed again from its items: those of the items before
    another program changed them no longer describe it."""
    meta = load_carray(store)
    engine = new_engine(meta, store, cache_budget=0)
    inner = stats_engine(engine)
    stats = getattr(inner, "stats", None)
    if stats is None:
        return
    stats.recompute(inner)
    if getattr(inner, "index", None) is not None:
        inner.index.rebuild = True
    stage_stats(store, engine)
