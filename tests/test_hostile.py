"""Hostile files: damaged or malicious datasets raise bcolz_store errors, never crash or hang.

Each named case damages one file of a small dataset and asserts the error
class and that the message names the damaged file.  The fuzzer mutates
copies of the bcolz-written fixtures (truncation, bit flips, splices, odd
JSON values) and reads them in a worker process with a time limit, so a
segfault, a hang or a huge allocation (the worker runs under an address
space limit) is caught and reported with the mutation that caused it.

``BCOLZ_STORE_FUZZ_CASES`` sets the number of fuzz cases (default 200).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import struct
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import (BcolzStoreError, ChunkNotFoundError, CodecError,
                                DatasetNotFoundError, FormatError, IntegrityError)
from tests.conftest import OWN_NAMES, bcolz_files

FUZZ_CASES = int(os.environ.get("BCOLZ_STORE_FUZZ_CASES", 200))
CASE_TIMEOUT = 20.0         # seconds a worker may spend on one case
WORKER_MEMORY = 3 << 30     # address space limit of the worker (bytes)

UnsafeDataError = getattr(bcolz_store.errors, "UnsafeDataError", None)
has_verify = hasattr(bcolz_store, "verify")


# --- helpers ---------------------------------------------------------------------

def read_everything(obj) -> None:
    """Read every value and attribute of an opened carray or ctable."""
    obj.attrs.getall()
    if isinstance(obj, bcolz_store.ctable):
        for name in obj.names:
            obj.cols[name][:]
            obj.cols[name].attrs.getall()
        obj[:]
    else:
        obj[:]
        for _ in obj.iter(0, len(obj), 1):
            pass


def open_and_read(path, **kwargs):
    obj = bcolz_store.open(str(path), mode=kwargs.pop("mode", "r"), **kwargs)
    read_everything(obj)
    return obj


def expect_error(path, cls, *names, **kwargs) -> BcolzStoreError:
    """Open and read ``path``; assert it raises ``cls`` naming each of ``names``."""
    with pytest.raises(cls) as info:
        open_and_read(path, **kwargs)
    assert isinstance(info.value, BcolzStoreError), type(info.value).__mro__
    message = str(info.value)
    for name in names:
        assert str(name) in message, f"{name!r} not named in: {message}"
    return info.value


def expect_error_within_memory(path, cls, *names, limit=64 << 20, **kwargs) -> BcolzStoreError:
    """:func:`expect_error`, and assert that reading allocated less than ``limit`` bytes."""
    tracemalloc.start()
    try:
        err = expect_error(path, cls, *names, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < limit, f"{peak} bytes allocated while reading {path}"
    return err


def make_carray(root: Path, n=35, chunklen=10, dtype="i8") -> Path:
    """A carray with n // chunklen full chunks and a leftover (files __0 .. __3)."""
    bcolz_store.carray(np.arange(n, dtype=dtype), chunklen=chunklen, rootdir=str(root), mode="w")
    return root


def make_ctable(root: Path, n=25, chunklen=10) -> Path:
    bcolz_store.ctable([np.arange(n), np.arange(n) * 0.5], names=["a", "b"], chunklen=chunklen,
                       rootdir=str(root), mode="w")
    return root


def blosc_header_offset() -> int:
    return 16       # after the bloscpack header


def patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))


def set_json(path: Path, **fields) -> None:
    obj = json.loads(path.read_text())
    obj.update(fields)
    path.write_text(json.dumps(obj) + "\n")


def write_checksums(root: Path) -> None:
    """Write ``bcolz_store.md5`` for every bcolz file under ``root`` (md5sum format)."""
    sums = bcolz_files(root)
    (root / "bcolz_store.md5").write_text("".join(f"{sums[r]}  {r}\n" for r in sorted(sums)))


# --- chunk files -------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 3, 15, 16, 20, 31, 40, -1])
def test_truncated_full_chunk(tmp_path, size):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__1.blp"
    raw = f.read_bytes()
    f.write_bytes(raw[:size] if size >= 0 else raw[:-1])
    expect_error(root, FormatError, f)


@pytest.mark.parametrize("size", [0, 10, 16, 24, -1])
def test_truncated_leftover_chunk(tmp_path, size):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__3.blp"
    raw = f.read_bytes()
    f.write_bytes(raw[:size] if size >= 0 else raw[:-1])
    expect_error(root, FormatError, f)


def test_chunk_file_with_extra_bytes(tmp_path):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__0.blp"
    f.write_bytes(f.read_bytes() + b"\0" * 7)
    expect_error(root, FormatError, f)


@pytest.mark.parametrize("magic", [b"XXXX", b"BLPK", b"\0\0\0\0", b"blpj"])
def test_wrong_magic(tmp_path, magic):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__2.blp"
    patch(f, 0, magic)
    expect_error(root, FormatError, f, "magic")


@pytest.mark.parametrize("offset,value", [(4, b"\x02"), (4, b"\xff"), (8, struct.pack("<q", 2)),
                                          (8, struct.pack("<q", -1)),
                                          (8, struct.pack("<q", 2**62))])
def test_bloscpack_header_fields(tmp_path, offset, value):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__0.blp"
    patch(f, offset, value)
    expect_error(root, FormatError, f)


