"""Many writers appending to one dataset at once: rows, order and rates.

``python -m benchmarks.contention`` starts ``--writers`` processes that each
append ``--appends`` times to one carray and to one ctable (an int64 id, the
writer's number, and a vlen str column), with sizes drawn from 1 to three
chunklens (most not multiples of the chunklen), without a lock or with
``--lock``, on a local folder or on S3 (``--s3``: a moto server on 127.0.0.1,
never any other address).  Each writer commits every append (``flush()`` of
the carray; the ctable's ``auto_flush``) and, should an append still fail
with ``ConcurrentWriteError``, calls ``refresh()`` and appends again (the
documented way).

At the end every row must be present exactly once, each writer's rows in the
order it appended them, the vlen column must match the ids, and
``bcolz_store.verify`` must pass.  Printed, and written to
``benchmarks/results/contention.json``: commits per second, rebases per
commit (appends that another writer's commit overtook and that were appended
again on the new state), errors by type.  :func:`run` is what the tests call
with a few writers and appends.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import queue
import sys
import tempfile
import time
import traceback

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                       "contention.json")
CHUNKLEN = 512


def _sizes(writer: int, appends: int) -> list:
    rng = np.random.default_rng(1000 + writer)
    return [int(n) for n in rng.integers(1, 3 * CHUNKLEN, appends)]


def _ids(writer: int, seq: int, n: int) -> np.ndarray:
    """Row ids: writer, append number and position, readable in one int64."""
    return writer * 10 ** 12 + seq * 10 ** 6 + np.arange(n, dtype=np.int64)


def _writer(kind, path, options, writer, appends, lock, start_at, out):
    """One writing process: returns (through ``out``) its counts and errors."""
    import bcolz_store
    from bcolz_store.errors import BcolzStoreError, ConcurrentWriteError
    counts = {"commits": 0, "retries": 0, "rebases": 0, "errors": {}}
    try:
        kwargs = {"storage_options": options} if options else {}
        obj = bcolz_store.open(path, mode="a", lock=lock, **kwargs)
        while time.time() < start_at:
            time.sleep(0.001)
        for seq, n in enumerate(_sizes(writer, appends)):
            ids = _ids(writer, seq, n)
            while True:
                try:
                    if kind == "carray":
                        obj.append(ids)
                        obj.flush()
                    else:
                        obj.append([ids, np.full(n, writer, dtype=np.int16),
                                    [f"w{i}" for i in ids.tolist()]])
                    break
                except ConcurrentWriteError as err:
                    name = type(err).__name__
                    counts["errors"][name] = counts["errors"].get(name, 0) + 1
                    counts.setdefault("messages", []).append(traceback.format_exc()[-1500:])
                    counts["retries"] += 1
                    obj.refresh()
            counts["commits"] += 1
        counts["rebases"] = obj._store.journal.rebases
        obj.close()
    except BcolzStoreError as err:   # reported, the check below says what was lost
        name = type(err).__name__
        counts["errors"][name] = counts["errors"].get(name, 0) + 1
        counts["traceback"] = traceback.format_exc()[-2000:]
    out.put((writer, counts))


def _create(kind, path, options):
    import bcolz_store
    kwargs = {"storage_options": options} if options else {}
    if kind == "carray":
        bcolz_store.carray(np.zeros(0, dtype=np.int64), rootdir=path, mode="w",
                           chunklen=CHUNKLEN, **kwargs)
    else:
        bcolz_store.ctable([np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int16),
                            np.zeros(0, dtype=object)], names=["id", "w", "s"],
                           dtype={"s": bcolz_store.vlen(str)}, rootdir=path, mode="w",
                           chunklen=CHUNKLEN, **kwargs)


def check(kind, path, options, writers, appends) -> list:
    """What is wrong with the dataset after the run (an empty list: nothing)."""
    import bcolz_store
    kwargs = {"storage_options": options} if options else {}
    problems = []
    obj = bcolz_store.open(path, mode="r", **kwargs)
    if kind == "carray":
        ids = obj[:]
    else:
        ids = obj.cols["id"][:]
        names = obj.cols["s"][:]
        wrong = sum(1 for i, s in zip(ids.tolist(), names) if s != f"w{i}")
        if wrong:
            problems.append(f"{wrong} vlen items do not match their ids")
        if not np.array_equal(obj.cols["w"][:], ids // 10 ** 12):
            problems.append("the writer column does not match the ids")
    expected = np.concatenate([_ids(w, seq, n) for w in range(writers)
                               for seq, n in enumerate(_sizes(w, appends))])
    if len(ids) != len(expected):
        problems.append(f"{len(ids)} rows, {len(expected)} appended")
    values, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        problems.append(f"{int((counts > 1).sum())} rows present more than once")
    missing = np.setdiff1d(expected, values)
    if len(missing):
        problems.append(f"{len(missing)} rows missing")
    for w in range(writers):
        mine = ids[ids // 10 ** 12 == w]
        if (np.diff(mine) <= 0).any():
            problems.append(f"writer {w}'s rows are out of order")
    report = bcolz_store.verify(path, **kwargs)
    if not report.ok:
        problems.append(f"verify: {report.problems()[:5]}")
    return problems


def run(kind="carray", path=None, options=None, writers=8, appends=500, lock=False) -> dict:
    """Run ``writers`` processes appending ``appends`` times to a new ``kind``
    at ``path`` (a folder, or an ``s3://`` URL with ``options``); return the
    figures and the problems found (see the module docstring)."""
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="bcolz-store-contention-")
        path = os.path.join(tmp.name, f"{kind}.bcolz")
    _create(kind, path, options)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 1.0 + 0.3 * writers      # all processes started and opened
    procs = [ctx.Process(target=_writer, args=(kind, path, options, w, appends, lock,
                                               start_at, out)) for w in range(writers)]
    for proc in procs:
        proc.start()
    results = {}
    while len(results) < len(procs):
        try:
            writer, counts = out.get(timeout=1)
            results[writer] = counts
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"{len(dead)} writer processes died (exit "
                                   f"{dead[0].exitcode}) without reporting")
    for proc in procs:
        proc.join()
    elapsed = time.time() - start_at
    commits = sum(r["commits"] for r in results.values())
    errors = {}
    for r in results.values():
        for name, n in r["errors"].items():
            errors[name] = errors.get(name, 0) + n
    figures = {
        "kind": kind, "store": "s3" if str(path).startswith("s3://") else "local",
        "lock": bool(lock), "writers": writers, "appends": appends,
        "seconds": round(elapsed, 2), "commits": commits,
        "commits_per_s": round(commits / elapsed, 1) if elapsed > 0 else None,
        "rebases_per_commit": round(sum(r["rebases"] for r in results.values())
                                    / max(commits, 1), 3),
        "retries_per_commit": round(sum(r["retries"] for r in results.values())
                                    / max(commits, 1), 3),
        "errors": errors,
        "problems": check(kind, path, options, writers, appends),
        "tracebacks": [r["traceback"] for r in results.values() if "traceback" in r],
        "messages": [m for r in results.values() for m in r.get("messages", [])][:3],
    }
    if tmp is not None:
        tmp.cleanup()
    return figures


def _steady_writer(kind, path, options, appends, every, out):
    """Append ``appends`` times, one commit every ``every`` seconds."""
    import bcolz_store
    kwargs = {"storage_options": options} if options else {}
    obj = bcolz_store.open(path, mode="a", **kwargs)
    out.put("started")
    for seq in range(appends):
        ids = _ids(0, seq, 100)
        if kind == "carray":
            obj.append(ids)
            obj.flush()
        else:
            obj.append([ids, np.zeros(100, dtype=np.int16), [f"w{i}" for i in ids.tolist()]])
        time.sleep(every)
    obj.close()
    out.put("done")


def readers(kind="ctable", path=None, options=None, rows=240_000, appends=200,
            every=0.035) -> dict:
    """Full reads (open, then read every row) beside one writer committing an
    append every ``every`` seconds: how many complete, and whether each saw
    a whole committed state (the rows of the first appends, in order)."""
    import bcolz_store
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="bcolz-store-readers-")
        path = os.path.join(tmp.name, f"{kind}.bcolz")
    _create(kind, path, options)
    kwargs = {"storage_options": options} if options else {}
    base = bcolz_store.open(path, mode="a", **kwargs)
    ids = np.arange(rows, dtype=np.int64) + 9 * 10 ** 12
    if kind == "carray":
        base.append(ids)
    else:
        base.append([ids, np.zeros(rows, dtype=np.int16), ["x"] * rows])
    base.flush()
    base.close()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_steady_writer, args=(kind, path, options, appends, every, out))
    proc.start()
    out.get(timeout=120)
    done = ok = wrong = 0
    errors = {}
    started = time.time()
    while proc.is_alive() and out.empty():
        done += 1
        try:
            obj = bcolz_store.open(path, mode="r", **kwargs)
            got = obj[:] if kind == "carray" else obj.cols["id"][:]
        except bcolz_store.BcolzStoreError as err:
            errors[type(err).__name__] = errors.get(type(err).__name__, 0) + 1
            continue
        n = len(got) - rows
        expected = np.concatenate([ids] + [_ids(0, s, 100) for s in range(n // 100)])
        if n % 100 or not np.array_equal(got, expected):
            wrong += 1
        else:
            ok += 1
    proc.join()
    if tmp is not None:
        tmp.cleanup()
    return {"kind": kind, "rows": rows, "every_s": every, "reads": done, "completed": ok,
            "wrong": wrong, "errors": errors, "seconds": round(time.time() - started, 2),
            "completed_share": round(ok / max(done, 1), 3)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.contention",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--kind", choices=["carray", "ctable", "both"], default="both")
    parser.add_argument("--lock", action="store_true", help="writers pass lock=True")
    parser.add_argument("--s3", action="store_true", help="on S3 (moto on 127.0.0.1)")
    parser.add_argument("--readers", action="store_true",
                        help="instead: full reads beside one writer committing every 35 ms")
    args = parser.parse_args(argv)
    if args.readers:
        for kind in (["carray", "ctable"] if args.kind == "both" else [args.kind]):
            print(json.dumps(readers(kind)))
        return 0
    server = None
    options = None
    if args.s3:
        from benchmarks.remote import MotoServer
        server = MotoServer()
        options = server.options
    rows = []
    try:
        for kind in (["carray", "ctable"] if args.kind == "both" else [args.kind]):
            path = None
            if server is not None:
                import s3fs
                bucket = f"contention-{kind}-{int(time.time())}"
                s3fs.S3FileSystem(**options).mkdir(bucket)
                path = f"s3://{bucket}/{kind}.bcolz"
            figures = run(kind, path, options, args.writers, args.appends, args.lock)
            figures["machine"] = f"{platform.node()} ({os.cpu_count()} cores)"
            rows.append(figures)
            print(json.dumps({k: v for k, v in figures.items() if k != "tracebacks"}))
            for tb in figures["tracebacks"][:2]:
                print(tb, file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    previous = []
    if os.path.exists(RESULTS):
        with open(RESULTS) as fh:
            previous = json.load(fh)
    keep = [r for r in previous if not any(
        (r["kind"], r["store"], r["lock"]) == (f["kind"], f["store"], f["lock"]) for f in rows)]
    with open(RESULTS, "w") as fh:
        json.dump(keep + rows, fh, indent=1)
    return 1 if any(f["problems"] for f in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
