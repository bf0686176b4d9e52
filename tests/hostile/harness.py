"""Hostile-input harness: datasets, replayable mutations, sandboxes and a worker.

A *case* is (source, plan): a copy of a known-good dataset (``Source``) in a
sandbox folder, changed by a *plan* (a JSON list of steps, so that any case can
be replayed from one line), then opened by a worker subprocess:

1. ``read``         mode 'r', read every value, attribute and iteration
   (``read_pickle``: the same with ``allow_pickle=True``, when ``read`` asked for it);
2. ``read_verify``  the same with ``verify=True`` (and ``allow_pickle=True``);
3. ``verify_fn``    ``bcolz_store.verify(root)``;
4. ``write``        mode 'a': set an attribute, append a row, flush, close, reopen 'r', read.

The worker runs under an address-space limit, answers each request on a pipe
and is killed when it does not answer in time, so a segfault, a hang or a
memory blow-up is an *outcome*, not the end of the test run:

``ok``, ``error`` (a BcolzStoreError), ``foreign`` (any other exception),
``crash`` (the worker died), ``hang`` (no answer in time), ``memory``
(MemoryError, or killed by the kernel), ``escape`` (something outside the
dataset changed, or data was served from a file outside it), ``silent_wrong``
(a read returned data different from what was written where it must not, or a
dataset that must be refused was accepted).

Each sandbox holds the dataset (``ds/``) and an ``outside/`` folder of sentinel
files and folders that hostile symlinks point to.  Everything in the sandbox
outside ``ds/`` (and the worker's working folder) is snapshotted before and
after every operation; the worker also records, through an audit hook, every
file it opened, renamed or removed whose real path is outside the dataset.

Run as a script, this module is the worker (``--worker``) or writes the
test-time sources (``--make-sources DIR``).  Nothing here imports pytest or
hypothesis; the worker imports bcolz_store only when it starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

JOURNAL_DIR = ".bcolz_store-journal"
CHECKSUM_FILE = "bcolz_store.md5"
LOCK_FILE = ".bcolz_store.lock"
CONSOLIDATED_FILE = "bcolz_store.json"
OWN_NAMES = (JOURNAL_DIR, CHECKSUM_FILE, CONSOLIDATED_FILE, LOCK_FILE)
RESERVED_NAMES = (JOURNAL_DIR, "__attrs__", "__rootdirs__", CHECKSUM_FILE, LOCK_FILE)
DEVICES = ("/dev/zero", "/dev/null")        # the only devices a plan may link to
SPARSE_SIZE = 10 * 10**9                    # "huge" files: sparse, no disk blocks
HASH_LIMIT = 64 << 20                       # the parent never reads bigger files

OP_TIMEOUT = float(os.environ.get("BCOLZ_STORE_FUZZ_TIMEOUT", "5"))   # seconds per operation
WORKER_MEMORY = 3 << 30                     # RLIMIT_AS of the worker
WORKER_FILESIZE = 1 << 30                   # RLIMIT_FSIZE of the worker

DS = "ds"                                   # the dataset inside a sandbox
OUTSIDE = "outside"                         # sentinels symlinks may point to
ABS = "@ABS@"                               # in plan strings: the sandbox's absolute path + "/"
SB = "@sb/"                                 # step paths: relative to the sandbox, not ds/
UP = "@up/"                                 # symlink targets: relative path to sandbox/...

OUTCOMES = ("ok", "error", "foreign", "crash", "hang", "memory", "escape", "silent_wrong")
FINDINGS = ("foreign", "crash", "hang", "memory", "escape", "silent_wrong")
OPS = ("read", "read_pickle", "read_verify", "verify_fn", "write")
DATA_OPS = ("read", "read_pickle", "read_verify", "write")   # ops that return data

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]


# =============================================================================
# Files, states, snapshots (parent side: never opens anything but regular files)
# =============================================================================

def md5_bytes(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def file_state(path: Path):
    """What a reader following symlinks would find at ``path``, without opening
    anything that is not a regular file of reasonable size."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ("missing",)
    except OSError as err:
        return ("broken", err.errno)
    if stat.S_ISREG(st.st_mode):
        if st.st_size > HASH_LIMIT:
            return ("big", st.st_size)
        try:
            with open(path, "rb") as fh:
                return ("reg", md5_bytes(fh.read()))
        except OSError as err:
            return ("unreadable", err.errno)
    return ("special", stat.S_IFMT(st.st_mode))


def _entry(path: str, deep: bool = True):
    """One snapshot entry (lstat based: a symlink is recorded, not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ("missing",)
    mode = stat.S_IFMT(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        digest = None
        if deep and st.st_size <= HASH_LIMIT:
            try:
                with open(path, "rb") as fh:
                    digest = md5_bytes(fh.read())
            except OSError as err:
                digest = f"unreadable {err.errno}"
        return ("file", st.st_size, st.st_mtime_ns, digest)
    if stat.S_ISDIR(st.st_mode):
        return ("dir", st.st_mtime_ns)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return ("dev", mode, st.st_rdev)        # no mtime: others write to /dev/null
    return ("other", mode, st.st_mtime_ns)


def snapshot(folders, skip=(), targets=()) -> dict:
    """``{path: entry}`` of everything under ``folders`` (except ``skip``) and of ``targets``."""
    out = {}
    skip = {os.fspath(s) for s in skip}
    for top in folders:
        top = os.fspath(top)
        if not os.path.lexists(top):
            out[top] = ("missing",)
            continue
        out[top] = _entry(top)
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if os.path.join(folder, d) not in skip)
            for name in dirs + sorted(files):
                full = os.path.join(folder, name)
                if full not in skip:
                    out[full] = _entry(full)
            # symlinked folders are listed in dirs but not descended (followlinks=False)
    for target in targets:
        out[target] = _entry(target, deep=False)
    return out


def diff_snapshots(before: dict, after: dict) -> list:
    changes = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path, ("missing",)), after.get(path, ("missing",))
        if a != b:
            changes.append(f"{path}: {a} -> {b}")
    return changes


def bcolz_file_list(root: Path) -> list:
    """Relative paths of the regular bcolz files under root (ours excluded)."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in OWN_NAMES)
        for name in sorted(files):
            if name in OWN_NAMES:
                continue
            full = Path(folder) / name
            if stat.S_ISREG(os.lstat(full).st_mode):
                out.append(full.relative_to(root).as_posix())
    return out


def write_md5_file(root: Path) -> None:
    """``bcolz_store.md5`` for every bcolz file of root, computed independently of the library."""
    lines = []
    for rel in bcolz_file_list(root):
        lines.append(f"{md5_bytes((root / rel).read_bytes())}  {rel}\n")
    (root / CHECKSUM_FILE).write_text("".join(lines))


def parse_md5(data: bytes) -> dict:
    """Lenient parse of an md5sum file (for building consistent journals)."""
    out = {}
    for line in data.decode("utf-8", "replace").splitlines():
        digest, sep, key = line.partition("  ")
        if sep:
            out[key.lstrip("*")] = digest
    return out


# =============================================================================
# Sources
# =============================================================================

@dataclass
class Source:
    """A pristine dataset and what reading it gave right after it was written."""

    name: str                 # "fixture:NAME", "fixture+md5:NAME", "bcolz:NAME", "bcolz+md5:NAME", "store:NAME"
    path: Path
    bcolz_written: bool
    kind: str = "carray"      # or "ctable"
    columns: list = field(default_factory=list)
    has_md5: bool = False
    files: list = field(default_factory=list)       # bcolz files (relative)
    sizes: dict = field(default_factory=dict)       # rel -> size
    states: dict = field(default_factory=dict)      # rel -> file_state (md5 file included)
    json: dict = field(default_factory=dict)        # rel -> parsed JSON (non-chunk files)
    dirs: list = field(default_factory=list)        # relative folders
    carrays: dict = field(default_factory=dict)     # prefix ('' or 'col/') -> meta summary
    expected: dict = None                           # digest of the pristine read
    object_dtype: bool = False
    generation: int = 0       # the last commit of a bcolz_store-written dataset

    @property
    def origin(self) -> str:
        return "bcolz" if self.bcolz_written else "store"