# Blosc header: version u8, versionlz u8, flags u8, typesize u8, nbytes u32, blocksize u32, ctbytes u32
LIES = {
    "version 0": (0, b"\x00"),
    "version 255": (0, b"\xff"),
    "typesize 0": (3, b"\x00"),
    "nbytes 4 GiB": (4, struct.pack("<I", 0xFFFFFFFF)),
    "nbytes 2 GiB": (4, struct.pack("<I", 0x80000000)),
    "nbytes too small": (4, struct.pack("<I", 8)),
    "nbytes 0": (4, struct.pack("<I", 0)),
    "blocksize 0": (8, struct.pack("<I", 0)),
    "blocksize 1": (8, struct.pack("<I", 1)),
    "blocksize 4 GiB": (8, struct.pack("<I", 0xFFFFFFFF)),
    "ctbytes 4 GiB": (12, struct.pack("<I", 0xFFFFFFFF)),
    "ctbytes 0": (12, struct.pack("<I", 0)),
    "ctbytes 15": (12, struct.pack("<I", 15)),
    "ctbytes minus one": (12, None),
    "memcpyed flag": (2, b"\x02"),
}


@pytest.mark.parametrize("case", sorted(LIES))
@pytest.mark.parametrize("chunkfile", ["__1.blp", "__3.blp"])
def test_lying_blosc_header(tmp_path, case, chunkfile):
    """A header that lies about sizes is refused before anything is allocated from it."""
    root = make_carray(tmp_path / "a", n=3500, chunklen=1000)
    f = root / "data" / chunkfile
    offset, value = LIES[case]
    if value is None:
        size = struct.unpack_from("<I", f.read_bytes(), 16 + offset)[0]
        value = struct.pack("<I", size - 1)
    patch(f, 16 + offset, value)
    # Blosc itself refuses some lies (CodecError); all the others are caught before it
    expected = (FormatError, CodecError) if case.startswith("blocksize") else FormatError
    expect_error_within_memory(root, expected, f)


def test_chunk_file_that_is_a_directory(tmp_path):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__1.blp"
    f.unlink()
    f.mkdir()
    expect_error(root, FormatError, f)


@pytest.mark.parametrize("chunkfile", ["__0.blp", "__1.blp", "__3.blp"])
def test_missing_chunk_file(tmp_path, chunkfile):
    root = make_carray(tmp_path / "a")
    f = root / "data" / chunkfile
    f.unlink()
    err = expect_error(root, ChunkNotFoundError, f)
    assert isinstance(err, FileNotFoundError)


@pytest.mark.skipif(not has_verify, reason="checksums not available yet")
def test_chunk_from_another_carray_of_the_same_size(tmp_path):
    """A valid chunk file of another dtype but the same byte size in place of ours.

    Its headers are consistent, so only the checksum can tell.
    """
    root = make_carray(tmp_path / "a", dtype="i8")
    other = make_carray(tmp_path / "b", dtype="i4", n=70, chunklen=20)
    shutil.copy(other / "data" / "__0.blp", root / "data" / "__1.blp")
    try:
        open_and_read(root)
    except FormatError:
        pass
    expect_error(root, IntegrityError, "data/__1.blp", verify=True)


# --- metadata -------------------------------------------------------------------------

BAD_SIZES = {
    "shape absurd": {"shape": [2**62]},
    "shape 2**40": {"shape": [2**40]},
    "shape negative": {"shape": [-5]},
    "shape empty": {"shape": []},
    "shape string": {"shape": "35"},
    "shape float": {"shape": [35.5]},
    "shape null": {"shape": None},
    "shape bool": {"shape": [True]},
    "shape nested": {"shape": [[35]]},
    "shape atom negative": {"shape": [35, -2]},
    "shape atom absurd": {"shape": [35, 2**40]},
    "shape too many dims": {"shape": [35] + [1] * 100},
}


@pytest.mark.parametrize("case", sorted(BAD_SIZES))
def test_absurd_sizes(tmp_path, case):
    root = make_carray(tmp_path / "a")
    set_json(root / "meta" / "sizes", **BAD_SIZES[case])
    err = expect_error_within_memory(root, BcolzStoreError)
    assert isinstance(err, (FormatError, ChunkNotFoundError)), type(err)
    assert "meta/sizes" in str(err) or "data/__" in str(err), str(err)


BAD_STORAGE = {
    "chunklen 0": {"chunklen": 0},
    "chunklen negative": {"chunklen": -10},
    "chunklen absurd": {"chunklen": 2**62},
    "chunklen 2**40": {"chunklen": 2**40},
    "chunklen string": {"chunklen": "10"},
    "chunklen float": {"chunklen": 10.5},
    "chunklen null": {"chunklen": None},
    "dtype nonsense": {"dtype": "nonsense"},
    "dtype number": {"dtype": 8},
    "dtype huge void": {"dtype": "V2147483648"},
    "dtype code": {"dtype": "__import__('os').system('false')"},
    "cparams not a dict": {"cparams": 5},
    "clevel 99": {"cparams": {"clevel": 99, "shuffle": 1, "cname": "lz4", "quantize": 0}},
    "shuffle 9": {"cparams": {"clevel": 5, "shuffle": 9, "cname": "lz4", "quantize": 0}},
    "cname unknown": {"cparams": {"clevel": 5, "shuffle": 1, "cname": "nope", "quantize": 0}},
    "dflt wrong type": {"dflt": "abc"},
    "dflt list": {"dflt": [1, 2, 3]},
}


