"""The thread sweep: throughput against the number of threads each library is given.

``python -m benchmarks --threads 1,2,4,8,16 [--size 1.6G]`` writes and reads
a float64 random walk of ``--size`` bytes (1.6 GB: 200 million values) in
chunks of 131,072 values (1 MiB), lz4 clevel 5 byte shuffle, with every
library installed, giving each library ``n`` threads through its own
setting:

==============  ==========================================================
bcolz_store     ``bcolz_store.set_nthreads(n)`` (its chunk pool; Blosc 1)
bcolz           ``bcolz.set_nthreads(n)`` (its Blosc's threads)
blosc2          ``blosc2.set_nthreads(n)``
zarr            ``zarr.config`` ``async.concurrency`` and
                ``threading.max_workers`` = n (numcodecs' Blosc: 1 thread)
tensorstore     a context with ``data_copy_concurrency`` and
                ``file_io_concurrency`` limits of n (zarr v3, same codec)
==============  ==========================================================

Workloads, each timed ``--repeats`` times per thread count (median), every
repeat going round all thread counts and libraries, each timed read, sum
and query right after an untimed one (files in the page cache):

* ``read_f8``: ``a[:]`` of the whole array (GB/s of decompressed data);
* ``sum_i8``: the sum of as many int64 (``arange``), blosc2 by its lazy
  reduction;
* ``query``: the ids of a 5-column table where ``(x > 0.5) & (k < 100)``
  (bcolz_store and bcolz: the fastest of ``whereblocks``/``fetchwhere``;
  blosc2: a lazy expression over one NDArray per column);
* ``write_f8``: writing the array (bcolz_store both with and without fsync),
  against the *floor*: the CPU time of compressing every chunk, taking its
  md5 and writing it to the page cache (measured alone, as ``--floor`` does)
  divided by ``min(n, cores)`` -- the least time a write that keeps
  checksums can take without fsync.

Two controls show what the machine gives, whatever the libraries do:
``control_md5`` hashes 256 MiB on ``n`` threads (hashlib releases the GIL),
``control_decode`` has python-blosc decode 1 GiB of the array's chunks on
``n`` threads into buffers that stay in the CPU's cache (no file, no page
fault): the ceiling of a reader that decodes whole chunks in parallel.

Targets: reads at least tensorstore's throughput at every thread count, 6
GB/s at 16 threads (on 16 cores), and on 2 cores the 2-thread read at most
0.6 times the 1-thread read; ``sum_i8`` and ``query`` at most blosc2's
time; the write without fsync at least 0.8 of the floor's throughput at the
most threads.  Results go to ``OUT/sweep.json`` and ``OUT/sweep.png``.
"""

from __future__ import annotations

import datetime
import gc
import importlib
import json
import os
import statistics
import time

import numpy as np

from .libraries import BcolzLike, Blosc2Lib, Codec, ZarrLib, remove

SWEEP_LIBS = ("bcolz_store", "bcolz", "blosc2", "zarr", "tensorstore")
LIBS_DEFAULT_ROWS = 5_000_000     # rows of the query's table
QUERY = "(x > 0.5) & (k < 100)"
CHUNKLEN = 131_072


def parse_size(text: str) -> int:
    """Bytes from ``1.6G``, ``200M``, ``5e8`` (G/M/K are powers of 1000)."""
    text = text.strip().upper().rstrip("B")
    scale = {"G": 10 ** 9, "M": 10 ** 6, "K": 10 ** 3}.get(text[-1:], 1)
    return int(float(text.rstrip("GMK")) * scale)


# ------------------------------------------------------------------ libraries

