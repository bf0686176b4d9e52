"""On-disk size and full-read time of a column of strings, stored each way.

Run ``python -m benchmarks.vlen_columns`` (``--quick`` for a smoke run,
``--out FILE.json`` to keep the figures).  Three workloads:

* ``words``: ``--n`` strings (default 1,000,000) of ASCII words (a
  vocabulary of 5,000 made-up words, Zipf-distributed), cut to a random
  length of 0..200 characters;
* ``words-utf8``: the same from a vocabulary with accented Latin, Greek,
  Cyrillic and CJK letters (lengths 0..200 characters, 1-3 bytes each);
* ``tickers``: ``--ntickers`` strings (default 10,000,000) drawn from 6,000
  tickers of 1..5 uppercase letters, Zipf-distributed (as tick data repeats
  the busy symbols).

Each is written, then read back whole (``[:]``) by a fresh open, ``--repeat``
times (best kept), every contender in turn so that all see the same machine
load; the files are in the page cache (just written).  Sizes are the bytes
of every file written.  Contenders:

* ``bcolz_store vlen``: a vlen column (zstd level 3, chunks of about 1 MiB
  of items); reads give a numpy ``StringDType`` array;
* ``... + dictionary`` and ``... chunklen 4096``: a trained zstd dictionary,
  and small chunks, with and without one (where a dictionary pays);
* ``bcolz_store category`` (tickers): codes plus categories;
* ``bcolz U (padded)``: the real bcolz (bcolz-zipline) with a fixed-width
  ``U`` column as wide as the longest string, its default cparams (bcolz's
  way for text); bcolz_store's own U carray when bcolz is not installed;
* ``bcolz object``: the real bcolz's object carray (one pickle per item, one
  file per item) on ``--nobject`` items (default 100,000), the size and time
  scaled to the workload's length (marked ``*``);
* ``zarr vlen-utf8``: zarr-python 3, ``dtype=str`` (vlen-utf8 then zstd at
  zarr's default level), chunks of the same number of items as bcolz_store's;
  reads give ``StringDType``;
* ``blosc2 vlstring`` and ``blosc2 utf8``: a blosc2 ``CTable`` column of
  each of blosc2's variable-length string types (``vlstring`` reads give a
  list of str, ``utf8`` a ``StringDType`` array).

Every read is checked against the data once, outside the timed runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

import bcolz_store

MB = 1e6
STRING = np.dtypes.StringDType()


# --------------------------------------------------------------------------- data

def _vocabulary(rng, n: int, alphabet: list) -> np.ndarray:
    lengths = rng.integers(2, 11, n)
    return np.array(["".join(rng.choice(alphabet, k)) for k in lengths], dtype=STRING)


def words(n: int, utf8: bool = False, seed: int = 0) -> np.ndarray:
    """``n`` strings of Zipf-distributed words joined by spaces, 0..200 characters."""
    rng = np.random.default_rng(seed)
    alphabet = list("etaoinshrdlucmfwypvbgkjqxz")
    if utf8:
        alphabet += list("éèàüößçñøåœ") + list("αβγδεζηθλμπσω") + list("абвгдежзик") + \
            list("日本語中文字漢")
    vocab = _vocabulary(rng, 5000, alphabet).tolist()
    lengths = rng.integers(0, 201, n)
    nwords = lengths // 5 + 1                      # words average 6.5 letters and a space
    ranks = (np.minimum(rng.zipf(1.15, size=int(nwords.sum())), len(vocab)) - 1).tolist()
    bounds = np.concatenate(([0], np.cumsum(nwords))).tolist()
    out = [" ".join(map(vocab.__getitem__, ranks[a:b]))[:k]
           for a, b, k in zip(bounds[:-1], bounds[1:], lengths.tolist())]
    return np.array(out, dtype=STRING)


def tickers(n: int, seed: int = 1) -> np.ndarray:
    """``n`` tickers of 1..5 uppercase letters from 6,000 symbols, Zipf-distributed."""
    rng = np.random.default_rng(seed)
    letters = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    symbols = set()
    while len(symbols) < 6000:
        symbols.add("".join(rng.choice(letters, int(rng.integers(1, 6)))))
    symbols = np.array(sorted(symbols), dtype=STRING)
    rng.shuffle(symbols)
    ranks = np.minimum(rng.zipf(1.2, size=n), len(symbols)) - 1
    return symbols[ranks]


# --------------------------------------------------------------------------- contenders

def folder_bytes(path: str) -> int:
    """Bytes of every file under ``path`` (or of the file itself)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for folder, _dirs, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total