@pytest.mark.parametrize("case", sorted(BAD_STORAGE))
def test_absurd_storage(tmp_path, case):
    root = make_carray(tmp_path / "a")
    set_json(root / "meta" / "storage", **BAD_STORAGE[case])
    err = expect_error_within_memory(root, BcolzStoreError)
    assert isinstance(err, FormatError), f"{type(err).__name__}: {err}"
    assert "meta/storage" in str(err), str(err)


JUNK = {
    "not json": b"{not json",
    "empty": b"",
    "binary": bytes(range(256)),
    "array": b"[1, 2, 3]\n",
    "string": b"\"x\"\n",
    "deep nesting": b"[" * 100000 + b"]" * 100000,
    "non-ascii": "{\"shape\": [\u00e9]}".encode("utf-8"),
    "nan": b"NaN",
}


def _junk_cases(keys):
    # an empty __attrs__ file means "no attributes" (tested below), not junk
    return [(k, j)
            for k in keys for j in sorted(JUNK)
            if not (k.endswith("__attrs__") and j == "empty")]


@pytest.mark.parametrize("key,junk", _junk_cases(["meta/sizes", "meta/storage", "__attrs__"]))
def test_invalid_json_in_carray_meta(tmp_path, key, junk):
    root = make_carray(tmp_path / "a")
    (root / key).write_bytes(JUNK[junk])
    expect_error(root, FormatError, key)


@pytest.mark.parametrize("key,junk", _junk_cases(["__rootdirs__", "__attrs__", "a/meta/sizes",
                                                  "b/meta/storage"]))
def test_invalid_json_in_ctable_meta(tmp_path, key, junk):
    root = make_ctable(tmp_path / "t")
    (root / key).write_bytes(JUNK[junk])
    expect_error(root, FormatError, key)


@pytest.mark.parametrize("content", [b"", b"\n", b"  \n"])
def test_empty_attrs_file_means_no_attributes(tmp_path, content):
    root = make_carray(tmp_path / "a")
    (root / "__attrs__").write_bytes(content)
    assert open_and_read(root).attrs.getall() == {}


@pytest.mark.parametrize("key", ["meta/sizes", "meta/storage"])
def test_missing_meta_file(tmp_path, key):
    root = make_carray(tmp_path / "a")
    (root / key).unlink()
    expect_error(root, DatasetNotFoundError, key)


BAD_NAMES = {
    "parent": ["a", "../x"],
    "parent only": [".."],
    "dot": ["."],
    "absolute": ["/tmp"],
    "nested": ["a/meta"],
    "empty": [""],
    "backslash parent": ["..\\x"],
    "nul": ["a\0b"],
    "not a string": [5],
    "null": [None],
    "duplicate": ["a", "a"],
}


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_rootdirs_names_that_escape_or_are_invalid(tmp_path, case):
    root = make_ctable(tmp_path / "t")
    (tmp_path / "x").mkdir()            # a target outside the table
    make_carray(tmp_path / "x" / "meta")
    (root / "__rootdirs__").write_text(json.dumps({"names": BAD_NAMES[case]}) + "\n")
    expect_error(root, FormatError, "__rootdirs__")


@pytest.mark.parametrize("value", [{"names": "ab"}, {"names": None}, {}, {"names": {"a": 1}}, []])
def test_rootdirs_of_the_wrong_shape(tmp_path, value):
    root = make_ctable(tmp_path / "t")
    (root / "__rootdirs__").write_text(json.dumps(value) + "\n")
    expect_error(root, FormatError, "__rootdirs__")


def test_rootdirs_names_a_missing_column(tmp_path):
    root = make_ctable(tmp_path / "t")
    (root / "__rootdirs__").write_text(json.dumps({"names": ["a", "b", "zz"]}) + "\n")
    expect_error(root, DatasetNotFoundError, "zz")


def test_columns_of_different_lengths(tmp_path):
    root = make_ctable(tmp_path / "t")
    shutil.rmtree(root / "b")
    make_carray(root / "b", n=24)
    expect_error(root, FormatError, str(root))


# --- symlinks -------------------------------------------------------------------------

def test_symlinked_chunk_file_leaving_the_rootdir(tmp_path):
    root = make_carray(tmp_path / "a")
    outside = tmp_path / "outside.blp"
    f = root / "data" / "__1.blp"
    shutil.copy(f, outside)
    f.unlink()
    f.symlink_to(outside)
    expect_error(root, FormatError, f)


@pytest.mark.parametrize("key", ["meta/sizes", "meta/storage", "__attrs__"])
def test_symlinked_meta_file_leaving_the_rootdir(tmp_path, key):
    root = make_carray(tmp_path / "a")
    outside = tmp_path / "outside.json"
    f = root / key
    shutil.copy(f, outside)
    f.unlink()
    f.symlink_to(outside)
    expect_error(root, FormatError, key)