def inventory(src: Source) -> Source:
    """Fill in what plans are drawn from (files, JSON contents, carray metadata)."""
    root = src.path
    src.has_md5 = (root / CHECKSUM_FILE).is_file()
    try:
        src.generation = int(json.loads((root / CONSOLIDATED_FILE).read_text())["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        src.generation = 0
    src.kind = "ctable" if (root / "__rootdirs__").is_file() else "carray"
    src.files = bcolz_file_list(root)
    src.sizes = {rel: (root / rel).stat().st_size for rel in src.files}
    src.states = {rel: file_state(root / rel) for rel in src.files + [CHECKSUM_FILE]}
    src.json = {}
    for rel in src.files:
        if not rel.endswith((".blp", ".vlen")):
            try:
                src.json[rel] = json.loads((root / rel).read_text())
            except ValueError:
                src.json[rel] = None
    src.dirs = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                      if p.is_dir() and not p.is_symlink())
    if src.kind == "ctable":
        src.columns = list(src.json["__rootdirs__"]["names"])
        prefixes = [c + "/" for c in src.columns]
    else:
        prefixes = [""]
    import numpy as np
    for prefix in prefixes:
        storage = src.json.get(prefix + "meta/storage") or {}
        sizes = src.json.get(prefix + "meta/sizes") or {}
        text = storage.get("dtype", "f8")
        try:
            import ast
            dt = np.dtype(ast.literal_eval(text) if text.startswith("[") else text)
            itemsize, is_object = dt.itemsize, dt.hasobject
        except Exception:
            itemsize, is_object = 8, False
        shape = sizes.get("shape", [0])
        atom = 1
        for n in shape[1:]:
            atom *= n
        nchunks = len([f for f in src.files if f.startswith(prefix + "data/")])
        src.carrays[prefix] = {"dtype": text, "itemsize": itemsize, "shape": shape,
                               "atomsize": itemsize * atom, "chunklen": storage.get("chunklen", 1),
                               "nchunks": nchunks}
        src.object_dtype = src.object_dtype or is_object
    return src


BIG_FIXTURES = ("ctable_mixed", "f8_2d_atom", "f8_lz4_walk")


def build_sources(base: Path, worker, fixtures_dir=None, big=False, log=print):
    """Make every source under ``base``; return (sources, problems).

    Fixtures are copied (never touched in place), bcolz-written ones get a
    second variant with a checksum file written by this harness, and each
    source's expected digest is what the worker reads from it right away.
    """
    base.mkdir(parents=True, exist_ok=True)
    raw = []                                   # (name, path, bcolz_written)
    if fixtures_dir is not None and Path(fixtures_dir).is_dir():
        for entry in sorted(Path(fixtures_dir).iterdir()):
            if not entry.is_dir() or (entry.name in BIG_FIXTURES and not big):
                continue
            dst = base / "fixture" / entry.name
            shutil.copytree(entry, dst, symlinks=True)
            raw.append((f"fixture:{entry.name}", dst, True))
    made_dir = base / "made"
    env = worker_env()
    proc = subprocess.run([sys.executable, str(HERE), "--make-sources", str(made_dir)],
                          env=env, capture_output=True, timeout=300, cwd=str(base))
    problems = []
    try:
        made = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        made = {"bcolz": [], "store": []}
        problems.append(f"source writer failed (rc {proc.returncode}): "
                        f"{proc.stderr.decode(errors='replace')[-2000:]}")
    if made.get("bcolz_error"):
        log(f"hostile: datasets written by the real bcolz skipped: {made['bcolz_error']}")
    for name in made.get("bcolz", []):
        raw.append((f"bcolz:{name}", made_dir / "bcolz" / name, True))
    for name in made.get("store", []):
        raw.append((f"store:{name}", made_dir / "store" / name, False))
    # bcolz-written data with a checksum file, so that verify=True has something to check
    for name, path, bw in list(raw):
        if bw:
            kind, _, short = name.partition(":")
            dst = base / "md5" / kind / short
            shutil.copytree(path, dst, symlinks=True)
            write_md5_file(dst)
            raw.append((f"{kind}+md5:{short}", dst, True))
    sources = []
    for name, path, bw in raw:
        src = inventory(Source(name, path, bw))
        answer = worker.call({"op": "read", "root": str(path), "sandbox": str(path),
                              "allow_pickle": True})
        if answer.get("result") != "ok":
            problems.append(f"[pristine] source={name}: reading the unmodified dataset gave "
                            f"{answer.get('result')} {answer.get('type', '')}: "
                            f"{answer.get('message', answer.get('detail', ''))}")
            continue
        src.expected = answer["digest"]
        sources.append(src)
    return sources, problems


def make_sources(out: Path) -> dict:
    """Write the test-time sources (``--make-sources``): by the real bcolz if it
    imports, and by bcolz_store (which writes checksum files)."""
    import numpy as np
    made = {"bcolz": [], "store": [], "bcolz_error": None}
    objects = [{"a": 1}, [2, 3], "x", None, 4.5, (1, "t"), b"by"]
    try:
        import bcolz
        d = out / "bcolz"
        d.mkdir(parents=True, exist_ok=True)

        def bc(name, arr, attrs=None, **kw):
            c = bcolz.carray(arr, rootdir=str(d / name), mode="w", **kw)
            for k, v in (attrs or {}).items():
                c.attrs[k] = v
            c.flush()
            made["bcolz"].append(name)

        bc("i8_leftover", np.arange(1000, dtype="i8") * 3, {"unit": "m"}, chunklen=64)
        bc("f4_clevel0", np.linspace(0, 1, 300, dtype="f4"), chunklen=50,
           cparams=bcolz.cparams(clevel=0))
        bc("f8_atom", np.arange(180.0).reshape(60, 3), {"atom": [3]}, chunklen=16)
        bc("object", np.array(objects * 3, dtype=object))
        bc("S5_zstd", np.array([b"s%04d" % i for i in range(200)]), chunklen=32,
           cparams=bcolz.cparams(cname="zstd"))
        bc("bool", np.arange(500) % 3 == 0, chunklen=100)
        bc("empty_i8", np.zeros(0, dtype="i8"), chunklen=8)
        t = bcolz.ctable([np.arange(120, dtype="i4"), np.linspace(0, 1, 120),
                          np.array([b"c%03d" % i for i in range(120)])],
                         names=["i", "f", "s"], chunklen=32, rootdir=str(d / "ctable"), mode="w")
        t.attrs["k"] = [1, 2]
        t.flush()
        made["bcolz"].append("ctable")
    except Exception as err:  # no bcolz here: the other sources still run
        made["bcolz_error"] = f"{type(err).__name__}: {err}"
    import bcolz_store
    from bcolz_store.storage.journal import Journal
    Journal.fsync_default = False
    d = out / "store"
    d.mkdir(parents=True, exist_ok=True)

    def bs(name, arr, attrs=None, **kw):
        c = bcolz_store.carray(arr, rootdir=str(d / name), mode="w", **kw)
        for k, v in (attrs or {}).items():
            c.attrs[k] = v
        c.flush()
        made["store"].append(name)

    bs("i8", np.arange(35, dtype="i8"), {"a": 1, "s": "x"}, chunklen=10)
    bs("i8_two_chunks", np.arange(20, dtype="i8"), chunklen=10)
    bs("f8_atom", np.arange(60.0).reshape(20, 3), {"atom": True}, chunklen=8)
    bs("structured", np.array([(i, i * 0.5) for i in range(30)],
                              dtype=[("a", "<i8"), ("b", "<f8")]), chunklen=8)
    bs("object", np.array(objects * 2, dtype=object), {"pickled": 1})
    bs("f4", np.linspace(1, 2, 100, dtype="f4"), chunklen=32)
    bs("u1_zstd", (np.arange(300) % 256).astype("u1"), chunklen=64,
       cparams=bcolz_store.cparams(cname="zstd"))
    bs("M8", np.arange(50).astype("M8[ns]"), chunklen=16)
    bs("nullable_f8", np.ma.MaskedArray(np.arange(40.0), mask=np.arange(40) % 3 == 0),
       chunklen=8)                  # values plus valid/ (format.md, "Nullable columns")
    words = ["w%d" % (i * 7 % 13) * (i % 4) + ("é" if i % 5 == 0 else "") for i in range(60)]
    bs("vlen_str", [None if i % 9 == 4 else w for i, w in enumerate(words)], {"v": 1},
       chunklen=16, dtype="vlen-str")
    bs("vlen_bytes_dict", [("k%03d" % (i % 50)).encode() * (i % 3) for i in range(600)],
       chunklen=64, dtype=bcolz_store.vlen("bytes", level=9, dictionary=True, dict_size=512))
    tv = bcolz_store.ctable([np.arange(30, dtype="i4"),
                             bcolz_store.carray(words[:30], dtype="vlen-str"),
                             bcolz_store.carray([w.encode() for w in words[30:]],
                                                dtype=bcolz_store.vlen("bytes", nullable=True))],
                            names=["i", "s", "b"], chunklen=8, rootdir=str(d / "ctable_vlen"),
                            mode="w")
    tv.cols["s"].attrs["unit"] = "word"
    tv.flush()
    made["store"].append("ctable_vlen")
    # lists, structs (a nullable field), nullable decimals, a name that is not an identifier
    tk = bcolz_store.ctable(
        [np.arange(24, dtype="i4"),
         bcolz_store.carray([[i, i + 1] if i % 5 else None for i in range(24)],
                            dtype=bcolz_store.list_("int16")),
         bcolz_store.carray([{"x": i if i % 4 else None, "y": "s%d" % i} for i in range(24)],
                            dtype=bcolz_store.struct([("x", "int32", True), ("y", "str")])),
         bcolz_store.carray([None if i % 6 == 1 else "%d.25" % i for i in range(24)],
                            dtype=bcolz_store.decimal(9, 2))],
        names=["i", "tags", "pt", "a price"], chunklen=8, rootdir=str(d / "ctable_kinds"),
        mode="w")
    tk.flush()
    made["store"].append("ctable_kinds")
    # maps, fixed-size binary (Arrow's fixed_size_binary: V4 plus valid/) and UUIDs
    tm = bcolz_store.ctable(
        [np.arange(24, dtype="i4"),
         bcolz_store.carray([[("k%d" % i, i)] if i % 5 else None for i in range(24)],
                            dtype=bcolz_store.map_("str", "int64")),
         bcolz_store.carray([None if i % 7 == 2 else b"%04d" % i for i in range(24)],
                            dtype="V4", nullable=True),
         bcolz_store.carray([None if i % 6 == 1 else bytes(range(i, i + 16)) for i in range(24)],
                            dtype="uuid")],
        names=["i", "m", "fb", "u"], chunklen=8, rootdir=str(d / "ctable_kinds2"), mode="w")
    tm.flush()
    made["store"].append("ctable_kinds2")
    colors = ["red", "green", None, "blue"] * 10
    tc = bcolz_store.ctable([np.arange(40, dtype="i2"),
                             bcolz_store.carray(colors, dtype=bcolz_store.category())],
                            names=["i", "color"], chunklen=8, rootdir=str(d / "ctable_cat"),
                            mode="w")
    tc.flush()
    made["store"].append("ctable_cat")
    t = bcolz_store.ctable([np.arange(40, dtype="i8"), np.arange(40) * 0.5,
                            np.array(["u%d" % i for i in range(40)]),
                            np.arange(40, dtype="i4")],
                           names=["a", "b", "c", "d"], chunklen=16,
                           rootdir=str(d / "ctable"), mode="w")
    t.attrs["t"] = {"x": 1}
    t.cols["a"].attrs["unit"] = "s"
    t.flush()
    made["store"].append("ctable")
    ti = bcolz_store.ctable([np.arange(300, dtype="i8")[::-1] % 97, np.arange(300) * 0.25,
                             bcolz_store.carray(colors * 7 + colors[:20], dtype="category")],
                            names=["k", "f", "color"], chunklen=32,
                            rootdir=str(d / "ctable_idx"), mode="w")
    ti.create_index("k")
    ti.create_index("f", kind="sorted")
    ti.create_index("color", kind="bitmap")
    made["store"].append("ctable_idx")
    return made


# =============================================================================
# Plans: replayable JSON lists of steps
# =============================================================================

def _subst(value, sandbox: Path):
    if isinstance(value, str):
        return value.replace(ABS, str(sandbox) + "/")
    if isinstance(value, list):
        return [_subst(v, sandbox) for v in value]
    return value


def _lkind(p) -> int | None:
    try:
        return stat.S_IFMT(os.lstat(p).st_mode)
    except OSError:
        return None


def _is_reg(p) -> bool:
    return _lkind(p) == stat.S_IFREG


def _clear(p: Path) -> None:
    """Remove whatever is at ``p`` (a symlink itself, never its target)."""
    kind = _lkind(p)
    if kind == stat.S_IFDIR:
        shutil.rmtree(p)
    elif kind is not None:
        os.unlink(p)


def _copy_regular(src, dst, *, follow_symlinks=True):
    if _is_reg(src):
        shutil.copy2(src, dst)
    return dst


class PlanError(Exception):
    """A plan that would reach outside its sandbox (a harness bug, never skipped)."""


class Planner:
    """Applies plan steps to a sandbox; each step is ``[kind, *args]``."""

    def __init__(self, sandbox: Path):
        self.sandbox = sandbox
        self.ds = sandbox / DS

    def path(self, rel: str) -> Path:
        if rel.startswith(SB):
            return self.sandbox / rel[len(SB):]
        return self.ds / rel

    def _parent(self, p: Path) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)

    def apply(self, plan: list) -> list:
        """Apply every step; return the steps the filesystem refused (an earlier step
        turned a folder into something else), which are skipped."""
        skipped = []
        for step in plan:
            real = _subst(step, self.sandbox)
            try:
                getattr(self, "do_" + real[0])(*real[1:])
            except (OSError, ValueError, TypeError, KeyError, IndexError) as err:
                why = err.strerror if isinstance(err, OSError) else f"{type(err).__name__}: {err}"
                skipped.append(f"{step[0]} {step[1] if len(step) > 1 else ''}: {why}"[:200])
        return skipped

    # --- bytes of regular files (no-ops on anything else: never follows links)
    def _edit(self, rel, fn):
        p = self.path(rel)
        if _is_reg(p):
            p.write_bytes(bytes(fn(bytearray(p.read_bytes()))))

    def do_stream_size(self, rel, stream, value):
        """Overwrite the size of stream ``stream`` of block 0 of chunk file ``rel``
        (found by walking the sizes before it)."""
        def fn(raw):
            raw = bytearray(raw)
            if len(raw) < 36:
                return bytes(raw)
            pos = 16 + int.from_bytes(raw[32:36], "little", signed=True)
            for _ in range(stream):
                if not 16 <= pos <= len(raw) - 4:
                    return bytes(raw)
                pos += 4 + int.from_bytes(raw[pos:pos + 4], "little", signed=True)
            if 16 <= pos <= len(raw) - 4:
                raw[pos:pos + 4] = value.to_bytes(4, "little", signed=True)
            return bytes(raw)
        self._edit(rel, fn)

    def do_truncate(self, rel, size):
        self._edit(rel, lambda raw: raw[:size])

    def do_flip(self, rel, flips):
        def fn(raw):
            for pos, bit in flips:
                if raw:
                    raw[pos % len(raw)] ^= 1 << bit
            return raw
        self._edit(rel, fn)

    def do_splice(self, rel, other, src, length, dst):
        o = self.path(other)
        piece = o.read_bytes()[src:src + length] if _is_reg(o) else b"\0"

        def fn(raw):
            raw[dst:dst + len(piece)] = piece
            return raw
        self._edit(rel, fn)

    def do_overwrite(self, rel, at, hexdata):
        junk = bytes.fromhex(hexdata)

        def fn(raw):
            raw[at:at + len(junk)] = junk
            return raw
        self._edit(rel, fn)

    def do_append(self, rel, text):
        p = self.path(rel)
        if _lkind(p) in (None, stat.S_IFREG):
            self._parent(p)
            with open(p, "ab") as fh:
                fh.write(text.encode("utf-8", "surrogateescape"))

    def do_json_set(self, rel, keys, value):
        p = self.path(rel)
        if not _is_reg(p):
            return
        try:
            obj = json.loads(p.read_bytes().decode("utf-8"))
        except ValueError:
            obj = {}
        if not isinstance(obj, dict):
            obj = {}
        cur = obj
        for k in keys[:-1]:
            nxt = cur.get(k) if isinstance(cur, dict) else None
            if not isinstance(nxt, (dict, list)):
                nxt = {}
                cur[k] = nxt
            cur = nxt
        last = keys[-1]
        if isinstance(cur, list):
            if isinstance(last, int) and -len(cur) <= last < len(cur):
                cur[last] = value
            else:
                cur.append(value)
        else:
            cur[last] = value
        p.write_text(json.dumps(obj) + "\n")

    def do_stats_set(self, rel, keys, value, reseal):
        """Set ``keys`` (dict keys and list indexes) of the statistics file ``rel``
        to ``value``; with ``reseal`` its md5 field is recomputed (as the library
        computes it), so that only the numbers lie: a forgery."""
        p = self.path(rel)
        if not _is_reg(p):
            return
        body = json.loads(p.read_bytes().decode("utf-8"))
        cur = body
        for k in keys[:-1]:
            cur = cur[k]
        cur[keys[-1]] = value
        if reseal:
            body["md5"] = ""
            text = json.dumps(body, ensure_ascii=True) + "\n"
            body["md5"] = hashlib.md5(text.encode("ascii")).hexdigest()
        p.write_bytes((json.dumps(body, ensure_ascii=True) + "\n").encode("ascii"))

    # --- whole files and folders
    def do_write(self, rel, text):
        p = self.path(rel)
        _clear(p)
        self._parent(p)
        p.write_bytes(text.encode("utf-8", "surrogateescape"))

    def do_writehex(self, rel, hexdata):
        p = self.path(rel)
        _clear(p)
        self._parent(p)
        p.write_bytes(bytes.fromhex(hexdata))

    def do_remove(self, rel):
        _clear(self.path(rel))

    def do_fifo(self, rel):
        p = self.path(rel)
        _clear(p)
        self._parent(p)
        os.mkfifo(p)

    def do_symlink(self, rel, target):
        p = self.path(rel)
        if target.startswith(SB):
            target = str(self.sandbox / target[len(SB):])
        elif target.startswith(UP):
            target = os.path.relpath(self.sandbox / target[len(UP):], p.parent)
        elif target.startswith("/") and target not in DEVICES and \
                not target.startswith(str(self.sandbox) + "/"):
            raise PlanError(f"plan links outside the sandbox: {target}")
        _clear(p)
        self._parent(p)
        os.symlink(target, p)

    def do_sparse(self, rel, size):
        p = self.path(rel)
        _clear(p)
        self._parent(p)
        with open(p, "wb"):
            pass
        os.truncate(p, size)

    def do_mkdir(self, rel):
        p = self.path(rel)
        _clear(p)
        p.mkdir(parents=True)

    def do_copy(self, src, dst):
        s, d = self.path(src), self.path(dst)
        kind = _lkind(s)
        if kind not in (stat.S_IFREG, stat.S_IFDIR):
            return
        _clear(d)
        self._parent(d)
        if kind == stat.S_IFDIR:
            shutil.copytree(s, d, symlinks=True, copy_function=_copy_regular)
        else:
            shutil.copy2(s, d)

    def do_move(self, src, dst):
        s, d = self.path(src), self.path(dst)
        if _lkind(s) is None:
            return
        _clear(d)
        self._parent(d)
        os.rename(s, d)

    def do_md5_for_manifest(self, journal, blob):
        """Make a shipped manifest a consistent commit: add a checksum-file blob
        that matches the blobs (what a real interrupted writer leaves)."""
        jdir = self.path(journal)
        manifest = jdir / "manifest.json"
        if not _is_reg(manifest):
            return
        entries = json.loads(manifest.read_text())
        md5 = self.ds / CHECKSUM_FILE
        sums = parse_md5(md5.read_bytes()) if _is_reg(md5) else {}
        for key, name in entries:
            if name is None:
                sums.pop(key, None)
            elif _is_reg(jdir / name):
                sums[key] = md5_bytes((jdir / name).read_bytes())
        (jdir / blob).write_text("".join(f"{sums[k]}  {k}\n" for k in sorted(sums)))
        entries = [e for e in entries if e[0] != CHECKSUM_FILE] + [[CHECKSUM_FILE, blob]]
        manifest.write_text(json.dumps(entries))

    def do_md5_set(self, key, digest):
        """Record ``digest`` for ``key`` in the checksum file (regular files only)."""
        p = self.ds / CHECKSUM_FILE
        if not _is_reg(p):
            return
        sums = parse_md5(p.read_bytes())
        sums[key] = digest
        p.write_text("".join(f"{sums[k]}  {k}\n" for k in sorted(sums)))

    def do_expect_failure(self, reason):
        """A marker: every operation that opens this dataset must fail."""


