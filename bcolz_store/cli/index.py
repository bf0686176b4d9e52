"""``bcolz-store index``: the chunk statistics and secondary indexes of a
dataset, and ``bcolz-store copy --sortby``.

``index --stats PATH`` computes and commits the chunk statistics
(``meta/stats``) of every column of a dataset that has none (bcolz wrote it),
or whose statistics are damaged or stale, in one commit.  ``index --create
COL[:KIND] --drop COL PATH`` builds (``sorted`` by default, or ``bitmap``) and
removes secondary indexes of a ctable's columns, one commit each; ``index
--list PATH`` prints them.  ``copy SRC DST --sortby COL`` writes a copy of a
ctable ordered by a column (``ctable.copy(sortby=...)``).

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

from .common import (EXIT_OK, CommandError, Progress, add_progress_options, add_storage_options,
                     check_target, describe, remote_reason, storage_options)

__all__ = ["add_index_parser", "change_indexes", "cmd_copy", "cmd_index", "index_stats"]


def add_index_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``index`` command to ``bcolz-store``'s subparsers."""
    parser = subparsers.add_parser(
        "index", help="chunk statistics and secondary indexes of a dataset",
        description="With --stats: read every chunk of every column and commit, in one "
                    "commit, the chunk statistics (meta/stats: min, max and missing items per "
                    "chunk) of each column that has none (a dataset bcolz wrote), or whose "
                    "statistics are damaged or stale.  With --create/--drop: build or remove "
                    "the secondary index of a ctable's column.  With --list: print the "
                    "indexes.  Exit status 0 on success, 1 on failure.")
    parser.add_argument("path", help="the dataset: a rootdir or a URL (s3://...)")
    parser.add_argument("--stats", action="store_true",
                        help="compute and commit the chunk statistics")
    parser.add_argument("--create", action="append", default=[], metavar="COL[:KIND]",
                        help="build an index of column COL, KIND 'sorted' (default) or "
                             "'bitmap'; may be repeated")
    parser.add_argument("--drop", action="append", default=[], metavar="COL",
                        help="remove the index of column COL; may be repeated")
    parser.add_argument("--list", action="store_true", help="print the indexes")
    add_storage_options(parser)
    add_progress_options(parser)
    parser.set_defaults(func=cmd_index)
    copy = subparsers.add_parser(
        "copy", help="copy a ctable, its rows ordered by a column",
        description="Write a copy of the ctable SRC at DST with its rows ordered by the column "
                    "given to --sortby (stably, missing items last), so that the chunk "
                    "statistics of that column let queries skip chunks.  An existing DST is "
                    "replaced only with --overwrite, and only when it is a bcolz dataset.  "
                    "Exit status 0 on success, 1 on failure.")
    copy.add_argument("src", help="the ctable: a rootdir or a URL")
    copy.add_argument("dst", help="where to write the copy: a rootdir or a URL")
    copy.add_argument("--sortby", required=True, metavar="COL", help="the column to order by")
    copy.add_argument("--overwrite", action="store_true",
                      help="replace DST if it is a bcolz dataset (anything else is never "
                           "replaced)")
    add_storage_options(copy)
    copy.set_defaults(func=cmd_copy)
    return parser


def change_indexes(path, create=(), drop=(), storage_options=None) -> dict:
    """Remove the indexes of the columns ``drop`` and build those of ``create``
    (``'COL'`` or ``'COL:KIND'``) of the ctable at ``path``; its indexes after.

    Raises
    ------
    BcolzStoreError, KeyError, ValueError, TypeError
        As :meth:`bcolz_store.ctable.create_index` and ``drop_index``; a
        dataset that is not a ctable (ValueError).
    """
    kwargs = {"storage_options": storage_options} if storage_options else {}
    mode = "a" if create or drop else "r"
    t = bcolz_store.open(path, mode=mode, **kwargs)
    try:
        if not isinstance(t, bcolz_store.ctable):
            raise ValueError(f"{path}: indexes are kept for the columns of a ctable")
        for name in drop:
            t.drop_index(name)
        for spec in create:
            name, _, kind = spec.partition(":")
            t.create_index(name, kind=kind or "sorted")
        return dict(t.indexes)
    finally:
        t.close()


def _fail(err, path: str, what: str):
    reason = remote_reason(err, path)
    if reason is not None:
        raise CommandError(f"{what}: {reason}") from err
    if not isinstance(err, (BcolzStoreError, OSError, KeyError, ValueError, TypeError)):
        raise err
    raise CommandError(describe(err, path, what)) from err


def cmd_copy(args) -> int:
    kwargs = {"storage_options": storage_options(args)} if storage_options(args) else {}
    check_target(args.src, args.dst, getattr(args, "overwrite", False),
                 kwargs.get("storage_options"), "cannot copy")
    try:
        t = bcolz_store.open(args.src, mode="r", **kwargs)
        if not isinstance(t, bcolz_store.ctable):
            raise ValueError(f"{args.src}: --sortby orders the rows of a ctable")
        t.copy(rootdir=args.dst, mode="w", sortby=args.sortby, **kwargs).close()
    except Exception as err:        # noqa: BLE001 - the known kinds, else a bug
        _fail(err, str(args.src), "cannot copy")
    print(f"{args.dst}: {len(t):,} rows ordered by {args.sortby!r}")
    return EXIT_OK


def index_stats(path, storage_options=None, progress=None) -> dict:
    """Recompute the chunk statistics of every column of the dataset at ``path``
    and commit those that changed, in one commit; ``progress('statistics',
    done, total)`` (see :class:`~.common.Progress`) after each column.

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
        for done, (name, col) in enumerate(columns.items()):
            if progress is not None:
                progress("statistics", done, len(columns))
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
        if progress is not None:
            progress("statistics", len(columns), len(columns))
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
    if not (args.stats or args.create or args.drop or args.list):
        raise CommandError("index: say what to do: --stats, --create COL, --drop COL or --list")
    if args.create or args.drop or args.list:
        try:
            found = change_indexes(args.path, args.create, args.drop, storage_options(args))
        except Exception as err:    # noqa: BLE001 - the known kinds, else a bug
            _fail(err, str(args.path), "cannot index")
        for name, kind in found.items():
            print(f"{name}: {kind} index")
        print(f"{args.path}: {len(found)} index{'es' * (len(found) != 1)}")
        if not args.stats:
            return EXIT_OK
    try:
        with Progress(args, unit="column") as progress:
            facts = index_stats(args.path, storage_options(args), progress)
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