def _ours(dtype, chunklen=None):
    def write(data, path):
        c = bcolz_store.carray(data, dtype=dtype, rootdir=path, mode="w", chunklen=chunklen)
        c.flush()
        return c.chunklen

    def read(path):
        return bcolz_store.open(path, mode="r")[:]
    return write, read


def _bcolz_fixed():
    try:
        import bcolz
    except ImportError:                         # bcolz_store writes the same bytes
        bcolz = bcolz_store

    def write(data, path):
        width = max(int(np.strings.str_len(data).max(initial=1)), 1)
        bcolz.carray(data.astype(f"U{width}"), rootdir=path, mode="w").flush()

    def read(path):
        return bcolz.open(path, mode="r")[:]
    return write, read


def _bcolz_object():
    import bcolz

    def write(data, path):
        bcolz.carray(data.astype(object), rootdir=path, mode="w").flush()

    def read(path):
        return bcolz.open(path, mode="r")[:]
    return write, read


def _zarr(chunklen_of):
    import zarr

    def write(data, path):
        a = zarr.create_array(path, shape=data.shape, dtype=str, chunks=(chunklen_of(),),
                              overwrite=True)
        a[:] = data

    def read(path):
        return zarr.open_array(path, mode="r")[:]
    return write, read


def _blosc2(kind):
    import dataclasses

    import blosc2

    field = blosc2.vlstring() if kind == "vlstring" else blosc2.utf8()
    row = dataclasses.make_dataclass("Row", [("s", str, blosc2.field(field))])

    def write(data, path):
        t = blosc2.CTable(row, urlpath=path, mode="w", expected_size=len(data))
        t.extend({"s": data.tolist() if kind == "vlstring" else data})
        t.close()

    def read(path):
        return blosc2.CTable.open(path, mode="r")["s"][:]
    return write, read


def contenders(workload: str, with_bcolz: bool, quick: bool):
    """``[(label, (write, read), items)]``; ``items`` None for the whole workload."""
    chunklen = {}
    ours_write, ours_read = _ours("vlen-str")

    def remember(data, path):
        chunklen["value"] = ours_write(data, path)
    out = [("bcolz_store vlen", (remember, ours_read), None)]
    if workload == "tickers":
        out += [("bcolz_store vlen + dictionary",
                 _ours(bcolz_store.vlen(dictionary=True)), None),
                ("bcolz_store vlen, chunklen 4096", _ours("vlen-str", 4096), None),
                ("bcolz_store vlen + dictionary, chunklen 4096",
                 _ours(bcolz_store.vlen(dictionary=True), 4096), None),
                ("bcolz_store category", _ours(bcolz_store.category()), None)]
    else:
        out += [("bcolz_store vlen + dictionary",
                 _ours(bcolz_store.vlen(dictionary=True)), None)]
    out.append(("bcolz U (padded)", _bcolz_fixed(), None))
    if with_bcolz:
        out.append(("bcolz object (pickles) *", _bcolz_object(), "object"))
    out.append(("zarr vlen-utf8", _zarr(lambda: chunklen.get("value", 65536)), None))
    out.append(("blosc2 vlstring", _blosc2("vlstring"), None))
    out.append(("blosc2 utf8", _blosc2("utf8"), None))
    return out


# --------------------------------------------------------------------------- run

