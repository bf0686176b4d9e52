"""A writer of a ctable with a sorted and a bitmap index, for the kill tests of
test_index_crash.py: ``python index_writer.py SEED ROOT``.

It appends, assigns and trims at random, flushing each change (a commit that
updates the indexes), forever; the test kills it with SIGKILL.
"""

import sys

import numpy as np


def main(seed: int, root: str) -> None:
    import bcolz_store as bcolz
    rng = np.random.default_rng(seed)
    t = bcolz.ctable([rng.integers(0, 10 ** 6, 500), rng.integers(0, 7, 500)], names=["k", "g"],
                     rootdir=root, mode="w", chunklen=64)
    t.create_index("k")
    t.create_index("g", kind="bitmap")
    print("ready", flush=True)
    while True:
        op = rng.integers(0, 4)
        if op <= 1:
            n = int(rng.integers(1, 200))
            t.append([rng.integers(0, 10 ** 6, n), rng.integers(0, 7, n)])
            t.flush()
        elif op == 2:
            pos = rng.integers(0, len(t), 5)
            t.cols["k"][pos] = rng.integers(0, 10 ** 6, 5)
        elif len(t) > 300:
            t.trim(int(rng.integers(1, 100)))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
