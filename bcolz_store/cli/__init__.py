"""The ``bcolz-store`` command: inspect, verify, pack and convert bcolz datasets.

::

    bcolz-store info PATH [--json]       describe a carray or ctable (folder, URL or pack)
    bcolz-store verify PATH [--json] [--reseal]
                                         check every file against bcolz_store.md5 and
                                         the chunk statistics against the chunks;
                                         --reseal accepts files another program (bcolz)
                                         changed consistently
    bcolz-store pack DIR OUT.zip         pack a dataset into one .zip file
    bcolz-store unpack PACK.zip DIR      unzip a pack into a dataset folder
    bcolz-store index --stats PATH       compute and commit the chunk statistics of
                                         every column that has none, damaged or stale
    bcolz-store index --create COL[:KIND] --drop COL --list PATH
                                         build, remove or list a ctable's indexes
    bcolz-store copy SRC DST --sortby COL [--overwrite]
                                         a copy of a ctable ordered by a column
    bcolz-store convert SRC DST          convert between bcolz, Parquet, Arrow, zarr,
                                         .npz, HDF5 and datadings
    bcolz-store kerchunk PATH OUT.json [--url PREFIX]
                                         kerchunk references: zarr and xarray read
                                         the dataset's chunk files in place
    bcolz-store demo [--rows N] [--dir D] [--keep] [--no-progress]
                                         write, append, reopen and slice a table of
                                         daily price bars; print throughput

``verify``, ``pack``, ``unpack`` and ``index --stats`` show progress bars on
stderr when tqdm (the ``progress`` extra) is installed and stderr is a
terminal; ``--progress`` shows them anyway, ``--no-progress`` never.

``PATH`` may be a local folder, a URL that fsspec opens (``s3://bucket/x.bcolz``,
with ``--storage-options JSON`` for credentials or an endpoint), or a ``.zip``
pack.

Exit status: 0 on success, 1 when a dataset is missing, is not a bcolz
dataset, cannot be read or written, or (``verify``) has a missing, extra or
damaged file, 2 on a command-line usage error, 3 when ``verify`` could check
nothing because the dataset has no checksum file (a pack without one still
has each entry's CRC-32 checked: 1 when an entry cannot be read), 4 when
``verify`` found only files another program (the real bcolz appending)
changed consistently, which ``verify --reseal`` accepts, 130 when
interrupted.
Errors are one line on stderr (``--traceback`` shows the Python traceback as
well); every error of :mod:`bcolz_store.errors` exits 1 with its message,
and ``unexpected error`` is kept for what would be a bug.

Only the public API of :mod:`bcolz_store` is used here, so the command works
on anything ``bcolz_store.open`` can open.
"""

from __future__ import annotations

import argparse
import sys

import bcolz_store
from bcolz_store.errors import BcolzStoreError

from .common import (EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNVERIFIED, EXIT_USAGE, PROG,
                     CommandError, add_progress_options, add_storage_options)
from .convert import add_convert_parser
from .index import add_index_parser, index_stats
from .kerchunk import add_kerchunk_parser
from .demo import DAYS_PER_ID, NAMES, DailyBars, cmd_demo, run_demo
from .info import (PROBLEM_KINDS, cmd_info, cmd_verify, dataset_info, format_info,
                   format_verify, verify_dataset)
from .pack import cmd_pack, cmd_unpack