def _distribution_version(mod) -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version(mod.__name__.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return "?"


class _Lib:
    name = ""

    def __init__(self, mod):
        self.mod = mod
        self.version = getattr(mod, "__version__", None) or _distribution_version(mod)

    def threads(self, n: int) -> None:
        raise NotImplementedError


# The sweep's adapters are the harness's (libraries.py: cparams, writing,
# opening) with what the sweep adds: giving a library n threads its own way,
# reading whole, the query, and a write with fsync on or off.

class _Bcolz(BcolzLike):
    def threads(self, n):
        self.mod.set_nthreads(n)

    def write(self, data, path, codec, fsync=True):
        if self.name != "bcolz_store":
            super().write(data, path, CHUNKLEN, codec)
            return
        from bcolz_store.storage.journal import Journal
        before, Journal.fsync_default = Journal.fsync_default, fsync
        try:
            super().write(data, path, CHUNKLEN, codec)
        finally:
            Journal.fsync_default = before

    def read(self, a):
        return a[:]

    def query(self, t):
        """(wall seconds, CPU seconds, ids) of the faster of whereblocks and fetchwhere."""
        best = None
        for how in ("whereblocks", "fetchwhere"):
            c0, t0 = time.process_time(), time.perf_counter()
            if how == "whereblocks":
                ids = np.concatenate([b["id"] for b in t.whereblocks(QUERY, outcols=["id"])])
            else:
                ids = t.fetchwhere(QUERY, outcols=["id"], out_flavor="numpy")["id"]
            spent = (time.perf_counter() - t0, time.process_time() - c0)
            if best is None or spent[0] < best[0]:
                best = (*spent, ids)
        return best


class _Blosc2(Blosc2Lib):
    def threads(self, n):
        self.mod.set_nthreads(n)

    def write(self, data, path, codec, fsync=True):
        super().write(data, path, CHUNKLEN, codec)

    def read(self, a):
        return a[:]

    def write_table(self, cols, names, path, codec):
        remove(path)
        os.makedirs(path)
        for name, col in zip(names, cols):
            self.mod.asarray(col, urlpath=os.path.join(path, name + ".b2nd"), mode="w",
                             chunks=(CHUNKLEN,), cparams=self.cparams(codec))

    def open_table(self, path, names):
        return {n: self.mod.open(os.path.join(path, n + ".b2nd"), mode="r") for n in names}

    def query(self, t):
        c0, t0 = time.process_time(), time.perf_counter()
        ids = t["id"][(t["x"] > 0.5) & (t["k"] < 100)].compute()[:]
        return time.perf_counter() - t0, time.process_time() - c0, ids


class _Zarr(ZarrLib):
    def threads(self, n):
        self.mod.config.set({"async.concurrency": n, "threading.max_workers": n})
        from numcodecs import blosc
        blosc.set_nthreads(1)

    def write(self, data, path, codec, fsync=True):
        super().write(data, path, CHUNKLEN, codec)

    def read(self, a):
        return a[:]


class _Tensorstore(_Lib):
    name = "tensorstore"

    def __init__(self, mod):
        super().__init__(mod)
        self.context = None

    def threads(self, n):
        self.context = self.mod.Context({"data_copy_concurrency": {"limit": n},
                                         "file_io_concurrency": {"limit": n}})

    def write(self, data, path, codec, fsync=True):
        remove(path)
        shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}[codec.shuffle]
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                "metadata": {
                    "shape": [len(data)], "data_type": str(data.dtype),
                    "chunk_grid": {"name": "regular",
                                   "configuration": {"chunk_shape": [CHUNKLEN]}},
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                               {"name": "blosc", "configuration": {
                                   "cname": codec.cname, "clevel": codec.clevel,
                                   "shuffle": shuffle, "typesize": data.dtype.itemsize,
                                   "blocksize": 0}}]}}
        arr = self.mod.open(spec, create=True, delete_existing=True,
                            context=self.context).result()
        arr.write(data).result()

    def open(self, path):
        return self.mod.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                             context=self.context).result()

    def read(self, a):
        return a.read().result()


def load_sweep_libraries(wanted) -> dict:
    libs = {}
    for name in SWEEP_LIBS:
        if name != "bcolz_store" and name not in wanted:
            continue
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        libs[name] = {"bcolz_store": lambda m: _Bcolz("bcolz_store", m),
                      "bcolz": lambda m: _Bcolz("bcolz", m), "blosc2": _Blosc2, "zarr": _Zarr,
                      "tensorstore": _Tensorstore}[name](mod)
    return libs


