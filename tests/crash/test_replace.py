"""Kill a writer (SIGKILL) while it replaces a whole dataset: mode 'w' over an
existing carray or ctable, or an on-disk ``reshape``.

Each replacement is one commit, so after any kill the dataset must open (in
mode 'r', then 'a') and hold exactly the state of the last ``done k``, or of
``k + 1`` when ``begin k+1`` was logged; ``verify()`` must find nothing wrong
and the real bcolz (when importable) must read the same.  Nothing is ever left
outside the rootdir (the old ``reshape`` kept its data in a sibling
``__temp__`` folder between two steps).

``BCOLZ_STORE_CRASH_KILLS`` sets the kills per kind (CI: ``QUICK_KILLS``).
"""

from __future__ import annotations

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

from .replacer import expected
from .test_crash import _env, _wait_for, parse_log, real_bcolz

HERE = Path(__file__).resolve().parent
REPLACER = HERE / "replacer.py"
QUICK_KILLS = 8
KILLS = int(os.environ.get("BCOLZ_STORE_CRASH_KILLS", QUICK_KILLS))
KINDS = ["carray-w", "ctable-w", "kind-w", "reshape"]


def _state(obj) -> dict:
    attrs = dict(obj.attrs.getall() if hasattr(obj.attrs, "getall") else obj.attrs)
    if hasattr(obj, "names"):
        names = list(obj.names)
        return {"names": names, "cols": {n: np.asarray(obj.cols[n][:]) for n in names},
                "attrs": attrs}
    return {"data": np.asarray(obj[:]), "attrs": attrs}


def _equal(found: dict, want: dict) -> bool:
    if "data" in want:
        data = found.get("data")
        return (data is not None and data.shape == want["data"].shape
                and data.dtype == want["data"].dtype and np.array_equal(data, want["data"])
                and found["attrs"] == want.get("attrs", {}))
    return (found.get("names") == want["names"] and found["attrs"] == want["attrs"]
            and all(np.array_equal(found["cols"][n], want["cols"][n]) for n in want["names"]))


def _matches(found: dict, kind: str, done, begun) -> bool:
    """The state of the last step done, or of the step begun (created, with or
    without its attribute yet)."""
    candidates = [expected(kind, done)] if done is not None else []
    if begun is not None:
        candidates += [expected(kind, begun), expected(kind, begun, attrs=False)]
    return any(_equal(found, want) for want in candidates)


def kill_once(tmp: Path, kind: str, i: int, rng: random.Random, failures: list) -> None:
    box = tmp / f"{kind}-{i}"
    box.mkdir()
    root, log = box / "d", box / "log"
    proc = subprocess.Popen([sys.executable, str(REPLACER), kind, str(root), str(log)],
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not _wait_for(log, "done 0\n", proc, 30):
            failures.append(f"{kind} #{i}: the writer did not start: "
                            f"{proc.stderr.read().decode(errors='replace')[-500:]}")
            return
        time.sleep(math.exp(rng.uniform(math.log(0.02), math.log(1.5))))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done, begun = parse_log(log)
    where = f"{kind} #{i} (done {done}, begun {begun})"
    leftovers = sorted(p.name for p in box.iterdir() if p.name not in ("d", "log"))
    if leftovers:
        failures.append(f"[wrong] {where}: left {leftovers} beside the dataset")
    for mode in ("r", "a"):
        try:
            found = _state(bcolz_store.open(str(root), mode=mode))
        except Exception as exc:
            failures.append(f"[unopenable] {where}: mode {mode!r}: {type(exc).__name__}: {exc}")
            return
        if not _matches(found, kind, done, begun):
            failures.append(f"[wrong] {where}: mode {mode!r} shows none of the two states")
            return
    report = bcolz_store.verify(str(root))
    if not report.ok:
        failures.append(f"[wrong] {where}: verify: {report.problems()[:5]}")
    if real_bcolz is not None:
        try:
            theirs = _state(real_bcolz.open(str(root), mode="r"))
        except Exception as exc:
            failures.append(f"[wrong] {where}: the real bcolz cannot open it: {exc}")
            return
        if not _matches(theirs, kind, done, begun):
            failures.append(f"[wrong] {where}: the real bcolz reads another state")


@pytest.mark.parametrize("kind", KINDS)
def test_sigkill_during_replacement_leaves_old_or_new(tmp_path, kind, capsys):
    rng = random.Random(hash(kind) % 1000 + KILLS)
    failures = []
    for i in range(KILLS):
        kill_once(tmp_path, kind, i, rng, failures)
    unopenable = sum(f.startswith("[unopenable]") for f in failures)
    with capsys.disabled():
        print(f"\ncrash {kind}: kills={KILLS} unopenable={unopenable} "
              f"wrong={len(failures) - unopenable}")
        for line in failures[:10]:
            print("  " + line)
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("kind", KINDS)
def test_replacer_without_kill(tmp_path, kind):
    """The harness itself: each step leaves exactly ``expected(kind, k)``."""
    from .replacer import write
    root = str(tmp_path / "d")
    for k in range(4):
        write(kind, root, k)
        assert _equal(_state(bcolz_store.open(root, mode="r")), expected(kind, k)), k
        assert bcolz_store.verify(root).ok
    assert sorted(os.listdir(tmp_path)) == ["d"]