def make_outside(sandbox: Path) -> None:
    """Sentinel files and folders that hostile symlinks point to."""
    out = sandbox / OUTSIDE
    (out / "folder" / "sub").mkdir(parents=True)
    (out / "sentinel.txt").write_text("outside sentinel: must never change\n")
    (out / "sentinel.bin").write_bytes(bytes(range(256)) * 4)
    (out / "attrs.json").write_text(json.dumps({"outside_sentinel": "served from outside"}) + "\n")
    (out / "folder" / "a.txt").write_text("a\n")
    (out / "folder" / "sub" / "b.txt").write_text("b\n")


# =============================================================================
# Drawing plans (hypothesis ``data`` behind a small interface)
# =============================================================================

class Draw:
    """What the plan drawers need from hypothesis's ``st.data()``."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self.data, self.st = data, st

    def choice(self, seq, label=None):
        return self.data.draw(self.st.sampled_from(list(seq)), label=label)

    def integer(self, lo, hi, label=None):
        return self.data.draw(self.st.integers(lo, max(lo, hi)), label=label)

    def boolean(self, label=None):
        return self.data.draw(self.st.booleans(), label=label)

    def binary(self, lo, hi, label=None):
        return self.data.draw(self.st.binary(min_size=lo, max_size=hi), label=label)


class RandomDraw:
    """The same interface from a seeded ``random.Random``: uniform choices (hypothesis
    favours the first elements and re-draws near-copies of earlier cases), with the
    ends of integer ranges drawn more often."""

    def __init__(self, seed):
        import random
        self.rng = random.Random(seed)

    def choice(self, seq, label=None):
        seq = list(seq)
        return seq[self.rng.randrange(len(seq))]

    def integer(self, lo, hi, label=None):
        hi = max(lo, hi)
        r = self.rng.random()
        if r < 0.1:
            return lo
        if r < 0.2:
            return hi
        return self.rng.randint(lo, hi)

    def boolean(self, label=None):
        return self.rng.random() < 0.5

    def binary(self, lo, hi, label=None):
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(lo, hi)))


ODD_VALUES = [2**63, 2**64, -1, -(2**63), 0, 1.5, float("inf"), float("nan"), None, True, "x",
              "", [], {}, [2**62], [-1], [0, 0], ["a"], 2**31, 2**32 + 1, "<i8", "V0",
              "|V2147483647", "O", {"clevel": 5}, "S0", "<U0", ">f8", "M8[ns]"]
QUANTIZE = ["x", [1], float("inf"), -3, 2**63, 1.5, None, True, 10**6, -(2**63), "3", {}]
DTYPES = ["U0", "<U0", "S0", "V0", "O", "object", "[('a', 'O')]", "[('a', '<i8'), ('b', 'O')]",
          "|V2147483648", "V2147483647", "[('a', '<U0')]", "[]", "[('a', '<i8', (2147483648,))]",
          "[('a', '<f8', (268435456,))]", "('<f8', (2,))", "nonsense", 8, "[('a', 'O', (2,))]",
          "{'names': ['a'], 'formats': ['O']}", "<M8[ns]", "m8[s]", "c16", ">i8", "f2"]
CHUNKLENS = [0, -1, 2**40, 2**31, 2**62, 1, "10", 1.5, None, True, 2**28]
CLEVELS = [-1, 10, 9, 0, "5", None, 2**63, 1.5]
SHUFFLES = [3, -1, True, None, "1", 2, 1.0]
CNAMES = ["nope", "", None, 5, "zstd", "snappy", "lz4hc", "zlib"]
DFLTS = ["abc", [1, 2, 3], None, 2**70, float("nan"), {"a": 1}, "NaT", [[1]], True]
NBYTES = [-1, 2**63, "x", None, 0, 1.5]
# The vlen entry of meta/storage (columns of items of any length), and its fields.
VLEN_ENTRIES = [None, [], "x", {}, {"kind": "str"}, 5]
VLEN_KINDS = ["bytes", "str", "", None, 1, "object"]
VLEN_DICTS = ["", "AAAA", "***", 5, [], "N3ik7A" + "A" * 100, "a" * 10**6]
VLEN_DTYPES = ["vlen-str", "vlen-bytes", "vlen-str:", "vlen-strx", "vlen-", "vlen-bytes: x",
               "<U5", "O", "object"]
ESCAPE_KEYS = ["../" + OUTSIDE + "/sentinel.txt", ABS + OUTSIDE + "/sentinel.txt",
               "data/../../" + OUTSIDE + "/sentinel.txt", "..", "", "/", "a//b", "./meta/sizes",
               "data/./__0.blp", "..\\outside\\sentinel.txt"]
BAD_BLOB_NAMES = ["../" + OUTSIDE + "/sentinel.txt", "sub/000009.blob", "..", ".", ".hidden",
                  "manifest.json", ABS + OUTSIDE + "/sentinel.txt", "", "x/../000009.blob"]
HOSTILE_KINDS = ["fifo", "devzero", "devnull", "loop", "loop2", "sparse", "dir", "remove", "empty"]
MD5_LINES = ["d41d8cd98f00b204e9800998ecf8427e  ../x",
             "d41d8cd98f00b204e9800998ecf8427e  " + ABS + OUTSIDE + "/sentinel.txt",
             "d41d8cd98f00b204e9800998ecf8427e  data/../../" + OUTSIDE + "/sentinel.txt",
             "zz", "d41d8cd98f00b204e9800998ecf8427e data/__0.blp",
             "D41D8CD98F00B204E9800998ECF8427E  __attrs__",
             "d41d8cd98f00b204e9800998ecf8427e  *__attrs__",
             "d41d8cd98f00b204e9800998ecf8427e  __attrs__\r",
             "d41d8cd98f00b204e9800998ecf8427e  ", "  __attrs__",
             "d41d8cd98f00b204e9800998ecf8427e  data",
             "d41d8cd98f00b204e9800998ecf8427e  " + JOURNAL_DIR + "/manifest.json",
             "\xff\xfe  __attrs__", "d41d8cd98f00b204e9800998ecf8427e  " + "x" * 5000]


def hostile_steps(rel: str, kind: str) -> list:
    """Replace ``rel`` (file or folder, existing or not) by a hostile thing."""
    if kind == "fifo":
        return [["fifo", rel]]
    if kind == "devzero":
        return [["symlink", rel, "/dev/zero"]]
    if kind == "devnull":
        return [["symlink", rel, "/dev/null"]]
    if kind == "loop":
        return [["symlink", rel, rel.rsplit("/", 1)[-1]]]
    if kind == "loop2":
        base = rel.rsplit("/", 1)[-1]
        return [["symlink", rel, base + ".loop"], ["symlink", rel + ".loop", base]]
    if kind == "sparse":
        return [["sparse", rel, SPARSE_SIZE]]
    if kind == "dir":
        return [["mkdir", rel]]
    if kind == "remove":
        return [["remove", rel]]
    return [["write", rel, ""]]


def _flat(rel: str) -> str:
    return rel.replace("/", "~") or "root"


def _new_names(src: Source) -> list:
    names = ["junk", "meta/junk", "data/junk", "data/__999.blp", "data/__999.vlen"]
    for col in src.columns[:2]:
        names += [f"{col}/junk", f"{col}/data/__999.blp", f"{col}/data/__999.vlen"]
    return names


def fam_bytes(d: Draw, src: Source):
    files = src.files + ([CHECKSUM_FILE] if src.has_md5 else [])
    rel = d.choice(files, "file")
    n = src.sizes.get(rel, 64)
    kind = d.choice(["truncate", "flip", "splice", "overwrite"], "bytes")
    if kind == "truncate":
        at = d.integer(0, max(n - 1, 0), "size")
        return [["truncate", rel, at]], f"truncate {rel} to {at} of {n} bytes"
    if kind == "flip":
        flips = [[d.integer(0, max(n - 1, 0)), d.integer(0, 7)] for _ in range(d.integer(1, 4))]
        return [["flip", rel, flips]], f"flip bits {flips} of {rel}"
    if kind == "splice":
        other = d.choice(src.files, "source")
        m = src.sizes.get(other, 1)
        at, length, dst = d.integer(0, max(m - 1, 0)), d.integer(1, 64), d.integer(0, n)
        return ([["splice", rel, other, at, length, dst]],
                f"splice {other}[{at}:{at + length}] into {rel} at {dst}")
    at = d.integer(0, n, "at")
    junk = d.binary(1, 32, "junk")
    return [["overwrite", rel, at, junk.hex()]], f"overwrite {rel} at {at} with {junk!r}"


def fam_block_table(d: Draw, src: Source):
    """Lie in a chunk's Blosc block table or in a stream size of a block."""
    blps = [f for f in src.files if f.endswith(".blp") and src.sizes.get(f, 0) > 40]
    if not blps:
        return fam_bytes(d, src)
    rel = d.choice(blps, "file")
    n = src.sizes[rel]
    where = d.choice(["bstart", "stream"], "where")
    value = d.choice([0, -1, -(2**31), 2**31 - 1, 16, 31, 32, 36, n - 16, n - 17, n, n + 4,
                      4, 1, 2**20], "value")
    # bstarts begin at file byte 32 (16-byte bloscpack + 16-byte Blosc header);
    # block 0's first stream size is where bstarts[0] points (file byte 16 + it).
    slot = d.integer(0, 3, "slot")
    data = value.to_bytes(4, "little", signed=True).hex()
    if where == "bstart":
        at = 32 + 4 * slot
        return [["overwrite", rel, min(at, n - 4), data]], \
            f"block start {slot} of {rel} set to {value}"
    return [["stream_size", rel, slot, value]], f"stream size {slot} of block 0 of {rel} := {value}"