# ------------------------------------------------------------------ measuring

def _floor(data, codec, workdir, log):
    """CPU seconds of compressing, md5-summing and writing every chunk file."""
    from .floor import pieces
    log("floor: compressing, md5-summing and writing every chunk alone (one thread)")
    parts = pieces([data], [CHUNKLEN], codec, workdir, repeats=1)
    cpu = sum(parts[k][1] for k in ("compress", "md5", "write"))
    return {"cpu_s": cpu, "pieces": {k: parts[k] for k in ("compress", "md5", "write", "fsync")},
            "compressed_mb": parts["compressed_mb"]}


def run_sweep(thread_counts, size: int, repeats: int, wanted, workdir: str, outdir: str,
              nrows: int, codec: Codec = Codec(), wait_idle: float = 0.0, log=print) -> dict:
    """Measure every workload at every thread count; write sweep.json (and the plot)."""
    libs = load_sweep_libraries(wanted)
    cores = os.cpu_count() or 1
    n = size // 8
    log(f"sweep: {', '.join(f'{k} {v.version}' for k, v in libs.items())}; {cores} cores; "
        f"threads {thread_counts}; {n:,} float64 ({n * 8 / 1e9:.2f} GB) and int64, "
        f"{nrows:,}-row table; {repeats} repeats; workdir {workdir}")
    rng = np.random.default_rng(20240611)
    f8 = np.cumsum(rng.standard_normal(n))
    i8 = np.arange(n, dtype=np.int64)
    names = ["id", "x", "k", "y", "z"]
    cols = [np.arange(nrows, dtype=np.int64), rng.random(nrows),
            rng.integers(0, 1000, nrows, dtype=np.int64), np.cumsum(rng.standard_normal(nrows)),
            rng.standard_normal(nrows).astype(np.float32)]
    expected_ids = np.flatnonzero((cols[1] > 0.5) & (cols[2] < 100))
    floor = _floor(f8, codec, workdir, log)
    paths = {}
    for name, lib in libs.items():           # the data each library reads, written once
        lib.threads(max(thread_counts))
        for dt, data in (("f8", f8), ("i8", i8)):
            if name in ("zarr", "tensorstore") and dt == "i8":
                continue
            path = os.path.join(workdir, f"{name}-{dt}")
            lib.write(data, path, codec)
            paths[(name, dt)] = path
        if hasattr(lib, "write_table"):
            path = os.path.join(workdir, f"{name}-table")
            lib.write_table(cols, names, path, codec)
            paths[(name, "table")] = path
    control_bytes = _prepare_control(f8, codec)
    samples = {}                  # (workload, threads, lib) -> ([wall...], [cpu...])
    expected_sum = int(i8.sum())

    def sample(workload, nt, lib_name, wall, cpu):
        walls, cpus = samples.setdefault((workload, nt, lib_name), ([], []))
        walls.append(wall)
        cpus.append(cpu)

    def timed(fn):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, time.process_time() - c0, out

    # Repeats go round every thread count and every library, so that a burst of
    # load from elsewhere hits all of them alike; the medians are compared.
    idles = []
    for rep in range(repeats):
        idles.append(_settle(wait_idle, log))
        log(f"[repeat {rep + 1} of {repeats}: reads, sums, queries]")
        for nt in thread_counts:
            wall, cpu, _ = timed(lambda: _control(nt))
            sample("control_md5", nt, "hashlib", wall, cpu)
            wall, cpu, _ = timed(lambda: _control_decode(nt, f8, codec))
            sample("control_decode", nt, "python-blosc", wall, cpu)
            for name, lib in libs.items():
                lib.threads(nt)
                # Each timed run follows an untimed one: the files are in the page
                # cache (this machine's kernel reclaims files left unread for a
                # while), so the libraries are measured, not the disk.
                a = lib.open(paths[(name, "f8")])
                out = lib.read(a)
                if rep == 0 and nt == thread_counts[0]:
                    assert np.array_equal(out, f8), f"{name}: read differs"
                out = None
                wall, cpu, out = timed(lambda: lib.read(a))
                out = a = None
                sample("read_f8", nt, name, wall, cpu)
                if (name, "i8") in paths:
                    a = lib.open(paths[(name, "i8")])
                    a.sum()
                    wall, cpu, out = timed(lambda: a.sum())
                    assert int(out) == expected_sum, f"{name}: sum {out} differs"
                    sample("sum_i8", nt, name, wall, cpu)
                if (name, "table") in paths:
                    t = lib.open_table(paths[(name, "table")], names) if name == "blosc2" \
                        else lib.open(paths[(name, "table")])
                    lib.query(t)
                    wall, cpu, ids = lib.query(t)
                    assert np.array_equal(np.asarray(ids), expected_ids), \
                        f"{name}: query differs"
                    sample("query", nt, name, wall, cpu)
        idles.append(_settle(wait_idle, log))
        log(f"[repeat {rep + 1} of {repeats}: writes]")
        for nt in thread_counts:
            for name, lib in libs.items():
                lib.threads(nt)
                variants = [("", True)] + \
                    ([(" (no fsync)", False)] if name == "bcolz_store" else [])
                for suffix, fsync in variants:
                    path = os.path.join(workdir, f"w-{name}")
                    remove(path)
                    wall, cpu, _ = timed(lambda: lib.write(f8, path, codec, fsync))
                    sample("write_f8", nt, name + suffix, wall, cpu)
                    remove(path)
    nbytes = {"read_f8": n * 8, "sum_i8": n * 8, "write_f8": n * 8,
              "query": sum(c.nbytes for c in cols[:3]), "control_md5": CONTROL_BYTES,
              "control_decode": control_bytes}
    rows = [_row(workload, nt, lib_name, statistics.median(walls), (walls, cpus),
                 nbytes[workload])
            for (workload, nt, lib_name), (walls, cpus) in samples.items()]
    for row in rows:
        log(f"  {row['workload']:<9} {row['threads']:>3} {row['lib']:<26} "
            f"{row['gbps']:7.2f} GB/s  {row['median'] * 1e3:9.1f} ms  "
            f"{row['busy']:4.2f} cores busy")
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cores": cores,
              "threads": list(thread_counts), "size_bytes": n * 8, "nrows": nrows,
              "repeats": repeats, "libraries": {k: v.version for k, v in libs.items()},
              "floor": floor, "rows": rows, "machine": _machine(),
              "idle_before_phases": idles}
    result["targets"] = targets(result)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "sweep.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=lambda o: o.item() if hasattr(o, "item")
                  else str(o))
    log("")
    log(markdown(result))
    png = plot_sweep(result, os.path.join(outdir, "sweep.png"))
    if png:
        log(f"plot written to {png}")
    return result