def _same(got, data) -> bool:
    got = got.tolist() if hasattr(got, "tolist") else list(got)
    return got == data.tolist()


def run_workload(name: str, data: np.ndarray, nobject: int, repeat: int, base: str,
                 with_bcolz: bool, quick: bool, log) -> list:
    rows = []
    items = len(data)
    nbytes = int(sum(len(s.encode()) for s in data[:200000].tolist()) * items /
                 min(items, 200000))
    entries = contenders(name, with_bcolz, quick)
    state = {}
    for label, (write, read), subset in entries:
        part = data[:nobject] if subset == "object" else data
        path = os.path.join(base, f"{name}-{len(state)}")
        gc.collect()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write(part, path)
        state[label] = {"path": path, "write_s": time.perf_counter() - t0, "read_s": [],
                        "scale": items / len(part), "size": folder_bytes(path),
                        "read": read, "part": part}
        log(f"  wrote {label:45s} {state[label]['size'] / MB:9.2f} MB "
            f"in {state[label]['write_s']:.2f} s")
    for label, entry in state.items():
        if not _same(entry["read"](entry["path"]), entry["part"]):
            raise AssertionError(f"{name}: {label} read back other data")
    for _ in range(repeat):                     # interleaved: every contender, each round
        for label, entry in state.items():
            gc.collect()
            t0 = time.perf_counter()
            got = entry["read"](entry["path"])
            entry["read_s"].append(time.perf_counter() - t0)
            del got
    for label, entry in state.items():
        scale = entry["scale"]
        rows.append({"workload": name, "items": items, "item_bytes": nbytes,
                     "contender": label, "measured_items": len(entry["part"]),
                     "size_bytes": int(entry["size"] * scale),
                     "read_s": min(entry["read_s"]) * scale,
                     "write_s": entry["write_s"] * scale})
        shutil.rmtree(entry["path"], ignore_errors=True)
    return rows


def table(rows: list) -> str:
    """The results as a Markdown table (one block per workload)."""
    out = []
    for name in dict.fromkeys(r["workload"] for r in rows):
        group = [r for r in rows if r["workload"] == name]
        first = group[0]
        out.append(f"\n**{name}**: {first['items']:,} strings, {first['item_bytes'] / MB:.1f} MB "
                   f"of UTF-8\n")
        out.append("| contender | on disk (MB) | vs vlen | full read (s) | vs vlen | write (s) |")
        out.append("|---|---:|---:|---:|---:|---:|")
        base = group[0]
        for r in group:
            out.append(f"| {r['contender']} | {r['size_bytes'] / MB:.2f} | "
                       f"{r['size_bytes'] / base['size_bytes']:.2f} | {r['read_s']:.3f} | "
                       f"{r['read_s'] / base['read_s']:.2f} | {r['write_s']:.2f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vlen_columns",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--ntickers", type=int, default=10_000_000)
    parser.add_argument("--nobject", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--only", choices=("words", "words-utf8", "tickers"))
    parser.add_argument("--out", help="write the figures to this JSON file")
    parser.add_argument("--dir", help="where to write the data (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.ntickers, args.nobject, args.repeat = 20_000, 100_000, 2_000, 1
    try:
        import bcolz  # noqa: F401
        with_bcolz = True
    except ImportError:
        with_bcolz = False
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    base = tempfile.mkdtemp(prefix="vlen-bench-", dir=args.dir)
    rows = []
    try:
        for name in ("words", "words-utf8", "tickers"):
            if args.only and name != args.only:
                continue
            log(f"{name}: making the data")
            data = tickers(args.ntickers) if name == "tickers" else \
                words(args.n, utf8=name == "words-utf8")
            rows += run_workload(name, data, min(args.nobject, len(data)), args.repeat, base,
                                 with_bcolz, args.quick, log)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(table(rows))
    if args.out:
        meta = {"argv": sys.argv[1:], "numpy": np.__version__, "cpus": os.cpu_count()}
        with open(args.out, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