def _json_targets(src: Source, rel: str) -> list:
    """(key path, candidate values) pairs for one JSON file."""
    base = rel.rsplit("/", 1)[-1]
    prefix = rel[:-len("meta/sizes")] if rel.endswith("meta/sizes") else \
        rel[:-len("meta/storage")] if rel.endswith("meta/storage") else ""
    meta = src.carrays.get(prefix, {"shape": [0], "chunklen": 1, "itemsize": 8})
    if base == "storage":
        targets = [(["dtype"], DTYPES), (["chunklen"], CHUNKLENS), (["expectedlen"], NBYTES),
                   (["dflt"], DFLTS), (["cparams"], [5, None, [], "x", {}]),
                   (["cparams", "clevel"], CLEVELS), (["cparams", "shuffle"], SHUFFLES),
                   (["cparams", "cname"], CNAMES), (["cparams", "quantize"], QUANTIZE)]
        if isinstance((src.json.get(rel) or {}).get("categorical"), dict):  # codes + categories
            targets += [(["categorical"], VLEN_ENTRIES),
                        (["categorical", "codes"], ["int16", "int8", "uint8", None, 5]),
                        (["categorical", "ordered"], [True, None, "yes"]),
                        (["dtype"], ["category-int8", "category-int16", "category-", "i1"])]
        if isinstance((src.json.get(rel) or {}).get("vlen"), dict):     # items of any length
            targets += [(["vlen"], VLEN_ENTRIES), (["vlen", "kind"], VLEN_KINDS),
                        (["vlen", "level"], CLEVELS + [22, 23, 0]),
                        (["vlen", "nullable"], [False, True, None, 1, "no"]),
                        (["vlen", "codec"], CNAMES), (["vlen", "dictionary"], VLEN_DICTS),
                        (["dtype"], VLEN_DTYPES), (["dflt"], [None, 5, "x", "\udc80", []])]
        return targets
    if base == "sizes":
        n = meta["shape"][0] if meta["shape"] else 0
        shapes = [[2**63], [10**12], [2**62], [2**40], [n, 1], [n, 2**31], [n, 2**28],
                  [n, 2**31 - 1], [n, 1, 1], [n, 0], [0, 2**31], [n, 46341, 46341], [-1],
                  [n + 1], [n * 1000 + 7], [n, 2**20, 2**11], [True], [n, 2**27, 2]]
        return [(["shape"], shapes), (["nbytes"], NBYTES), (["cbytes"], NBYTES)]
    if base == "__rootdirs__":
        names = list(src.columns)
        lists = [names + [r] for r in RESERVED_NAMES] + [names[:1], names * 2, [], [5],
                                                         names + ["../" + OUTSIDE]]
        return [(["names"], lists)]
    keys = sorted(src.json.get(rel) or {}) or ["x"]
    return [([k], ODD_VALUES) for k in keys] + [(["x"], ODD_VALUES)]


