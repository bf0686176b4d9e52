"""Timing of the vlen chunk codec against numcodecs' VLenUTF8 + Zstd (zarr's ``vlen-utf8``).

Run ``python -m benchmarks.vlen_codec`` (or ``--quick`` for a smoke run).  Two
workloads of ``str`` items, cut into chunks of ``--chunklen`` items:

* ``random``: ``--n`` strings (default 1,000,000) of random ASCII letters,
  each 0..200 characters long;
* ``tickers``: ``--ntickers`` strings (default 10,000,000) of 1..5 uppercase
  letters.

For each codec it reports the compressed size and the encode and decode
throughput in MB/s of item bytes (UTF-8), the best of ``--repeat`` runs, with
the codecs' runs interleaved so that both see the same machine load:

* ``bcolz_store vlen``: :func:`bcolz_store.kinds.vlen.chunk.encode_chunk` from a
  list of str; :func:`~bcolz_store.kinds.vlen.chunk.decode_chunk` to a numpy
  ``StringDType`` array;
* ``numcodecs``: ``VLenUTF8`` then ``Zstd`` at the same level, from an object
  array (built before the clock starts) back to an object array;
* ``numcodecs -> StringDType``: the same decode followed by
  ``astype(StringDType())``: zarr-python 3 returns that for a ``vlen-utf8``
  array on numpy 2 (``VLenUTF8Codec._decode_single`` in
  ``src/zarr/codecs/vlen_utf8.py`` casts numcodecs' object array with
  ``cast_to_string_dtype``), so this row is the fair comparison for a read.

numcodecs is optional (``pip install numcodecs``); without it only bcolz_store
is timed.  Every decoded chunk is checked against the input once, outside the
timed runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from bcolz_store.kinds.vlen.chunk import decode_chunk, encode_chunk

try:
    import numcodecs
except ImportError:  # optional comparison
    numcodecs = None

MB = 1e6


def random_strings(n: int, seed: int = 0) -> list:
    """``n`` strings of random ASCII letters, lengths uniform in 0..200."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 201, n)
    ends = np.cumsum(lengths)
    letters = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", np.uint8)
    text = letters[rng.integers(0, letters.size, int(ends[-1]) if n else 0)].tobytes().decode()
    starts = (ends - lengths).tolist()
    return list(map(text.__getitem__, map(slice, starts, ends.tolist())))


def tickers(n: int, seed: int = 1) -> list:
    """``n`` strings of 1..5 uppercase letters."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(65, 91, (n, 5), dtype=np.uint8)
    codes[np.arange(5) >= rng.integers(1, 6, n)[:, None]] = 0
    return codes.view("S5").ravel().astype("U5").tolist()


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


class Ours:
    name = "bcolz_store vlen"

    def __init__(self, level):
        self.level = level

    def prepare(self, parts):
        return parts

    def encode(self, parts):
        return [encode_chunk(p, "str", level=self.level) for p in parts]

    def decode(self, chunks):
        return [decode_chunk(c, "str") for c in chunks]


class Numcodecs:
    name = "numcodecs VLenUTF8+Zstd"

    def __init__(self, level, to_stringdtype=False):
        self.vlen = numcodecs.VLenUTF8()
        self.zstd = numcodecs.Zstd(level=level)
        self.to_stringdtype = to_stringdtype
        if to_stringdtype:
            self.name = "numcodecs -> StringDType"

    def prepare(self, parts):
        out = []
        for p in parts:
            arr = np.empty(len(p), dtype=object)
            arr[:] = p
            out.append(arr)
        return out

    def encode(self, parts):
        return [self.zstd.encode(self.vlen.encode(p)) for p in parts]

    def decode(self, chunks):
        out = [self.vlen.decode(self.zstd.decode(c)) for c in chunks]
        if self.to_stringdtype:
            out = [a.astype(np.dtypes.StringDType()) for a in out]
        return out


def run_workload(name, items, codecs, chunklen, repeat):
    """Rows of results for one workload."""
    nbytes = len("".join(items).encode("utf-8"))
    step = chunklen or max(len(items), 1)
    parts = [items[i:i + step] for i in range(0, len(items), step)]
    inputs = [c.prepare(parts) for c in codecs]
    encoded = [c.encode(x) for c, x in zip(codecs, inputs)]
    for c, chunks in zip(codecs, encoded):  # check once, untimed
        got = [x for arr in c.decode(chunks) for x in arr.tolist()]
        if got != items:
            raise AssertionError(f"{c.name} did not round-trip the {name} workload")
    enc_t = [float("inf")] * len(codecs)
    dec_t = [float("inf")] * len(codecs)
    for _ in range(repeat):  # interleaved: every codec sees the same load
        for i, (c, x, chunks) in enumerate(zip(codecs, inputs, encoded)):
            enc_t[i] = min(enc_t[i], _best(lambda: c.encode(x), 1))
            dec_t[i] = min(dec_t[i], _best(lambda: c.decode(chunks), 1))
    rows = []
    for c, chunks, te, td in zip(codecs, encoded, enc_t, dec_t):
        cbytes = sum(map(len, chunks))
        rows.append(dict(workload=name, codec=c.name, nitems=len(items), chunklen=step,
                         raw_mb=nbytes / MB, compressed_mb=cbytes / MB,
                         ratio=nbytes / cbytes if cbytes else 0.0,
                         encode_s=te, decode_s=td,
                         encode_mb_s=nbytes / MB / te, decode_mb_s=nbytes / MB / td))
    return rows


def print_rows(rows):
    head = (f"{'workload':<9} {'codec':<26} {'items':>10} {'raw MB':>8} {'comp MB':>8} "
            f"{'ratio':>6} {'enc s':>7} {'enc MB/s':>9} {'dec s':>7} {'dec MB/s':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['workload']:<9} {r['codec']:<26} {r['nitems']:>10,} {r['raw_mb']:>8.1f} "
              f"{r['compressed_mb']:>8.2f} {r['ratio']:>6.2f} {r['encode_s']:>7.3f} "
              f"{r['encode_mb_s']:>9.1f} {r['decode_s']:>7.3f} {r['decode_mb_s']:>9.1f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="random strings (0..200 chars)")
    parser.add_argument("--ntickers", type=int, default=10_000_000, help="1..5 letter tickers")
    parser.add_argument("--chunklen", type=int, default=100_000,
                        help="items per chunk; 0 for one chunk per workload")
    parser.add_argument("--level", type=int, default=3, help="zstd level for every codec")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; the best counts")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, one run (a smoke test, not a measurement)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.ntickers, args.repeat = 20_000, 200_000, 1
    codecs = [Ours(args.level)]
    if numcodecs is not None:
        codecs += [Numcodecs(args.level), Numcodecs(args.level, to_stringdtype=True)]
    else:
        print("numcodecs is not installed: timing bcolz_store only", file=sys.stderr)
    print(f"numpy {np.__version__}, numcodecs "
          f"{numcodecs.__version__ if numcodecs else '-'}, zstd level {args.level}, "
          f"chunklen {args.chunklen or 'all'}, best of {args.repeat}")
    rows = run_workload("random", random_strings(args.n), codecs, args.chunklen, args.repeat)
    rows += run_workload("tickers", tickers(args.ntickers), codecs, args.chunklen, args.repeat)
    print_rows(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