def test_symlinked_data_folder_leaving_the_rootdir(tmp_path):
    root = make_carray(tmp_path / "a")
    shutil.move(str(root / "data"), str(tmp_path / "data-outside"))
    (root / "data").symlink_to(tmp_path / "data-outside")
    expect_error(root, FormatError, "data")


def test_symlinked_column_leaving_the_rootdir(tmp_path):
    root = make_ctable(tmp_path / "t")
    shutil.move(str(root / "b"), str(tmp_path / "b-outside"))
    (root / "b").symlink_to(tmp_path / "b-outside")
    expect_error(root, FormatError, "b")


def test_symlink_loop(tmp_path):
    root = make_carray(tmp_path / "a")
    f = root / "data" / "__1.blp"
    f.unlink()
    f.symlink_to(f)
    expect_error(root, BcolzStoreError, f)


# --- pickled objects -------------------------------------------------------------------

@pytest.mark.skipif(UnsafeDataError is None, reason="UnsafeDataError not available yet")
def test_object_carray_needs_allow_pickle(tmp_path):
    root = tmp_path / "o"
    bcolz_store.carray(np.array([{"a": 1}, [2], "x"], dtype=object), rootdir=str(root), mode="w")
    expect_error(root, UnsafeDataError, "allow_pickle")
    obj = open_and_read(root, allow_pickle=True)
    assert list(obj[:]) == [{"a": 1}, [2], "x"]


# --- silent corruption and checksums ------------------------------------------------------

def _flip_payload_bit(f: Path) -> None:
    raw = bytearray(f.read_bytes())
    raw[len(raw) - 3] ^= 0x10       # inside the compressed payload, past both headers
    f.write_bytes(bytes(raw))


@pytest.mark.skipif(not has_verify, reason="checksums not available yet")
@pytest.mark.parametrize("chunkfile", ["__1.blp", "__3.blp"])
def test_payload_bit_flip_raises_integrity_error_with_verify(tmp_path, chunkfile):
    root = tmp_path / "a"
    bcolz_store.carray(np.arange(3500, dtype="f8"), chunklen=1000, rootdir=str(root), mode="w",
                       cparams=bcolz_store.cparams(clevel=0))   # stored raw: flips decode silently
    assert (root / "bcolz_store.md5").exists()
    f = root / "data" / chunkfile
    _flip_payload_bit(f)
    # without verify the damage may go unnoticed (Blosc has no checksum) ...
    try:
        open_and_read(root)
    except BcolzStoreError:
        pass
    # ... with verify it may not
    expect_error(root, IntegrityError, f"data/{chunkfile}", verify=True)


# --- fuzzer ---------------------------------------------------------------------------

FUZZ_FIXTURES = ["M8ns_times", "S12_codes", "U6_words", "bool_mask", "ctable_small_chunks",
                 "dflt_resized", "empty_f8", "f4_clevel0", "i4_blosclz_exact_chunks",
                 "i8_zstd_leftover_only", "u1_zlib_noshuffle"]
if FUZZ_CASES > 1000:
    FUZZ_FIXTURES += ["ctable_mixed", "f8_2d_atom", "f8_lz4_walk"]

ODD_VALUES = [2**63, 2**64, -1, -(2**63), 0, 1.5, float("inf"), None, True, "x", "", [], {},
              [2**62], [-1], [0, 0], ["a"], 2**31, 2**32 + 1, "<i8", "V0", "|V2147483647", "O",
              {"clevel": 5}, "S0", "<U0", ">f8", "M8[ns]"]