def fam_json(d: Draw, src: Source):
    rels = [r for r in src.json if not r.endswith(".blp")]
    rel = d.choice(rels, "json file")
    keys, values = d.choice(_json_targets(src, rel), "key")
    value = d.choice(values if d.integer(0, 3) else ODD_VALUES, "value")
    steps = [["json_set", rel, keys, value]]
    descr = f"set {rel}{''.join(f'[{k!r}]' for k in keys)} = {value!r}"
    if rel.endswith("meta/sizes") and keys == ["shape"] and isinstance(value, list) and value \
            and isinstance(value[0], int) and not isinstance(value[0], bool) \
            and 0 < value[0] <= 10**15 and len(value) == 1 and d.boolean("plant last chunk"):
        # only the first and the promised last chunk files exist
        prefix = rel[:-len("meta/sizes")]
        meta = src.carrays.get(prefix, {"chunklen": None, "nchunks": 0})  # not categories/
        chunklen = meta["chunklen"]
        if isinstance(chunklen, int) and chunklen > 0 and meta["nchunks"]:
            last = -(-value[0] // chunklen) - 1
            ext = ".vlen" if f"{prefix}data/__0.vlen" in src.files else ".blp"
            steps.append(["copy", f"{prefix}data/__0{ext}", f"{prefix}data/__{last}{ext}"])
            descr += f", plant {prefix}data/__{last}{ext} (a copy of __0{ext})"
    return steps, descr


def hidden_object_dtypes(itemsize: int) -> list:
    out = ["[('a', 'O')]", "object"]
    if itemsize % 8 == 0 and itemsize >= 16:
        k = itemsize // 8
        for pos in (0, k - 1):
            fields = [f"('f{i}', '{'O' if i == pos else '<i8'}')" for i in range(k)]
            out.append("[" + ", ".join(fields) + "]")
    elif itemsize > 8:
        out.append(f"[('a', 'O'), ('pad', 'V{itemsize - 8}')]")
    if itemsize % 8 == 0 and itemsize >= 8:
        out.append(f"[('a', 'O', ({itemsize // 8},))]")
    return out


def fam_hidden_object(d: Draw, src: Source):
    prefix = d.choice(sorted(src.carrays), "carray")
    meta = src.carrays[prefix]
    variant = d.choice(["structured", "atom"], "variant")
    if variant == "atom":
        n = meta["shape"][0] if meta["shape"] else 0
        atom = d.choice([[1], [2], [1, 1]], "atom")
        return ([["json_set", prefix + "meta/storage", ["dtype"], "object"],
                 ["json_set", prefix + "meta/storage", ["dflt"], None],
                 ["json_set", prefix + "meta/sizes", ["shape"], [n] + atom]],
                f"object atom: {prefix}meta/storage dtype 'object', meta/sizes shape {[n] + atom}")
    dtype = d.choice(hidden_object_dtypes(meta["itemsize"]), "dtype")
    steps = [["json_set", prefix + "meta/storage", ["dtype"], dtype]]
    if d.boolean("dflt null"):
        steps.append(["json_set", prefix + "meta/storage", ["dflt"], None])
    return steps, f"hide an object dtype: {prefix}meta/storage dtype {dtype!r}"


def fam_hostile_file(d: Draw, src: Source):
    targets = src.files + [CHECKSUM_FILE, "__attrs__"] + _new_names(src) + \
        [x for x in src.dirs if x.endswith(("data", "meta"))]
    rel = d.choice(targets, "target")
    kind = d.choice(HOSTILE_KINDS, "kind")
    return hostile_steps(rel, kind), f"replace {rel} by {kind}"


def fam_symlink_out(d: Draw, src: Source):
    rel = d.choice(src.files + src.dirs, "target")
    is_dir = rel in src.dirs
    variant = d.choice(["same", "sentinel", "other", "within"], "variant")
    absolute = d.boolean("absolute")
    pre = SB if absolute else UP
    out = f"{OUTSIDE}/c-{_flat(rel)}"
    if variant == "same":
        return ([["copy", rel, SB + out], ["symlink", rel, pre + out]],
                f"move {rel} outside (identical copy) and symlink it ({'abs' if absolute else 'rel'})")
    if variant == "sentinel":
        target = f"{OUTSIDE}/folder" if is_dir else f"{OUTSIDE}/{d.choice(['sentinel.bin', 'attrs.json', 'sentinel.txt'])}"
        return [["symlink", rel, pre + target]], f"symlink {rel} to {target}"
    if variant == "other":
        other = d.choice(src.dirs if is_dir else src.files, "other")
        return ([["copy", other, SB + out], ["symlink", rel, pre + out]],
                f"symlink {rel} to an outside copy of {other}")
    other = d.choice(src.dirs if is_dir else src.files, "other")
    return [["symlink", rel, UP + DS + "/" + other]], f"symlink {rel} to {other} (inside)"


def _blob_steps(d: Draw, src: Source, jdir: str, name: str, key: str) -> tuple:
    """Steps creating blob ``name`` for ``key`` in journal folder ``jdir``; (steps, descr, plain)."""
    kind = d.choice(["copy-same", "copy-same", "copy-other", "junk", "fifo", "devzero", "devnull",
                     "dir", "sparse", "link-outside", "link-outside-same", "loop", "missing"],
                    "blob kind")
    rel = f"{jdir}/{name}"
    if kind == "copy-same" and key in src.files:
        return [["copy", key, rel]], "a copy of it", True
    if kind in ("copy-same", "copy-other"):
        other = d.choice(src.files, "blob source")
        return [["copy", other, rel]], f"a copy of {other}", True
    if kind == "junk":
        junk = d.binary(0, 40, "blob bytes")
        return [["writehex", rel, junk.hex()]], f"bytes {junk!r}", True
    if kind == "link-outside":
        target = d.choice(["sentinel.bin", "attrs.json", "sentinel.txt"])
        return [["symlink", rel, SB + f"{OUTSIDE}/{target}"]], f"a symlink to {OUTSIDE}/{target}", False
    if kind == "link-outside-same":
        if key in src.files:
            out = f"{OUTSIDE}/blob-{_flat(key)}"
            return ([["copy", key, SB + out], ["symlink", rel, SB + out]],
                    "a symlink to an outside copy of it", False)
        return [["symlink", rel, SB + f"{OUTSIDE}/attrs.json"]], f"a symlink to {OUTSIDE}/attrs.json", False
    if kind == "missing":
        return [], "missing", False
    hk = {"fifo": "fifo", "devzero": "devzero", "devnull": "devnull", "dir": "dir",
          "sparse": "sparse", "loop": "loop"}[kind]
    return hostile_steps(rel, hk), kind, False


def fam_journal(d: Draw, src: Source):
    """A ``.bcolz_store-journal`` shipped inside the dataset."""
    variant = d.choice(["plain", "plain", "plain", "via-symlinked-folder", "dir-symlink",
                        "manifest-hostile", "tmp-only"], "journal variant")
    steps, descr, plain = [], [], True
    jdir = JOURNAL_DIR
    if variant == "dir-symlink":
        jdir = SB + f"{OUTSIDE}/journal"
        steps.append(["symlink", JOURNAL_DIR, UP + f"{OUTSIDE}/journal"])
        descr.append(f"{JOURNAL_DIR} -> {OUTSIDE}/journal")
        plain = False
    entries = []
    if variant == "via-symlinked-folder":
        folders = [x for x in src.dirs if "/" not in x or x.endswith(("/data", "/meta"))]
        folder = d.choice(folders, "folder")
        out = f"{OUTSIDE}/c-{_flat(folder)}"
        steps += [["copy", folder, SB + out], ["symlink", folder, UP + out]]
        inside = [f for f in src.files if f.startswith(folder + "/")] or [folder + "/x"]
        if d.boolean("delete"):
            key = d.choice(inside, "key")
            entries.append([key, None])
            descr.append(f"{folder} -> {out}; manifest deletes {key}")
        else:
            key = d.choice([folder + "/__77.blp", folder + "/new"] + inside, "key")
            bsteps, what, _ = _blob_steps(d, src, jdir, "000001.blob", key)
            steps += bsteps
            entries.append([key, "000001.blob"])
            descr.append(f"{folder} -> {out}; manifest writes {key} = {what}")
        plain = False
    else:
        for i in range(d.integer(1, 3, "entries")):
            key = d.choice(src.files + src.files + ESCAPE_KEYS + _new_names(src) +
                           [CHECKSUM_FILE, "__attrs__", JOURNAL_DIR + "/manifest.json"], "key")
            if key in ESCAPE_KEYS or key.startswith(JOURNAL_DIR):
                plain = False
            if d.integer(0, 3, "delete?") == 0:
                entries.append([key, None])
                descr.append(f"delete {key!r}")
                continue
            name = f"{i + 1:06d}.blob"
            if d.integer(0, 5, "bad name?") == 0:
                name = d.choice(BAD_BLOB_NAMES, "blob name")
                plain = False
                entries.append([key, name])
                descr.append(f"{key!r} <- blob named {name!r}")
                continue
            bsteps, what, ok = _blob_steps(d, src, jdir, name, key)
            plain = plain and ok
            steps += bsteps
            entries.append([key, name])
            descr.append(f"{key!r} <- {what}")
    manifest_name = "manifest.tmp" if variant == "tmp-only" else \
        d.choice(["manifest.json", pending_record_name(src)], "record name")
    text = json.dumps(entries)
    if variant == "manifest-hostile":
        kind = d.choice(["fifo", "devzero", "devnull", "loop", "sparse", "dir", "junk",
                         "link-outside", "not-a-list", "deep"], "manifest kind")
        mrel = f"{jdir}/manifest.json"
        if kind == "junk":
            steps.append(["write", mrel, text[: d.integer(0, len(text))] + "\x00{"])
        elif kind == "link-outside":
            steps += [["write", SB + f"{OUTSIDE}/manifest.json", text],
                      ["symlink", mrel, SB + f"{OUTSIDE}/manifest.json"]]
        elif kind == "not-a-list":
            steps.append(["write", mrel, json.dumps({"entries": entries})])
        elif kind == "deep":
            steps.append(["write", mrel, "[" * 50000 + "]" * 50000])
        else:
            steps += [["mkdir", jdir]] + hostile_steps(mrel, kind)
        descr.append(f"manifest.json is {kind}")
        plain = False
    else:
        steps.append(["write", f"{jdir}/{manifest_name}", text])
    if variant == "tmp-only":
        descr.append("(only manifest.tmp: uncommitted)")
    if plain and src.has_md5 and jdir == JOURNAL_DIR and d.boolean("consistent"):
        steps.append(["md5_for_manifest", JOURNAL_DIR, "000099.blob"])
        descr.append("with a matching checksum-file blob (a consistent commit)")
    return steps, "shipped journal: " + "; ".join(descr)


def fam_reserved(d: Draw, src: Source):
    if src.kind != "ctable":
        return fam_json(d, src)
    name = d.choice(RESERVED_NAMES, "reserved")
    col = d.choice(src.columns, "column")
    variant = d.choice(["append-copy", "rename", "names-only"], "variant")
    names = list(src.columns)
    steps = []
    if variant == "append-copy":
        names.append(name)
        steps.append(["copy", col, name])
    elif variant == "rename":
        names[names.index(col)] = name
        steps.append(["move", col, name])
    else:
        names.append(name)
    steps += [["json_set", "__rootdirs__", ["names"], names],
              ["expect_failure", f"__rootdirs__ names the reserved {name!r}"]]
    return steps, f"__rootdirs__ names {names} ({variant} of column {col!r} as {name!r})"


def fam_checksum(d: Draw, src: Source):
    variant = d.choice(["hostile", "hostile", "line", "line", "digest", "listed-hostile",
                        "truncate", "remove"], "checksum variant")
    if variant == "hostile":
        kind = d.choice(HOSTILE_KINDS, "kind")
        return hostile_steps(CHECKSUM_FILE, kind), f"replace {CHECKSUM_FILE} by {kind}"
    if variant == "line":
        line = d.choice(MD5_LINES, "line")
        return [["append", CHECKSUM_FILE, line + "\n"]], f"append line {line[:80]!r} to {CHECKSUM_FILE}"
    if variant == "digest":
        key = d.choice(src.files, "key")
        digest = d.choice(["0" * 32, "d41d8cd98f00b204e9800998ecf8427e", "zz"], "digest")
        return [["md5_set", key, digest]], f"{CHECKSUM_FILE} records {digest} for {key}"
    if variant == "listed-hostile":
        rel = d.choice(["extra", "data/__500.blp"] + src.files, "file")
        kind = d.choice(["fifo", "devzero", "sparse", "loop", "dir"], "kind")
        return (hostile_steps(rel, kind) + [["md5_set", rel, "d41d8cd98f00b204e9800998ecf8427e"]],
                f"{rel} is a {kind}, listed in {CHECKSUM_FILE}")
    if variant == "truncate":
        at = d.integer(0, max(src.sizes.get(CHECKSUM_FILE, 200), 200), "size")
        return [["truncate", CHECKSUM_FILE, at]], f"truncate {CHECKSUM_FILE} to {at} bytes"
    return [["remove", CHECKSUM_FILE]], f"remove {CHECKSUM_FILE}"


def fam_consolidated(d: Draw, src: Source):
    """The consolidated metadata file (bcolz_store-written datasets): damaged, lying
    about the generation or the metadata, or replaced by something else.  Local
    readers take the metadata from the bcolz files, so reads must stay exact."""
    if not (src.path / CONSOLIDATED_FILE).is_file():
        return fam_checksum(d, src)         # bcolz wrote it: there is none
    variant = d.choice(["hostile", "truncate", "generation", "files", "junk", "remove"],
                       "consolidated variant")
    if variant == "hostile":
        kind = d.choice(HOSTILE_KINDS, "kind")
        return hostile_steps(CONSOLIDATED_FILE, kind), f"replace {CONSOLIDATED_FILE} by {kind}"
    if variant == "truncate":
        at = d.integer(0, 300, "size")
        return [["truncate", CONSOLIDATED_FILE, at]], f"truncate {CONSOLIDATED_FILE} to {at}"
    if variant == "generation":
        value = d.choice([-1, 0, 10 ** 12, 2 ** 63, "1", None, 1.5, [1]], "generation")
        return ([["json_set", CONSOLIDATED_FILE, ["generation"], value]],
                f"{CONSOLIDATED_FILE} generation = {value!r}")
    if variant == "files":
        key = d.choice([f for f in src.files if not f.endswith(".blp")] + ["../x", "data/__0.blp"],
                       "key")
        value = d.choice(['{"shape": [1], "nbytes": 8, "cbytes": 8}\n', "", 5, None], "text")
        return ([["json_set", CONSOLIDATED_FILE, ["files", key], value]],
                f"{CONSOLIDATED_FILE} files[{key!r}] = {value!r}")
    if variant == "junk":
        return [["write", CONSOLIDATED_FILE, "{\x00junk"]], f"{CONSOLIDATED_FILE} is junk"
    return [["remove", CONSOLIDATED_FILE]], f"remove {CONSOLIDATED_FILE}"


STATS = "meta/stats"
# Plan steps that may put a well-formed statistics file where it lies: a copy of
# another, a link to one, a shipped journal's blob, a recomputed md5 (forgeries).
FORGING = ("copy", "symlink", "move", "md5_for_manifest")
STATS_VALUES = [0, 1, -1, 10 ** 6, -(10 ** 30), 10 ** 30, 2 ** 63, 2 ** 64, 10 ** 400, 1.5,
                1e308, -1e308, "inf", "-inf", "nan", None, True, False, "x", "\u00e9\U0001f600",
                "", [1], {}, [[[]]], {"a": [None]}, "\udc80", "a" * 5000]
STATS_FIELDS = ["md5", "stats", "kind", "chunklen", "length", "chunks", "extra"]
STATS_KINDS = ["<f8", "<i8", ">i4", "|b1", "<M8[ns]", "|S5", "<U3", "vlen:str", "vlen:bytes",
               "category:<i4", "category:|S1", "<c16", "O", "V8", "<U0", "x", "", "vlen:",
               "[('a', '<i8')]"]


def _is_stats(rel: str) -> bool:
    """A file derived from the items (chunk statistics, an index), which a
    damage must never make a query use."""
    return rel == STATS or rel.endswith("/" + STATS) or \
        re.search(r"(^|/)index/(meta|__\d+\.idx)$", rel) is not None


def fam_stats(d: Draw, src: Source):
    """A chunk statistics file: damaged (its numbers, counts, kind, nesting,
    bytes, or a hostile file in its place), forged (the md5 field recomputed:
    well-formed lies, which only verify=True may refuse), or swapped with
    another column's."""
    files = [f for f in src.files if _is_stats(f)]
    if not files:
        return fam_json(d, src)
    rel = d.choice(files, "stats file")
    variant = d.choice(["entry", "entry", "field", "junk", "hostile", "swap"], "stats variant")
    reseal = d.boolean("reseal")
    body = src.json.get(rel) or {}
    nchunks = len(body.get("chunks") or []) or 1
    if variant == "entry":
        n, i = d.integer(0, nchunks - 1, "chunk"), d.integer(0, 2, "slot")
        value = d.choice(STATS_VALUES, "value")
        return ([["stats_set", rel, ["chunks", n, i], value, reseal]],
                f"{rel} chunk {n}[{i}] = {str(value)[:40]!r}{' (md5 recomputed)' * reseal}")
    if variant == "field":
        key = d.choice(STATS_FIELDS, "field")
        value = d.choice(STATS_KINDS if key == "kind" else STATS_VALUES + ODD_VALUES, "value")
        return ([["stats_set", rel, [key], value, reseal]],
                f"{rel} {key} = {str(value)[:40]!r}{' (md5 recomputed)' * reseal}")
    if variant == "junk":
        text = d.choice(['{"chunks": ' + "[" * 60000 + "]" * 60000 + "}", "\u00e9\x00{",
                         '{"md5": "", "stats": 1, "kind": "<f8", "chunklen": 1, "length": '
                         '100000000000, "chunks": []}', "1e999999", "[" * 10, "", "{}"],
                        "junk")
        return [["write", rel, text]], f"{rel} is {text[:40]!r}"
    if variant == "hostile":
        kind = d.choice(HOSTILE_KINDS, "kind")
        return hostile_steps(rel, kind), f"replace {rel} by {kind}"
    other = d.choice(files, "other")
    return [["copy", other, rel]], f"{rel} replaced by a copy of {other}"


FAMILIES = {
    "bytes": (fam_bytes, 5), "json": (fam_json, 4), "hostile_file": (fam_hostile_file, 3),
    "symlink_out": (fam_symlink_out, 2), "hidden_object": (fam_hidden_object, 1),
    "journal": (fam_journal, 3), "reserved": (fam_reserved, 1), "checksum": (fam_checksum, 2),
    "consolidated": (fam_consolidated, 1), "block_table": (fam_block_table, 2),
    "stats": (fam_stats, 2),
}
_WEIGHTED = [name for name, (_, w) in FAMILIES.items() for _ in range(w)]


def draw_family(d) -> str:
    return d.choice(_WEIGHTED + ["combo"], "family")


def draw_plan(d, src: Source, family: str = None):
    """One drawn mutation of ``src``: (plan, one-line description)."""
    family = family or draw_family(d)
    if family == "combo":
        plan, descr = [], []
        for _ in range(2):
            p, s = FAMILIES[d.choice(_WEIGHTED, "family")][0](d, src)
            plan += p
            descr.append(s)
        return plan, " + ".join(descr)
    return FAMILIES[family][0](d, src)


def choose_source(d, sources: list, family: str = None) -> Source:
    """About half of the cases use data bcolz wrote; reserved names need a ctable."""
    if family == "reserved" and any(s.kind == "ctable" for s in sources):
        sources = [s for s in sources if s.kind == "ctable"]
    if family == "stats":           # (datasets bcolz wrote have no statistics)
        sources = [s for s in sources if any(_is_stats(f) for f in s.files)] or sources
    bcolz = [s for s in sources if s.bcolz_written]
    store = [s for s in sources if not s.bcolz_written]
    pool = d.choice([bcolz, store], "origin") if bcolz and store else sources
    return d.choice(pool, "source")


# =============================================================================
# The worker (child process)
# =============================================================================

_AUDIT = {"on": False, "sandbox": "", "root": "", "events": []}
_MODIFY_EVENTS = {"os.rename": 2, "os.remove": 1, "os.rmdir": 1, "os.mkdir": 1, "os.symlink": 2,
                  "os.link": 2, "os.truncate": 1, "os.chmod": 1, "os.chown": 1, "os.utime": 1,
                  "os.mkfifo": 1, "os.mknod": 1, "shutil.rmtree": 1, "shutil.copyfile": 2,
                  "shutil.move": 2}


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip("/") + "/")


