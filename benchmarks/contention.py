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

Each writer logs to a file of its own ``begin SEQ`` before each append and
``ack SEQ`` once its commit returned (what it takes for acknowledged), and
the check holds the dataset to these logs: every acknowledged append present
once, whole and in its writer's order; an append in progress when its writer
stopped (killed, or an error) wholly present once or absent; nothing else.
After the run the dataset is opened in mode ``'a'`` (which finishes a
killed writer's commit), then checked in mode ``'r'``; columns must have one
length.

``--faults RATE`` (with ``--s3``): the writers reach moto through
:class:`tests.storage.s3_faults.FaultProxy`, which fails (500 or a reset
connection), loses the answer of (the request took effect) or duplicates
requests at ``RATE`` per request, split evenly among the three; the faults
injected are counted by kind.  ``--kill N``: N writers (seeded) are killed
with SIGKILL at seeded moments inside their appends; their logs are fsynced
line by line.  On S3 a killed writer may leave the commit lock object behind,
which holds the others up for the lease (``--lease``, passed to the writers
as ``BCOLZ_STORE_LOCK_LEASE``).  Both combine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import signal
import sys
import tempfile
import time
import traceback

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                       "contention.json")
READERS_RESULTS = os.path.join(os.path.dirname(RESULTS), "contention_readers.json")
CHUNKLEN = 512
#: Seconds a writer waits for the writer lock under ``--lock`` (each holds it
#: from ``open`` to ``close``, so the last one waits for all the others'
#: appends: 8 x 500 outlast the default 60 s).
LOCK_TIMEOUT = 3600.0


def _sizes(writer: int, appends: int) -> list:
    rng = np.random.default_rng(1000 + writer)
    return [int(n) for n in rng.integers(1, 3 * CHUNKLEN, appends)]


def _ids(writer: int, seq: int, n: int) -> np.ndarray:
    """Row ids: writer, append number and position, readable in one int64."""
    return writer * 10 ** 12 + seq * 10 ** 6 + np.arange(n, dtype=np.int64)


# --- a writer's log: what it began and what it took for acknowledged -----------------------

LOG_NAME = "writer-{}.log"
RESULT_NAME = "writer-{}.json"


class _Log:
    """A writer's log of its appends, one event a line, each line written with
    one ``os.write`` (and fsynced when ``sync``) before the writer goes on.

    Lines: ``open T``, ``begin SEQ N T`` (before append number SEQ, of N rows,
    is tried), ``ack SEQ T`` (after its commit returned: the writer takes it
    for acknowledged), ``done T``; T is ``time.time()``.
    """

    def __init__(self, path: str, sync: bool):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.sync = sync

    def write(self, *fields) -> None:
        os.write(self.fd, (" ".join(str(f) for f in fields) + "\n").encode("ascii"))
        if self.sync:
            os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


def parse_log(text: str, appends: int, writer: int = None) -> dict:
    """What a writer's log says: ``{"acked": [seq, ...], "pending": seq or None,
    "begun": {seq: time}, "done": bool, "problems": [...]}``.

    ``pending`` is the append begun and not acknowledged (the writer was
    killed in it, or stopped with an error): it may be present or not.  A log
    whose appends are not begun and acknowledged one after the other, in
    order, or (given the ``writer``) with another size than :func:`_sizes`
    says, is a problem of the run itself.  A last line without its newline
    (the writer was killed while writing it) is ignored.
    """
    sizes = _sizes(writer, appends) if writer is not None else None
    out = {"acked": [], "pending": None, "begun": {}, "done": False, "problems": []}
    lines = text.split("\n")
    for line in lines[:-1]:         # the last piece has no newline: empty or torn
        fields = line.split()
        if not fields:
            continue
        event = fields[0]
        try:
            if event == "begin":
                seq = int(fields[1])
                expected = len(out["acked"])
                if out["pending"] is not None or seq != expected:
                    out["problems"].append(f"log: append {seq} begun, {expected} expected")
                if sizes is not None and 0 <= seq < appends and int(fields[2]) != sizes[seq]:
                    out["problems"].append(f"log: append {seq} of {fields[2]} rows, "
                                           f"{sizes[seq]} expected")
                out["pending"] = seq
                out["begun"][seq] = float(fields[3])
            elif event == "ack":
                seq = int(fields[1])
                if out["pending"] != seq:
                    out["problems"].append(f"log: append {seq} acknowledged, not begun")
                out["acked"].append(seq)
                out["pending"] = None
            elif event == "done":
                out["done"] = True
            elif event != "open":
                out["problems"].append(f"log: unknown line {line!r}")
        except (IndexError, ValueError):
            out["problems"].append(f"log: unreadable line {line!r}")
    if any(not 0 <= seq < appends for seq in out["acked"]) or \
            (out["pending"] is not None and not 0 <= out["pending"] < appends):
        out["problems"].append(f"log: an append number outside 0..{appends - 1}")
    return out


