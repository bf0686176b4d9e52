"""Crash-test writer for the column kinds: a ctable of every kind, grown and
trimmed step by step until it is killed.

Usage::

    python kinds_writer.py SEED ROOTDIR LOG [MAX_STEPS]

Step 0 creates the ctable from the first rows of :func:`source`; every step
k >= 1 appends the next rows as Arrow, or trims rows from the end (every
fourth step), and commits.  Around every step it writes ``begin k`` and
``done k`` to LOG (flushed and fsync'ed), so whoever kills it knows which
commits finished; ``finished`` when every step ran.  :func:`rows_after`
gives the source rows the ctable holds after step k.
"""

from __future__ import annotations

import decimal
import os
import sys
import uuid

import numpy as np

FIRST, GROW, CUT = 40, 31, 9
N = 3000


def source(seed: int):
    """A pyarrow Table of ``N`` rows: text, a categorical, nullable int64,
    decimal, list, struct, map, fixed-size binary, UUID (pyarrow >= 18) and
    float64 columns, nulls among them."""
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    null = rng.random((10, N)) < 0.15
    ints = rng.integers(-1000, 1000, N)
    words = ["w" * int(k) + "é" * int(k % 3 == 1) for k in rng.integers(0, 12, N)]

    def nulled(values, i):
        return [None if null[i, j] else v for j, v in enumerate(values)]

    columns = {
        "s": pa.array(nulled(words, 0), pa.string()),
        "c": pa.array(nulled(["sym%d" % (v % 17) for v in ints], 1)).dictionary_encode(),
        "n": pa.array(nulled(ints.tolist(), 2), pa.int64()),
        "d": pa.array(nulled([decimal.Decimal(int(v)).scaleb(-2) for v in ints], 3),
                      pa.decimal128(9, 2)),
        "l": pa.array(nulled([list(range(int(v) % 5)) for v in ints], 4), pa.list_(pa.int32())),
        "st": pa.array(nulled([{"a": int(v), "b": w} for v, w in zip(ints, words)], 5),
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "m": pa.array(nulled([[(w, int(v))] for v, w in zip(ints, words)], 6),
                      pa.map_(pa.string(), pa.int64())),
        "fb": pa.array(nulled([int(v % 65536).to_bytes(4, "little") for v in ints], 7),
                       pa.binary(4)),
        "f": pa.array(np.arange(N, dtype=np.float64) / 8),
    }
    if hasattr(pa, "uuid"):
        columns["u"] = pa.array(nulled([uuid.UUID(int=int(v) % (1 << 64)) for v in ints], 8),
                                pa.uuid())
    return pa.table(columns)


def steps(max_steps: int = 10 ** 6):
    """Yield ``(k, op, argument)``: ``("append", (start, stop))`` of source rows
    or ``("trim", nrows)``, for k = 1, 2, ... while the source lasts."""
    cursor = FIRST
    for k in range(1, max_steps + 1):
        if k % 4 == 0:
            yield k, "trim", CUT
        else:
            if cursor + GROW > N:
                return
            yield k, "append", (cursor, cursor + GROW)
            cursor += GROW


def rows_after(k: int) -> list:
    """The source row numbers the ctable holds after step ``k``."""
    rows = list(range(FIRST))
    for step, op, arg in steps(k):
        if op == "append":
            rows.extend(range(*arg))
        else:
            del rows[len(rows) - arg:]
    return rows


def main(argv) -> int:
    import bcolz_store
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from writer import Log     # (the crash writer's fsync'ed log of commit boundaries)
    seed, root, log = int(argv[1]), argv[2], Log(argv[3])
    max_steps = int(argv[4]) if len(argv) > 4 else 10 ** 6
    table = source(seed)
    log.mark("begin 0")
    t = bcolz_store.ctable(table.slice(0, FIRST), rootdir=root, mode="w", chunklen=64)
    t.flush()
    log.mark("done 0")
    for k, op, arg in steps(max_steps):
        log.mark(f"begin {k}")
        if op == "append":
            t.append(table.slice(arg[0], arg[1] - arg[0]))
        else:
            t.trim(arg)
        t.flush()
        log.mark(f"done {k}")
    log.mark("finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
