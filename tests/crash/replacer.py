"""Crash-test writer for operations that replace a whole dataset.

Usage::

    python replacer.py KIND ROOTDIR LOG

KIND is ``carray-w`` (``carray(..., mode='w')`` over the existing carray),
``ctable-w`` (``ctable(..., mode='w')`` over the existing table, whose columns
change from one replacement to the next), ``kind-w`` (a carray and a ctable
replacing each other) or ``reshape`` (``carray.reshape`` on disk).  Step 0
creates the dataset; every step k >= 1 replaces it with :func:`expected`
(k), writing ``begin k`` and ``done k`` (flushed and fsynced) around it, until
the process is killed.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import bcolz_store

RESHAPES = [(840,), (420, 2), (120, 7), (30, 28), (840,), (8, 105)]


def expected(kind: str, k: int, attrs: bool = True) -> dict:
    """The state after step ``k``: ``{"data": ndarray}`` or ``{"cols": {...}}``, with attrs.

    A replacement is two commits: the creation (no attrs yet, ``attrs=False``),
    then setting the attribute.
    """
    if kind == "reshape":
        return {"data": np.arange(840, dtype="i8").reshape(RESHAPES[k % len(RESHAPES)])}
    n = 500 + 97 * (k % 13)
    given = {"k": k} if attrs else {}
    if kind == "carray-w" or (kind == "kind-w" and k % 2 == 0):
        dtype = "f8" if k % 2 else "i4"
        return {"data": (np.arange(n) * (k + 1)).astype(dtype), "attrs": given}
    names = ["a", "b"] if k % 3 else ["x", "a", "c"]
    cols = {name: np.arange(n) * (i + 1) + k for i, name in enumerate(names)}
    return {"names": names, "cols": cols, "attrs": given}


def write(kind: str, root: str, k: int):
    state = expected(kind, k)
    if kind == "reshape":
        if k == 0:
            return bcolz_store.carray(state["data"], rootdir=root, mode="w", chunklen=50)
        return bcolz_store.open(root, mode="a").reshape(state["data"].shape)
    if "data" in state:
        obj = bcolz_store.carray(state["data"], rootdir=root, mode="w", chunklen=64)
    else:
        obj = bcolz_store.ctable([state["cols"][n] for n in state["names"]],
                                 names=state["names"], rootdir=root, mode="w", chunklen=64)
    obj.attrs["k"] = k
    return obj


def main(argv) -> int:
    kind, root, logpath = argv[:3]
    with open(logpath, "a", buffering=1) as log:
        def mark(line):
            log.write(line + "\n")
            log.flush()
            os.fsync(log.fileno())
        for k in range(10**6):
            mark(f"begin {k}")
            write(kind, root, k)
            mark(f"done {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
