"""The workloads: what is timed, on which data, and how each result is checked.

A :class:`Workload` holds one :class:`Case` per library.  A case has an
untimed ``setup`` (open a dataset, create an empty one, remove an old
output...), a timed ``run`` (or several named ``variants``, of which the
fastest counts), and a ``check`` of the last run's output against numpy.
Libraries run on the same data in the same process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .libraries import Codec, remove


@dataclass
class Config:
    """Sizes and settings of a run (defaults: the full benchmark)."""

    n: int = 20_000_000               # elements of the 1-d arrays
    chunklen: int = 131_072
    ra_chunklen: int = 4_096          # bcolz_store's random-access setting
    cname: str = "lz4"
    clevel: int = 5
    shuffle: int = 1
    nrows: int = 5_000_000            # ctable rows (5 columns)
    open_rows: int = 200_000          # rows of the 12-column ctable that is opened
    open_cols: int = 12
    nslices: int = 1_000
    slice_len: int = 1_000
    nsingle: int = 10_000
    nsingle_zarr: int = 1_000         # zarr reads fewer elements; time scaled linearly
    nappends: int = 10_000
    append_len: int = 100
    ngather: int = 100_000
    ngather_bcolz: int = 2_000        # bcolz gathers fewer rows; time scaled linearly
    repeats: int = 7
    slow_repeats: int = 5             # for workloads taking seconds per run
    open_repeats: int = 15
    seed: int = 20240611
    nthreads: int = 0                 # 0: os.cpu_count()
    quick: bool = False

    @classmethod
    def quick_config(cls) -> "Config":
        """Tiny sizes: the harness runs end to end in seconds (correctness only)."""
        return cls(n=300_000, chunklen=16_384, ra_chunklen=1_024, nrows=50_000, open_rows=5_000,
                   nslices=40, nsingle=300, nsingle_zarr=50, nappends=300, ngather=3_000,
                   ngather_bcolz=300, repeats=1, slow_repeats=1, open_repeats=2, quick=True)

    @property
    def codec(self) -> Codec:
        return Codec(self.cname, self.clevel, self.shuffle)


@dataclass
class Case:
    """How one library performs one workload."""

    run: Callable[[Any], Any] | None = None
    variants: dict = field(default_factory=dict)   # name -> run, fastest wins
    setup: Callable[[], Any] = lambda: None
    check: Callable[[Any], None] = lambda out: None
    scale: float = 1.0                             # time multiplier (reduced counts)
    note: str = ""

    def runs(self) -> dict:
        return self.variants if self.variants else {"": self.run}


@dataclass
class Workload:
    """One row of the results table."""

    key: str
    title: str
    cases: dict                       # library name -> Case
    target: float | None = None       # ratio bcolz_store / target_vs must be <= target
    target_vs: str = "bcolz"
    kind: str = "time"                # "time" (seconds) or "memory" (bytes)
    repeats: int | None = None
    post: Callable[[dict], dict] | None = None   # outputs by library -> extra facts
    note: str = ""


def tree_bytes(root: str) -> dict:
    """Relative path -> bytes of every file under ``root``."""
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                files[os.path.relpath(path, root)] = fh.read()
    return files


def compare_trees(ours: str, theirs: str) -> tuple[bool, str]:
    """Whether every file bcolz wrote is in ``ours`` with the same bytes.

    Files only bcolz_store writes (a checksum list, a journal) are named in
    the detail but do not fail the check: bcolz ignores files it does not know.
    """
    a, b = tree_bytes(ours), tree_bytes(theirs)
    missing = sorted(b.keys() - a.keys())
    if missing:
        return False, f"{len(missing)} of bcolz's files missing in bcolz_store's, e.g. {missing[:5]}"
    diff = sorted(k for k in b if a[k] != b[k])
    if diff:
        return False, f"{len(diff)} of {len(b)} files differ, e.g. {diff[:5]}"
    extra = sorted(a.keys() - b.keys())
    detail = f"all {len(b)} files of bcolz byte-identical"
    if extra:
        names = sorted({os.path.basename(k) for k in extra})
        detail += f"; bcolz_store adds {len(extra)} files of its own ({', '.join(names[:4])})"
    return True, detail


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


class Context:
    """Data, libraries and prepared datasets shared by the workloads."""

    def __init__(self, cfg: Config, libs: dict, workdir: str):
        self.cfg = cfg
        self.libs = libs
        self.workdir = workdir
        rng = np.random.default_rng(cfg.seed)
        self.rng = rng
        self.f8 = np.cumsum(rng.standard_normal(cfg.n))
        self.i8 = np.arange(cfg.n, dtype=np.int64)
        nr = cfg.nrows
        self.table_names = ["id", "x", "k", "y", "z"]
        self.table_cols = [
            np.arange(nr, dtype=np.int64),
            rng.random(nr),
            rng.integers(0, 1000, nr, dtype=np.int64),
            np.cumsum(rng.standard_normal(nr)),
            rng.standard_normal(nr).astype(np.float32),
        ]
        self.slice_starts = [int(s) for s in rng.integers(0, cfg.n - cfg.slice_len, cfg.nslices)]
        self.single_idx = [int(i) for i in rng.integers(0, cfg.n, cfg.nsingle)]
        self.gather_idx = rng.integers(0, nr, cfg.ngather).astype(np.int64)
        self.gather_f8_idx = rng.integers(0, cfg.n, cfg.ngather).astype(np.int64)
        self._prepared = {}

    # ---------------------------------------------------------------- helpers

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)

    def reference_writer(self):
        """bcolz when installed (data 'written by bcolz'), else bcolz_store."""
        return self.libs.get("bcolz", self.libs["bcolz_store"])

    def prepared(self, name: str) -> str:
        """Path of a dataset written once, untimed, on first use."""
        if name in self._prepared:
            return self._prepared[name]
        cfg, codec = self.cfg, self.cfg.codec
        path = self.path("prep-" + name)
        kind, _, dt = name.partition(":")
        data = {"f8": self.f8, "i8": self.i8}.get(dt)
        if kind == "ref":
            self.reference_writer().write(data, path, cfg.chunklen, codec)
        elif kind == "ra":
            self.libs["bcolz_store"].write(data, path, cfg.ra_chunklen, codec)
        elif kind == "blosc2":
            path += ".b2nd"
            self.libs["blosc2"].write(data, path, cfg.chunklen, codec)
        elif kind == "zarr":
            path += ".zarr"
            self.libs["zarr"].write(data, path, cfg.chunklen, codec)
        elif kind == "table":
            self.reference_writer().write_table(self.table_cols, self.table_names, path, codec)
        elif kind == "table12":
            rng = np.random.default_rng(self.cfg.seed + 12)
            cols = [rng.random(cfg.open_rows) if i % 2 else
                    np.arange(cfg.open_rows, dtype=np.int64) for i in range(cfg.open_cols)]
            names = [f"c{i}" for i in range(cfg.open_cols)]
            self.libs["bcolz_store"].write_table(cols, names, path, codec)
        else:  # pragma: no cover - programming error
            raise KeyError(name)
        self._prepared[name] = path
        return path

    def data_source(self, lib: str, dt: str, ra: bool = False) -> str:
        """The file ``lib`` reads for array workloads."""
        if lib in ("blosc2", "zarr"):
            return self.prepared(f"{lib}:{dt}")
        return self.prepared(("ra:" if ra else "ref:") + dt)


# --------------------------------------------------------------- workloads


def _opener(ctx: Context, lib: str, path_fn: Callable[[], str]):
    adapter = ctx.libs[lib]
    return lambda: adapter.open(path_fn())


def _scalar(value) -> float:
    return value.item() if hasattr(value, "item") else value


def write_workload(ctx: Context, dt: str) -> Workload:
    cfg = ctx.cfg
    data = getattr(ctx, dt)
    cases = {}
    outputs = {lib: ctx.path(f"write-{lib}-{dt}") for lib in ctx.libs}
    for lib, adapter in ctx.libs.items():
        out = outputs[lib]

        def setup(out=out):
            remove(out)
            remove(out + ".b2nd")

        def run(_, adapter=adapter, out=out, lib=lib):
            path = out + ".b2nd" if lib == "blosc2" else out
            adapter.write(data, path, cfg.chunklen, cfg.codec)
            return path

        def check(path, lib=lib):
            back = ctx.libs[lib].open(path)[:]
            _expect(np.array_equal(back, data), f"{lib}: data read back differ from written")

        cases[lib] = Case(run=run, setup=setup, check=check)

    def post(outs):
        if "bcolz" not in outs or "bcolz_store" not in outs:
            return {}
        same, detail = compare_trees(outs["bcolz_store"], outs["bcolz"])
        _expect(same, f"bcolz_store's files are not bcolz's: {detail}")
        return {"byte_identical": same, "byte_check": detail}

    return Workload(f"write_{dt}", f"write {cfg.n:,} {dt} to disk", cases, target=0.8,
                    repeats=cfg.slow_repeats, post=post,
                    note="bcolz_store's files are compared byte for byte with bcolz's")


_FLOOR_POOLS: dict = {}


def _floor_pool(nthreads: int):
    """One thread pool per thread count for the bare loop (made once, untimed)."""
    from concurrent.futures import ThreadPoolExecutor
    if nthreads not in _FLOOR_POOLS:
        _FLOOR_POOLS[nthreads] = ThreadPoolExecutor(nthreads)
    return _FLOOR_POOLS[nthreads]


def _bare_read(setup) -> np.ndarray:
    """The floor of a full read: read each chunk file and decode it with
    python-blosc straight into its slice of a new output, on a thread pool."""
    import blosc
    files, n, dtype, chunklen, pool = setup
    out = np.empty(n, dtype=dtype)
    address = out.__array_interface__["data"][0]
    step = chunklen * out.itemsize

    def one(item):
        i, path = item
        with open(path, "rb") as fh:
            data = fh.read()
        blosc.decompress_ptr(memoryview(data)[16:], address + i * step)
    for _ in pool.map(one, enumerate(files)):
        pass
    return out


def read_workload(ctx: Context, dt: str) -> Workload:
    data = getattr(ctx, dt)
    cfg = ctx.cfg
    cases = {}
    for lib in ctx.libs:
        def check(out, lib=lib):
            _expect(np.array_equal(out, data), f"{lib}: full read differs")
        cases[lib] = Case(run=lambda a: a[:], setup=_opener(ctx, lib, lambda lib=lib:
                                                             ctx.data_source(lib, dt)),
                          check=check)

    def floor_setup():
        import blosc
        blosc.set_nthreads(1)
        root = ctx.data_source("bcolz_store", dt)
        nfiles = -(-len(data) // cfg.chunklen)
        files = [os.path.join(root, "data", f"__{i}.blp") for i in range(nfiles)]
        return files, len(data), data.dtype, cfg.chunklen, _floor_pool(
            cfg.nthreads or os.cpu_count() or 1)

    cases["floor"] = Case(run=_bare_read, setup=floor_setup,
                          check=lambda out: _expect(np.array_equal(out, data),
                                                    "floor: full read differs"),
                          note="bare loop: read + python-blosc on a pool")
    return Workload(f"read_{dt}", f"read {cfg.n:,} {dt} (a[:])", cases, target=1.05,
                    target_vs="floor",
                    note="floor: each chunk file read and decoded by python-blosc on a "
                         "thread pool of as many threads, no bcolz_store")


def _slices_cases(ctx: Context, libs, ra: bool) -> dict:
    cfg = ctx.cfg
    starts, L = ctx.slice_starts, cfg.slice_len
    expected = np.concatenate([ctx.f8[s:s + L] for s in starts])
    cases = {}
    for lib in libs:
        def run(a):
            return [a[s:s + L] for s in starts]

        def check(out, lib=lib):
            _expect(np.array_equal(np.concatenate(out), expected), f"{lib}: slices differ")

        cases[lib] = Case(run=run, check=check, setup=_opener(
            ctx, lib, lambda lib=lib: ctx.data_source(lib, "f8", ra)))
    return cases


def _single_cases(ctx: Context, libs, ra: bool) -> dict:
    cfg = ctx.cfg
    cases = {}
    for lib in libs:
        idx = ctx.single_idx
        scale, note = 1.0, ""
        if lib == "zarr" and cfg.nsingle_zarr < len(idx):
            idx = idx[:cfg.nsingle_zarr]
            scale = len(ctx.single_idx) / len(idx)
            note = f"{len(idx):,} reads timed, x{scale:g}"
        expected = ctx.f8[idx]

        def run(a, idx=idx):
            return [a[i] for i in idx]

        def check(out, lib=lib, expected=expected):
            got = np.array([_scalar(v) for v in out])
            _expect(np.array_equal(got, expected), f"{lib}: single reads differ")

        cases[lib] = Case(run=run, check=check, scale=scale, note=note, setup=_opener(
            ctx, lib, lambda lib=lib: ctx.data_source(lib, "f8", ra)))
    return cases


def slices_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    return Workload("slices", f"{cfg.nslices:,} random {cfg.slice_len:,}-element slices "
                    f"(chunklen {cfg.chunklen:,})", _slices_cases(ctx, ctx.libs, False),
                    target=1.0, target_vs="blosc2")


def single_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    return Workload("single_reads", f"{cfg.nsingle:,} random a[i] on bcolz's data "
                    f"(chunklen {cfg.chunklen:,})", _single_cases(ctx, ctx.libs, False),
                    target=1.0, target_vs="blosc2", repeats=cfg.slow_repeats)


def gather_f8_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    cases = {}
    for lib in ("bcolz_store", "bcolz", "blosc2"):
        if lib not in ctx.libs:
            continue
        idx = ctx.gather_f8_idx
        scale, note = 1.0, ""
        if lib == "bcolz" and cfg.ngather_bcolz < len(idx):
            idx = idx[:cfg.ngather_bcolz]
            scale = len(ctx.gather_f8_idx) / len(idx)
            note = f"{len(idx):,} rows timed, x{scale:g}"
        expected = ctx.f8[idx]

        def check(out, lib=lib, expected=expected):
            _expect(np.array_equal(out, expected), f"{lib}: gathered values differ")
        cases[lib] = Case(run=lambda a, idx=idx: a[idx], check=check, scale=scale, note=note,
                          setup=_opener(ctx, lib, lambda lib=lib: ctx.data_source(lib, "f8")))
    return Workload("gather_f8", f"a[idx], {cfg.ngather:,} random positions of {cfg.n:,} f8 "
                    f"(chunklen {cfg.chunklen:,})", cases, target=1.0, target_vs="blosc2",
                    repeats=cfg.slow_repeats)


def _ra_libs(ctx):
    return [lib for lib in ("bcolz_store", "bcolz", "blosc2") if lib in ctx.libs]


def ra_single_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    return Workload("ra_single_reads", f"{cfg.nsingle:,} random a[i], random-access setting "
                    f"(chunklen {cfg.ra_chunklen:,}; blosc2 chunks {cfg.chunklen:,})",
                    _single_cases(ctx, _ra_libs(ctx), True), target=1.0, target_vs="blosc2",
                    repeats=cfg.slow_repeats)


def ra_slices_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    return Workload("ra_slices", f"{cfg.nslices:,} random {cfg.slice_len:,}-element slices, "
                    f"random-access setting (chunklen {cfg.ra_chunklen:,})",
                    _slices_cases(ctx, _ra_libs(ctx), True), target=1.0, target_vs="blosc2")


def append_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    total = cfg.nappends * cfg.append_len
    blocks = [ctx.f8[i * cfg.append_len:(i + 1) * cfg.append_len] for i in range(cfg.nappends)]
    cases = {}
    for lib in ("bcolz_store", "bcolz"):
        if lib not in ctx.libs:
            continue
        adapter = ctx.libs[lib]
        path = ctx.path(f"append-{lib}")

        def run(c):
            for block in blocks:
                c.append(block)
            c.flush()
            return c.rootdir

        def check(rootdir, lib=lib):
            back = ctx.libs[lib].open(rootdir)[:]
            _expect(np.array_equal(back, ctx.f8[:total]), f"{lib}: appended data differ")

        cases[lib] = Case(run=run, check=check, setup=lambda adapter=adapter, path=path:
                          adapter.create_empty(np.float64, path, cfg.chunklen, cfg.codec))
    return Workload("appends", f"{cfg.nappends:,} appends of {cfg.append_len} f8, then flush",
                    cases, target=1.0, repeats=cfg.slow_repeats)


def sum_workload(ctx: Context, dt: str) -> Workload:
    data = getattr(ctx, dt)
    expected = data.sum()
    cases = {}
    for lib in ("bcolz_store", "bcolz", "blosc2"):
        if lib not in ctx.libs:
            continue

        def check(out, lib=lib):
            ok = (out == expected) if dt == "i8" else np.isclose(out, expected, rtol=1e-9)
            _expect(bool(ok), f"{lib}: sum {out!r} != {expected!r}")

        cases[lib] = Case(run=lambda a: _scalar(a.sum()), check=check, setup=_opener(
            ctx, lib, lambda lib=lib: ctx.data_source(lib, dt)))
    return Workload(f"sum_{dt}", f"sum of {ctx.cfg.n:,} {dt}", cases, target=1.0,
                    target_vs="blosc2")


def ctable_write_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    cases = {}
    for lib in ("bcolz_store", "bcolz"):
        if lib not in ctx.libs:
            continue
        adapter = ctx.libs[lib]
        out = ctx.path(f"ctable-{lib}")

        def run(_, adapter=adapter, out=out):
            adapter.write_table(ctx.table_cols, ctx.table_names, out, cfg.codec)
            return out

        def check(path, lib=lib):
            t = ctx.libs[lib].open(path)
            for name, col in zip(ctx.table_names, ctx.table_cols):
                _expect(np.array_equal(t[name][:], col), f"{lib}: column {name} differs")

        cases[lib] = Case(run=run, check=check, setup=lambda out=out: remove(out))

    def post(outs):
        if "bcolz" not in outs or "bcolz_store" not in outs:
            return {}
        same, detail = compare_trees(outs["bcolz_store"], outs["bcolz"])
        _expect(same, f"bcolz_store's ctable files are not bcolz's: {detail}")
        return {"byte_identical": same, "byte_check": detail}

    return Workload("ctable_write", f"ctable write, {cfg.nrows:,} rows x 5 columns", cases,
                    target=0.8, repeats=cfg.slow_repeats, post=post)


QUERY = "(x > 0.5) & (k < 100)"


def query_workload(ctx: Context) -> Workload:
    x, k = ctx.table_cols[1], ctx.table_cols[2]
    expected = np.flatnonzero((x > 0.5) & (k < 100))
    cases = {}
    for lib in ("bcolz_store", "bcolz"):
        if lib not in ctx.libs:
            continue
        variants = {
            "where": lambda t: np.array([r.id for r in t.where(QUERY, outcols=["id"])],
                                        dtype=np.int64),
            "fetchwhere": lambda t: t.fetchwhere(QUERY, outcols=["id"], out_flavor="numpy")["id"],
            "whereblocks": lambda t: np.concatenate(
                [b["id"] for b in t.whereblocks(QUERY, outcols=["id"])]),
        }

        def check(out, lib=lib):
            _expect(np.array_equal(out, expected), f"{lib}: query ids differ")

        cases[lib] = Case(variants=variants, check=check, setup=_opener(
            ctx, lib, lambda: ctx.prepared("table")))
    return Workload("query", f"ids where {QUERY} ({len(expected):,} of {ctx.cfg.nrows:,} rows)",
                    cases, target=0.5, repeats=ctx.cfg.slow_repeats,
                    note="fastest of where / fetchwhere / whereblocks per library")


def todataframe_workload(ctx: Context) -> Workload:
    cases = {}
    for lib in ("bcolz_store", "bcolz"):
        if lib not in ctx.libs:
            continue

        def check(df, lib=lib):
            _expect(list(df.columns) == ctx.table_names, f"{lib}: dataframe columns differ")
            for name, col in zip(ctx.table_names, ctx.table_cols):
                _expect(np.array_equal(df[name].to_numpy(), col), f"{lib}: column {name} differs")

        cases[lib] = Case(run=lambda t: t.todataframe(), check=check, setup=_opener(
            ctx, lib, lambda: ctx.prepared("table")))
    return Workload("todataframe", f"todataframe of {ctx.cfg.nrows:,} x 5", cases, target=0.7,
                    repeats=ctx.cfg.slow_repeats)


def gather_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    cases = {}
    for lib in ("bcolz_store", "bcolz"):
        if lib not in ctx.libs:
            continue
        idx = ctx.gather_idx
        scale, note = 1.0, ""
        if lib == "bcolz" and cfg.ngather_bcolz < len(idx):
            idx = idx[:cfg.ngather_bcolz]
            scale = len(ctx.gather_idx) / len(idx)
            note = f"{len(idx):,} rows timed, x{scale:g}"

        def check(rows, lib=lib, idx=idx):
            for name, col in zip(ctx.table_names, ctx.table_cols):
                _expect(np.array_equal(rows[name], col[idx]), f"{lib}: gathered {name} differs")

        cases[lib] = Case(run=lambda t, idx=idx: t[idx], check=check, scale=scale, note=note,
                          setup=_opener(ctx, lib, lambda: ctx.prepared("table")))
    return Workload("gather", f"t[idx], {cfg.ngather:,} scattered rows of {cfg.nrows:,}", cases,
                    target=0.01, repeats=cfg.slow_repeats)


def open_workload(ctx: Context) -> Workload:
    cfg = ctx.cfg
    cases = {}
    for lib in ("bcolz_store", "bcolz"):
        if lib not in ctx.libs:
            continue

        def check(t, lib=lib):
            _expect(len(t.names) == cfg.open_cols and len(t) == cfg.open_rows,
                    f"{lib}: opened table has the wrong shape")

        adapter = ctx.libs[lib]
        cases[lib] = Case(run=lambda path, adapter=adapter: adapter.open(path), check=check,
                          setup=lambda: ctx.prepared("table12"))
    return Workload("open_ctable12", f"open a {cfg.open_cols}-column ctable "
                    f"({cfg.open_rows:,} rows)", cases, repeats=cfg.open_repeats)


def memory_workload(ctx: Context) -> Workload:
    cases = {}
    for lib in ctx.libs:
        cases[lib] = Case(run=lambda a: a[:], setup=_opener(
            ctx, lib, lambda lib=lib: ctx.data_source(lib, "f8")))
    budget = ctx.libs["bcolz_store"].mod.defaults.cache_budget
    chunk = ctx.cfg.chunklen * 8
    return Workload("read_peak_memory", f"peak memory of a[:] ({ctx.cfg.n:,} f8) beyond the "
                    "output", cases, kind="memory", repeats=1,
                    note=f"tracemalloc peak minus the output array's bytes; bcolz_store's chunk "
                    f"cache budget is {budget:,} bytes per carray (defaults.cache_budget; "
                    f"{budget // chunk} chunks of {chunk:,} bytes), which a full read bypasses")


BUILDERS = [
    lambda c: write_workload(c, "f8"),
    lambda c: write_workload(c, "i8"),
    lambda c: read_workload(c, "f8"),
    lambda c: read_workload(c, "i8"),
    slices_workload,
    single_workload,
    ra_single_workload,
    ra_slices_workload,
    append_workload,
    lambda c: sum_workload(c, "f8"),
    lambda c: sum_workload(c, "i8"),
    ctable_write_workload,
    query_workload,
    todataframe_workload,
    gather_workload,
    gather_f8_workload,
    open_workload,
    memory_workload,
]

KEYS = ["write_f8", "write_i8", "read_f8", "read_i8", "slices", "single_reads", "ra_single_reads",
        "ra_slices", "appends", "sum_f8", "sum_i8", "ctable_write", "query", "todataframe",
        "gather", "gather_f8", "open_ctable12", "read_peak_memory"]


def build_workloads(ctx: Context, only=None) -> list:
    """The workloads, in table order (``only``: a collection of keys)."""
    out = []
    for key, builder in zip(KEYS, BUILDERS):
        if only and key not in only:
            continue
        if key in ("todataframe",) and not _has_pandas():
            continue
        out.append(builder(ctx))
    return out


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True