def _audit_hook(event, args):
    rec = _AUDIT
    if not rec["on"] or (event != "open" and event not in _MODIFY_EVENTS):
        return
    rec["on"] = False               # no recursion through realpath
    try:
        if event == "open":
            path, mode, flags = args
            write = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
            if isinstance(flags, int) and flags & os.O_NOFOLLOW and \
                    isinstance(path, (str, bytes, os.PathLike)) and os.path.islink(path):
                return                  # fails (ELOOP): a link it may not follow is not read
            paths, kind = [path], ("write" if write else "read")
        else:
            n = _MODIFY_EVENTS[event]
            paths, kind = list(args[:n]), "modify"
            if event in ("os.symlink", "os.link", "shutil.copyfile", "shutil.move"):
                paths = paths[1:]               # only the created path
            if event == "os.rename":
                kind = "rename"
        for path in paths:
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not isinstance(path, (str, os.PathLike)):
                continue
            path = os.path.abspath(os.fspath(path))
            if not _inside(path, rec["sandbox"]):
                continue
            if kind in ("read", "write") or event == "shutil.rmtree":
                real = os.path.realpath(path)
            else:                       # the name itself is changed, not what a link points to
                real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
            if kind == "read" and os.path.isdir(real):
                continue                # a folder opened (to fsync it) serves no data
            if not _inside(real, rec["root"]):
                rec["events"].append([kind, event, path, real])
    except Exception:
        pass
    finally:
        rec["on"] = True


