"""Kill a writer of a ctable holding every column kind with SIGKILL at random
moments (``kinds_writer.py``: Arrow appends and trims, each committed); the
ctable must then hold exactly the rows of a committed step, read in mode 'r'
(no recovery) and in mode 'a' (recovery), ``verify`` must find nothing wrong,
and a writer must go on appending.  ``BCOLZ_STORE_CRASH_KILLS`` sets the
number of kills (default 10)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import bcolz_store
from bcolz_store.testing.kinds import arrow_equal

from . import kinds_writer as W
from .test_crash import _env, parse_log, run_and_kill

pa = pytest.importorskip("pyarrow")

WRITER = Path(__file__).resolve().parent / "kinds_writer.py"
KILLS = min(int(os.environ.get("BCOLZ_STORE_CRASH_KILLS", 10)), 200)


def _holds(t, table, rows) -> bool:
    got = pa.table(t)
    want = table.take(pa.array(rows, pa.int64()))
    return len(got) == len(rows) and got.column_names == want.column_names and all(
        arrow_equal(got.column(name), want.column(name)) for name in want.column_names)


def _state(t, table, candidates: dict) -> str | None:
    for label, rows in candidates.items():
        if _holds(t, table, rows):
            return label
    return None


def test_the_writer_without_a_kill_holds_the_last_step(tmp_path):
    root, log = tmp_path / "t", tmp_path / "t.log"
    subprocess.run([sys.executable, str(WRITER), "3", str(root), str(log), "9"], env=_env(),
                   check=True, timeout=120)
    assert log.read_text().endswith("done 9\nfinished\n")
    assert parse_log(log) == (9, None)
    t = bcolz_store.open(str(root), mode="r")
    assert _holds(t, W.source(3), W.rows_after(9))
    assert not _holds(t, W.source(3), W.rows_after(8))      # (the check can fail)


@pytest.mark.parametrize("seed", range(KILLS))
def test_sigkill_leaves_a_committed_step(tmp_path, seed):
    rng = random.Random(seed)
    root, log = tmp_path / "t", tmp_path / "t.log"
    proc, created, err = run_and_kill([sys.executable, str(WRITER), str(seed), str(root),
                                       str(log)], _env(), log, rng, 1.5, 60)
    assert proc.returncode in (-signal.SIGKILL, 0), err.decode(errors="replace")[-2000:]
    if not created:
        pytest.skip("killed before the creation was committed")
    last_done, begun = parse_log(log)
    table = W.source(seed)
    candidates = {str(last_done): W.rows_after(last_done)}
    if begun is not None:
        candidates[str(begun)] = W.rows_after(begun)
    where = f"last done {last_done}, begun {begun}"
    seen_r = _state(bcolz_store.open(str(root), mode="r"), table, candidates)
    assert seen_r is not None, f"mode 'r' ({where}): no committed step"
    t = bcolz_store.open(str(root), mode="a")
    seen_a = _state(t, table, candidates)
    assert seen_a is not None, f"mode 'a' ({where}): no committed step"
    assert int(seen_a) >= int(seen_r), where
    assert bcolz_store.verify(str(root)).ok, where
    # a writer goes on: the next rows land after the committed ones
    rows = W.rows_after(int(seen_a))
    t.append(table.slice(2900, 50))
    t.flush()
    assert _holds(bcolz_store.open(str(root), mode="r"), table, rows + list(range(2900, 2950)))