CONTROL_BYTES = 1 << 28
_CONTROL_BUFFER = []


def _control(nthreads: int) -> None:
    """md5 of 256 MiB in 16 parts on ``nthreads`` threads (hashlib releases the
    GIL): how much parallel work the machine gives this process right now,
    whatever the libraries do."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor
    if not _CONTROL_BUFFER:
        _CONTROL_BUFFER.append(os.urandom(CONTROL_BYTES // 16))
    part = _CONTROL_BUFFER[0]
    with ThreadPoolExecutor(nthreads) as pool:
        list(pool.map(lambda _i: hashlib.md5(part).digest(), range(16)))


_CONTROL_CHUNKS = []


def _prepare_control(data: np.ndarray, codec: Codec) -> int:
    """Compress the chunks :func:`_control_decode` decodes; the bytes it decodes."""
    import blosc
    per = CHUNKLEN
    count = max(min(CONTROL_BYTES // (per * 8), len(data) // per), 1)
    _CONTROL_CHUNKS[:] = [blosc.compress_ptr(data[i * per:].__array_interface__["data"][0],
                                             min(per, len(data)), 8, codec.clevel,
                                             codec.shuffle, codec.cname)
                          for i in range(count)]
    return count * 4 * min(per, len(data)) * 8


def _control_decode(nthreads: int, data: np.ndarray, codec: Codec) -> None:
    """Blosc (python-blosc, one thread of its own) decoding 256 chunks of 1 MiB
    of the array, 4 times, on ``nthreads`` threads, each into a buffer of its
    own that stays in the CPU's cache: the most a reader decoding whole chunks
    in parallel can get from this machine, with no file, no page fault and
    nothing of bcolz_store."""
    import blosc
    from concurrent.futures import ThreadPoolExecutor
    per = CHUNKLEN
    buffers = [np.empty(min(per, len(data))) for _ in range(nthreads)]
    work = list(range(len(_CONTROL_CHUNKS))) * 4

    def decode(span):
        out = buffers[span[0]].__array_interface__["data"][0]
        for i in span[1]:
            blosc.decompress_ptr(_CONTROL_CHUNKS[i], out)
    spans = [(t, work[t::nthreads]) for t in range(nthreads)]
    with ThreadPoolExecutor(nthreads) as pool:
        list(pool.map(decode, spans))


def _settle(wait_idle: float = 0.0, log=print):
    """Write back dirty pages (the writes just measured or prepared), so that
    the kernel's writeback does not compete with what follows; with
    ``wait_idle`` seconds, also wait (at most that long) until the machine's
    CPUs are 90% idle over 2 s.  Returns the idle share last seen (None when
    not measured)."""
    if hasattr(os, "sync"):
        os.sync()
    time.sleep(0.5)
    if wait_idle <= 0:
        return None
    deadline = time.monotonic() + wait_idle
    idle = None
    while True:
        idle = _idle_share(2.0)
        if idle is None or idle >= 0.9 or time.monotonic() > deadline:
            break
    if idle is not None and idle < 0.9:
        log(f"  the machine stayed busy (CPUs {idle:.0%} idle); measuring anyway")
    return idle


def _idle_share(seconds: float):
    """Share of CPU time idle over ``seconds`` (/proc/stat), or None."""
    def sample():
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
        return fields[3] + fields[4], sum(fields)
    try:
        idle0, total0 = sample()
        time.sleep(seconds)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return (idle1 - idle0) / max(total1 - total0, 1)


def _row(workload, threads, lib, median, times, nbytes):
    """One result; ``busy`` is CPU seconds over wall seconds (all threads of
    the process): how many cores the library kept busy."""
    walls, cpus = times
    return {"workload": workload, "threads": threads, "lib": lib, "median": median,
            "times": walls, "cpu": cpus, "busy": sum(cpus) / max(sum(walls), 1e-9),
            "gbps": nbytes / median / 1e9}


def _machine() -> dict:
    import platform
    info = {"platform": platform.platform(), "machine": platform.machine()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        info["load_1min"] = os.getloadavg()[0]
    except OSError:
        pass
    return info


# ------------------------------------------------------------------ targets

def _get(result, workload, lib, nt):
    for row in result["rows"]:
        if (row["workload"], row["lib"], row["threads"]) == (workload, lib, nt):
            return row
    return None


def floor_gbps(result, nt) -> float:
    """The floor's throughput with ``nt`` threads (GB/s of uncompressed data)."""
    usable = min(nt, result["cores"])
    return result["size_bytes"] / (result["floor"]["cpu_s"] / usable) / 1e9