class Worker:
    """A subprocess that opens and reads datasets on request (``--worker`` below)."""

    def __init__(self):
        self.proc = None

    def start(self):
        package_parent = str(Path(bcolz_store.__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONPATH=package_parent, BLOSC_NTHREADS="1")
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)

    def run(self, path: str, verify: bool) -> dict:
        """``{"result": "ok" | "error" | "crash" | "hang", ...}`` for one read of ``path``."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write((json.dumps({"path": path, "verify": verify}) + "\n").encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], CASE_TIMEOUT)
        if not ready:
            self.stop()
            return {"result": "hang", "detail": f"no answer within {CASE_TIMEOUT} s"}
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            err = self.proc.stderr.read().decode(errors="replace")[-1500:]
            self.proc = None
            return {"result": "crash", "detail": f"worker died, status {self.proc_status(err)}"
                                                 f"; stderr: {err}"}
        return json.loads(line)

    @staticmethod
    def proc_status(err):
        return "signal" if "Fatal Python error" in err or not err else "exit"

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


def _worker_main() -> None:
    import resource
    import traceback
    try:
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    except (ValueError, OSError):
        pass
    for line in sys.stdin:
        req = json.loads(line)
        answer = {"result": "ok"}
        try:
            kwargs = {"verify": True} if req["verify"] else {}
            open_and_read(req["path"], **kwargs)
        except BcolzStoreError as err:
            answer = {"result": "error", "type": type(err).__name__, "message": str(err)}
        except BaseException as err:  # anything else is a finding
            answer = {"result": "foreign", "type": type(err).__name__, "message": str(err)[:500],
                      "traceback": traceback.format_exc()[-3000:]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def _files(root: Path) -> list:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name not in OWN_NAMES:
                out.append((Path(folder) / name).relative_to(root).as_posix())
    return out


def mutate(root: Path, data) -> str:
    """Apply one hypothesis-drawn mutation to a file of ``root``; describe it."""
    from hypothesis import strategies as st
    files = _files(root)
    rel = data.draw(st.sampled_from(files), label="file")
    f = root / rel
    raw = bytearray(f.read_bytes())
    n = len(raw)
    kinds = ["truncate", "flip", "splice", "overwrite"]
    if not rel.endswith(".blp"):
        kinds.append("json")
    kind = data.draw(st.sampled_from(kinds), label="mutation")
    if kind == "truncate":
        at = data.draw(st.integers(0, max(n - 1, 0)), label="size")
        f.write_bytes(bytes(raw[:at]))
        return f"truncate {rel} to {at} of {n} bytes"
    if kind == "flip" and n:
        flips = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 7)),
                                   min_size=1, max_size=4), label="flips")
        for pos, bit in flips:
            raw[pos] ^= 1 << bit
        f.write_bytes(bytes(raw))
        return f"flip bits {flips} of {rel}"
    if kind == "splice":
        other_rel = data.draw(st.sampled_from(files), label="source")
        other = (root / other_rel).read_bytes()
        if not other:
            other = b"\0"
        src = data.draw(st.integers(0, len(other) - 1), label="src")
        length = data.draw(st.integers(1, 64), label="length")
        dst = data.draw(st.integers(0, n), label="dst")
        piece = other[src:src + length]
        raw[dst:dst + len(piece)] = piece
        f.write_bytes(bytes(raw))
        return f"splice {other_rel}[{src}:{src + length}] into {rel} at {dst}"
    if kind == "json":
        try:
            obj = json.loads(raw.decode("ascii"))
        except ValueError:
            obj = {}
        if isinstance(obj, dict) and obj:
            key = data.draw(st.sampled_from(sorted(obj)), label="key")
        else:
            key = data.draw(st.sampled_from(["shape", "chunklen", "names", "dtype", "x"]))
            obj = {} if not isinstance(obj, dict) else obj
        value = data.draw(st.sampled_from(ODD_VALUES), label="value")
        obj[key] = value
        f.write_text(json.dumps(obj) + "\n")
        return f"set {rel}[{key!r}] = {value!r}"
    # overwrite a range with random bytes
    at = data.draw(st.integers(0, n), label="at")
    junk = data.draw(st.binary(min_size=1, max_size=32), label="junk")
    raw[at:at + len(junk)] = junk
    f.write_bytes(bytes(raw))
    return f"overwrite {rel} at {at} with {junk!r}"


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()


def test_fuzz_fixtures(tmp_path_factory, worker, fixtures_dir):
    """Mutated fixtures raise only bcolz_store errors; with verify=True changed data never reads back."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    findings = []
    counts = {"cases": 0, "ok": 0, "error": 0, "silent": 0}
    base = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=FUZZ_CASES, deadline=None, database=None, derandomize=FUZZ_CASES <= 200,
              suppress_health_check=list(HealthCheck))
    @given(name=st.sampled_from(FUZZ_FIXTURES), data=st.data())
    def case(name, data):
        counts["cases"] += 1
        root = base / f"case{counts['cases']}"
        shutil.copytree(fixtures_dir / name, root)
        write_checksums(root)
        before = {rel: (root / rel).read_bytes() for rel in _files(root)}
        what = mutate(root, data)
        changed = [rel for rel in before
                   if not (root / rel).exists() or (root / rel).read_bytes() != before[rel]]
        plain = worker.run(str(root), verify=False)
        if plain["result"] in ("ok", "error"):
            counts[plain["result"]] += 1
        else:
            findings.append(f"{name}: {what}: {plain['result']} {plain.get('type', '')}: "
                            f"{plain.get('message', plain.get('detail', ''))}")
        if has_verify and changed:
            checked = worker.run(str(root), verify=True)
            if checked["result"] == "ok":
                counts["silent"] += 1
                findings.append(f"{name}: {what}: verify=True read changed files {changed} "
                                f"without an error")
            elif checked["result"] not in ("error",):
                findings.append(f"{name}: {what}: verify=True: {checked['result']} "
                                f"{checked.get('type', '')}: {checked.get('message', '')}")
            elif (plain["result"] == "ok" and any(r.endswith(".blp") for r in changed)
                  and checked["type"] != "IntegrityError"):
                findings.append(f"{name}: {what}: verify=True raised {checked['type']} "
                                f"instead of IntegrityError: {checked['message']}")
        shutil.rmtree(root, ignore_errors=True)

    started = time.monotonic()
    case()
    print(f"\nfuzz: {counts['cases']} cases in {time.monotonic() - started:.1f} s; "
          f"read ok {counts['ok']}, bcolz_store error {counts['error']}, "
          f"findings {len(findings)}")
    assert not findings, "\n".join(findings[:20])


if __name__ == "__main__" and "--worker" in sys.argv:
    _worker_main()


# --- never hang, never blow up: FIFOs, devices, symlink loops -------------------------

