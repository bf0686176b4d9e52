"""``bcolz-store convert``: convert between a bcolz dataset and another format.

The work is done by :func:`bcolz_store.converters.convert`; this module
holds the command's parser, whose formats, choices and help come from the
registered converters, and reports its outcome in one line.
"""

from __future__ import annotations

import argparse
import re
import sys

from bcolz_store.errors import BcolzStoreError
from bcolz_store.converters import convert, detect_format, formats, registered_converters

from .common import PROG, CommandError, add_storage_options, remote_reason, storage_options

__all__ = ["add_convert_parser", "run_convert"]

HUB = "bcolz"       # the format of bcolz datasets, one side of every conversion


def _and(names) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def _either(names) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


def add_convert_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``convert`` command to ``bcolz-store``'s subparsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``.

    Returns
    -------
    argparse.ArgumentParser
        The ``convert`` parser; its ``func`` default is :func:`run_convert`.
    """
    others = [cls for cls in registered_converters() if cls.name != HUB]
    names = [cls.name for cls in others]
    paths = ", ".join(f"{'/'.join(cls.suffixes)}"
                      f"{'' if cls.suffixes[0][1:] == cls.name else f' ({cls.name})'}"
                      for cls in others)
    remote = [cls.name for cls in registered_converters() if cls.remote]
    parser = subparsers.add_parser(
        "convert", help=f"convert between a bcolz dataset and {_either(names)}",
        description=f"Convert SRC into DST.  Formats come from the names: a bcolz rootdir "
                    f"(a folder; no suffix or .bcolz; a .zip pack as SRC), {paths}.  "
                    f"{_and(remote)} may be URLs (s3://...; --storage-options for "
                    f"credentials or an endpoint).  Exit status 0 on success, 1 on failure.")
    parser.add_argument("src", help="what to convert: a path, a .zip pack or a URL")
    parser.add_argument("dst", help="where to write it: a path or a URL")
    parser.add_argument("--to", choices=formats(), help="the destination format (default: "
                                                      "from DST's name; a DST suffix of "
                                                      "another format is refused)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace DST if it exists (only with the same format)")
    parser.add_argument("--drop-attrs", action="store_true",
                        help="convert even where the destination has no place for attrs")
    parser.add_argument("--strings", choices=("keep", "fixed", "vlen"), default=None,
                        help="bcolz to bcolz: 'fixed' writes vlen columns as fixed-width U/S "
                             "columns, so that the real bcolz opens the copy; parquet, arrow "
                             "or zarr to bcolz: 'vlen' reads strings and bytes as vlen "
                             "columns (missing values kept)")
    parser.add_argument("--missing", default=None, metavar="TEXT",
                        help="with --strings fixed: written for missing items (default: "
                             "refuse them)")
    parser.add_argument("--node", default=None, metavar="PATH",
                        help="HDF5: the node to read or write (default /ctable); a Table "
                             "becomes a ctable, an Array, CArray or EArray a carray")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_storage_options(parser)
    parser.set_defaults(func=run_convert)
    return parser


# Errors reported as a plain one-line failure; anything else is a bug ("unexpected").
_EXPECTED = (BcolzStoreError, OSError, ValueError, TypeError, ImportError, LookupError)


def _formats(args, options) -> set:
    """The formats of SRC and DST as far as they can be told (errors are left
    to the conversion, which reports them)."""
    found = {args.to} if args.to else set()
    for location, reading in ((args.src, True), (args.dst, False)):
        if reading or not args.to:
            try:
                found.add(detect_format(location, reading=reading, storage_options=options))
            except (ValueError, OSError):
                pass
    return found


# The flags that become convert() options, by option name.
_FLAGS = {"strings": "--strings", "missing": "--missing", "nodepath": "--node"}
_UNEXPECTED = re.compile(r"convert\(\) got an unexpected option '(\w+)'")


def _refused_flag(err, args, options):
    """The one-line message for a flag the conversion takes no option for
    (``--strings`` to npz), or None when ``err`` is something else."""
    found = _UNEXPECTED.match(str(err)) if isinstance(err, TypeError) else None
    if found is None or found.group(1) not in _FLAGS:
        return None
    try:
        src = detect_format(args.src, reading=True, storage_options=options)
        dst = args.to or detect_format(args.dst, reading=False)
    except (ValueError, OSError):
        return None
    return f"{_FLAGS[found.group(1)]} does not apply to a conversion from {src} to {dst}"


def run_convert(args) -> int:
    """Run ``bcolz-store convert`` with parsed ``args``.

    Parameters
    ----------
    args : argparse.Namespace
        ``src``, ``dst``, ``to``, ``overwrite``, ``drop_attrs``, ``strings``,
        ``missing``, ``node``, ``storage_options``, ``no_progress`` (and
        ``traceback`` when the main parser has it).

    Returns
    -------
    int
        0 on success (one summary line on stdout), 1 on failure (one line on
        stderr: ``bcolz-store: error: convert: ...``), 2 when
        ``--storage-options`` is not a JSON object.

    Raises
    ------
    KeyboardInterrupt
        Left to the caller (``bcolz-store`` exits 130).
    """
    try:
        options = {"overwrite": args.overwrite,
                   "storage_options": storage_options(args)}
    except CommandError as err:
        print(f"{PROG}: error: convert: {err}", file=sys.stderr)
        return err.status
    if getattr(args, "drop_attrs", False):
        options["drop_attrs"] = True
    for name in ("strings", "missing"):
        if getattr(args, name, None) is not None:
            options[name] = getattr(args, name)
    if getattr(args, "node", None) is not None:
        if "hdf5" not in _formats(args, options["storage_options"]):
            print(f"{PROG}: error: convert: --node names a node of an HDF5 file, and neither "
                  f"{args.src} nor {args.dst} is one", file=sys.stderr)
            return 1
        options["nodepath"] = args.node
    try:
        done = convert(args.src, args.dst, to=args.to,
                       progress=False if args.no_progress else None, **options)
    except Exception as err:        # noqa: BLE001 - reported in one line, as cli.main does
        if getattr(args, "traceback", False):
            import traceback
            traceback.print_exc()
        remote = [str(p) for p in (args.src, args.dst) if "://" in str(p)]
        reason = remote_reason(err, remote[0]) if remote else None
        flag = _refused_flag(err, args, options["storage_options"])
        if flag is not None:
            message = f"{PROG}: error: convert: {flag}"
        elif reason is not None:
            message = f"{PROG}: error: convert: {reason}"
        elif isinstance(err, _EXPECTED):
            message = f"{PROG}: error: convert: {err}"
        elif isinstance(err, RecursionError):
            message = (f"{PROG}: error: convert: {args.src}: holds values nested too deeply "
                       f"to read")
        else:
            message = (f"{PROG}: unexpected error: {type(err).__name__}: {err} "
                       f"(rerun with --traceback for details)")
        print(" ".join(message.split()), file=sys.stderr)
        return 1
    print(f"{done.dst}: {done.dst_format}, {done.kind} of {done.length} rows "
          f"(from {done.src_format} {done.src})")
    return 0
