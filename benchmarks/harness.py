"""Run the workloads, time them, check them, and report.

``python -m benchmarks`` (from the repository root) runs every workload for
every installed library, prints a table of medians, ratios to bcolz (and to
blosc2 where the target is set against blosc2) and PASS/MISS per target,
writes ``benchmarks/results/latest.json`` and draws
``benchmarks/results/ratios.png``.  ``--quick`` runs tiny sizes once, to
check that the harness works and every library returns the right answer;
it asserts nothing about time.  ``--profile KEY[,KEY]`` profiles bcolz_store's
side of the named workloads (``misses``: those that missed their target in
``latest.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc

from . import workloads as W
from .libraries import LIBRARY_NAMES, load_libraries

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# ------------------------------------------------------------------ measuring


def _time_once(case: W.Case, fn):
    """Seconds (scaled) of one timed run after its untimed setup, and the output."""
    state = case.setup()
    gc.collect()
    t0 = time.perf_counter()
    out = fn(state)
    return (time.perf_counter() - t0) * case.scale, out


def _memory_once(case: W.Case, fn):
    """Bytes allocated at peak beyond the output, and the output."""
    state = case.setup()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        out = fn(state)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return max(peak - before - getattr(out, "nbytes", 0), 0), out


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not available
        return None


def run_workload(wl: W.Workload, cfg: W.Config, log=print) -> dict:
    """Measure and check every case of ``wl``; the row of the results.

    Repeats are interleaved (repeat 1 of every library, then repeat 2...), so
    a burst of load from elsewhere on the machine hits all libraries alike.
    """
    repeats = 1 if wl.kind == "memory" else (wl.repeats or cfg.repeats)
    once = _memory_once if wl.kind == "memory" else _time_once
    row = {"key": wl.key, "title": wl.title, "kind": wl.kind, "target": wl.target,
           "target_vs": wl.target_vs if wl.target is not None else None, "note": wl.note,
           "libs": {}, "errors": [], "load_before": _load()}
    values, last, failed = {}, {}, set()
    for _ in range(repeats):
        for lib, case in wl.cases.items():
            for vname, fn in case.runs().items():
                if (lib, vname) in failed:
                    continue
                last.pop((lib, vname), None)  # free the previous output first
                try:
                    value, last[(lib, vname)] = once(case, fn)
                except Exception as err:  # a failing library is reported, not fatal
                    failed.add((lib, vname))
                    row["errors"].append(f"{lib}{'/' + vname if vname else ''}: "
                                         f"{type(err).__name__}: {err}")
                    continue
                values.setdefault((lib, vname), []).append(value)
    outputs = {}
    for lib, case in wl.cases.items():
        tried, best = {}, None
        for vname in case.runs():
            if (lib, vname) in failed:
                continue
            out = last.pop((lib, vname))
            try:
                case.check(out)
            except Exception as err:
                row["errors"].append(f"{lib}{'/' + vname if vname else ''}: wrong result: "
                                     f"{type(err).__name__}: {err}")
                continue
            median = statistics.median(values[(lib, vname)])
            tried[vname] = median
            if best is None or median < best[0]:
                best = (median, vname, out)
            out = None
        if best is None:
            log(f"    {lib:<12} FAILED")
            continue
        median, vname, outputs[lib] = best
        times = values[(lib, vname)]
        row["libs"][lib] = {"median": median, "min": min(times), "values": times,
                            "variant": vname or None,
                            "variants": tried if len(tried) > 1 else None,
                            "scale": case.scale, "note": case.note}
        log(f"    {lib:<12} {_fmt(median, wl.kind):>10}"
            f"{'  (' + vname + ')' if vname else ''}{'  ' + case.note if case.note else ''}")
    if wl.post is not None:
        try:
            row["post"] = wl.post(outputs)
        except Exception as err:
            row["errors"].append(f"post-check: {type(err).__name__}: {err}")
    outputs.clear()
    row["load_after"] = _load()
    for err in row["errors"]:
        log(f"    ERROR {err}")
    _ratios(row)
    return row


def _ratios(row: dict) -> None:
    libs = row["libs"]
    ours = libs.get("bcolz_store", {}).get("median")
    for other in ("bcolz", "blosc2", "floor"):
        theirs = libs.get(other, {}).get("median")
        row[f"ratio_{other}"] = (ours / theirs) if ours is not None and theirs else None
    status = "-"
    if row["errors"]:
        status = "WRONG"
    elif row["target"] is not None:
        ratio = row.get(f"ratio_{row['target_vs']}")
        status = "n/a" if ratio is None else ("PASS" if ratio <= row["target"] else "MISS")
    row["status"] = status


# ------------------------------------------------------------------ reporting


def _fmt(value, kind="time") -> str:
    if value is None:
        return "-"
    if kind == "memory":
        for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
            if abs(value) >= size:
                return f"{value / size:.1f} {unit}"
        return f"{int(value)} B"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} us"


def _fmt_ratio(r) -> str:
    if r is None:
        return "-"
    if r < 0.01:
        return f"{r:.2g}"
    return f"{r:.3f}" if r < 10 else f"{r:.1f}"


def format_table(rows: list, libs: list) -> str:
    head = ["workload"] + libs + ["/bcolz", "/blosc2", "target", "status"]
    lines = []
    for row in rows:
        cells = [row["key"]]
        for lib in libs:
            info = row["libs"].get(lib)
            cell = _fmt(info["median"], row["kind"]) if info else "-"
            if info and info.get("scale", 1) != 1:
                cell += "*"
            cells.append(cell)
        cells.append(_fmt_ratio(row.get("ratio_bcolz")))
        cells.append(_fmt_ratio(row.get("ratio_blosc2")))
        if row["target"] is None:
            cells.append("-")
        else:
            cells.append(f"<={row['target']:g} x {row['target_vs']}")
        cells.append(row["status"])
        lines.append(cells)
    widths = [max(len(str(c)) for c in col) for col in zip(head, *lines)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(cells, widths)) for cells in lines]
    return "\n".join(out)


def markdown_table(result: dict) -> str:
    """The results table of a ``latest.json`` as Markdown (for docs/performance.md)."""
    names = [n for n in LIBRARY_NAMES + ("floor",)
             if any(n in row["libs"] for row in result["rows"])]
    head = ["workload"] + names + ["÷ bcolz", "÷ blosc2", "target", "status"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for row in result["rows"]:
        cells = [f"`{row['key']}`"]
        for lib in names:
            info = row["libs"].get(lib)
            cell = _fmt(info["median"], row["kind"]) if info else "–"
            if info and info.get("scale", 1) != 1:
                cell += "\\*"
            cells.append(cell)
        cells += [_fmt_ratio(row.get("ratio_bcolz")), _fmt_ratio(row.get("ratio_blosc2"))]
        cells.append("–" if row["target"] is None else f"≤ {row['target']:g} × {row['target_vs']}")
        status = row["status"]
        cells.append(f"**{status}**" if status in ("MISS", "WRONG") else status)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def environment(libs: dict, cfg: W.Config) -> dict:
    import numpy as np
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "machine": platform.machine(), "cpus": os.cpu_count(), "numpy": np.__version__,
           "libraries": {name: a.version for name, a in libs.items()},
           "nthreads": cfg.nthreads or os.cpu_count(), "bcolz_store": _bcolz_store_source(libs),
           "bcolz_store cache_budget": libs["bcolz_store"].mod.defaults.cache_budget}
    try:
        import blosc
        env["python-blosc"] = blosc.__version__
        env["c-blosc (bcolz_store)"] = blosc.blosclib_version
    except ImportError:  # pragma: no cover
        pass
    if "bcolz" in libs:
        env["c-blosc (bcolz)"] = " ".join(libs["bcolz"].mod.blosc_version())
    return env


def _bcolz_store_source(libs: dict) -> dict:
    """Where the measured bcolz_store came from, and its git revision if any."""
    import subprocess
    pkg = os.path.dirname(os.path.abspath(libs["bcolz_store"].mod.__file__))
    info = {"path": pkg, "commit": None, "modified": None}
    try:
        git = ["git", "-C", os.path.dirname(pkg)]
        info["commit"] = subprocess.run(git + ["rev-parse", "--short", "HEAD"], check=True,
                                        capture_output=True, text=True).stdout.strip()
        info["modified"] = bool(subprocess.run(
            git + ["status", "--porcelain", "--", pkg], check=True, capture_output=True,
            text=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def report(rows: list, libs: dict, cfg: W.Config, outdir: str, elapsed: float,
           plot: bool = True, label: str | None = None, log=print) -> dict:
    names = [n for n in LIBRARY_NAMES if n in libs] + ["floor"]
    log("")
    log(format_table(rows, names))
    log("")
    log("times are medians of the repeats; * = a reduced count was timed and scaled linearly "
        "(see notes);")
    log("/bcolz and /blosc2 = bcolz_store's median divided by that library's; "
        "read_peak_memory is in bytes above the output")
    loads = [v for row in rows for v in (row["load_before"], row["load_after"]) if v is not None]
    if loads:
        ncpu = os.cpu_count() or 1
        log(f"machine load (1-min average) during the run: {min(loads):.1f} to {max(loads):.1f} "
            f"on {ncpu} cores" + ("  -- other processes competed for the CPUs; ratios are "
                                  "noisier than usual" if max(loads) > ncpu + 0.5 else ""))
    for row in rows:
        if row.get("note"):
            log(f"  note {row['key']}: {row['note']}")
        for lib, info in row["libs"].items():
            if info["note"]:
                log(f"  note {row['key']} {lib}: {info['note']}")
            if info.get("variants"):
                tried = ", ".join(f"{k} {_fmt(v)}" for k, v in info["variants"].items())
                log(f"  note {row['key']} {lib}: fastest {info['variant']} ({tried})")
        if row.get("post"):
            log(f"  note {row['key']}: {row['post'].get('byte_check', row['post'])}")
        for err in row["errors"]:
            log(f"  ERROR {row['key']}: {err}")
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "label": label,
              "config": dataclasses.asdict(cfg), "environment": environment(libs, cfg),
              "elapsed_s": elapsed, "rows": rows}
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "latest.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=_json_default)
    log(f"\nresults written to {os.path.join(outdir, 'latest.json')}")
    if plot:
        from .plot import plot_ratios
        png = plot_ratios(result, os.path.join(outdir, "ratios.png"))
        if png:
            log(f"plot written to {png}")
    return result


def _json_default(obj):
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


# ------------------------------------------------------------------ profiling


def profile(keys: list, ctx: W.Context, outdir: str, log=print) -> list:
    """Profile bcolz_store's case of each workload; text reports in ``outdir``.

    pyinstrument (a call tree with time shares) when installed, and cProfile's
    top functions by own time in any case.
    """
    import cProfile
    import io
    import pstats
    written = []
    for wl in W.build_workloads(ctx, only=set(keys)):
        case = wl.cases.get("bcolz_store")
        if case is None:
            continue
        for vname, fn in case.runs().items():
            tag = wl.key + (f"-{vname}" if vname else "")
            parts = [f"# profile of bcolz_store, workload {wl.key}"
                     f"{' variant ' + vname if vname else ''}: {wl.title}\n"]
            try:
                from pyinstrument import Profiler
            except ImportError:
                Profiler = None
            if Profiler is not None:
                state = case.setup()
                prof = Profiler(interval=0.0005)
                prof.start()
                fn(state)
                prof.stop()
                parts.append("## pyinstrument call tree\n")
                parts.append(prof.output_text(unicode=False, color=False, show_all=False))
            state = case.setup()
            pr = cProfile.Profile()
            pr.enable()
            fn(state)
            pr.disable()
            buf = io.StringIO()
            stats = pstats.Stats(pr, stream=buf)
            stats.sort_stats("tottime").print_stats(25)
            parts.append("\n## cProfile, top 25 by own time\n")
            parts.append(buf.getvalue().replace(os.getcwd() + os.sep, ""))
            os.makedirs(outdir, exist_ok=True)
            path = os.path.join(outdir, f"profile-{tag}.txt")
            with open(path, "w") as fh:
                fh.write("\n".join(parts))
            written.append(path)
            log(f"profile written to {path}")
    return written


def _misses(outdir: str) -> list:
    with open(os.path.join(outdir, "latest.json")) as fh:
        data = json.load(fh)
    return [row["key"] for row in data["rows"] if row["status"] == "MISS"]


# ------------------------------------------------------------------ command line


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes, one repeat: checks the harness and the answers, not speed")
    p.add_argument("--only", help="comma-separated workload keys (default: all): "
                   + ", ".join(W.KEYS))
    p.add_argument("--libs", default=",".join(LIBRARY_NAMES),
                   help="comparison libraries to load if installed (bcolz_store always runs)")
    p.add_argument("--out", default=RESULTS_DIR, help="where latest.json and ratios.png go")
    p.add_argument("--workdir", help="scratch directory for datasets (default: a temporary one, "
                   "removed afterwards)")
    p.add_argument("--label", help="free text stored in latest.json (e.g. which revision of "
                   "bcolz_store was measured)")
    p.add_argument("--no-plot", action="store_true", help="skip the matplotlib plot")
    p.add_argument("--markdown", action="store_true",
                   help="print OUT/latest.json as a Markdown table and exit")
    p.add_argument("--floor", action="store_true",
                   help="measure the pieces of a durable write (compression, md5, writing, "
                   "fsync) and the least time they allow; writes OUT/floor.json")
    p.add_argument("--threads", metavar="N,N,...",
                   help="the thread sweep instead (see benchmarks/sweep.py): read, sum, query "
                   "and write at each number of threads, each library given that many through "
                   "its own setting; writes OUT/sweep.json and OUT/sweep.png")
    p.add_argument("--size", default="1.6G",
                   help="with --threads: bytes of the float64 array (default 1.6G: 200 "
                   "million values); e.g. 200M for a quick run")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="with --threads: before each phase, wait up to this long for the "
                   "machine's CPUs to be idle (a machine shared with other work)")
    p.add_argument("--profile", metavar="KEYS",
                   help="profile bcolz_store on these workloads ('misses': those missing their "
                   "target in OUT/latest.json) instead of benchmarking")
    defaults = W.Config()
    for field in dataclasses.fields(W.Config):
        if field.name == "quick" or field.type not in ("int", "str"):
            continue
        p.add_argument("--" + field.name.replace("_", "-"), type=int if field.type == "int" else str,
                       default=None, help=f"(default {getattr(defaults, field.name)!r})")
    return p.parse_args(argv)


def make_config(args) -> W.Config:
    cfg = W.Config.quick_config() if args.quick else W.Config()
    for field in dataclasses.fields(W.Config):
        value = getattr(args, field.name, None)
        if value is not None and field.name != "quick":
            setattr(cfg, field.name, value)
    if cfg.slice_len >= cfg.n:
        raise SystemExit("--slice-len must be smaller than --n")
    return cfg


def _sweep(args) -> int:
    from .sweep import LIBS_DEFAULT_ROWS, markdown, parse_size, run_sweep
    path = os.path.join(args.out, "sweep.json")
    if args.markdown:
        with open(path) as fh:
            print(markdown(json.load(fh)))
        return 0
    try:
        counts = [int(n) for n in args.threads.split(",")]
    except ValueError:
        raise SystemExit(f"--threads needs numbers separated by commas, not {args.threads!r}")
    if not counts or min(counts) < 1:
        raise SystemExit("--threads needs positive numbers")
    workdir = args.workdir or tempfile.mkdtemp(prefix="bcolz-store-sweep-")
    os.makedirs(workdir, exist_ok=True)
    try:
        wanted = set(args.libs.split(","))
        if args.libs == ",".join(LIBRARY_NAMES):      # not chosen: every library
            wanted.add("tensorstore")
        run_sweep(counts, parse_size(args.size), args.repeats or 3, wanted, workdir, args.out,
                  args.nrows or LIBS_DEFAULT_ROWS, wait_idle=args.wait_idle)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        return _sweep(args)
    if args.markdown:
        with open(os.path.join(args.out, "latest.json")) as fh:
            print(markdown_table(json.load(fh)))
        return 0
    cfg = make_config(args)
    libs = load_libraries(set(args.libs.split(",")))
    nthreads = cfg.nthreads or os.cpu_count() or 1
    for adapter in libs.values():
        adapter.set_nthreads(nthreads)
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= set(W.KEYS):
        raise SystemExit(f"unknown workloads: {sorted(only - set(W.KEYS))}; known: {W.KEYS}")
    workdir = args.workdir or tempfile.mkdtemp(prefix="bcolz-store-bench-")
    os.makedirs(workdir, exist_ok=True)
    print(f"libraries: " + ", ".join(f"{n} {a.version}" for n, a in libs.items()) +
          f"; blosc threads {nthreads}; workdir {workdir}")
    print(f"data: {cfg.n:,} f8 random walk and i8 arange, {cfg.cname} clevel {cfg.clevel} "
          f"shuffle {cfg.shuffle}, chunklen {cfg.chunklen:,}; ctable {cfg.nrows:,} x 5"
          f"{' (quick mode: sizes are tiny, times mean nothing)' if cfg.quick else ''}")
    t0 = time.perf_counter()
    try:
        ctx = W.Context(cfg, libs, workdir)
        if args.profile:
            keys = _misses(args.out) if args.profile == "misses" else args.profile.split(",")
            profile(keys, ctx, args.out)
            return 0
        if args.floor:
            from .floor import run_floor
            result = run_floor(ctx)
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "floor.json"), "w") as fh:
                json.dump(result, fh, indent=1, default=_json_default)
            return 0
        rows = []
        for wl in W.build_workloads(ctx, only):
            print(f"[{time.perf_counter() - t0:6.1f}s] {wl.key}: {wl.title}", flush=True)
            rows.append(run_workload(wl, cfg))
        report(rows, libs, cfg, args.out, time.perf_counter() - t0, plot=not args.no_plot,
               label=args.label)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 1 if any(row["status"] == "WRONG" for row in rows) else 0