@pytest.fixture
def no_hang():
    """Turn a read that blocks for more than 10 s into a test failure."""
    import signal

    def alarm(signum, frame):
        raise TimeoutError("blocked for 10 s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _replace_with(path: Path, what: str, tmp_path: Path) -> None:
    path.unlink()
    if what == "fifo":
        os.mkfifo(path)
    elif what == "dev-zero":
        path.symlink_to("/dev/zero")
    elif what == "dev-null":
        path.symlink_to("/dev/null")
    elif what == "loop":
        path.symlink_to(path.name)
    elif what == "dir":
        path.mkdir()


ODD_FILES = ["fifo", "dev-zero", "dev-null", "loop", "dir"]


@pytest.mark.parametrize("what", ODD_FILES)
@pytest.mark.parametrize("rel", ["data/__1.blp", "data/__3.blp", "meta/sizes", "meta/storage",
                                 "__attrs__", "bcolz_store.md5"])
def test_odd_file_in_place_of_a_dataset_file(tmp_path, no_hang, rel, what):
    root = make_carray(tmp_path / "a")
    _replace_with(root / rel, what, tmp_path)
    kwargs = {"verify": True} if rel == "bcolz_store.md5" else {}
    expect_error(root, BcolzStoreError, rel, **kwargs)


@pytest.mark.parametrize("what", ODD_FILES)
def test_odd_file_in_a_dataset_without_checksums(tmp_path, no_hang, what):
    """verify(), verify=True and the first write (which checksums every file) never read it."""
    root = make_carray(tmp_path / "a")
    (root / "bcolz_store.md5").unlink()
    (root / "data" / "junk").write_bytes(b"x")
    _replace_with(root / "data" / "junk", what, tmp_path)
    with pytest.warns(bcolz_store.IntegrityWarning, match="no checksum file"):
        assert bcolz_store.open(str(root), mode="r", verify=True)[:].tolist() == list(range(35))
    report = bcolz_store.verify(str(root))
    assert report.no_checksums and not report.ok
    c = bcolz_store.open(str(root), mode="a")
    if what == "dir":                # an empty folder is no file to checksum
        c.attrs["x"] = 1
    else:
        with pytest.raises(BcolzStoreError, match="junk"):
            c.attrs["x"] = 1
    assert bcolz_store.open(str(root))[:].tolist() == list(range(35))


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "loop"])
def test_verify_reports_odd_files_without_reading_them(tmp_path, no_hang, what):
    root = make_carray(tmp_path / "a")
    _replace_with(root / "data" / "__2.blp", what, tmp_path)
    report = bcolz_store.verify(str(root))
    assert report.damaged == ["data/__2.blp"] and "not" in report.reasons["data/__2.blp"]


def test_oversized_file_is_refused_before_reading(tmp_path):
    root = make_carray(tmp_path / "a")
    with open(root / "__attrs__", "r+b") as fh:
        fh.truncate(10 << 30)        # sparse: 10 GB claimed, nothing on disk
    expect_error_within_memory(root, FormatError, "__attrs__")


# --- hidden objects and malformed metadata: errors of the hierarchy only -------------------

@pytest.mark.parametrize("dtype,shape", [("[('a', 'O')]", None), ("[('a', '<i8'), ('b', 'O')]", None),
                                         ("object", [35, 1]), ("object", [35, 2, 2])])
def test_hidden_object_dtype_is_refused(tmp_path, dtype, shape):
    """Raw chunk bytes must never be decompressed into object pointer slots."""
    root = make_carray(tmp_path / "a")
    set_json(root / "meta" / "storage", dtype=dtype)
    if shape:
        set_json(root / "meta" / "sizes", shape=shape)
    for allow in (False, True):
        expect_error(root, FormatError, "meta/", allow_pickle=allow)


@pytest.mark.parametrize("dtype", [np.dtype([("a", "O")]), np.dtype(("O", (2,))),
                                   np.dtype([("a", "i8"), ("b", "O", (2,))])])
def test_creating_with_a_hidden_object_dtype_is_refused(tmp_path, dtype):
    with pytest.raises(TypeError, match="objects|object carrays"):
        bcolz_store.carray(np.zeros(3, dtype=dtype), rootdir=str(tmp_path / "a"), mode="w")
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("quantize", ["x", [1], float("inf"), -3, 10**6, True])
def test_malformed_quantize(tmp_path, quantize):
    root = make_carray(tmp_path / "a")
    storage = json.loads((root / "meta" / "storage").read_text())
    storage["cparams"]["quantize"] = quantize
    (root / "meta" / "storage").write_text(json.dumps(storage))
    expect_error(root, FormatError, "meta/storage", "quantize")


@pytest.mark.parametrize("file,fields", [
    ("sizes", {"shape": [35, 2**31]}),
    ("sizes", {"shape": [35, 2**30, 2]}),
    ("storage", {"dtype": "U0"}),
    ("storage", {"dtype": "S0"}),
    ("storage", {"dtype": "V0"}),
    ("storage", {"dtype": "(<f8, (2,))"}),
    ("storage", {"dtype": "[('a', '<i8', (2**31,))]"}),
])
def test_malformed_dtype_and_atom(tmp_path, file, fields):
    root = make_carray(tmp_path / "a")
    set_json(root / "meta" / file, **fields)
    expect_error_within_memory(root, FormatError, f"meta/{file}")


