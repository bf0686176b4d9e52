"""bcolz_store against zarr v3 on S3: a moto server on 127.0.0.1, the same data.

``python -m benchmarks.remote`` starts ``moto.server`` on a free loopback port
(never any other address), writes one float64 array with each library, both
through s3fs (bcolz_store's FsspecStore, zarr's ``FsspecStore``) with the same
chunks and Blosc codec, and times, best of ``--repeats``:

* ``read``: the whole array;
* ``slices``: ``--nslices`` random slices of ``--slice-len`` elements from a
  freshly opened array (no chunk cached beforehand);
* ``points``: ``--npoints`` random single-item reads (``a[i]``), all on one
  freshly opened array (as ``slices``);
* ``open12``: opening a 12-column table (a ctable; a zarr group of 12 arrays,
  opened array by array, with and without zarr's consolidated metadata);
* ``append``: appending ``--append-len`` elements and making them durable
  (``append`` + ``flush``; zarr's ``Array.append``).

Requests are counted by the server itself (moto's request recorder), in a
separate untimed run of each operation, so counting costs no time; so are
the bytes fetched: the bodies of the GET answers, from each recorded
request's ``Range`` and the size of the object it asked for (none for an
object missing after the operation: a 404, or one it deleted).  Results
go to ``benchmarks/results/remote.json`` and are printed as a Markdown table.
moto serves from one Python process, so absolute times measure moto as much
as the clients; the request counts and the ratios are what carry over.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "remote.json")
BUCKET = "bench"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MotoServer:
    """``python -m moto.server`` on 127.0.0.1, with its request recorder."""

    def __init__(self):
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # moto's recorder writes its log to MOTO_RECORDER_FILEPATH (default: a file in the
        # working directory); keep it in a temporary folder of its own.
        self._tmp = tempfile.TemporaryDirectory(prefix="bcolz-store-moto-")
        env = dict(os.environ, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                   MOTO_RECORDER_FILEPATH=os.path.join(self._tmp.name, "recording"))
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                      "-p", str(self.port)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise SystemExit("the moto server did not start") from None
                time.sleep(0.1)
        self.options = {"key": "bench", "secret": "bench", "use_listings_cache": False,
                        "client_kwargs": {"endpoint_url": self.endpoint,
                                          "region_name": "eu-west-1"}}

    def _post(self, path: str) -> bytes:
        request = urllib.request.Request(self.endpoint + path, data=b"", method="POST")
        return urllib.request.urlopen(request, timeout=30).read()

    def count(self, fn) -> dict:
        """``{"requests": n, "bytes": b}``: the requests the server receives
        while ``fn()`` runs, and the bytes its answers to GETs of objects carry
        (each request's ``Range``, cut at the object's size)."""
        self._post("/moto-api/recorder/reset-recording")
        self._post("/moto-api/recorder/start-recording")
        try:
            fn()
        finally:
            self._post("/moto-api/recorder/stop-recording")
        log = urllib.request.urlopen(self.endpoint + "/moto-api/recorder/download-recording",
                                     timeout=30).read()
        entries = [json.loads(line) for line in log.splitlines() if line.strip()]
        return {"requests": len(entries), "bytes": self._bytes_fetched(entries)}

    def _bytes_fetched(self, entries: list) -> int:
        import s3fs
        fs = s3fs.S3FileSystem(**self.options)
        fs.invalidate_cache()
        sizes = {path: info["size"] for path, info in
                 fs.find(BUCKET, detail=True, withdirs=False).items()}
        total = 0
        for entry in entries:
            if entry.get("method") != "GET":
                continue
            path = urllib.parse.unquote(urllib.parse.urlsplit(entry["url"]).path).lstrip("/")
            if "/" not in path:
                continue                                # a listing: its size is not counted
            size = sizes.get(path)
            if size is None:
                continue                                # missing (404), or deleted meanwhile
            headers = {name.lower(): value for name, value in entry.get("headers", {}).items()}
            ranged = headers.get("range", "")
            if ranged.startswith("bytes=") and "-" in ranged:
                first, _, last = ranged[len("bytes="):].partition("-")
                stop = min(int(last) + 1 if last else size, size)
                total += max(0, stop - int(first or 0))
            else:
                total += size
        return total

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - moto ignores SIGTERM
            self.proc.kill()
        self._tmp.cleanup()


def best(fn, repeats: int, setup=None) -> float:
    """The least wall time of ``repeats`` runs of ``fn`` (after ``setup()``, untimed)."""
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class BcolzStoreSide:
    name = "bcolz_store"

    def __init__(self, server, data, chunklen, table):
        import bcolz_store
        self.mod = bcolz_store
        self.opts = server.options
        self.url = f"s3://{BUCKET}/bcolz_store"
        cparams = bcolz_store.cparams(clevel=5, shuffle=1, cname="lz4")
        bcolz_store.carray(data, rootdir=f"{self.url}/a.bcolz", mode="w", chunklen=chunklen,
                           cparams=cparams, storage_options=self.opts)
        bcolz_store.carray(data[:chunklen * 4], rootdir=f"{self.url}/g.bcolz", mode="w",
                           chunklen=chunklen, cparams=cparams, storage_options=self.opts)
        bcolz_store.ctable(list(table.values()), names=list(table), rootdir=f"{self.url}/t.bcolz",
                           mode="w", cparams=cparams, storage_options=self.opts)

    def open_array(self):
        return self.mod.open(f"{self.url}/a.bcolz", mode="r", storage_options=self.opts)

    def read(self):
        return self.open_array()[:]

    def slices(self, starts, length):
        a = self.open_array()
        return [a[s:s + length] for s in starts]

    def points(self, idx):
        a = self.open_array()
        return [a[i] for i in idx]

    def open12(self):
        t = self.mod.open(f"{self.url}/t.bcolz", mode="r", storage_options=self.opts)
        return len(t), t.dtype

    def append(self, values):
        g = self.mod.open(f"{self.url}/g.bcolz", mode="a", storage_options=self.opts)
        g.append(values)
        g.flush()
        return len(g)


class ZarrSide:
    name = "zarr"

    def __init__(self, server, data, chunklen, table):
        import zarr
        from zarr.codecs import BloscCodec
        from zarr.storage import FsspecStore
        self.zarr = zarr
        self.opts = server.options
        codec = BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")

        def store(name, read_only=False):
            return FsspecStore.from_url(f"s3://{BUCKET}/zarr/{name}", storage_options=self.opts,
                                        read_only=read_only)
        self.store = store
        z = zarr.create_array(store("a.zarr"), shape=data.shape, chunks=(chunklen,),
                              dtype=data.dtype, compressors=codec, overwrite=True)
        z[:] = data
        g = zarr.create_array(store("g.zarr"), shape=(chunklen * 4,), chunks=(chunklen,),
                              dtype=data.dtype, compressors=codec, overwrite=True)
        g[:] = data[:chunklen * 4]
        for kind, consolidate in (("t.zarr", False), ("tc.zarr", True)):
            group = zarr.open_group(store(kind), mode="w")
            for name, values in table.items():
                arr = group.create_array(name, shape=values.shape, chunks=(chunklen,),
                                         dtype=values.dtype, compressors=codec)
                arr[:] = values
            if consolidate:
                zarr.consolidate_metadata(store(kind))

    def read(self):
        return self.zarr.open_array(self.store("a.zarr", True), mode="r")[:]

    def slices(self, starts, length):
        a = self.zarr.open_array(self.store("a.zarr", True), mode="r")
        return [a[s:s + length] for s in starts]

    def points(self, idx):
        a = self.zarr.open_array(self.store("a.zarr", True), mode="r")
        return [a[i] for i in idx]

    def _open12(self, name, consolidated):
        group = self.zarr.open_group(self.store(name, True), mode="r",
                                     use_consolidated=consolidated)
        arrays = [group[key] for key in sorted(group.array_keys())]
        return arrays[0].shape[0], [a.dtype for a in arrays]

    def open12(self):
        return self._open12("t.zarr", False)

    def open12_consolidated(self):
        return self._open12("tc.zarr", True)

    def append(self, values):
        g = self.zarr.open_array(self.store("g.zarr"), mode="a")
        g.append(values)
        return g.shape[0]


def _table(nrows: int, ncols: int, rng) -> dict:
    return {f"c{i}": rng.standard_normal(nrows) if i % 2 else np.arange(nrows, dtype="i8") * i
            for i in range(ncols)}


def run(args) -> dict:
    rng = np.random.default_rng(20241123)
    data = np.cumsum(rng.standard_normal(args.n)).astype("f8")
    table = _table(args.table_rows, 12, rng)
    starts = rng.integers(0, args.n - args.slice_len, args.nslices)
    points = [int(i) for i in rng.integers(0, args.n, args.npoints)]
    values = rng.standard_normal(args.append_len)
    server = MotoServer()
    try:
        import s3fs
        s3fs.S3FileSystem(**server.options).mkdir(BUCKET)
        sides = [BcolzStoreSide(server, data, args.chunklen, table),
                 ZarrSide(server, data, args.chunklen, table)]
        for side in sides:                      # every side answers the same
            np.testing.assert_array_equal(side.read(), data)
            for got, s in zip(side.slices(starts[:5], args.slice_len), starts[:5]):
                np.testing.assert_array_equal(got, data[s:s + args.slice_len])
            np.testing.assert_array_equal(side.points(points[:20]), data[points[:20]])
        ops = {
            "read": lambda side: (lambda: side.read()),
            "slices": lambda side: (lambda: side.slices(starts, args.slice_len)),
            "points": lambda side: (lambda: side.points(points)),
            "open12": lambda side: (lambda: side.open12()),
            "append": lambda side: (lambda: side.append(values)),
        }
        rows = []
        for op, make in ops.items():
            variants = [(side.name, make(side)) for side in sides]
            if op == "open12":
                zarr_side = sides[1]
                variants.append(("zarr (consolidated)", zarr_side.open12_consolidated))
            row = {"op": op, "libs": {}}
            for name, fn in variants:
                repeats = 1 if op == "read" and args.quick else args.repeats
                seconds = best(fn, repeats)
                row["libs"][name] = dict(server.count(fn), seconds=seconds)
            base = row["libs"]["zarr"]["seconds"]
            row["ratio_to_zarr"] = row["libs"]["bcolz_store"]["seconds"] / base
            rows.append(row)
            print(f"{op}: " + ", ".join(f"{n} {v['seconds'] * 1e3:.1f} ms / {v['requests']} req"
                                        f" / {_size(v['bytes'])}"
                                        for n, v in row["libs"].items()), flush=True)
    finally:
        server.stop()
    import bcolz_store
    import zarr
    return {"machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
            "versions": {"bcolz_store": bcolz_store.__version__, "zarr": zarr.__version__},
            "config": vars(args), "rows": rows,
            "date": time.strftime("%Y-%m-%d %H:%M")}


def _size(nbytes) -> str:
    if nbytes is None:
        return "? bytes"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes} bytes"


def markdown(result: dict) -> str:
    cfg = result["config"]
    points = f"{cfg['npoints']:,} single items; " if "npoints" in cfg else ""
    lines = [f"{cfg['n']:,} float64 in chunks of {cfg['chunklen']:,} (lz4, clevel 5, shuffle); "
             f"{cfg['nslices']} slices of {cfg['slice_len']}; {points}a 12-column table of "
             f"{cfg['table_rows']:,} rows; appends of {cfg['append_len']:,}. "
             f"{result['machine']}, {result['date']}.", "",
             "| operation | bcolz_store | zarr v3 | zarr v3, consolidated | bcolz_store / zarr |",
             "|---|---|---|---|---|"]
    for row in result["rows"]:
        cells = []
        for name in ("bcolz_store", "zarr", "zarr (consolidated)"):
            v = row["libs"].get(name)
            fetched = f", {_size(v['bytes'])}" if v and "bytes" in v else ""
            cells.append(f"{v['seconds'] * 1e3:.1f} ms, {v['requests']} requests{fetched}"
                         if v else "")
        lines.append(f"| {row['op']} | " + " | ".join(cells) + f" | {row['ratio_to_zarr']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.remote",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10_000_000, help="elements of the array")
    p.add_argument("--chunklen", type=int, default=131_072, help="elements per chunk (1 MiB)")
    p.add_argument("--nslices", type=int, default=1_000)
    p.add_argument("--slice-len", type=int, default=100)
    p.add_argument("--npoints", type=int, default=1_000, help="single-item reads")
    p.add_argument("--table-rows", type=int, default=100_000)
    p.add_argument("--append-len", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="small sizes: checks the harness")
    p.add_argument("--out", default=RESULTS)
    p.add_argument("--markdown", action="store_true", help="print OUT as Markdown and exit")
    args = p.parse_args(argv)
    if args.markdown:
        with open(args.out) as fh:
            print(markdown(json.load(fh)))
        return 0
    if args.quick:
        args.n, args.chunklen, args.nslices, args.table_rows = 200_000, 16_384, 20, 5_000
        args.npoints = 20
        args.append_len, args.repeats = 1_000, 1
    result = run(args)
    if not args.quick:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
