"""Crash-test writer: apply the seeded operations of ``model.py`` to a dataset.

Usage::

    python writer.py SEED ROOTDIR KIND LOG [MAX_OPS]

ROOTDIR may be a URL (``s3://bucket/x``): its fsspec options come from the
environment variable ``BCOLZ_STORE_STORAGE_OPTIONS`` (JSON).

Creates a carray or ctable (KIND) at ROOTDIR and applies the operations of
:func:`model.operations` one by one until it is killed or MAX_OPS is reached.
Around every committing operation it writes ``begin N`` and ``done N`` to LOG
(each line flushed and fsync'ed before going on), so whoever kills the process
knows which commits finished.  Commit 0 is the creation.  The last line is
``finished`` when every operation ran.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model import make_spec, operations  # noqa: E402

import bcolz_store  # noqa: E402


class Log:
    """Append-only, line-buffered, fsync'ed log of commit boundaries."""

    def __init__(self, path):
        self.fh = open(path, "a", buffering=1)

    def mark(self, line: str) -> None:
        self.fh.write(line + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())


# A URL rootdir (s3://...) takes its fsspec options from this variable (JSON).
OPTIONS = json.loads(os.environ.get("BCOLZ_STORE_STORAGE_OPTIONS") or "null")


# Columns of str items of any length, None allowed (the model's object arrays).
VLEN = bcolz_store.vlen("str", nullable=True)


def column(values, chunklen=None):
    """``values`` as they are, or as a vlen carray when they are the model's strings."""
    if values.dtype == object:
        return bcolz_store.carray(values, dtype=VLEN, chunklen=chunklen)
    return values


def create(spec, rootdir):
    extra = {"storage_options": OPTIONS} if OPTIONS else {}
    if spec.kind == "carray":
        vlen = {"dtype": VLEN} if spec.initial.dtype == object else {}
        return bcolz_store.carray(spec.initial, rootdir=rootdir, mode="w",
                                  chunklen=spec.chunklen, dflt=spec.dflt, **vlen, **extra)
    names = [name for name, _ in spec.columns]
    return bcolz_store.ctable([column(spec.initial[n], spec.chunklen) for n in names],
                              names=names, rootdir=rootdir, mode="w", chunklen=spec.chunklen,
                              auto_flush=spec.auto_flush, **extra)


def _rows(obj, values: dict, scalar: bool):
    """The structured rows (or one record) of ``values`` for ctable ``obj``."""
    n = 1 if scalar else len(next(iter(values.values())))
    rows = np.empty(n, dtype=obj.dtype)
    for name in obj.names:
        rows[name] = values[name]
    return rows[0] if scalar else rows


def apply(obj, op) -> None:
    a = op.args
    ctable = isinstance(obj, bcolz_store.ctable)
    if op.name == "append":
        if ctable:
            obj.append([a["values"][n] for n in obj.names])
        else:
            obj.append(a["values"])
    elif op.name == "flush":
        obj.flush()
    elif op.name == "trim":
        obj.trim(a["n"])
    elif op.name == "resize":
        obj.resize(a["n"])
    elif op.name == "setitem":
        key = a["key"]
        if ctable:
            obj[key] = _rows(obj, a["values"], isinstance(key, int))
        else:
            obj[key] = a["values"]
    elif op.name == "attrs":
        obj.attrs[a["key"]] = a["value"]
    elif op.name == "addcol":
        vlen = {"dtype": VLEN} if a["values"].dtype == object else {}
        obj.addcol(a["values"], name=a["name"], pos=a["pos"], **vlen)
    elif op.name == "delcol":
        obj.delcol(a["name"])
    else:
        raise ValueError(f"unknown operation {op.name}")


def main(argv) -> int:
    seed, rootdir, kind, logpath = int(argv[0]), argv[1], argv[2], argv[3]
    max_ops = int(argv[4]) if len(argv) > 4 else 10**6
    spec = make_spec(seed, kind)
    log = Log(logpath)
    log.mark("begin 0")
    obj = create(spec, rootdir)
    log.mark("done 0")
    for op in operations(spec, max_ops):
        if op.commit is None:
            apply(obj, op)
            continue
        log.mark(f"begin {op.commit}")
        apply(obj, op)
        log.mark(f"done {op.commit}")
    log.mark("finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