def test_object_carray_of_absurd_length(tmp_path):
    root = tmp_path / "o"
    bcolz_store.carray(np.array(["a", 1], dtype=object), rootdir=str(root), mode="w")
    for length in (2**63 - 1, 2**62, 10**12):
        set_json(root / "meta" / "sizes", shape=[length])
        err = expect_error_within_memory(root, BcolzStoreError, "o", allow_pickle=True)
        assert isinstance(err, (FormatError, ChunkNotFoundError))


@pytest.mark.parametrize("dtype", ["i1", "f8"])
def test_sizes_claiming_far_more_items_than_chunk_files(tmp_path, dtype):
    root = make_carray(tmp_path / "a", n=35, chunklen=10, dtype=dtype)
    set_json(root / "meta" / "sizes", shape=[10**12])
    err = expect_error_within_memory(root, BcolzStoreError, "data/__")
    assert isinstance(err, ChunkNotFoundError)


def test_chunklen_claiming_huge_chunks_of_small_files(tmp_path):
    """Three small chunk files cannot hold three chunks of 100 MB each: refused before
    the output is allocated (the first chunk's header tells)."""
    root = make_carray(tmp_path / "a", n=35, chunklen=10, dtype="i1")
    set_json(root / "meta" / "storage", chunklen=10**8)
    set_json(root / "meta" / "sizes", shape=[3 * 10**8])
    expect_error_within_memory(root, FormatError, "data/__0.blp", limit=160 << 20)


# --- names the library uses itself -----------------------------------------------------------

RESERVED = [".bcolz_store-journal", "bcolz_store.md5", "__attrs__", "__rootdirs__",
            ".bcolz_store.lock", ".hidden"]


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_column_names_go_to_made_up_folders(tmp_path, name):
    root = make_ctable(tmp_path / "t")
    t = bcolz_store.open(str(root), mode="a")
    t.addcol(np.arange(25), name=name)
    t.cols[name] = np.arange(25) + 1
    t.flush()
    back = bcolz_store.open(str(root))
    assert back.names == ["a", "b", name] and back[name][:].tolist() == list(range(1, 26))
    folder = json.loads((root / "__rootdirs__").read_text())["dirs"][name]
    assert folder.startswith("__c") and (root / folder / "meta" / "sizes").is_file()
    assert bcolz_store.verify(str(root)).ok if hasattr(bcolz_store, "verify") else True


@pytest.mark.parametrize("name", ["__attrs__", "__rootdirs__"])
def test_reserved_names_kept_by_the_constructor(tmp_path, name):
    t = bcolz_store.ctable([np.arange(3)], names=[name], rootdir=str(tmp_path / "t"))
    assert bcolz_store.open(str(tmp_path / "t")).names == [name] == t.names


@pytest.mark.parametrize("name", RESERVED)
def test_rootdirs_naming_a_reserved_name(tmp_path, name):
    root = make_ctable(tmp_path / "t")
    (root / "__rootdirs__").write_text(json.dumps({"names": ["a", name]}) + "\n")
    expect_error(root, FormatError, "__rootdirs__", "reserved")


# --- verify=True gaps ------------------------------------------------------------------------

def test_deleted_attrs_with_verify(tmp_path):
    root = make_carray(tmp_path / "a")
    (root / "__attrs__").unlink()
    expect_error(root, IntegrityError, "__attrs__", verify=True)
    assert bcolz_store.verify(str(root)).missing == ["__attrs__"]


def test_no_checksum_file_warns_with_verify(tmp_path, fixtures_dir):
    root = tmp_path / "fx"
    shutil.copytree(fixtures_dir / "i8_zstd_leftover_only", root)
    with pytest.warns(bcolz_store.IntegrityWarning, match="nothing is verified"):
        bcolz_store.open(str(root), mode="r", verify=True)


def test_reads_through_a_pending_commit_are_verified(tmp_path):
    """A reader in mode 'r' reading a committed-but-unapplied file checks it too."""
    root = make_carray(tmp_path / "a")
    journal = root / ".bcolz_store-journal"
    journal.mkdir(exist_ok=True)
    sums = (root / "bcolz_store.md5").read_text()
    (journal / "000001.blob").write_text('{"planted": 1}\n')     # not what the sums say
    (journal / "000002.blob").write_text(sums)
    (journal / "manifest.json").write_text(json.dumps(
        [["__attrs__", "000001.blob"], ["bcolz_store.md5", "000002.blob"]]))
    expect_error(root, IntegrityError, "__attrs__", verify=True)


def test_non_string_attrs_key_changes_nothing(tmp_path):
    root = make_carray(tmp_path / "a")
    c = bcolz_store.open(str(root), mode="a")
    with pytest.raises(TypeError, match="strings"):
        c.attrs[(1, 2)] = 3
    c.attrs["ok"] = 1
    assert bcolz_store.open(str(root)).attrs.getall() == {"ok": 1}


# --- journals that came with a dataset ---------------------------------------------------------

def _snapshot(folder: Path) -> dict:
    out = {}
    for p in sorted(folder.rglob("*")):
        st = os.lstat(p)
        out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns,
                       os.readlink(p) if p.is_symlink() else None)
    return out


def _pending_record(root: Path) -> str:
    """The name of the commit record a writer would create next (a pending commit)."""
    generation = json.loads((root / "bcolz_store.json").read_text())["generation"]
    return f"commit-{generation + 1:012d}.json"


