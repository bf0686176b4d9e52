"""Kill a writer with SIGKILL at random moments; the dataset must hold a committed state.

``writer.py`` applies the seeded operations of ``model.py`` to a carray or
ctable and logs ``begin N`` / ``done N`` around every commit.  After the kill
the dataset must open and equal exactly the model's state after the last
``done N``, or after commit N+1 when ``begin N+1`` was logged (or the
pending appends flushed just before N+1, for trim/resize/setitem which flush
first).  Checked, in this order:

1. opened in mode 'r' (no recovery may be written): one of those states;
2. opened in mode 'a' (rolls a committed journal forward, discards the rest):
   one of those states, and not older than what mode 'r' showed;
3. ``bcolz_store.verify`` finds nothing wrong (when available), its chunk
   statistics included; every chunk statistics (``meta/stats``) a reader finds,
   before and after recovery, describes the committed data;
4. the real bcolz (when importable) reads the same state.

CI runs ``QUICK_KILLS`` kills per kind; set ``BCOLZ_STORE_CRASH_KILLS=300``
for a long run.  Every run prints ``kills``, ``unopenable`` and ``wrong``
counts and the seeds of the failures (replay one with
``python tests/crash/writer.py SEED DIR KIND LOG`` and ``model.py SEED KIND``).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bcolz_store

from tests.stats_check import stats_lies

from .model import (Model, acceptable_states, describe_state, make_spec, operations,
                    states_equal)

HERE = Path(__file__).resolve().parent
WRITER = HERE / "writer.py"
QUICK_KILLS = 20
CHANGED = getattr(bcolz_store.errors, "DatasetChangedError", ())
KILLS = int(os.environ.get("BCOLZ_STORE_CRASH_KILLS", QUICK_KILLS))
# Kills per kind against S3 (a writer there needs a second or two to start).
S3_KILLS = int(os.environ.get("BCOLZ_STORE_S3_CRASH_KILLS", 8))
SEED_BASE = int(os.environ.get("BCOLZ_STORE_CRASH_SEED", 1000))

try:
    import bcolz as real_bcolz
except Exception:  # pragma: no cover - the oracle is optional
    real_bcolz = None


def _env():
    env = dict(os.environ)
    # the writer uses the bcolz_store this process imported
    package_parent = str(Path(bcolz_store.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    env["BLOSC_NTHREADS"] = "1"
    return env


def read_state(obj) -> dict:
    """The state of an opened bcolz_store (or real bcolz) carray/ctable as plain values."""
    attrs = dict(obj.attrs.getall() if hasattr(obj.attrs, "getall") else obj.attrs)
    def values(col):        # vlen columns as the model's object arrays
        data = np.asarray(col[:])
        return data.astype(object) if data.dtype.kind == "T" else data
    if hasattr(obj, "names"):
        names = list(obj.names)
        return {"names": names, "cols": {n: values(obj.cols[n]) for n in names},
                "attrs": attrs}
    return {"data": values(obj), "attrs": attrs}


def has_vlen(state) -> bool:
    """Whether a state holds a column of str items of any length (bcolz cannot read it)."""
    arrays = [state["data"]] if "data" in state else list(state["cols"].values())
    return any(a.dtype == object for a in arrays)


def parse_log(path: Path):
    """(last_done, begun) from a writer log: begun is last_done + 1 when logged."""
    last_done, begun = None, None
    if not path.exists():
        return None, None
    for line in path.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            break                       # a line cut by the kill
        word, _, num = line.strip().partition(" ")
        if word == "done":
            last_done, begun = int(num), None
        elif word == "begin":
            begun = int(num)
    if begun is not None and begun != (last_done if last_done is not None else -1) + 1:
        raise AssertionError(f"{path}: log out of order (done {last_done}, begin {begun})")
    return last_done, begun


def _match(state, states) -> str | None:
    for label, expected in states:
        if states_equal(state, expected):
            return label
    return None


def _order(label: str) -> float:
    n, _, flush = label.partition("+")
    return int(n) - (0.5 if flush else 0)


class Outcome:
    """Counts over a run of kills, and the details of every failure."""

    def __init__(self, kind):
        self.kind = kind
        self.kills = self.unopenable = self.wrong = self.not_created = 0
        self.finished = self.rolled_forward = self.intermediate = 0
        self.failures = []

    def fail(self, what, seed, detail):
        if what == "unopenable":
            self.unopenable += 1
        else:
            self.wrong += 1
        self.failures.append(f"[{what}] {self.kind} seed={seed}: {detail}")

    def summary(self) -> str:
        return (f"crash {self.kind}: kills={self.kills} unopenable={self.unopenable} "
                f"wrong={self.wrong} (rolled forward {self.rolled_forward}, "
                f"flushed-before-op {self.intermediate}, writer finished {self.finished})")


def _wait_for(path: Path, text: str, proc, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and text in path.read_text():
            return True
        if proc.poll() is not None:
            return path.exists() and text in path.read_text()
        time.sleep(0.005)
    return False


def run_and_kill(cmd: list, env: dict, log: Path, rng: random.Random, max_delay: float,
                 start_timeout: float):
    """Start the writer ``cmd``, wait for its creation (``done 0`` in ``log``),
    SIGKILL it after a log-uniform delay (many kills early in a run, some
    late); ``(process, created, stderr bytes)``."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        created = _wait_for(log, "done 0\n", proc, start_timeout)
        time.sleep(math.exp(rng.uniform(math.log(0.01), math.log(max_delay))))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, created, err