def targets(result) -> list:
    """``(target, threads, value, PASS/MISS)`` for every target the run can tell."""
    out = []
    for nt in result["threads"]:
        ours = _get(result, "read_f8", "bcolz_store", nt)
        ts = _get(result, "read_f8", "tensorstore", nt)
        if ours and ts:
            ratio = ours["gbps"] / ts["gbps"]
            out.append(("read_f8 >= tensorstore", nt, round(ratio, 3),
                        "PASS" if ratio >= 1 else "MISS"))
        for workload in ("sum_i8", "query"):
            ours, b2 = _get(result, workload, "bcolz_store", nt), \
                _get(result, workload, "blosc2", nt)
            if ours and b2:
                ratio = ours["median"] / b2["median"]
                out.append((f"{workload} time <= blosc2", nt, round(ratio, 3),
                            "PASS" if ratio <= 1 else "MISS"))
    if 16 in result["threads"] and result["cores"] >= 16:
        ours = _get(result, "read_f8", "bcolz_store", 16)
        out.append(("read_f8 >= 6 GB/s", 16, round(ours["gbps"], 2),
                    "PASS" if ours["gbps"] >= 6 else "MISS"))
    one, two = _get(result, "read_f8", "bcolz_store", 1), _get(result, "read_f8", "bcolz_store", 2)
    if one and two and result["cores"] == 2:
        ratio = two["median"] / one["median"]
        out.append(("read_f8 2-thread time <= 0.6 x 1-thread", 2, round(ratio, 3),
                    "PASS" if ratio <= 0.6 else "MISS"))
    top = max(result["threads"])
    ours = _get(result, "write_f8", "bcolz_store (no fsync)", top)
    if ours:
        ratio = ours["gbps"] / floor_gbps(result, top)
        out.append(("write_f8 (no fsync) >= 0.8 x floor", top, round(ratio, 3),
                    "PASS" if ratio >= 0.8 else "MISS"))
    return out