def _all_acked(appends: int) -> dict:
    """The log of a writer that appended ``appends`` times and was acknowledged."""
    return {"acked": list(range(appends)), "pending": None, "begun": {}, "done": True,
            "problems": []}


def _concat(parts: list) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def check_rows(ids, writers: int, appends: int, logs=None):
    """What is wrong with the ids found, given what each writer's log says.

    Parameters
    ----------
    ids : numpy.ndarray
        The int64 ids in the dataset, in its order.
    writers, appends : int
        The run's size (each writer's appends are ``_sizes(writer, appends)``).
    logs : dict, optional
        ``{writer: parse_log(...)}``; without it, every append of every
        writer was acknowledged.

    Returns
    -------
    (problems, pending) : (list of str, dict)
        ``problems`` is empty when each writer's rows are exactly its
        acknowledged appends, whole, once and in its order, followed or not by
        the whole append it had in progress, and no other row is present.
        ``pending`` says for each writer that had an append in progress
        whether it is present.
    """
    ids = np.asarray(ids, dtype=np.int64)
    problems, pending = [], {}
    _values, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        problems.append(f"{int((counts > 1).sum())} rows present more than once")
    owner = ids // 10 ** 12
    strangers = (owner < 0) | (owner >= writers)
    if strangers.any():
        problems.append(f"{int(strangers.sum())} rows of no writer")
    for w in range(writers):
        sizes = _sizes(w, appends)
        log = logs[w] if logs is not None else _all_acked(appends)
        problems += [f"writer {w}: {p}" for p in log["problems"]]
        mine = ids[owner == w]
        acked = [s for s in log["acked"] if 0 <= s < appends]
        expected = _concat([_ids(w, s, sizes[s]) for s in acked])
        p = log["pending"]
        if p is not None and 0 <= p < appends:
            pending[w] = False
            if np.array_equal(mine, expected):
                continue
            pending[w] = True
            if np.array_equal(mine, _concat([expected, _ids(w, p, sizes[p])])):
                continue
            pending[w] = None
        elif np.array_equal(mine, expected):
            continue
        problems += _diagnose(w, mine, acked, p, sizes)
    return problems, pending