def kill_once(tmp: Path, kind: str, seed: int, rng: random.Random, out: Outcome,
              max_delay: float = 1.0, url: str | None = None, options=None) -> None:
    """Run the writer of ``seed``, SIGKILL it after a random delay, check the dataset
    (in the folder ``tmp``, or under ``url`` with fsspec ``options``)."""
    root = f"{url}/{kind}-{seed}" if url else tmp / f"{kind}-{seed}"
    log = tmp / f"{kind}-{seed}.log"
    env = _env()
    if options:
        env["BCOLZ_STORE_STORAGE_OPTIONS"] = json.dumps(options)
    opened = {"storage_options": options} if options else {}
    proc, created, err = run_and_kill(
        [sys.executable, str(WRITER), str(seed), str(root), kind, str(log)], env, log, rng,
        max_delay, 30)
    out.kills += 1
    if proc.returncode not in (-signal.SIGKILL, 0):
        out.fail("wrong", seed, f"writer failed (status {proc.returncode}): "
                                f"{err.decode(errors='replace').strip()[-2000:]}")
        return
    if proc.returncode == 0:
        out.finished += 1
    if not created:
        out.not_created += 1
        return
    last_done, begun = parse_log(log)
    spec = make_spec(seed, kind)
    states = acceptable_states(spec, last_done, begun)
    where = f"last done {last_done}, begun {begun}"

    # 1. a reader first: no recovery, but a committed state, and its chunk statistics
    try:
        first = bcolz_store.open(str(root), mode="r", **opened)
        seen_r = _match(read_state(first), states)
        lies = stats_lies(first, complete=True)
    except Exception as exc:
        out.fail("unopenable", seed, f"mode 'r' ({where}): {type(exc).__name__}: {exc}")
        seen_r, lies = "error", []
    if seen_r is None:
        out.fail("wrong", seed, f"mode 'r' ({where}): state matches none of "
                                f"{[label for label, _ in states]}")
    if lies:
        out.fail("wrong", seed, f"mode 'r' ({where}): chunk statistics: {lies[:3]}")

    # 2. a writer: recovery
    try:
        obj = bcolz_store.open(str(root), mode="a", **opened)
        state = read_state(obj)
    except Exception as exc:
        out.fail("unopenable", seed, f"mode 'a' ({where}): {type(exc).__name__}: {exc}")
        return
    label = _match(state, states)
    if label is None:
        out.fail("wrong", seed, f"mode 'a' ({where}): found {describe_state(state)}; expected "
                                + " or ".join(f"{lb}: {describe_state(s)}" for lb, s in states))
        return
    if seen_r not in (None, "error") and _order(label) < _order(seen_r):
        out.fail("wrong", seed, f"mode 'r' showed commit {seen_r}, mode 'a' went back to {label}")
    if begun is not None and label == str(begun):
        out.rolled_forward += 1
    if label.endswith("+flush"):
        out.intermediate += 1
    # reopening gives the same state again, its meta/stats describing the committed data
    reopened = bcolz_store.open(str(root), mode="r", **opened)
    again = read_state(reopened)
    if not states_equal(again, state):
        out.fail("wrong", seed, f"reopening after recovery changed the state ({where})")
    lies = stats_lies(reopened, complete=True)
    if lies:
        out.fail("wrong", seed, f"chunk statistics after recovery ({where}): {lies[:3]}")

    # 3. checksums agree with the files
    if hasattr(bcolz_store, "verify"):
        report = bcolz_store.verify(str(root), **opened)
        if not report.ok:
            out.fail("wrong", seed, f"verify after recovery ({where}): missing={report.missing} "
                                    f"extra={report.extra} damaged={report.damaged}")

    # 4. the real bcolz reads the recovered dataset (it reads only local folders), or
    #    refuses it by the vlen column's name
    if real_bcolz is not None and not url and has_vlen(state):
        try:
            real_bcolz.open(str(root), mode="r")
        except TypeError as exc:
            if "vlen-str: column" not in str(exc):
                out.fail("wrong", seed, f"real bcolz fails on the vlen column with another "
                                        f"message ({where}): {exc}")
        else:
            out.fail("wrong", seed, f"real bcolz opened a dataset with a vlen column ({where})")
    elif real_bcolz is not None and not url:
        try:
            theirs = read_state(real_bcolz.open(str(root), mode="r"))
        except Exception as exc:
            out.fail("wrong", seed, f"real bcolz cannot open it ({where}): "
                                    f"{type(exc).__name__}: {exc}")
            return
        if not states_equal(theirs, state):
            out.fail("wrong", seed, f"real bcolz reads another state ({where}): "
                                    f"{describe_state(theirs)} vs {describe_state(state)}")


