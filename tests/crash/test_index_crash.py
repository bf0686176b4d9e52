"""Kill a writer of an indexed table with SIGKILL at random moments: the
recovered table's indexes describe exactly its committed items (they are
part of the same commits), and queries through them equal the scan."""

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
from bcolz_store.carray_index import usable_index

WRITER = Path(__file__).resolve().parent / "index_writer.py"
KILLS = int(os.environ.get("BCOLZ_STORE_CRASH_KILLS", 6))


def _env():
    env = dict(os.environ)
    parent = str(Path(bcolz_store.__file__).resolve().parents[1])
    env["PYTHONPATH"] = parent + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("seed", range(KILLS))
def test_indexes_survive_kill_minus_nine(tmp_path, seed):
    root = str(tmp_path / "t")
    proc = subprocess.Popen([sys.executable, str(WRITER), str(seed), root], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ready", proc.stderr.read()
        time.sleep(random.Random(seed).uniform(0.05, 0.8))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    for mode in ("r", "a"):          # as it is, then recovered by a writer
        t = bcolz_store.open(root, mode=mode)
        assert t.indexes == {"k": "sorted", "g": "bitmap"}
        k, g = t.cols["k"][:], t.cols["g"][:]
        for col, values, probes in (("k", k, k[::97][:8]), ("g", g, range(7))):
            index = usable_index(t.cols[col])
            assert index is not None and index.length == len(t)
            for v in probes:
                np.testing.assert_array_equal(index.lookup("==", int(v)),
                                              np.flatnonzero(values == v))
        with bcolz_store.defaults_ctx(query_planning=False):
            scan = t.fetchwhere("(g == 3) & (k < 500000)", out_flavor="numpy")
        np.testing.assert_array_equal(
            t.fetchwhere("(g == 3) & (k < 500000)", out_flavor="numpy"), scan)
    report = bcolz_store.verify(root)
    assert report.ok, report