def _diagnose(w: int, mine: np.ndarray, acked: list, pending, sizes: list) -> list:
    """Why writer ``w``'s rows are not its appends (see :func:`check_rows`)."""
    out = []
    seqs = (mine // 10 ** 6) % 10 ** 6
    for s in acked:
        want = _ids(w, s, sizes[s])
        got = mine[seqs == s]
        if len(got) < len(want) or not np.isin(want, got).all():
            out.append(f"writer {w}: acknowledged append {s} lost "
                       f"({int((~np.isin(want, got)).sum())} of {len(want)} rows missing)")
        if len(got) > len(np.unique(got)):
            out.append(f"writer {w}: append {s} present more than once")
    if pending is not None:
        got = mine[seqs == pending]
        n = sizes[pending] if 0 <= pending < len(sizes) else 0
        if len(got) > len(np.unique(got)):
            out.append(f"writer {w}: append {pending} (in progress) present more than once")
        elif 0 < len(got) < n or (len(got) == n and not np.array_equal(
                np.sort(got), _ids(w, pending, n))):
            out.append(f"writer {w}: append {pending} (in progress when it stopped) is torn: "
                       f"{len(got)} of {n} rows")
    known = set(acked) | ({pending} if pending is not None else set())
    others = sorted(set(seqs.tolist()) - known)
    if others:
        out.append(f"writer {w}: rows of appends it never began or acknowledged: "
                   f"{others[:5]}")
    within = mine % 10 ** 6
    if any(((seqs == s) & (within >= sizes[s])).any() for s in known if 0 <= s < len(sizes)):
        out.append(f"writer {w}: rows beyond the end of their append")
    if (np.diff(mine) <= 0).any():
        out.append(f"writer {w}'s rows are out of order")
    if not out:
        out.append(f"writer {w}: rows differ from its acknowledged appends")
    return out


# --- one writing process ------------------------------------------------------------------

def _writer(kind, path, options, writer, appends, lock, start_at, logdir, sync_log=False,
            lease=None):
    """One writing process: logs its appends and writes its counts and errors
    to its result file (``RESULT_NAME`` in ``logdir``; none when killed)."""
    if lease is not None:
        os.environ["BCOLZ_STORE_LOCK_LEASE"] = str(lease)
    import bcolz_store
    from bcolz_store.errors import ConcurrentWriteError
    if lease is not None:
        from bcolz_store.storage.journal import Journal
        Journal.lock_lease = float(lease)
    log = _Log(os.path.join(logdir, LOG_NAME.format(writer)), sync_log)
    counts = {"commits": 0, "retries": 0, "rebases": 0, "errors": {}}
    try:
        kwargs = {"storage_options": options} if options else {}
        obj = bcolz_store.open(path, mode="a", lock=LOCK_TIMEOUT if lock else False, **kwargs)
        log.write("open", f"{time.time():.6f}")
        while time.time() < start_at:
            time.sleep(0.001)
        for seq, n in enumerate(_sizes(writer, appends)):
            ids = _ids(writer, seq, n)
            log.write("begin", seq, n, f"{time.time():.6f}")
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
                    counts.setdefault("messages", []).append(traceback.format_exc()[-4000:])
                    counts["retries"] += 1
                    obj.refresh()
            log.write("ack", seq, f"{time.time():.6f}")
            counts["commits"] += 1
        counts["rebases"] = obj.dataset.journal.rebases
        obj.close()
        log.write("done", f"{time.time():.6f}")
    except Exception as err:    # reported; the check says what was lost
        name = type(err).__name__
        counts["errors"][name] = counts["errors"].get(name, 0) + 1
        counts["traceback"] = traceback.format_exc()[-2000:]
    log.close()
    result = os.path.join(logdir, RESULT_NAME.format(writer))
    with open(result + ".tmp", "w") as fh:
        json.dump(counts, fh)
    os.replace(result + ".tmp", result)


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


def check(kind, path, options, writers, appends, logs=None) -> list:
    """What is wrong with the dataset after the run (an empty list: nothing).

    ``logs`` (``{writer: parse_log(...)}``) says which appends each writer
    took for acknowledged and which one it had in progress when it stopped;
    without it, every append was acknowledged.  See :func:`check_rows`.
    """
    return _check(kind, path, options, writers, appends, logs)[0]


def _check(kind, path, options, writers, appends, logs=None):
    """``(problems, pending)``: :func:`check` and which appends in progress are present."""
    import bcolz_store
    kwargs = {"storage_options": options} if options else {}
    problems = []
    obj = bcolz_store.open(path, mode="r", **kwargs)
    if kind == "carray":
        ids = obj[:]
        if len(ids) != len(obj):
            problems.append(f"{len(ids)} rows read, len() says {len(obj)}")
    else:
        ids = obj.cols["id"][:]
        names = obj.cols["s"][:]
        owners = obj.cols["w"][:]
        lengths = {name: len(obj.cols[name]) for name in obj.names}
        lengths.update({"table": len(obj), "id read": len(ids), "s read": len(names),
                        "w read": len(owners)})
        if len(set(lengths.values())) != 1:
            problems.append(f"columns of different lengths: {lengths}")
        wrong = sum(1 for i, s in zip(ids.tolist(), names) if s != f"w{i}")
        if wrong:
            problems.append(f"{wrong} vlen items do not match their ids")
        if len(owners) != len(ids) or not np.array_equal(owners, ids // 10 ** 12):
            problems.append("the writer column does not match the ids")
    if logs is None:
        expected = sum(n for w in range(writers) for n in _sizes(w, appends))
        if len(ids) != expected:
            problems.append(f"{len(ids)} rows, {expected} appended")
    found, pending = check_rows(ids, writers, appends, logs)
    problems += found
    report = bcolz_store.verify(path, **kwargs)
    if not report.ok:
        problems.append(f"verify: {report.problems()[:5]}")
    return problems, pending


def _kill_plan(writers: int, appends: int, kill: int, seed: int) -> dict:
    """``{writer: (seq, rng)}`` for ``kill`` writers (seeded): see
    :func:`_supervise`.  ``seq`` is in the first half of the appends, so that
    a writer has many appends to be killed in."""
    rng = random.Random(seed)
    victims = rng.sample(range(writers), min(kill, writers))
    return {w: (rng.randrange(1, max(2, appends // 2)), random.Random(rng.random()))
            for w in victims}


class _Tail:
    """The complete lines a growing log file gained since the last call."""

    def __init__(self, path: str):
        self.path = path
        self.offset = 0
        self.rest = b""

    def lines(self) -> list:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        *complete, self.rest = (self.rest + data).split(b"\n")
        return [line.decode("ascii", "replace").split() for line in complete]


def _supervise(procs: list, logdir: str, plan: dict) -> dict:
    """Wait for the writers, killing those of ``plan`` with SIGKILL.

    A writer planned ``(seq, rng)`` is killed a random fraction (drawn from
    ``rng``) of its last append's duration after it began append ``seq``:
    most kills fall inside that append (staging, committing or applying it),
    the others in the next one or between two.  Returns ``{writer: seconds
    since its first append}`` for each writer killed (a writer that ended
    first is not).
    """
    tails = {w: _Tail(os.path.join(logdir, LOG_NAME.format(w))) for w in plan}
    begun = {w: {} for w in plan}
    acked = {w: {} for w in plan}
    finished, deadlines, killed = set(), {}, {}
    while any(p.is_alive() for p in procs):
        for w, (k, rng) in plan.items():
            if w in killed or w in finished:
                continue
            for fields in tails[w].lines():
                if fields[:1] == ["begin"]:
                    begun[w][int(fields[1])] = float(fields[3])
                elif fields[:1] == ["ack"]:
                    acked[w][int(fields[1])] = float(fields[2])
                elif fields[:1] == ["done"]:
                    finished.add(w)         # it ended before its moment
            if w in finished or not procs[w].is_alive():
                continue
            if w not in deadlines and k in begun[w]:
                last = max((j for j in acked[w] if j < k), default=None)
                took = acked[w][last] - begun[w][last] if last is not None else 0.05
                deadlines[w] = begun[w][k] + rng.random() * took
            if w in deadlines and time.time() >= deadlines[w]:
                os.kill(procs[w].pid, signal.SIGKILL)
                killed[w] = round(time.time() - begun[w][0], 3)
        time.sleep(0.005)
    for proc in procs:
        proc.join()
    return killed


@contextlib.contextmanager
def _lease(lease):
    """This process's commit-lock lease set to ``lease`` seconds for the block
    (None: left as it is)."""
    if lease is None:
        yield
        return
    from bcolz_store.storage.journal import Journal
    saved = Journal.__dict__.get("lock_lease")
    Journal.lock_lease = float(lease)
    try:
        yield
    finally:
        if saved is None:
            del Journal.lock_lease
        else:
            Journal.lock_lease = saved


def run(kind="carray", path=None, options=None, writers=8, appends=500, lock=False, *,
        faults=0.0, kill=0, lease=None, seed=0) -> dict:
    """Run ``writers`` processes appending ``appends`` times to a new ``kind``
    at ``path`` (a folder, or an ``s3://`` URL with ``options``); return the
    figures and the problems found (see the module docstring).

    Parameters
    ----------
    faults : float, default 0
        S3 only: the writers' requests go through a
        :class:`tests.storage.s3_faults.FaultProxy` with this fault rate, split
        evenly among ``fail``, ``lost`` and ``dup``; ``figures["faults"]``
        counts the faults injected by kind.
    kill : int, default 0
        Writers killed with SIGKILL at seeded moments while they append
        (``figures["killed"]``); the check then holds each writer to its log.
    lease : float, optional
        The commit lock's lease (``BCOLZ_STORE_LOCK_LEASE``) in the writers
        and in the final open; by default what this process has.
    seed : int, default 0
        Seeds the faults and the kills.
    """
    if faults and not str(path).startswith("s3://"):
        raise ValueError("faults are injected on S3 only (an s3:// path and its options)")
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="bcolz-store-contention-")
        path = os.path.join(tmp.name, f"{kind}.bcolz")
    logdir = tempfile.TemporaryDirectory(prefix="bcolz-store-contention-logs-")
    _create(kind, path, options)
    proxy = None
    writer_options = options
    if faults:
        from tests.storage.s3_faults import FaultProxy
        proxy = FaultProxy.split(options["client_kwargs"]["endpoint_url"], faults, seed=seed)
        proxy.start()
        writer_options = proxy.storage_options(options)
    ctx = multiprocessing.get_context("spawn")
    start_at = time.time() + 1.0 + 0.3 * writers      # all processes started and opened
    procs = [ctx.Process(target=_writer, args=(kind, path, writer_options, w, appends, lock,
                                               start_at, logdir.name, kill > 0, lease))
             for w in range(writers)]
    try:
        for proc in procs:
            proc.start()
        killed = _supervise(procs, logdir.name, _kill_plan(writers, appends, kill, seed))
    finally:
        if proxy is not None:
            proxy.stop()
    elapsed = time.time() - start_at
    results, logs, problems = {}, {}, []
    for w, proc in enumerate(procs):
        try:
            with open(os.path.join(logdir.name, LOG_NAME.format(w))) as fh:
                logs[w] = parse_log(fh.read(), appends, w)
        except FileNotFoundError:       # died before its first line
            logs[w] = parse_log("", appends, w)
        result = os.path.join(logdir.name, RESULT_NAME.format(w))
        if os.path.exists(result):
            with open(result) as fh:
                results[w] = json.load(fh)
            if not results[w]["errors"] and not (logs[w]["done"] and
                                                 len(logs[w]["acked"]) == appends):
                problems.append(f"writer {w} ended without an error, having acknowledged "
                                f"{len(logs[w]['acked'])} of {appends} appends")
        elif w not in killed:
            problems.append(f"writer {w} died (exit {proc.exitcode}) without reporting")
    logdir.cleanup()
    commits = sum(len(log["acked"]) for log in logs.values())
    survivors = sum(results[w]["commits"] for w in results)
    errors = {}
    for r in results.values():
        for name, n in r["errors"].items():
            errors[name] = errors.get(name, 0) + n
    # The dataset opens for writing (which finishes a killed writer's commit),
    # then for reading, and holds exactly what the logs say.
    import bcolz_store
    kwargs = {"storage_options": options} if options else {}
    pending = {}
    started = time.time()
    try:
        with _lease(lease):
            bcolz_store.open(path, mode="a", **kwargs).close()
    except Exception:
        problems.append(f"open(mode='a') after the run failed: {traceback.format_exc()[-1500:]}")
    reopen_s = time.time() - started
    try:
        found, pending = _check(kind, path, options, writers, appends, logs)
        problems += found
    except Exception:
        problems.append(f"the check failed: {traceback.format_exc()[-1500:]}")
    figures = {
        "kind": kind, "store": "s3" if str(path).startswith("s3://") else "local",
        "lock": bool(lock), "writers": writers, "appends": appends,
        "seconds": round(elapsed, 2), "commits": commits,
        "commits_per_s": round(commits / elapsed, 1) if elapsed > 0 else None,
        "rebases_per_commit": round(sum(r["rebases"] for r in results.values())
                                    / max(survivors, 1), 3),
        "retries_per_commit": round(sum(r["retries"] for r in results.values())
                                    / max(survivors, 1), 3),
        "errors": errors,
        "problems": problems,
        "tracebacks": [r["traceback"] for r in results.values() if "traceback" in r],
        "messages": [m for r in results.values() for m in r.get("messages", [])][:3],
    }
    if faults:
        figures.update({"faults_rate": faults, "faults": dict(proxy.counts),
                        "proxied_requests": proxy.requests})
    if kill:
        figures.update({"kill": kill, "killed": [
            {"writer": w, "after_s": killed[w], "acked": len(logs[w]["acked"]),
             "in_progress": logs[w]["pending"], "in_progress_present": pending.get(w)}
            for w in sorted(killed)], "reopen_s": round(reopen_s, 2)})
    if faults or kill:
        figures.update({"seed": seed, "lease": lease})
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
    """Full reads beside one writer committing an append every ``every``
    seconds: a reader opens the dataset (mode ``'r'``) and reads every row of
    every column (``obj[:]``), again and again while the writer runs.

    Returns how many reads were made and completed, and whether each
    completed read saw a whole committed state: the ``rows`` first rows
    followed by whole appends of the writer, in order, every column of one
    length and the vlen column matching the ids.  A read that raised counts
    as not completed (``errors`` by type).
    """
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
            got = obj[:]
        except bcolz_store.BcolzStoreError as err:
            errors[type(err).__name__] = errors.get(type(err).__name__, 0) + 1
            continue
        n = len(got) - rows
        expected = np.concatenate([ids] + [_ids(0, s, 100) for s in range(max(n, 0) // 100)])
        if kind == "carray":
            whole = np.array_equal(got, expected)
        else:
            names = got["s"].tolist()
            whole = (np.array_equal(got["id"], expected)
                     and np.array_equal(got["w"], np.zeros(len(got), dtype=np.int16))
                     and names[:rows] == ["x"] * rows
                     and names[rows:] == [f"w{i}" for i in got["id"][rows:].tolist()])
        if n < 0 or n % 100 or not whole:
            wrong += 1
        else:
            ok += 1
    proc.join()
    if tmp is not None:
        tmp.cleanup()
    return {"kind": kind, "store": "s3" if str(path).startswith("s3://") else "local",
            "rows": rows, "every_s": every, "reads": done, "completed": ok,
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
    parser.add_argument("--rows", type=int, default=240_000,
                        help="(with --readers) rows in the dataset before the writer starts")
    parser.add_argument("--faults", type=float, default=0.0, metavar="RATE",
                        help="(with --s3) the writers' requests go through a proxy that "
                             "injects faults at this rate per request, split among fail, "
                             "lost and dup")
    parser.add_argument("--kill", type=int, default=0, metavar="N",
                        help="SIGKILL N writers at random moments while they append")
    parser.add_argument("--lease", type=float, default=None, metavar="SECONDS",
                        help="the commit lock's lease in the writers (BCOLZ_STORE_LOCK_LEASE; "
                             "S3: how long a killed writer's lock holds the others up)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the faults and the kills")
    args = parser.parse_args(argv)
    if args.faults and not args.s3:
        parser.error("--faults needs --s3")
    if args.readers and (args.lock or args.faults or args.kill):
        parser.error("--readers takes no --lock, --faults or --kill")
    if not 0 <= args.faults <= 1 or args.kill < 0 or args.kill > args.writers:
        parser.error("--faults is a rate in [0, 1]; --kill at most --writers")
    server = None
    options = None
    if args.s3:
        from benchmarks.remote import MotoServer
        server = MotoServer()
        options = server.options

    def new_path(kind):
        if server is None:
            return None
        import s3fs
        bucket = f"contention-{kind}-{int(time.time() * 1000)}"
        s3fs.S3FileSystem(**options).mkdir(bucket)
        return f"s3://{bucket}/{kind}.bcolz"

    kinds = ["carray", "ctable"] if args.kind == "both" else [args.kind]
    if args.readers:
        rows = []
        try:
            for kind in kinds:
                figures = readers(kind, new_path(kind), options, rows=args.rows)
                figures["machine"] = f"{platform.node()} ({os.cpu_count()} cores)"
                print(json.dumps(figures))
                rows.append(figures)
        finally:
            if server is not None:
                server.stop()
        _save(READERS_RESULTS, rows, ("kind", "store", "rows"))
        return 1 if any(f["wrong"] for f in rows) else 0
    rows = []
    try:
        for kind in kinds:
            path = new_path(kind)
            figures = run(kind, path, options, args.writers, args.appends, args.lock,
                          faults=args.faults, kill=args.kill, lease=args.lease,
                          seed=args.seed)
            figures["machine"] = f"{platform.node()} ({os.cpu_count()} cores)"
            rows.append(figures)
            print(json.dumps({k: v for k, v in figures.items() if k != "tracebacks"}))
            for tb in figures["tracebacks"][:2]:
                print(tb, file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    _save(RESULTS, rows, ("kind", "store", "lock", "faults_rate", "kill"))
    return 1 if any(f["problems"] for f in rows) else 0


def _save(results: str, rows: list, keys: tuple) -> None:
    """Write ``rows`` to the JSON file ``results``, replacing the earlier rows
    that agree with one of them on ``keys`` (a missing rate or count is 0)."""
    os.makedirs(os.path.dirname(results), exist_ok=True)
    previous = []
    if os.path.exists(results):
        with open(results) as fh:
            previous = json.load(fh)

    def same(r, f):
        return all(r.get(k, 0 if k in ("faults_rate", "kill") else None) ==
                   f.get(k, 0 if k in ("faults_rate", "kill") else None) for k in keys)

    keep = [r for r in previous if not any(same(r, f) for f in rows)]
    with open(results, "w") as fh:
        json.dump(keep + rows, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