def run_kills(tmp: Path, kind: str, kills: int, seed_base: int = SEED_BASE,
              url: str | None = None, options=None) -> Outcome:
    out = Outcome(kind + (" on S3" if url else ""))
    rng = random.Random(seed_base * 7 + (kind == "ctable"))
    for i in range(kills):
        kill_once(tmp, kind, seed_base + i, rng, out,
                  max_delay=1.0 if kills > QUICK_KILLS else 0.6, url=url, options=options)
    return out


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_writer_without_kill_matches_model(tmp_path, kind):
    """The writer and the model agree when nothing is killed (the harness itself)."""
    for seed in (1, 2, 3):
        root, log = tmp_path / f"{kind}{seed}", tmp_path / f"{kind}{seed}.log"
        subprocess.run([sys.executable, str(WRITER), str(seed), str(root), kind, str(log), "150"],
                       env=_env(), check=True, timeout=120)
        assert log.read_text().endswith("finished\n")
        last_done, begun = parse_log(log)
        assert begun is None
        [(label, expected)] = acceptable_states(make_spec(seed, kind), last_done, None)
        assert label == str(last_done)
        state = read_state(bcolz_store.open(str(root), mode="r"))
        assert states_equal(state, expected), describe_state(state)


def test_operations_cover_every_kind_of_operation():
    names = {kind: {op.name for s in range(5) for op in operations(make_spec(s, kind), 300)}
             for kind in ("carray", "ctable")}
    assert names["carray"] == {"append", "flush", "trim", "resize", "setitem", "attrs"}
    assert names["ctable"] >= names["carray"] | {"addcol", "delcol"}


def test_kills_include_vlen_columns():
    """Among the seeds the quick runs kill, some carrays and ctables hold vlen columns."""
    for kind in ("carray", "ctable"):
        specs = [make_spec(SEED_BASE + i, kind) for i in range(QUICK_KILLS)]
        dtypes = [s.dtype for s in specs] if kind == "carray" else \
            [d for s in specs for _, d in s.columns]
        assert dtypes.count("vlen-str") >= 2, (kind, dtypes)