def _jdump(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=repr)


def _digest_array(a) -> str:
    import numpy as np
    a = np.asarray(a)
    h = hashlib.md5(f"{a.dtype.str}|{a.dtype.descr if a.dtype.names else ''}|{a.shape}".encode())
    if a.dtype.hasobject:
        h.update(repr(a.tolist()).encode())
    else:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def read_all(obj) -> dict:
    """Read every value, attribute and iteration of an open carray/ctable; a digest."""
    import bcolz_store
    out = {"attrs": _jdump(obj.attrs.getall()), "len": len(obj)}
    if isinstance(obj, bcolz_store.ctable):
        out["names"] = list(obj.names)
        for name in obj.names:
            col = obj.cols[name]
            points = _points(col)   # first: block-level reads of chunks not yet decoded
            out["col:" + name] = [_digest_array(col[:]), _jdump(col.attrs.getall()), points]
        # a table without columns has no rows to read (its API raises KeyError there)
        out["rows"] = _digest_array(obj[:]) if obj.names else None
        items = [tuple(row) for row in obj.iter()] if obj.names else []
    else:
        out["dtype"], out["shape"] = str(obj.dtype), list(obj.shape)
        out["points"] = _points(obj)   # first: block-level reads of chunks not yet decoded
        out["values"] = _digest_array(obj[:])
        items = list(obj.iter())
        if len(obj):
            out["last"] = repr(obj[len(obj) - 1])
    try:
        blob = pickle.dumps(items, protocol=4)
    except Exception:
        blob = repr(items).encode()
    out["iter"] = md5_bytes(blob)
    from tests.stats_check import index_lies, stats_lies
    out["stats_lies"] = stats_lies(obj)     # chunk statistics a query would use, that lie
    out["stats_lies"] += index_lies(obj)    # and queries through indexes that differ
    return out