__all__ = ["CommandError", "DAYS_PER_ID", "DailyBars", "EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK",
           "EXIT_UNVERIFIED", "EXIT_USAGE", "NAMES", "PROBLEM_KINDS", "build_parser", "dataset_info",
           "format_info", "format_verify", "index_stats", "main", "run_demo", "verify_dataset"]


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, found {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``bcolz-store``."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Inspect, verify, pack and convert bcolz datasets "
                               "(carray/ctable rootdirs, URLs and packs) and run a demo.",
        epilog="Exit status: 0 success, 1 dataset missing/invalid/unreadable or (verify) "
               "damaged, 2 usage error, 3 (verify) no checksum file to check against, "
               "4 (verify) only files another program changed consistently (--reseal "
               "accepts them).")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {bcolz_store.__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="on error, show the Python traceback too")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="describe a carray or ctable",
                          description="Print kind, shape, dtype, chunklen, nchunks, cparams, "
                                      "nbytes, cbytes, cratio and attrs of a dataset "
                                      "(and of each column of a ctable).")
    info.add_argument("path", help="the dataset: a rootdir, a URL (s3://...) or a .zip pack")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_storage_options(info)
    info.set_defaults(func=cmd_info)

    verify = sub.add_parser("verify", help="check a dataset's files against bcolz_store.md5",
                            description="Compare every file of a carray or ctable with the "
                                        "checksum file bcolz_store.md5, and each column's chunk "
                                        "statistics (meta/stats) with its chunks, and print "
                                        "each missing, extra or damaged file (stale statistics "
                                        "are damaged).  Files another program (the real "
                                        "bcolz appending) changed consistently, which decode "
                                        "and agree with meta/sizes, are 'changed', not "
                                        "damaged.  Exit status 0 when all is "
                                        "well, 1 otherwise, 3 when the dataset has no checksum "
                                        "file (a .zip pack without one: 3 when every entry's "
                                        "CRC-32 checks out, 1 when one does not), 4 when only "
                                        "files another program changed consistently were "
                                        "found.")
    verify.add_argument("path", help="the dataset: a rootdir, a URL (s3://...) or a .zip pack")
    verify.add_argument("--json", action="store_true", help="print machine-readable JSON")
    verify.add_argument("--reseal", action="store_true",
                        help="accept files another program changed consistently: commit their "
                             "checksums (and the chunk statistics and indexes of their "
                             "carrays computed again); nothing is resealed when a file is "
                             "damaged, missing or extra besides")
    add_progress_options(verify)
    add_storage_options(verify)
    verify.set_defaults(func=cmd_verify)

    pack = sub.add_parser("pack", help="pack a dataset into one .zip file",
                          description="Write every file of a dataset as a stored (not "
                                      "recompressed) entry of a .zip file; unzipping it gives "
                                      "a folder the real bcolz opens, and bcolz_store opens "
                                      "the pack itself (read-only).")
    pack.add_argument("src", help="the dataset: a rootdir or a URL")
    pack.add_argument("dst", help="the .zip file to write")
    pack.add_argument("--overwrite", action="store_true", help="replace an existing file")
    add_storage_options(pack)
    add_progress_options(pack)
    pack.set_defaults(func=cmd_pack)

    unpack = sub.add_parser("unpack", help="unzip a pack into a dataset folder",
                            description="Write the files of a pack made by 'pack' into a new "
                                        "dataset folder.")
    unpack.add_argument("src", help="the .zip pack")
    unpack.add_argument("dst", help="the folder to make")
    unpack.add_argument("--overwrite", action="store_true",
                        help="replace an existing bcolz dataset (anything else is never "
                             "replaced)")
    add_progress_options(unpack)
    unpack.set_defaults(func=cmd_unpack)

    add_index_parser(sub)

    add_convert_parser(sub)

    add_kerchunk_parser(sub)

    demo = sub.add_parser("demo", help="write, append, reopen and slice a table of price bars",
                          description="Write a ctable of daily price bars chunk by chunk, append "
                                      "to it, reopen and slice it, and print throughput and "
                                      "compression ratio for each step.")
    demo.add_argument("--rows", type=_positive_int, default=10_000_000,
                      help="rows in the first write (default 10_000_000); 10%% more are appended")
    demo.add_argument("--dir", help="folder for the demo data (default: the system temp folder)")
    demo.add_argument("--keep", action="store_true", help="keep the dataset instead of removing it")
    demo.add_argument("--no-progress", action="store_true", help="no progress bars")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv=None) -> int:
    """Run ``bcolz-store`` with ``argv`` (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        The exit status: 0 success, 1 failure, 2 usage error, 3 unverified,
        130 interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:      # --help, --version, usage errors
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    try:
        return args.func(args)
    except CommandError as err:
        return _fail(args, f"{PROG}: error: {err}", err.status)
    except BcolzStoreError as err:  # bad input (a dataset, a pack): never a bug's message
        return _fail(args, f"{PROG}: error: {err}", EXIT_FAILURE)
    except KeyboardInterrupt:
        return _fail(args, f"{PROG}: interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.stderr.close()          # output went to a closed pipe (e.g. `| head`)
        return EXIT_OK
    except Exception as err:        # a bug: still one line unless --traceback
        return _fail(args, f"{PROG}: unexpected error: {type(err).__name__}: {err} "
                           f"(rerun with --traceback for details)", EXIT_FAILURE)


def _fail(args, message: str, status: int) -> int:
    if getattr(args, "traceback", False):
        import traceback
        traceback.print_exc()
    print(" ".join(message.split()), file=sys.stderr)
    return status