def test_model_is_deterministic():
    spec = make_spec(5, "ctable")
    a, b = Model(spec), Model(make_spec(5, "ctable"))
    for op_a, op_b in zip(operations(spec, 200), operations(make_spec(5, "ctable"), 200)):
        assert (op_a.name, op_a.commit) == (op_b.name, op_b.commit)
        a.apply(op_a)
        b.apply(op_b)
    assert states_equal(a.snapshot(), b.snapshot())


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_sigkill_leaves_a_committed_state(tmp_path, kind, capsys):
    out = run_kills(tmp_path, kind, KILLS)
    with capsys.disabled():
        print("\n" + out.summary())
        for line in out.failures[:20]:
            print("  " + line)
    assert out.kills == KILLS
    assert out.not_created < max(2, KILLS // 4), "the writer rarely got past creation"
    assert not out.failures, out.summary() + "\n" + "\n".join(out.failures[:10])


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_sigkill_on_s3_leaves_a_committed_state(tmp_path, kind, capsys, s3_bucket):
    """The same kills, of a writer whose dataset is on S3 (moto on 127.0.0.1)."""
    url, options = s3_bucket
    kills = S3_KILLS
    out = run_kills(tmp_path, kind, kills, url=url, options=options)
    with capsys.disabled():
        print("\n" + out.summary())
        for line in out.failures[:20]:
            print("  " + line)
    assert out.kills == kills
    assert out.not_created < max(2, kills // 3), "the writer rarely got past creation"
    assert not out.failures, out.summary() + "\n" + "\n".join(out.failures[:10])


def committed_states(spec, upto: int) -> dict:
    """``{label: state}`` for every commit 0..upto (and the flushed-before-op states)."""
    model = Model(spec)
    states = {"0": model.snapshot()}
    for op in operations(spec):
        if op.commit is not None and op.commit > upto:
            break
        if op.commit is not None and op.pending_before and op.name != "flush":
            states[f"{op.commit}+flush"] = model.snapshot()
        model.apply(op)
        if op.commit is not None:
            states[str(op.commit)] = model.snapshot()
    return states


def _closest(state, states: dict) -> str:
    """Which commits the values alone, and the attrs alone, of a wrong state match."""
    values = [label for label, st in states.items()
              if states_equal(dict(state, attrs={}), dict(st, attrs={}))]
    attrs = [label for label, st in states.items() if st["attrs"] == state["attrs"]]
    return f"values match commits {values[:8]}, attrs match commits {attrs[:8]}"


def _log_bounds(log: Path) -> tuple:
    done, begun = parse_log(log)
    return done or 0, begun if begun is not None else (done or 0)


@pytest.mark.parametrize("kind", ["carray", "ctable"])
@pytest.mark.parametrize("how", ["open", "refresh"])
def test_concurrent_reader_sees_committed_states(tmp_path, kind, how, capsys):
    """While a writer commits, every read in mode 'r' shows one committed state.

    A read that starts after commit ``lo`` was done and ends before commit
    ``hi + 1`` begins may show any state ``lo`` .. ``hi``, nothing else.  A
    reader may also refuse with DatasetChangedError when a commit lands
    between its open (or refresh) and its reads.
    """
    if how == "refresh" and not hasattr(bcolz_store.carray, "refresh"):
        pytest.skip("refresh() not available yet")
    _concurrent_reads(tmp_path, kind, how, capsys)


@pytest.mark.parametrize("kind", ["carray", "ctable"])
@pytest.mark.parametrize("how", ["open", "refresh"])
def test_concurrent_reader_on_s3_sees_committed_states(tmp_path, kind, how, capsys, s3_bucket):
    """The same, with the dataset on S3 (moto on 127.0.0.1)."""
    url, options = s3_bucket
    _concurrent_reads(tmp_path, kind, how, capsys, url, options, seconds=3.0)


def _concurrent_reads(tmp_path, kind, how, capsys, url=None, options=None, seconds=2.0):
    seed = SEED_BASE + 17
    root, log = (f"{url}/d" if url else tmp_path / "d"), tmp_path / "d.log"
    env = _env()
    if options:
        env["BCOLZ_STORE_STORAGE_OPTIONS"] = json.dumps(options)
    opened = {"storage_options": options} if options else {}
    proc = subprocess.Popen([sys.executable, str(WRITER), str(seed), str(root), kind, str(log)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    reads, errors, changed = [], [], 0
    try:
        assert _wait_for(log, "done 0\n", proc, 30), proc.stderr.read()
        reader = bcolz_store.open(str(root), mode="r", **opened) if how == "refresh" else None
        # At least ``seconds`` of reads, and on until 11 reads completed (a loaded
        # machine reads slower; refusals do not count), at most a minute.
        start = time.monotonic()
        while proc.poll() is None and time.monotonic() - start < 60 and \
                (time.monotonic() - start < seconds or len(reads) <= 10):
            lo = _log_bounds(log)[0]
            try:
                if reader is None:
                    state = read_state(bcolz_store.open(str(root), mode="r", **opened))
                else:
                    reader.refresh()
                    state = read_state(reader)
            except CHANGED:
                changed += 1            # refused to mix states: the designed answer
                continue
            except Exception as exc:
                errors.append(f"read after commit {lo}: {type(exc).__name__}: {exc}")
                continue
            reads.append((lo, _log_bounds(log)[1], state))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode(errors="replace")
    states = committed_states(make_spec(seed, kind), max(hi for _, hi, _ in reads))
    wrong = []
    for lo, hi, state in reads:
        allowed = [(label, st) for label, st in states.items() if lo <= _order(label) + 0.5
                   and _order(label) <= hi]
        if _match(state, allowed) is None:
            wrong.append(f"read between commits {lo} and {hi}: {describe_state(state)}; "
                         f"{_closest(state, states)}")
    with capsys.disabled():
        print(f"\nconcurrent {how} {kind}{' on S3' if url else ''}: reads={len(reads)} "
              f"refused (DatasetChangedError)={changed} errors={len(errors)} "
              f"wrong={len(wrong)}")
    assert not errors and not wrong, "\n".join((errors + wrong)[:10])
    assert len(reads) > 10


if __name__ == "__main__":      # python -m tests.crash.test_crash [KILLS] [KIND]
    import tempfile
    n = int(sys.argv[1]) if len(sys.argv) > 1 else KILLS
    kinds = sys.argv[2:] or ["carray", "ctable"]
    with tempfile.TemporaryDirectory() as d:
        for k in kinds:
            result = run_kills(Path(d), k, n)
            print(result.summary())
            for line in result.failures:
                print("  " + line)
