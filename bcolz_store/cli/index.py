"""``bcolz-store index --stats PATH``: compute and commit the chunk statistics
(``meta/stats``) of every column of a dataset that has none (bcolz wrote it),
or whose statistics are damaged or stale, in one commit.

Every chunk of every column is read and its statistics recomputed; a column
whose committed statistics are right is left as it is.  Columns of a kind
without statistics (complex numbers, structured or multidimensional atoms,
pickled objects) are named and skipped.
"""

from __future__ import annotations

import argparse

import bcolz_store
from bcolz_store.carray_ops import chunk_stats, recompute_stats
from bcolz_store.errors import BcolzStoreError

from .common import EXIT_OK, CommandError, add_storage_options, describe, remote_reason, \
    storage_options

__all__ = ["add_index_parser", "cmd_index", "index_stats"]


def add_index_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``index`` command to ``bcolz-store``'s subparsers."""
    parser = subparsers.add_parser(
        "index", help="compute and commit the chunk statistics of a dataset",
        description="With --stats: read every chunk of every column and commit, in one "
                    "commit, the chunk statistics (meta/stats: min, max and missing items per "
                    "chunk) of each column that has none (a dataset bcolz wrote), or whose "
                    "statistics are damaged or stale.  Exit status 0 on success, 1 on failure.")
    parser.add_argument("path", help="the dataset: a rootdir or a URL (s3://...)")
    parser.add_argument("--stats", action="store_true", required=True,
                        help="the chunk statistics (the only index there is)")
    add_storage_options(parser)
    parser.set_defaults(func=cmd_index)
    return parser


def index_stats(path, storage_options=None) -> dict:
    """Recompute the chunk statistics of every column of the dataset at ``path``
    and commit those that changed, in one commit.

    Returns
    -------
    dict
        ``path``, ``committed`` (bool: a commit was made) and ``columns``:
        ``{name: what}`` ('' for a carray), ``what`` one of ``'up to date'``,
        ``'written (no statistics)'``, ``'rewritten (damaged: ...)'``,
        ``'rewritten (stale: ...)'`` or ``'none kept (...)'``.

    Raises
    ------
    BcolzStoreError
        When the dataset cannot be opened, read or written.
    """
    kwargs = {"storage_options": storage_options} if storage_options else {}
    obj = bcolz_store.open(path, mode="a", **kwargs)
    columns = {"": obj} if not isinstance(obj, bcolz_store.ctable) else \
        {name: obj.cols[name] for name in obj.names}
    out, changed = {}, False
    try:
        for name, col in columns.items():
            kind, why = recompute_stats(col)
            if kind is None:
                atom = f"{col.dtype} items of shape {col.shape[1:]}" if col.ndim > 1 else \
                    f"{col.dtype} items"
                out[name] = f"none kept (a kind without statistics: {atom})"
            elif why is None:
                out[name] = "up to date"
            else:
                changed = True
                out[name] = "written (no statistics)" if why == "no statistics" else \
                    f"rewritten ({'damaged' if 'meta/stats' in why else 'stale'}: {why})"
        obj.flush()
    finally:
        obj.close()
    if changed:                     # what a reader finds now
        reader = bcolz_store.open(path, mode="r", **kwargs)
        for name in out:
            stats = chunk_stats(reader.cols[name] if name else reader)
            if out[name].startswith(("written", "rewritten")) and len(stats.known) and \
                    not stats.known.any():
                out[name] = ("none kept (more chunks or bytes than statistics are kept for, "
                             "or texts too long)")
    return {"path": str(path), "committed": changed, "columns": out}


def cmd_index(args) -> int:
    try:
        facts = index_stats(args.path, storage_options(args))
    except Exception as err:        # noqa: BLE001 - the known kinds, else a bug
        reason = remote_reason(err, str(args.path))
        if reason is not None:
            raise CommandError(f"cannot index: {reason}") from err
        if not isinstance(err, (BcolzStoreError, OSError)):
            raise
        raise CommandError(describe(err, str(args.path), "cannot index")) from err
    for name, what in facts["columns"].items():
        print(f"{name or '(carray)'}: {what}")
    done = sum(1 for what in facts["columns"].values() if what.startswith(("written",
                                                                           "rewritten")))
    print(f"{facts['path']}: " + (f"statistics of {done} column{'s' * (done != 1)} committed "
                                  f"in one commit" if facts["committed"] else
                                  "statistics up to date, nothing committed"))
    return EXIT_OK
