"""``bcolz-store pack`` and ``unpack``: a dataset in one ``.zip`` file, and back."""

from __future__ import annotations

import os

from bcolz_store.errors import BcolzStoreError

from .common import (EXIT_OK, CommandError, Progress, check_outside, check_target, describe,
                     local_location, remote_reason, storage_options)

__all__ = ["cmd_pack", "cmd_unpack"]


def cmd_pack(args) -> int:
    from bcolz_store.storage.packs import pack
    if not str(args.dst).lower().endswith(".zip"):
        raise CommandError(f"{args.dst}: a pack is a .zip file; name it OUT.zip (bcolz_store "
                           f"opens a pack by its .zip name)")
    check_outside(args.src, args.dst, "cannot pack")
    dst = local_location(args.dst)
    if dst is not None and os.path.lexists(dst) and not os.path.isfile(dst):
        raise CommandError(f"cannot pack: {args.dst}: exists and is not a regular file; not "
                           f"replacing it")
    options = storage_options(args)
    try:
        with Progress(args) as progress:
            done = pack(args.src, args.dst, storage_options=options, overwrite=args.overwrite,
                        progress=progress)
    except Exception as err:        # noqa: BLE001 - the known kinds, else a bug
        reason = remote_reason(err, str(args.src))
        if reason is not None:
            raise CommandError(f"cannot pack: {reason}") from err
        if not isinstance(err, (BcolzStoreError, OSError, ImportError, ValueError)):
            raise
        raise CommandError(describe(err, str(args.src), "cannot pack")) from err
    print(f"{args.dst}: {done['files']} files, {done['bytes']} bytes (from {args.src})")
    return EXIT_OK


def cmd_unpack(args) -> int:
    from bcolz_store.storage.packs import unpack
    check_target(args.src, args.dst, args.overwrite, None, "cannot unpack")
    try:
        with Progress(args) as progress:
            done = unpack(args.src, args.dst, overwrite=args.overwrite, progress=progress)
    except (BcolzStoreError, OSError, ValueError) as err:     # ValueError: a DST like '.'
        raise CommandError(describe(err, str(args.src), "cannot unpack")) from err
    print(f"{args.dst}: {done['files']} files, {done['bytes']} bytes (from {args.src})")
    return EXIT_OK
