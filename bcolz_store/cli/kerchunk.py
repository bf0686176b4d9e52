"""``bcolz-store kerchunk``: write the kerchunk references of a stored carray
or ctable to a JSON file, for zarr and xarray to open the dataset in place
(:meth:`bcolz_store.carray.to_kerchunk`, docs/zarr.md)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets

import bcolz_store
from bcolz_store.errors import BcolzStoreError

from .common import EXIT_OK, CommandError, add_storage_options, check_outside, describe, \
    remote_reason, storage_options

__all__ = ["add_kerchunk_parser", "cmd_kerchunk"]


def add_kerchunk_parser(subparsers):
    """Add the ``kerchunk`` command to ``bcolz-store``'s subparsers.

    Returns
    -------
    argparse.ArgumentParser
        The ``kerchunk`` parser; its ``func`` default is :func:`cmd_kerchunk`.
    """
    parser = subparsers.add_parser(
        "kerchunk", help="write kerchunk references for zarr and xarray",
        description="Write the kerchunk (version 1) references of a carray or ctable to "
                    "OUT.json: a zarr v2 group whose chunks are the dataset's own chunk files, "
                    "which zarr and xarray open through fsspec's ReferenceFileSystem.  "
                    "Vlen, categorical and object columns are refused (--skip-unsupported "
                    "leaves them out).  Exit status 0 on success, 1 on failure.")
    parser.add_argument("path", help="the dataset: a rootdir or a URL (s3://...)")
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument("--url", metavar="PREFIX", default=None,
                        help="the dataset's URL as readers will see it (default: file:// and "
                             "the absolute path, or the dataset's own URL)")
    parser.add_argument("--inline-threshold", type=int, default=0, metavar="BYTES",
                        help="inline full chunks smaller than this (default 0: none)")
    parser.add_argument("--skip-unsupported", action="store_true",
                        help="leave out the columns of a ctable that zarr cannot read")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    add_storage_options(parser)
    parser.set_defaults(func=cmd_kerchunk)
    return parser


def _write_json(refs: dict, out: str) -> None:
    """``refs`` as JSON at ``out``, written beside it and moved into place
    whole: a failed write leaves ``out`` as it was.  An existing ``out`` that
    is not a regular file (``/dev/stdout``, a FIFO) is written into, never
    replaced."""
    if os.path.exists(out) and not os.path.isfile(out):
        try:
            with open(out, "w", encoding="utf-8") as stream:
                json.dump(refs, stream)
        except OSError as err:
            raise CommandError(f"cannot write: {out}: {err.strerror or err}") from err
        return
    folder, name = os.path.split(os.path.abspath(out))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.writing")
    try:
        stream = open(tmp, "x", encoding="utf-8")      # the mode a new file gets (umask)
    except OSError as err:        # the temporary name says nothing to the user
        raise CommandError(f"cannot write: {out}: {err.strerror or err}") from err
    try:
        with stream:
            json.dump(refs, stream)
        os.replace(tmp, out)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise CommandError(f"cannot write: {out}: {err.strerror or err}") from err
        raise


def cmd_kerchunk(args) -> int:
    """Run ``bcolz-store kerchunk``; the exit status."""
    check_outside(args.path, args.out, "cannot write")
    if os.path.exists(args.out) and not args.overwrite:
        raise CommandError(f"{args.out}: exists; pass --overwrite to replace it")
    try:
        data = bcolz_store.open(args.path, mode="r", storage_options=storage_options(args))
        if isinstance(data, bcolz_store.ctable):
            refs = data.to_kerchunk(args.url, inline_threshold=args.inline_threshold,
                                    skip_unsupported=args.skip_unsupported)
        else:
            refs = data.to_kerchunk(args.url, inline_threshold=args.inline_threshold)
    except CommandError:
        raise
    except Exception as err:        # noqa: BLE001 - the known kinds, else a bug
        reason = remote_reason(err, str(args.path))
        if reason is not None:
            raise CommandError(f"cannot reference: {reason}") from err
        if not isinstance(err, (BcolzStoreError, OSError, TypeError, ValueError)):
            raise
        raise CommandError(describe(err, str(args.path), "cannot reference")) from err
    _write_json(refs, os.fspath(args.out))
    chunks = sum(isinstance(ref, list) for ref in refs["refs"].values())
    print(f"{args.out}: {chunks} chunk references (from {args.path})")
    return EXIT_OK