def _ship_journal(root: Path, entries, blobs: dict, record: str = "manifest.json") -> None:
    journal = root / ".bcolz_store-journal"
    journal.mkdir(exist_ok=True)
    for name, make in blobs.items():
        make(journal / name)
    if record == "pending":
        record = _pending_record(root)
    (journal / record).write_text(json.dumps(entries))


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    (folder / "data").mkdir(parents=True)
    (folder / "victim").write_text("precious")
    for i in range(4):
        (folder / "data" / f"__{i}.blp").write_bytes(b"theirs")
    return folder


def _blob_file(content: bytes):
    return lambda p: p.write_bytes(content)


SHIPPED = {
    "delete through a symlinked data folder": (
        [["data/__0.blp", None], ["data/__9.blp", "000001.blob"]],
        {"000001.blob": _blob_file(b"x")}, "data"),
    "blob linking outside": (
        [["__attrs__", "000001.blob"]],
        {"000001.blob": lambda p: p.symlink_to(p.parents[2] / "outside" / "victim")}, None),
    "blob is a FIFO": ([["__attrs__", "000001.blob"]], {"000001.blob": os.mkfifo}, None),
    "blob is /dev/zero": ([["meta/sizes", "000001.blob"]],
                          {"000001.blob": lambda p: p.symlink_to("/dev/zero")}, None),
    "blob is a folder": ([["meta/sizes", "000001.blob"]], {"000001.blob": Path.mkdir}, None),
    "blob of 10 GB": ([["meta/sizes", "000001.blob"]],
                      {"000001.blob": lambda p: os.truncate(os.open(p, os.O_CREAT | os.O_WRONLY),
                                                            10 << 30)}, None),
    "key with ..": ([["../outside/victim", None]], {}, None),
    "absolute key": ([["/tmp/bcolz-store-victim", None]], {}, None),
    "key into the journal": ([[".bcolz_store-journal/manifest.json", None]], {}, None),
    "unknown file": ([["notes.txt", None]], {}, None),
    "blob name with a path": ([["__attrs__", "../../outside/victim"]], {}, None),
    "not a list": ({"__attrs__": None}, {}, None),
}


@pytest.mark.parametrize("case", sorted(SHIPPED))
@pytest.mark.parametrize("mode", ["r", "a"])
@pytest.mark.parametrize("record", ["pending", "manifest.json"])
def test_shipped_journal_is_validated_before_use(tmp_path, outside, no_hang, case, mode, record):
    """A commit record in a received dataset, of this version (the next generation's
    record) or of earlier ones (manifest.json), is checked before anything is used."""
    root = make_carray(tmp_path / "a")
    entries, blobs, link = SHIPPED[case]
    if link:
        shutil.rmtree(root / link)
        (root / link).symlink_to(outside / link)
    _ship_journal(root, entries, blobs, record)
    before = _snapshot(outside)
    with pytest.raises(BcolzStoreError) as info:
        open_and_read(root, mode=mode)
    assert ".bcolz_store-journal" in str(info.value) or "data" in str(info.value)
    if mode == "a" or not link:      # a reader applies nothing, so it may fail later
        assert isinstance(info.value, FormatError), info.value
    assert _snapshot(outside) == before
    assert (outside / "victim").read_text() == "precious"


def test_journal_folder_that_is_a_symlink(tmp_path, outside):
    root = make_carray(tmp_path / "a")
    shutil.rmtree(root / ".bcolz_store-journal", ignore_errors=True)
    (root / ".bcolz_store-journal").symlink_to(outside)
    before = _snapshot(outside)
    for mode in ("r", "a"):
        with pytest.raises(FormatError, match="expected a folder, found a symlink"):
            open_and_read(root, mode=mode)
    assert _snapshot(outside) == before


def test_valid_shipped_commit_is_rolled_forward(tmp_path):
    """A commit record this library wrote (a writer killed before applying it) still works."""
    root = make_carray(tmp_path / "a")
    record = _pending_record(root)
    killed = ("import os, bcolz_store\n"
              f"c = bcolz_store.open({str(root)!r}, mode='a')\n"
              "c.dataset.journal.state.apply = lambda entries: os._exit(0)\n"  # killed at commit
              "c.attrs['x'] = 1\n")
    package_parent = str(Path(bcolz_store.__file__).resolve().parents[1])
    subprocess.run([sys.executable, "-c", killed], check=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=package_parent))
    assert (root / ".bcolz_store-journal" / record).exists()
    assert bcolz_store.open(str(root), mode="r").attrs.getall() == {"x": 1}
    assert json.loads((root / "__attrs__").read_text()) == {}    # not applied yet
    assert bcolz_store.open(str(root), mode="r").attrs.getall() == {"x": 1}
    assert bcolz_store.open(str(root), mode="a").attrs.getall() == {"x": 1}
    assert _pending_record(root) > record           # applied: the generation moved on
    kept = sorted(os.listdir(root / ".bcolz_store-journal"))    # records stay a while
    assert record in kept and all(name.startswith("commit-") for name in kept
                                  if name != "commit.lock")   # the commit lock stays
    assert bcolz_store.verify(str(root)).ok
