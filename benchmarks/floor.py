"""What a durable write costs, piece by piece: the floor under ``write_*`` and ``ctable_write``.

bcolz_store writes bcolz's bytes and, unlike bcolz, makes every commit durable
and verifiable: each file gets an md5 in ``bcolz_store.md5`` and is fsynced
before the commit record (see docs/durability.md).  This measures, on the
benchmark's own data and in one process:

* the whole write by bcolz (when installed) and by bcolz_store with fsync on
  (the default) and off;
* each piece of work alone: Blosc compression of every chunk (the bytes both
  libraries write), md5 of every chunk file, writing the files, fsyncing them.

CPU times come from :func:`time.process_time` (all threads of the process).
Compression, md5 and writing are CPU work that threads can spread over the
cores, so no implementation that keeps the checksums can finish in less than
their summed CPU time divided by the number of cores: that is the floor.  An
fsync makes the calling process do the filesystem's writeback work (CPU that
bcolz leaves to the kernel's flusher threads after it returns); adding it
gives the floor of a write that is durable when it returns.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time

import numpy as np

from .libraries import remove

HEADER = b"blpk\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"  # bloscpack header of a chunk file


def _clock(fn, repeats: int):
    """Median wall and CPU seconds of ``fn()`` over ``repeats`` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus))


def _chunks_of(columns, chunklens):
    """Every chunk file's data: the full chunks and the leftover of each column."""
    for col, chunklen in zip(columns, chunklens):
        for start in range(0, len(col), chunklen):
            yield np.ascontiguousarray(col[start:start + chunklen])


def pieces(columns, chunklens, codec, workdir: str, repeats: int) -> dict:
    """Time each piece of a durable write of ``columns``."""
    import blosc
    blocks = list(_chunks_of(columns, chunklens))
    compressed = []

    def compress():
        compressed[:] = [blosc.compress_ptr(b.__array_interface__["data"][0], b.size,
                                            b.dtype.itemsize, clevel=codec.clevel,
                                            shuffle=codec.shuffle, cname=codec.cname)
                         for b in blocks]

    def md5():
        for c in compressed:
            digest = hashlib.md5(HEADER)
            digest.update(c)
            digest.hexdigest()

    folder = os.path.join(workdir, "floor-files")
    paths = [os.path.join(folder, f"__{i}.blp") for i in range(len(blocks))]

    def write():
        for path, c in zip(paths, compressed):
            with open(path, "wb") as fh:
                fh.write(HEADER)
                fh.write(c)

    def fsync():
        for path in paths:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    out = {"compress": _clock(compress, repeats), "md5": _clock(md5, repeats)}
    walls, cpus, sync_walls, sync_cpus = [], [], [], []
    for _ in range(repeats):
        remove(folder)
        os.makedirs(folder)
        w, c = _clock(write, 1)
        walls.append(w)
        cpus.append(c)
        w, c = _clock(fsync, 1)
        sync_walls.append(w)
        sync_cpus.append(c)
    out["write"] = (float(np.median(walls)), float(np.median(cpus)))
    out["fsync"] = (float(np.median(sync_walls)), float(np.median(sync_cpus)))
    out["compressed_mb"] = sum(len(c) for c in compressed) / 1e6
    shutil.rmtree(folder, ignore_errors=True)
    return out


def whole_writes(ctx, workload: str, repeats: int) -> dict:
    """Median wall seconds of the whole write by bcolz and bcolz_store (fsync on/off)."""
    from bcolz_store.storage.journal import Journal
    cfg = ctx.cfg
    times = {}
    for lib in ("bcolz", "bcolz_store"):
        if lib not in ctx.libs:
            continue
        adapter = ctx.libs[lib]
        path = ctx.path(f"floor-{lib}")
        settings = [(lib, None)] if lib == "bcolz" else [
            ("bcolz_store (fsync on)", True), ("bcolz_store (fsync off)", False)]
        for name, fsync in settings:
            def run(adapter=adapter, path=path):
                if workload == "ctable_write":
                    adapter.write_table(ctx.table_cols, ctx.table_names, path, cfg.codec)
                else:
                    adapter.write(ctx.f8, path, cfg.chunklen, cfg.codec)
            before = Journal.fsync_default
            Journal.fsync_default = before if fsync is None else fsync
            try:
                walls = []
                for _ in range(repeats):
                    remove(path)
                    walls.append(_clock(run, 1)[0])
            finally:
                Journal.fsync_default = before
            times[name] = float(np.median(walls))
            remove(path)
    return times


def _table_chunklens(ctx) -> list:
    """The chunklen of each ctable column, as both libraries choose it."""
    adapter = ctx.libs["bcolz_store"]
    path = ctx.path("floor-chunklens")
    t = adapter.write_table(ctx.table_cols, ctx.table_names, path, ctx.cfg.codec)
    lens = [t.cols[name].chunklen for name in ctx.table_names]
    remove(path)
    return lens


def run_floor(ctx, log=print) -> dict:
    """Measure both writes and print the floor table; return the numbers."""
    cfg = ctx.cfg
    cores = os.cpu_count() or 1
    result = {"cores": cores}
    for workload in ("write_f8", "ctable_write"):
        if workload == "write_f8":
            columns, chunklens = [ctx.f8], [cfg.chunklen]
        else:
            columns, chunklens = ctx.table_cols, _table_chunklens(ctx)
        parts = pieces(columns, chunklens, cfg.codec, ctx.workdir, cfg.repeats)
        whole = whole_writes(ctx, workload, cfg.repeats)
        cpu = sum(parts[k][1] for k in ("compress", "md5", "write"))
        floor = cpu / cores
        floor_synced = (cpu + parts["fsync"][1]) / cores
        result[workload] = {"pieces": parts, "whole": whole, "cpu_s": cpu, "floor_s": floor,
                            "floor_fsync_s": floor_synced}
        reference = whole.get("bcolz")
        log(f"\n{workload}: {parts['compressed_mb']:.1f} MB of chunk files, {cores} cores")
        log(f"  {'piece':<30}{'wall':>10}{'CPU':>10}{'÷ bcolz':>10}")

        def line(name, wall, cpu_s=None):
            ratio = f"{wall / reference:.2f}" if reference else "-"
            cpu_text = f"{cpu_s * 1e3:.0f} ms" if cpu_s is not None else ""
            log(f"  {name:<30}{wall * 1e3:>7.0f} ms{cpu_text:>10}{ratio:>10}")
        for key in ("compress", "md5", "write", "fsync"):
            line(key, *parts[key])
        line("floor: CPU / cores", floor)
        line("floor with fsync's CPU", floor_synced)
        for name, wall in whole.items():
            line(f"whole: {name}", wall)
    return result