def _points(obj) -> str:
    """A digest of single items and short slices read from spread positions
    (the reads that decode only the Blosc blocks they need)."""
    n = len(obj)
    if not n or getattr(obj, "dtype", None) is None or obj.dtype.kind == "O":
        return ""
    meta = getattr(obj, "_meta", None)     # vlen and categorical columns: not Blosc blocks
    from bcolz_store.kinds.category.meta import CategoryLayout
    from bcolz_store.kinds.vlen.meta import VlenMeta
    if meta is None or isinstance(meta.kind, (VlenMeta, CategoryLayout)):
        return ""
    spots = sorted({0, n // 7, n // 3, n // 2, (2 * n) // 3, n - 1})
    parts = [repr(obj[i]) for i in spots]
    parts += [_digest_array(obj[i:i + 5]) for i in spots[:4]]
    parts.append(_digest_array(obj[[spots[k % len(spots)] for k in (1, 3, 2)]]))
    return md5_bytes("|".join(parts).encode())


def _append_one(obj) -> None:
    import numpy as np
    import bcolz_store
    n = len(obj)
    if isinstance(obj, bcolz_store.ctable):
        if obj.names:                   # nothing to append to a table without columns
            row = obj[n - 1:] if n else np.zeros(1, dtype=obj.dtype)
            for name in obj.names:      # an empty item for columns of items of any length
                vlen = getattr(obj.cols[name], "vlen", None)
                if vlen is not None and not n:
                    row[name] = "" if vlen.kind == "str" else b""
            obj.append(row)
    elif getattr(obj, "vlen", None) is not None:
        obj.append(obj[n - 1:] if n else ["" if obj.vlen.kind == "str" else b""])
    elif obj.dtype.kind == "O":
        item = np.empty(1, dtype=object)
        item[0] = obj[n - 1] if n else "fuzz"
        obj.append(item)
    else:
        obj.append(obj[n - 1:] if n else np.zeros((1,) + tuple(obj.shape[1:]), dtype=obj.dtype))


def _close(obj) -> None:
    close = getattr(obj, "close", None)
    if close is not None:
        close()


def _do_op(req: dict) -> dict:
    import bcolz_store
    op, root = req["op"], req["root"]
    out = {}
    if op in ("read", "read_pickle", "read_verify"):
        obj = bcolz_store.open(root, mode="r", verify=op == "read_verify",
                               allow_pickle=req.get("allow_pickle", op != "read"))
        try:
            out["digest"] = read_all(obj)
        finally:
            _close(obj)
    elif op == "verify_fn":
        report = bcolz_store.verify(root)
        out["report_ok"] = bool(report.ok)
        out["problems"] = [list(p) for p in report.problems()[:6]]
    elif op == "write":
        obj = bcolz_store.open(root, mode="a", allow_pickle=True)
        out["len_before"] = len(obj)
        obj.attrs["fuzz"] = 1
        _append_one(obj)
        obj.flush()
        _close(obj)
        obj = bcolz_store.open(root, mode="r", allow_pickle=True)
        try:
            out["digest"] = read_all(obj)
        finally:
            _close(obj)
    else:                               # packs, unpacking, conversions (tests/hostile/round3.py)
        from tests.hostile import round3
        return round3.do_op(req)
    return out


def _worker_main() -> None:
    import faulthandler
    import resource
    import traceback
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                       # prints from the library go to stderr, not the protocol
    faulthandler.enable()
    for limit, value in ((resource.RLIMIT_AS, WORKER_MEMORY), (resource.RLIMIT_FSIZE, WORKER_FILESIZE)):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a too-large write fails instead of killing
    import numpy  # noqa: F401
    import bcolz_store
    from bcolz_store.errors import BcolzStoreError
    from bcolz_store.chunks import engine
    engine.BLOCK_READ_MIN_BYTES = 0     # the fixtures' small chunks are read by blocks too
    if os.environ.get("BCOLZ_STORE_FUZZ_FSYNC", "0") != "1":    # as tests/conftest.py does
        from bcolz_store.storage.journal import Journal
        Journal.fsync_default = False
    sys.addaudithook(_audit_hook)
    proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        req = json.loads(line)
        answer = {"result": "ok"}
        restart = False
        _AUDIT.update(sandbox=os.path.abspath(req.get("sandbox", req["root"])),
                      root=os.path.realpath(req["root"]), events=[], on=True)
        try:
            answer.update(_do_op(req))
        except BcolzStoreError as err:
            answer = {"result": "error", "type": type(err).__name__, "message": str(err)[:600]}
        except MemoryError as err:
            answer = {"result": "memory", "type": "MemoryError", "message": str(err)[:300],
                      "traceback": traceback.format_exc()[-1500:]}
            restart = True
        except BaseException as err:  # anything else is a finding
            answer = {"result": "foreign", "type": type(err).__name__, "message": str(err)[:600],
                      "traceback": traceback.format_exc()[-2500:]}
        finally:
            _AUDIT["on"] = False
        answer["outside"] = _AUDIT["events"][:8]
        answer["code_env"] = os.environ.pop("BCOLZ_STORE_FUZZ_CODE", None)   # set by hostile pickles
        proto.write(json.dumps(answer, default=repr) + "\n")
        if restart:
            break


def worker_env() -> dict:
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=str(REPO) + (os.pathsep + path if path else ""),
                BLOSC_NTHREADS="1", PYTHONDONTWRITEBYTECODE="1")


class Worker:
    """The persistent worker subprocess; restarted after a crash, hang or MemoryError."""

    def __init__(self, logdir: Path, cwd: Path):
        self.logdir, self.cwd = Path(logdir), Path(cwd)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.proc = None
        self.starts = 0
        self.errfile = None

    def start(self) -> None:
        self.starts += 1
        self.errfile = open(self.logdir / f"worker-{self.starts}.stderr", "w+b")
        self.proc = subprocess.Popen([sys.executable, str(HERE), "--worker"], env=worker_env(),
                                     cwd=str(self.cwd), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.errfile)
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.stop()
            raise RuntimeError(f"the worker did not start: {self._stderr()}")

    def _stderr(self) -> str:
        if self.errfile is None:
            return ""
        self.errfile.flush()
        self.errfile.seek(0)
        return self.errfile.read().decode(errors="replace")[-2000:]

    def call(self, req: dict, timeout: float = OP_TIMEOUT) -> dict:
        """The worker's answer to ``req``, or a crash / hang / memory outcome."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return {"result": "hang", "type": "timeout",
                    "message": f"no answer within {timeout:g} s (worker killed)"}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        answer = json.loads(line)
        if answer.get("result") == "memory":
            self.stop()
        return answer

    def _died(self) -> dict:
        rc = self.proc.wait()
        err = self._stderr()
        self.proc = None
        if rc < 0:
            name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
            result = "memory" if -rc == signal.SIGKILL else "crash"
            return {"result": result, "type": name, "message": f"worker killed by {name}",
                    "traceback": err[-1500:]}
        return {"result": "crash", "type": f"exit {rc}", "message": f"worker exited with status {rc}",
                "traceback": err[-1500:]}

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
            self.proc = None


# =============================================================================
# Running a case and judging it
# =============================================================================

@dataclass
class Effects:
    """What a plan did to the dataset, as far as the judgement needs.

    A reader in mode 'r' sees a committed manifest shipped in the dataset as the
    current state, so a file counts as *touched* when its content as such a reader
    would find it differs from what was written: changed on disk and not restored
    by a manifest blob, or deleted / replaced by a manifest.  Manifest entries a
    reader may legitimately skip (unsafe names, missing or non-regular blobs) make
    the state *uncertain*: then only the data read back is judged.
    """

    touched: set           # bcolz files whose content changed, as a reader sees it
    disk_changed: set      # bcolz files changed on disk (what verify() checks)
    uncertain: bool        # a shipped manifest whose effect is not determined
    md5_touched: bool      # the checksum file changed (or a manifest replaces it)
    must_fail: bool        # the dataset must be refused (reserved names)
    consistent_commit: bool  # a shipped, consistent commit: the new state is legitimate
    stats_only: bool = False  # only chunk statistics damaged, none forged: never used

    @property
    def pristine(self) -> bool:
        """Readers must return exactly what was written."""
        return not (self.touched or self.disk_changed or self.uncertain or
                    self.consistent_commit or self.must_fail)


def pending_record_name(src) -> str:
    """The commit record a writer of this version would create next in ``src``
    (``commit-<generation + 1>.json``): a shipped one is a pending commit."""
    return f"commit-{getattr(src, 'generation', 0) + 1:012d}.json"


def _manifest_path(ds: Path) -> Path:
    """The shipped commit record of ds: the pending generation's, else manifest.json."""
    consolidated = ds / CONSOLIDATED_FILE
    try:
        if os.path.lexists(consolidated):
            st = os.stat(consolidated)      # never open a FIFO or a device here
            if not stat.S_ISREG(st.st_mode) or st.st_size > HASH_LIMIT:
                raise ValueError("not a plain file")
            generation = json.loads(consolidated.read_text())["generation"]
        else:
            generation = 0                  # a dataset bcolz wrote: no commit yet
        pending = ds / JOURNAL_DIR / f"commit-{int(generation) + 1:012d}.json"
        if os.path.lexists(pending):
            return pending
    except Exception:
        pass
    return ds / JOURNAL_DIR / "manifest.json"


def _manifest_entries(ds: Path):
    """The entries of a committed manifest shipped in ds (read leniently), or None."""
    manifest = _manifest_path(ds)
    try:
        st = os.stat(manifest)
        if not stat.S_ISREG(st.st_mode) or st.st_size > HASH_LIMIT:
            return None
        entries = json.loads(manifest.read_text())
    except Exception:
        return None
    return entries if isinstance(entries, list) else None


def effects_of(ds: Path, src: Source, plan: list) -> Effects:
    disk = {rel for rel in src.files if file_state(ds / rel) != src.states[rel]}
    md5_touched = file_state(ds / CHECKSUM_FILE) != src.states[CHECKSUM_FILE]
    touched, uncertain = set(disk), False
    entries = _manifest_entries(ds)
    if entries is None and os.path.lexists(_manifest_path(ds)):
        uncertain = True                    # a manifest that is not a readable JSON list
    for entry in entries or []:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            uncertain = True
            continue
        key, blob = entry
        if key == CHECKSUM_FILE:
            md5_touched = True
            continue
        if key not in src.states:
            uncertain = uncertain or blob is not None
            continue
        if blob is None:
            touched.add(key)
            continue
        if not isinstance(blob, str) or "/" in blob or blob in ("", ".", "..") or blob.startswith("."):
            uncertain = True
            continue
        path = ds / JOURNAL_DIR / blob
        if not os.path.lexists(path):
            continue                        # roll-forward: already moved, the disk file counts
        state = file_state(path)
        if state[0] != "reg":
            uncertain = True                # a reader may refuse it or fall back to the disk file
            touched.discard(key)
        elif state == src.states[key]:
            touched.discard(key)            # the blob restores what was written
        else:
            touched.add(key)
    stats_only = bool(touched) and all(_is_stats(k) for k in touched) and not uncertain \
        and not entries and not any(s[0] in FORGING or s[0] == "stats_set" and s[4]
                                    for s in plan)
    return Effects(touched, disk, uncertain, md5_touched,
                   any(s[0] == "expect_failure" for s in plan),
                   any(s[0] == "md5_for_manifest" for s in plan), stats_only)


@dataclass
class OpResult:
    op: str
    outcome: str
    detail: str = ""


@dataclass
class CaseResult:
    source: str
    bcolz_written: bool
    plan: list
    descr: str
    ops: list = field(default_factory=list)        # OpResult
    findings: list = field(default_factory=list)   # one-line strings

    def replay(self) -> str:
        return json.dumps({"source": self.source, "plan": self.plan})


def judge(op: str, ans: dict, src: Source, eff: Effects, changes: list) -> tuple:
    """(outcome, detail) of one operation."""
    result = ans.get("result", "crash")
    outside = ans.get("outside") or []
    writes = [e for e in outside if e[0] != "read"]
    what = f"{ans.get('type', '')}: {ans.get('message', '')}".strip(": ")
    if changes or writes:
        return "escape", ("changed outside the dataset: " + "; ".join(changes[:4]) if changes
                          else f"wrote outside the dataset: {writes[:3]}") + (f" [{what}]" if what else "")
    if result in ("crash", "hang", "memory", "foreign"):
        tb = ans.get("traceback", "")
        tail = " | ".join(line.strip() for line in tb.strip().splitlines()[-6:]) if tb else ""
        return result, what + (f" || {tail}" if tail else "")
    if result != "ok":
        return result, what
    if op in DATA_OPS and outside:
        return "escape", f"read a file outside the dataset: {outside[:3]}"
    if eff.must_fail and op != "verify_fn":
        return "silent_wrong", "accepted a dataset that must be refused (expect_failure)"
    digest = ans.get("digest")
    checked = src.has_md5 and not eff.md5_touched and not eff.consistent_commit
    if op == "read_verify" and checked:
        if eff.touched:
            return "silent_wrong", (f"verify=True read changed files {sorted(eff.touched)[:5]} "
                                    f"without an error")
        if digest != src.expected:
            return "silent_wrong", ("verify=True returned data different from what was written: "
                                    + _diff(digest, src.expected))
    if op in ("read", "read_pickle", "read_verify") and eff.pristine and digest != src.expected:
        return "silent_wrong", f"unchanged data read back differently: {_diff(digest, src.expected)}"
    if op == "verify_fn" and checked and eff.disk_changed and ans.get("report_ok"):
        return "silent_wrong", f"verify() reported ok although {sorted(eff.disk_changed)[:5]} changed"
    lies = digest.get("stats_lies") if isinstance(digest, dict) else None
    if op in DATA_OPS and lies and (eff.pristine or eff.stats_only):
        return "silent_wrong", (f"chunk statistics that do not describe the items would be "
                                f"used by a query: {lies[:2]}")
    if op == "write" and eff.pristine and digest and digest.get("len") != src.expected["len"] + 1:
        return "silent_wrong", (f"after appending one row, length {digest.get('len')} "
                                f"(was {src.expected['len']})")
    return "ok", ""


def _diff(a, b) -> str:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return f"{a!r} != {b!r}"
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(f"{k}: {str(a.get(k))[:60]} != {str(b.get(k))[:60]}" for k in keys[:4])


def _link_targets(ds: Path, sandbox: Path) -> list:
    """Absolute targets outside the sandbox of the symlinks in ds (devices)."""
    out = []
    for folder, dirs, files in os.walk(ds):
        for name in dirs + files:
            full = os.path.join(folder, name)
            if os.path.islink(full):
                target = os.readlink(full)
                if os.path.isabs(target) and not _inside(target, str(sandbox)):
                    out.append(target)
    return sorted(set(out))


def run_case(worker: Worker, src: Source, plan: list, descr: str, sandbox: Path,
             ops=None, stop_at_first=False, keep=False) -> CaseResult:
    """Copy ``src`` into ``sandbox``, apply ``plan``, run the operations, judge them."""
    res = CaseResult(src.name, src.bcolz_written, plan, descr)
    if sandbox.exists():
        shutil.rmtree(sandbox)
    sandbox.mkdir(parents=True)
    ds = sandbox / DS
    shutil.copytree(src.path, ds, symlinks=True)
    make_outside(sandbox)
    try:
        skipped = Planner(sandbox).apply(plan)
        if skipped:
            res.descr = descr = descr + f" (steps skipped: {'; '.join(skipped)})"
        eff = effects_of(ds, src, plan)
        targets = _link_targets(ds, sandbox)
        watched = [sandbox, worker.cwd]

        def snap():
            return snapshot(watched, skip=[ds], targets=targets)

        before = snap()
        queue = list(ops or ["read", "read_verify", "verify_fn", "write"])
        while queue:
            op = queue.pop(0)
            req = {"op": op, "root": str(ds), "sandbox": str(sandbox)}
            ans = worker.call(req)
            after = snap()
            changes = diff_snapshots(before, after)
            before = after
            outcome, detail = judge(op, ans, src, eff, changes)
            res.ops.append(OpResult(op, outcome, detail))
            if op == "read" and ans.get("type") == "UnsafeDataError" and "read_pickle" not in queue:
                queue.insert(0, "read_pickle")
            if outcome in FINDINGS:
                res.findings.append(f"[{outcome}] source={src.name} op={op} mutation: {descr} "
                                    f":: {detail[:900]}\n    replay: BCOLZ_STORE_FUZZ_REPLAY="
                                    f"{shlex.quote(res.replay())}")
                if stop_at_first:
                    break
    finally:
        if not keep:
            shutil.rmtree(sandbox, ignore_errors=True)
    return res


def summary_line(cases: int, from_bcolz: int, counts: dict) -> str:
    return (f"fuzz: {cases} cases ({from_bcolz} from bcolz-written data); " +
            ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES))


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker_main()
    elif "--make-sources" in sys.argv:
        target = Path(sys.argv[sys.argv.index("--make-sources") + 1])
        print(json.dumps(make_sources(target)))
