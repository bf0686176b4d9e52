"""``bcolz-store pack`` and ``unpack``: a dataset in one ``.zip`` file, and back."""

from __future__ import annotations

from bcolz_store.errors import BcolzStoreError

from .common import EXIT_OK, CommandError, describe, storage_options

__all__ = ["cmd_pack", "cmd_unpack"]


def cmd_pack(args) -> int:
    from bcolz_store.storage.packs import pack
    try:
        done = pack(args.src, args.dst, storage_options=storage_options(args),
                    overwrite=args.overwrite)
    except (BcolzStoreError, OSError, ImportError, ValueError) as err:
        raise CommandError(describe(err, str(args.src), "cannot pack")) from err
    print(f"{args.dst}: {done['files']} files, {done['bytes']} bytes (from {args.src})")
    return EXIT_OK


def cmd_unpack(args) -> int:
    from bcolz_store.storage.packs import unpack
    try:
        done = unpack(args.src, args.dst, overwrite=args.overwrite)
    except (BcolzStoreError, OSError) as err:
        raise CommandError(describe(err, str(args.src), "cannot unpack")) from err
    print(f"{args.dst}: {done['files']} files, {done['bytes']} bytes (from {args.src})")
    return EXIT_OK