# ------------------------------------------------------------------ reporting

def markdown(result) -> str:
    """The sweep as Markdown tables: GB/s per workload, thread count and library."""
    libs = []
    for row in result["rows"]:
        if row["lib"] not in libs:
            libs.append(row["lib"])
    lines = []
    for workload in ("read_f8", "sum_i8", "query", "write_f8", "control_md5",
                     "control_decode"):
        present = [lib for lib in libs if any(r["workload"] == workload and r["lib"] == lib
                                              for r in result["rows"])]
        if not present:
            continue
        head = ["threads"] + present + (["floor"] if workload == "write_f8" else []) + \
            ["cores busy (bcolz_store)"]
        lines += [f"**{workload}** (GB/s; median time in brackets)", "",
                  "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for nt in result["threads"]:
            cells = [str(nt)]
            for lib in present:
                row = _get(result, workload, lib, nt)
                cells.append("–" if row is None else
                             f"{row['gbps']:.2f} ({_ms(row['median'])})")
            if workload == "write_f8":
                cells.append(f"{floor_gbps(result, nt):.2f}")
            ours = _get(result, workload, "bcolz_store", nt)
            cells.append("–" if ours is None or "busy" not in ours else f"{ours['busy']:.2f}")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["| target | threads | value | status |", "|---|---|---|---|"]
    for name, nt, value, status in result["targets"]:
        lines.append(f"| {name} | {nt} | {value} | "
                     f"{'**' + status + '**' if status == 'MISS' else status} |")
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.0f} ms"


def plot_sweep(result, path):
    """Throughput against threads, one line per library, one panel per workload."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    workloads = [w for w in ("read_f8", "sum_i8", "query", "write_f8")
                 if any(r["workload"] == w for r in result["rows"])]
    fig, axes = plt.subplots(1, len(workloads), figsize=(4.2 * len(workloads), 4.0),
                             squeeze=False)
    threads = result["threads"]
    for ax, workload in zip(axes[0], workloads):
        libs = []
        for row in result["rows"]:
            if row["workload"] == workload and row["lib"] not in libs:
                libs.append(row["lib"])
        for lib in libs:
            points = [(nt, _get(result, workload, lib, nt)) for nt in threads]
            xs = [nt for nt, row in points if row]
            ys = [row["gbps"] for _nt, row in points if row]
            style = "-o" if lib.startswith("bcolz_store") else "--s"
            ax.plot(xs, ys, style, label=lib, lw=2 if lib == "bcolz_store" else 1.2)
        if workload == "write_f8":
            ax.plot(threads, [floor_gbps(result, nt) for nt in threads], ":", color="black",
                    label="floor (no fsync)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads)
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_xlabel("threads")
        ax.set_ylabel("GB/s")
        ax.set_title(workload)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{result['size_bytes'] / 1e9:.2f} GB float64, lz4 clevel 5 shuffle, "
                 f"1 MiB chunks; {result['cores']} cores", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
