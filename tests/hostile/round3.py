"""Hostile inputs, round 3: vlen/categorical data, bombs, packs, conversion inputs, deep JSON.

Built on :mod:`tests.hostile.harness` (sandboxes, plans, the worker under
RLIMIT_AS and a timeout, the judgement of dataset reads), this module adds:

* families (``FAMILIES3``), each drawing a replayable case
  ``{"family", "source", "plan", "ops"}``:

  ``vlen_cat``   vlen (str/bytes, with a zstd dictionary) and categorical
                 datasets whose chunks are rebuilt by an encoder written here
                 (independent of the library) so that they lie (item counts,
                 index values, lengths, the validity bitmap, UTF-8, codes out
                 of range, missing categories, a damaged dictionary), with the
                 checksum file rewritten to match: the reader must catch it from
                 the data, not the md5.
  ``bomb``       valid tiny datasets that decode huge: a 64 KiB vlen chunk of
                 one 2 GiB item, 40 vlen columns of 2**24 empty items each, a
                 categorical of one 64 MiB category and 4,000 codes.  A read
                 either fits the documented ceiling or raises LimitError.
  ``pack``       hostile ``.zip`` packs for ``bcolz_store.open``,
                 ``bcolz_store.unpack`` and ``bcolz-store info/verify``.
  ``convert``    hostile Parquet, Arrow IPC, HDF5, npz, zarr (v2, v3) and
                 datadings inputs for ``converters.convert`` and
                 ``bcolz-store convert``.
  ``deep_json``  deeply nested JSON wherever a JSON document is read.

* the outcome ``code``: hostile inputs carry pickles whose execution appends
  to the file named by ``$BCOLZ_STORE_FUZZ_MARKER`` (and sets
  ``$BCOLZ_STORE_FUZZ_CODE`` in the process that ran it); any such trace is
  ``code``.

* the worker ops ``pack_read``, ``pack_read_verify``, ``unpack`` and
  ``convert`` (run by the harness worker, which imports this module for
  them), and the CLI ops ``cli_info``, ``cli_verify``, ``cli_convert`` (a
  ``python -m bcolz_store.cli`` subprocess under the same limits).

Run as a script: ``--make-sources DIR`` writes the sources (worker side).
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve()
if __name__ == "__main__":                       # run as a script: make the package importable
    sys.path.insert(0, str(HERE.parents[2]))

from tests.hostile import harness as H           # noqa: E402

OUTCOMES3 = H.OUTCOMES + ("code",)
FINDINGS3 = H.FINDINGS + ("code",)
MARKER_ENV = "BCOLZ_STORE_FUZZ_MARKER"
CODE_ENV = "BCOLZ_STORE_FUZZ_CODE"
WORK = "work"                                   # non-dataset inputs live in sandbox/work
BOMB_TIMEOUT = float(os.environ.get("BCOLZ_STORE_FUZZ_BOMB_TIMEOUT", "20"))
CLI_TIMEOUT = float(os.environ.get("BCOLZ_STORE_FUZZ_CLI_TIMEOUT", "30"))

# What hostile pickles run: a trace the parent sees, nothing else.
PAYLOAD = ("import os\n"
           f"p = os.environ.get({MARKER_ENV!r})\n"
           "if p:\n"
           "    open(p, 'a').write('code executed\\n')\n"
           f"os.environ[{CODE_ENV!r}] = '1'\n")


class _Exec:
    """Pickles as ``exec(PAYLOAD)``; unpickling it is code execution."""

    def __reduce__(self):
        import builtins
        return (builtins.exec, (PAYLOAD,))


def evil_pickle(protocol: int = 2) -> bytes:
    return pickle.dumps(_Exec(), protocol=protocol)


def deep_json(depth: int, kind: str = "list") -> str:
    """A JSON text nested ``depth`` levels (lists, or objects ``{"a": ...}``)."""
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


# =============================================================================
# A vlen chunk encoder of our own (kinds/vlen/chunk_header.py, kinds/vlen/chunk.py,
# format/idata.py), able to lie
# =============================================================================

def vlq(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fletcher16(data: bytes) -> int:
    s1 = s2 = 0
    for b in data:
        s1 = (s1 + b) % 255
        s2 = (s2 + s1) % 255
    return s2 << 8 | s1


def _width(v: int) -> int:
    return max(1, (int(v).bit_length() + 7) // 8)


def idata_manifest(ends) -> bytes:
    """Unfiltered postfix idata manifest for ``ends`` (taken as given: may lie).

    Values are grouped by their width in the order given; the counts name
    how many values take each width 1..W (a width run that goes back down is
    counted in its own width, which is how a lying index is written)."""
    ends = [int(e) for e in ends]
    widths = [_width(e) for e in ends]
    W = max(widths) if ends else 0
    counts = [widths.count(w) for w in range(1, W + 1)]
    values = b"".join(e.to_bytes(w, "little") for e, w in zip(ends, widths))
    fb = W | 0x20
    last = ends[-1].to_bytes(W, "little") if ends else b""
    nbytes = sum(w * c for w, c in enumerate(counts, 1))
    key = fletcher16(bytes([fb]) + b"".join(vlq(c) for c in counts) + vlq(nbytes) + last)
    rcounts = b"".join(vlq(c)[::-1] for c in reversed(counts))
    return values + bytes([key & 0xFF, key >> 8]) + rcounts + bytes([fb])


def vlen_header(kind: str, flags: int, nitems: int, rawbytes: int, dict_id: int,
                cbytes: int) -> bytes:
    return struct.pack("<4sBBBBQQII", b"bvlc", 1, {"str": 1, "bytes": 2}[kind], flags, 1,
                       nitems, rawbytes, dict_id, cbytes)


def vlen_chunk(items, kind: str, lie: str = "none", dictionary: bytes | None = None) -> bytes:
    """One vlen chunk of ``items`` (str/bytes/None), honest or with one ``lie``."""
    import zstandard as zstd
    raw = [b"" if x is None else (x.encode("utf-8", "surrogatepass") if isinstance(x, str) else x)
           for x in items]
    if lie == "bad_utf8" and raw:
        raw[0] = b"\xff\xfe" + raw[0]
    ends, pos = [], 0
    for r in raw:
        pos += len(r)
        ends.append(pos)
    data = b"".join(raw)
    if lie == "ends_decreasing" and len(ends) >= 2:
        ends[0], ends[1] = max(ends[1], 1) + 1, max(ends[1], 1)
        data = data.ljust(ends[-1], b"a")
    elif lie == "last_end_beyond" and ends:
        ends[-1] += 1000                       # the index promises more than the data holds
    elif lie == "huge_item" and ends:
        ends[-1] = 2**40
    missing = [x is None for x in items]
    if lie in ("missing_item", "bitmap_padding") and items:
        missing[0] = True
    bitmap = b""
    if any(missing) or lie == "bitmap_padding":
        bits = bytearray((len(items) + 7) // 8)
        for i, m in enumerate(missing):
            if not m:
                bits[i // 8] |= 1 << (i % 8)
        if lie == "bitmap_padding":
            bits[-1] |= 0x80 if len(items) % 8 else 0
            if len(items) % 8 == 0:
                bits.append(0xFF)               # a bitmap one byte too long
        bitmap = bytes(bits)
    payload = data + idata_manifest(ends) + bitmap
    params = dict(level=3, write_checksum=True, write_content_size=True, write_dict_id=True)
    dict_id = 0
    if dictionary:
        zd = zstd.ZstdCompressionDict(dictionary)
        params["dict_data"] = zd
        dict_id = zd.dict_id()
    frame = zstd.ZstdCompressor(**params).compress(payload)
    nitems = len(items) + {"nitems_plus": 1, "nitems_minus": -1}.get(lie, 0)
    rawbytes = len(payload) + {"rawbytes_lie": 7}.get(lie, 0)
    if lie == "rawbytes_huge":
        rawbytes = 2**31
    flags = 0x01 if bitmap else 0
    return vlen_header(kind, flags, max(nitems, 0), rawbytes, dict_id, len(frame)) + frame


def bomb_chunk(nbytes: int, kind: str = "bytes") -> bytes:
    """A valid chunk of ONE item of ``nbytes`` zero bytes, compressed ~32768:1."""
    import zstandard as zstd
    manifest = idata_manifest([nbytes])
    rawbytes = nbytes + len(manifest)
    cctx = zstd.ZstdCompressor(level=1, write_checksum=True, write_content_size=True)
    obj = cctx.compressobj(size=rawbytes)
    parts = []
    block = bytes(1 << 24)
    left = nbytes
    while left:
        n = min(left, len(block))
        parts.append(obj.compress(block[:n] if n < len(block) else block))
        left -= n
    parts.append(obj.compress(manifest))
    parts.append(obj.flush())
    frame = b"".join(parts)
    return vlen_header(kind, 0, 1, rawbytes, 0, len(frame)) + frame


# =============================================================================
# Sources (written in a subprocess: --make-sources)
# =============================================================================

EVIL_STR = "évil"
TABLE_ROWS = 50


def make_sources3(out: Path) -> dict:
    """Write the datasets, bombs, packs and conversion inputs; return what was made."""
    import numpy as np
    import bcolz_store as bs
    from bcolz_store.storage.journal import Journal
    Journal.fsync_default = False
    made = {"datasets": [], "files": {}, "problems": []}
    ds = out / "ds"
    ds.mkdir(parents=True, exist_ok=True)

    def keep(name, obj):
        obj.flush()
        made["datasets"].append(name)

    words = ["w%d" % (i * 7 % 13) * (i % 4) + ("é" if i % 5 == 0 else "") for i in range(60)]
    keep("vlen_str_nonnull", bs.carray(words, dtype=bs.vlen("str", nullable=False), chunklen=16,
                                       rootdir=str(ds / "vlen_str_nonnull"), mode="w"))
    keep("vlen_bytes_nullable", bs.carray([None if i % 7 == 3 else w.encode() for i, w in
                                           enumerate(words)],
                                          dtype=bs.vlen("bytes", nullable=True), chunklen=16,
                                          rootdir=str(ds / "vlen_bytes_nullable"), mode="w"))
    keep("vlen_str_dict", bs.carray([("k%03d" % (i % 50)) * (i % 3) for i in range(400)],
                                    dtype=bs.vlen("str", dictionary=True, dict_size=512,
                                                  nullable=False),
                                    chunklen=64, rootdir=str(ds / "vlen_str_dict"), mode="w"))
    colors = ["red", "green", None, "blue", "cyan"] * 8
    keep("cat_carray", bs.carray(colors, dtype=bs.category(), chunklen=8,
                                 rootdir=str(ds / "cat_carray"), mode="w"))
    keep("cat_wide", bs.carray(["c%02d" % (i * 37 % 100) for i in range(40)],
                               dtype=bs.category(), chunklen=8,
                               rootdir=str(ds / "cat_wide"), mode="w"))
    t = bs.ctable([np.arange(40, dtype="i2"), bs.carray(colors, dtype=bs.category()),
                   bs.carray(words[:40], dtype=bs.vlen("str", nullable=False))],
                  names=["i", "color", "w"], chunklen=8, rootdir=str(ds / "ctable_cat_vlen"),
                  mode="w")
    keep("ctable_cat_vlen", t)

    # --- bombs: valid datasets whose bytes are tiny and whose items are huge
    b = ds / "bomb_vlen_2g"
    keep("bomb_vlen_2g", bs.carray([b"x"], dtype=bs.vlen("bytes", nullable=False), chunklen=1,
                                   rootdir=str(b), mode="w"))
    chunk = bomb_chunk(2**31 - 64, "bytes")
    (b / "data" / "__0.vlen").write_bytes(chunk)
    H.write_md5_file(b)
    made["bomb_vlen_2g_bytes"] = len(chunk)
    # 40 vlen columns of 5 items and chunklen 2**24 (a 46 KB table): each
    # leftover must grow with its items, not take chunklen slots up front
    # (5.7 GB of address space to open, before).  A table of 2**24 real
    # items per column would be legitimately large: reading it is work, not a bomb.
    n40 = 2**24
    cols = [bs.carray(["", "a", "bb", "", "c"], dtype=bs.vlen("str", nullable=False))
            for _ in range(40)]
    b = ds / "bomb_empty40"
    t = bs.ctable(cols, names=[f"c{i:02d}" for i in range(40)], chunklen=n40, rootdir=str(b),
                  mode="w")
    t.flush()
    H.write_md5_file(b)
    made["datasets"].append("bomb_empty40")
    b = ds / "bomb_cat64m"                      # one category of 64 MiB, 4,000 codes
    keep("bomb_cat64m", bs.carray(["a"] * 4000, dtype=bs.category(), chunklen=1024,
                                  rootdir=str(b), mode="w"))
    (b / "categories" / "data" / "__0.vlen").write_bytes(bomb_chunk(64 << 20, "str"))
    (b / "bcolz_store.json").unlink(missing_ok=True)
    H.write_md5_file(b)

    # --- conversion inputs
    f = out / "files"
    f.mkdir(parents=True, exist_ok=True)
    files = made["files"]
    src_ds = out / "convsrc"
    words = ["w%d" % (i % 7) * (i % 4) for i in range(TABLE_ROWS)]
    tbl = bs.ctable([np.arange(TABLE_ROWS, dtype="i8"), np.linspace(0, 1, TABLE_ROWS),
                     bs.carray(words, dtype="vlen-str")], names=["i", "f", "s"], chunklen=16,
                    rootdir=str(src_ds), mode="w")
    tbl.attrs["origin"] = "round3"
    tbl.flush()
    fixed_ds = out / "convsrc_fixed"           # HDF5 and datadings hold no vlen columns
    bs.ctable([np.arange(TABLE_ROWS, dtype="i8"), np.linspace(0, 1, TABLE_ROWS),
               np.array([w.encode() for w in words], dtype="S8")], names=["i", "f", "s"],
              chunklen=16, rootdir=str(fixed_ds), mode="w").flush()
    from bcolz_store.converters import convert
    from bcolz_store.storage.packs import pack
    for name, fmt in (("good.parquet", "parquet"), ("good.feather", "arrow"), ("good.h5", "hdf5"),
                      ("good.npz", "npz"), ("good.zarr", "zarr"), ("good.msgpack", "datadings")):
        try:
            convert(str(fixed_ds if fmt in ("hdf5", "datadings") else src_ds), str(f / name),
                    drop_attrs=True)
            files[name] = fmt
        except Exception as err:
            made["problems"].append(f"{name}: {type(err).__name__}: {err}")
    try:
        pack(str(src_ds), str(f / "good.zip"))
        files["good.zip"] = "pack"
    except Exception as err:
        made["problems"].append(f"good.zip: {type(err).__name__}: {err}")
    for name, fn in CRAFTED.items():
        try:
            fn(f / name)
            files[name] = name.rsplit(".", 1)[-1] if "." in name else "zarr"
        except Exception as err:
            made["problems"].append(f"crafted {name}: {type(err).__name__}: {err}")
    return made


# --- crafted conversion inputs (written once, in the source maker) -----------------------

def _pa_meta_table(meta: bytes):
    import pyarrow as pa
    t = pa.table({"i": pa.array([1, 2, 3], pa.int64())})
    return t.replace_schema_metadata({b"bcolz_store": meta})


def _c_parquet_deep(path):
    import pyarrow.parquet as pq
    pq.write_table(_pa_meta_table(deep_json(100000).encode()), path)


def _c_parquet_deep_obj(path):
    import pyarrow.parquet as pq
    pq.write_table(_pa_meta_table(deep_json(50000, "obj").encode()), path)


def _c_feather_deep(path):
    import pyarrow.feather as pf
    pf.write_feather(_pa_meta_table(deep_json(100000).encode()), path)


def _c_parquet_bigstring(path):
    """A 10 MiB string among 200,000 rows: as fixed-width U it would be 7.6 TiB."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    vals = [""] * 200000
    vals[123456] = "x" * (10 << 20)
    pq.write_table(pa.table({"s": pa.array(vals, pa.string())}), path, row_group_size=50000)


def _c_feather_bigstring(path):
    import pyarrow as pa
    import pyarrow.feather as pf
    vals = [b""] * 200000
    vals[7] = b"y" * (10 << 20)
    pf.write_feather(pa.table({"b": pa.array(vals, pa.binary())}), path)


def _c_parquet_meta_lies(path):
    import pyarrow.parquet as pq
    meta = {"version": 1, "kind": "ctable", "attrs": {},
            "columns": {"i": {"dtype": "[('a', 'O')]", "attrs": {}}}}
    pq.write_table(_pa_meta_table(json.dumps(meta).encode()), path)


def _c_h5_pickled_attr(path):
    import numpy as np
    import tables
    with tables.open_file(str(path), "w") as h5:
        t = h5.create_table("/", "ctable", {"i": tables.Int64Col(), "f": tables.Float64Col()})
        t.append(np.array([(1, 0.5), (2, 1.5)], dtype=[("i", "<i8"), ("f", "<f8")]))
        t.attrs.evil = _Exec()                 # PyTables pickles it; reading it back runs it
        t.attrs.bcolz_store_kind = "ctable"
        t.cols.i.attrs if hasattr(t.cols.i, "attrs") else None


def _c_h5_pickled_array_attr(path):
    import numpy as np
    import tables
    with tables.open_file(str(path), "w") as h5:
        a = h5.create_array("/", "ctable", np.arange(10))
        a.attrs.evil = _Exec()


def _c_h5_object_atom(path):
    import tables
    with tables.open_file(str(path), "w") as h5:
        a = h5.create_vlarray("/", "ctable", tables.ObjectAtom())
        a.append(_Exec())


def _c_h5_deep_attr(path):
    import numpy as np
    import tables
    with tables.open_file(str(path), "w") as h5:
        t = h5.create_table("/", "ctable", {"i": tables.Int64Col()})
        t.append(np.array([(1,)], dtype=[("i", "<i8")]))
        t.attrs.bcolz_store_kind = "ctable"
        t.attrs.bcolz_store_utf8 = deep_json(15000)     # HDF5 attributes hold < 64 KiB
        t.attrs.attrs = deep_json(15000)


def _npy_bytes(arr) -> bytes:
    import numpy as np
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _c_npz_object(path):
    import numpy as np
    arr = np.empty(3, dtype=object)
    arr[:] = [_Exec(), 1, "x"]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data.npy", _npy_bytes(arr))


def _c_npz_pickle_member(path):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data.npy", evil_pickle())
        zf.writestr("bcolz_store.json.npy", evil_pickle())


def _c_npz_deep_meta(path):
    import numpy as np
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("i.npy", _npy_bytes(np.arange(5)))
        zf.writestr("bcolz_store.json.npy", _npy_bytes(np.array(deep_json(100000))))


def _c_npz_deep_meta_obj(path):
    import numpy as np
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("i.npy", _npy_bytes(np.arange(5)))
        zf.writestr("bcolz_store.json.npy", _npy_bytes(np.array(deep_json(30000, "obj"))))


def _c_npz_empty(path):
    with zipfile.ZipFile(path, "w"):
        pass


def _c_npz_huge_header(path):
    """An npy header announcing 2**40 items of 8 bytes, and 8 bytes of data."""
    hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
    hdr = hdr.ljust(118) + "\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode()
                    + bytes(8))


def _zarr_v3(path, meta: dict, chunks=None):
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_text(json.dumps(meta))
    for key, data in (chunks or {}).items():
        p = path / key
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _v3_array(shape, chunk, dtype="int64", codecs=None, attrs=None):
    return {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": codecs or [{"name": "bytes",
                                                   "configuration": {"endian": "little"}}],
            "attributes": attrs or {}}


def _c_zarr_huge_chunk(path):
    _zarr_v3(path, _v3_array([2**40], [2**40]))


def _c_zarr_huge_chunk_small_shape(path):
    _zarr_v3(path, _v3_array([10], [2**40]), {"c/0": bytes(80)})


def _c_zarr_deep(path):
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": '
                                    + deep_json(100000) + "}")


def _c_zarr_deep_attrs(path):
    meta = _v3_array([3], [3])
    text = json.dumps(meta).replace('"attributes": {}', '"attributes": {"bcolz_store": '
                                    + deep_json(100000) + "}")
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_text(text)
    (path / "c").mkdir()
    (path / "c" / "0").write_bytes(bytes(24))


def _c_zarr_v2_pickle(path):
    """zarr v2 with the numcodecs Pickle codec (object dtype): reading unpickles chunks."""
    import numpy as np
    path.mkdir(parents=True, exist_ok=True)
    (path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "compressor": None,
        "fill_value": None, "order": "C", "filters": [{"id": "pickle", "protocol": 2}]}))
    arr = np.empty(2, dtype=object)
    arr[:] = [_Exec(), 1]
    (path / "0").write_bytes(pickle.dumps(arr, protocol=2))


def _c_zarr_v2_deep(path):
    path.mkdir(parents=True, exist_ok=True)
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    (path / ".zattrs").write_text(deep_json(100000))


def _c_zarr_v2_huge(path):
    path.mkdir(parents=True, exist_ok=True)
    (path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2**40], "chunks": [2**40], "dtype": "<i8",
        "compressor": None, "fill_value": 0, "order": "C", "filters": None}))


def _datadings(path, samples):
    """A datadings file set for ``samples`` (msgpack maps), index files as the format says."""
    import hashlib
    import msgpack
    blobs = [s if isinstance(s, bytes) else msgpack.packb(s, use_bin_type=True) for s in samples]
    samples = [{"key": str(i)} if isinstance(s, bytes) else s for i, s in enumerate(samples)]
    offsets, pos = [0], 0
    for b in blobs:
        pos += len(b)
        offsets.append(pos)
    path.write_bytes(b"".join(blobs))
    keys = [s.get("key", str(i)) for i, s in enumerate(samples)]
    extra = {".offsets": b"".join(struct.pack(">Q", o) for o in offsets),
             ".keys": msgpack.packb(keys, use_bin_type=True)}
    salt = hashlib.blake2s(b"0").digest()[:8]
    extra[".key_hashes"] = salt + b"".join(
        hashlib.blake2s(str(k).encode(), salt=salt).digest()[:8] for k in keys)
    n = max(2, len(keys))
    import math
    m = max(8, int(math.ceil(n * math.log(1 / n) / -(math.log(2) ** 2) / 8)) * 8)
    k = max(1, round(m / n * math.log(2)))
    bits = bytearray(m // 8)
    for key in keys:
        h = hashlib.blake2s(str(key).encode()).digest()
        h1, h2 = struct.unpack(">QQ", h[:16])
        for i in range(k):
            b = ((h1 + i * h2) % 2**64) % m
            bits[b >> 3] |= 1 << (b & 7)
    extra[".filter"] = b"SIMPBLOO" + struct.pack(">QQd", 8 + 24 + len(bits), n, 1 / n) + bytes(bits)
    for suffix, data in extra.items():
        Path(str(path) + suffix).write_bytes(data)
    lines = [f"{hashlib.md5(path.read_bytes()).hexdigest()}  {path.name}\n"]
    for suffix in (".offsets", ".keys", ".key_hashes", ".filter"):
        p = Path(str(path) + suffix)
        lines.append(f"{hashlib.md5(p.read_bytes()).hexdigest()}  {p.name}\n")
    Path(str(path) + ".md5").write_text("".join(lines))


def _nested(depth):
    v = 1
    for _ in range(depth):
        v = [v]
    return v


def _c_dd_ndim40(path):
    _datadings(path, [{"key": str(i), "x": _nested(40)} for i in range(3)])


def _c_dd_deep(path):
    # {"key": "0", "x": [[[...1...]]]} 100,000 deep, packed by hand (msgpack refuses to)
    _datadings(path, [b"\x82\xa3key\xa10\xa1x" + b"\x91" * 100000 + b"\x01"])


def _c_dd_numpy_object(path):
    _datadings(path, [{"key": "0", "x": {b"nd": True, b"type": "|O", b"kind": b"O",
                                         b"shape": [1], b"data": evil_pickle()}}])


def _c_dd_numpy_huge(path):
    _datadings(path, [{"key": "0", "x": {b"nd": True, b"type": "<f8", b"kind": b"",
                                         b"shape": [2**20, 2**20], b"data": bytes(8)}}])


def _c_dd_ragged(path):
    _datadings(path, [{"key": "0", "x": [1, 2]}, {"key": "1", "x": [[1], 2]},
                      {"key": "2", "y": 1}])


CRAFTED = {
    "deep.parquet": _c_parquet_deep, "deep_obj.parquet": _c_parquet_deep_obj,
    "deep.feather": _c_feather_deep, "bigstring.parquet": _c_parquet_bigstring,
    "bigstring.feather": _c_feather_bigstring, "metalies.parquet": _c_parquet_meta_lies,
    "pickled_attr.h5": _c_h5_pickled_attr, "pickled_array_attr.h5": _c_h5_pickled_array_attr,
    "object_atom.h5": _c_h5_object_atom, "deep_attr.h5": _c_h5_deep_attr,
    "object.npz": _c_npz_object, "pickle_member.npz": _c_npz_pickle_member,
    "deep_meta.npz": _c_npz_deep_meta, "deep_meta_obj.npz": _c_npz_deep_meta_obj,
    "empty.npz": _c_npz_empty, "huge_header.npz": _c_npz_huge_header,
    "huge_chunk.zarr": _c_zarr_huge_chunk, "huge_chunk_small.zarr": _c_zarr_huge_chunk_small_shape,
    "deep.zarr": _c_zarr_deep, "deep_attrs.zarr": _c_zarr_deep_attrs,
    "v2_pickle.zarr": _c_zarr_v2_pickle, "v2_deep.zarr": _c_zarr_v2_deep,
    "v2_huge.zarr": _c_zarr_v2_huge,
    "ndim40.msgpack": _c_dd_ndim40, "deep.msgpack": _c_dd_deep,
    "numpy_object.msgpack": _c_dd_numpy_object, "numpy_huge.msgpack": _c_dd_numpy_huge,
    "ragged.msgpack": _c_dd_ragged,
}
FILE_FORMATS = {"parquet": "parquet", "feather": "arrow", "h5": "hdf5", "npz": "npz",
                "zarr": "zarr", "msgpack": "datadings", "zip": "pack"}


def file_format(name: str) -> str:
    return FILE_FORMATS.get(name.rsplit(".", 1)[-1], "?")


# =============================================================================
# Crafted packs (built in the sandbox by a plan step, from the good pack)
# =============================================================================

def _entries(good: Path) -> list:
    with zipfile.ZipFile(good) as zf:
        return [(i.filename, zf.read(i.filename)) for i in zf.infolist()]


def _write_zip(path: Path, entries, mutate=None) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            if mutate:
                mutate(info, name)
            zf.writestr(info, data)


def _patch_all(raw: bytearray, sig: bytes, offset: int, fmt: str, value) -> bytearray:
    """Set the field at ``offset`` of every record starting with ``sig``."""
    at = raw.find(sig)
    while at != -1:
        struct.pack_into(fmt, raw, at + offset, value)
        at = raw.find(sig, at + 4)
    return raw


ZIP_LOCAL, ZIP_CENTRAL, ZIP_END = b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"
PACK_CRAFTS = ("encrypted", "empty_name", "non_utf8_name", "bad_version", "bomb", "huge_size",
               "duplicate", "dotdot", "absolute", "backslash", "symlink_entry",
               "symlink_dir_entry", "truncated_cd", "dir_entry_file", "many_entries",
               "deep_json_attrs", "cd_offset_lie", "stored_huge")


def craft_pack(path: Path, kind: str, arg=None) -> None:
    good = _entries(path)
    names = [n for n, _ in good]
    attrs = next((n for n in names if n.endswith("__attrs__")), names[0])
    if kind == "encrypted":
        _write_zip(path, good)
        raw = bytearray(path.read_bytes())
        _patch_all(raw, ZIP_LOCAL, 6, "<H", 0x0001)
        _patch_all(raw, ZIP_CENTRAL, 8, "<H", 0x0001)
        path.write_bytes(bytes(raw))
    elif kind == "empty_name":
        _write_zip(path, good + [("", b"x")])
    elif kind == "non_utf8_name":
        _write_zip(path, good + [("data/__7.blp", b"x")])
        raw = bytearray(path.read_bytes())
        raw = bytearray(bytes(raw).replace(b"data/__7.blp", b"data/\xff\xfe7.blp"))
        _patch_all(raw, ZIP_LOCAL, 6, "<H", 0x0800)     # says UTF-8
        _patch_all(raw, ZIP_CENTRAL, 8, "<H", 0x0800)
        path.write_bytes(bytes(raw))
    elif kind == "bad_version":
        _write_zip(path, good)
        raw = bytearray(path.read_bytes())
        _patch_all(raw, ZIP_LOCAL, 4, "<H", 99)
        _patch_all(raw, ZIP_CENTRAL, 6, "<H", 99)
        path.write_bytes(bytes(raw))
    elif kind == "bomb":
        # one entry that inflates to arg MiB (default 1 GiB) of zeros
        size = (arg or 1024) << 20
        co = zlib.compressobj(9, zlib.DEFLATED, -15)
        block, parts = bytes(1 << 24), []
        for _ in range(size >> 24):
            parts.append(co.compress(block))
        parts.append(co.flush())
        comp = b"".join(parts)
        crc = 0
        for _ in range(size >> 24):
            crc = zlib.crc32(block, crc)
        target = arg and names[0] or attrs
        _write_zip(path, [(n, d) for n, d in good if n != target])
        with zipfile.ZipFile(path, "a") as zf:
            info = zipfile.ZipInfo(target, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # write the compressed bytes ourselves: a raw entry
            info.CRC, info.compress_size, info.file_size = crc, len(comp), size
            zf.fp.seek(zf.start_dir)
            info.header_offset = zf.fp.tell()
            zf.fp.write(info.FileHeader(zip64=False))
            zf.fp.write(comp)
            zf.start_dir = zf.fp.tell()
            zf.filelist.append(info)
            zf.NameToInfo[info.filename] = info
            zf._didModify = True
    elif kind == "huge_size":
        _write_zip(path, good)
        raw = bytearray(path.read_bytes())
        _patch_all(raw, ZIP_CENTRAL, 24, "<I", 0xFFFFFFF0)   # uncompressed size
        _patch_all(raw, ZIP_LOCAL, 22, "<I", 0xFFFFFFF0)
        path.write_bytes(bytes(raw))
    elif kind == "stored_huge":
        _write_zip(path, good)
        raw = bytearray(path.read_bytes())
        _patch_all(raw, ZIP_CENTRAL, 20, "<I", 0xFFFFFFF0)   # compressed size
        path.write_bytes(bytes(raw))
    elif kind == "duplicate":
        other = next((d for n, d in good if n != attrs), b"{}")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _write_zip(path, good + [(attrs, other)])
    elif kind in ("dotdot", "absolute", "backslash"):
        target = {"dotdot": "../../outside/zipslip.txt",
                  "absolute": str(path.parent.parent / "outside" / "zipslip-abs.txt"),
                  "backslash": "..\\..\\outside\\zipslip-bs.txt"}[kind]
        _write_zip(path, good)
        with zipfile.ZipFile(path, "a") as zf:
            info = zipfile.ZipInfo("x" * len(target), date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(info, b"zip slip\n")
        raw = path.read_bytes().replace(("x" * len(target)).encode(), target.encode())
        path.write_bytes(raw)
    elif kind in ("symlink_entry", "symlink_dir_entry"):
        key = attrs if kind == "symlink_entry" else "data"
        target = "../../outside/sentinel.txt" if kind == "symlink_entry" else "../../outside/folder"
        rest = [(n, d) for n, d in good if n != key]
        _write_zip(path, rest)
        with zipfile.ZipFile(path, "a") as zf:
            info = zipfile.ZipInfo(key, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o120777 << 16)
            info.create_system = 3
            zf.writestr(info, target.encode())
            if kind == "symlink_dir_entry":
                for n, d in good:
                    if n.startswith("data/"):
                        zf.writestr(n, d)
    elif kind == "truncated_cd":
        _write_zip(path, good)
        raw = path.read_bytes()
        cd = raw.find(ZIP_CENTRAL)
        cut = cd + (arg if arg is not None else 30)
        path.write_bytes(raw[:cut] + raw[raw.rfind(ZIP_END):])
    elif kind == "dir_entry_file":
        _write_zip(path, good + [(attrs + "/", b"")])
    elif kind == "many_entries":
        _write_zip(path, good + [(f"junk/{i}", b"") for i in range(arg or 20000)])
    elif kind == "deep_json_attrs":
        _write_zip(path, [(n, deep_json(100000).encode() if n == attrs else d) for n, d in good])
    elif kind == "cd_offset_lie":
        _write_zip(path, good)
        raw = bytearray(path.read_bytes())
        end = raw.rfind(ZIP_END)
        struct.pack_into("<I", raw, end + 16, 0xFFFFFF00)
        path.write_bytes(bytes(raw))
    else:
        raise ValueError(f"unknown pack craft {kind!r}")


# =============================================================================
# Plans: harness steps plus our own
# =============================================================================

class Planner3(H.Planner):
    """harness steps, plus chunk crafting, checksum rewriting and crafted packs."""

    def do_md5_rewrite(self):
        """The checksum file made to match every bcolz file again (data lies, md5 agrees)."""
        if H._is_reg(self.ds / H.CHECKSUM_FILE):
            H.write_md5_file(self.ds)

    def do_drop_consolidated(self):
        p = self.ds / H.CONSOLIDATED_FILE
        if H._is_reg(p):
            p.unlink()

    def do_vlen_chunk(self, rel, items, kind, lie, dict_from=None):
        """Replace ``rel`` by a chunk of ``items`` built by our encoder, lying as ``lie``."""
        dictionary = None
        if dict_from:
            storage = json.loads(self.path(dict_from).read_text())
            text = (storage.get("vlen") or {}).get("dictionary")
            dictionary = base64.b64decode(text) if text else None
        p = self.path(rel)
        H._clear(p)
        self._parent(p)
        p.write_bytes(vlen_chunk(items, kind, lie, dictionary))

    def do_b64_flip(self, rel, keys, pos):
        """Flip one byte inside a base64 value of a JSON file (and keep it base64)."""
        p = self.path(rel)
        obj = json.loads(p.read_text())
        cur = obj
        for k in keys[:-1]:
            cur = cur[k]
        raw = bytearray(base64.b64decode(cur[keys[-1]]))
        raw[pos % len(raw)] ^= 0x5A
        cur[keys[-1]] = base64.b64encode(bytes(raw)).decode()
        p.write_text(json.dumps(obj) + "\n")

    def do_craft_pack(self, rel, kind, arg=None):
        craft_pack(self.path(rel), kind, arg)

    def do_expect_same(self, reason):
        """A marker: a read either fails or returns exactly what was written."""


# =============================================================================
# Drawing cases
# =============================================================================

VLEN_LIES = ("none", "nitems_plus", "nitems_minus", "ends_decreasing", "last_end_beyond",
             "huge_item", "missing_item", "bitmap_padding", "bad_utf8", "rawbytes_lie",
             "rawbytes_huge")
MUST_FAIL = {"nitems_plus", "nitems_minus", "ends_decreasing", "last_end_beyond", "huge_item",
             "bitmap_padding", "rawbytes_lie", "rawbytes_huge"}
VLEN_SOURCES = ("r3:vlen_str_nonnull", "r3:vlen_bytes_nullable", "r3:vlen_str_dict",
                "store:vlen_str", "store:vlen_bytes_dict", "store:ctable_vlen",
                "r3:ctable_cat_vlen")
CAT_SOURCES = ("r3:cat_carray", "store:ctable_cat", "r3:ctable_cat_vlen")
BOMB_SOURCES = ("r3:bomb_vlen_2g", "r3:bomb_empty40", "r3:bomb_cat64m")
DATASET_OPS = ["read", "read_verify", "verify_fn", "write"]


def _vlen_prefixes(src) -> list:
    return [p for p, m in src.carrays.items()
            if isinstance((src.json.get(p + "meta/storage") or {}).get("vlen"), dict)] + \
        [p + "categories/" for p in src.carrays
         if isinstance((src.json.get(p + "meta/storage") or {}).get("categorical"), dict)]


def _storage_of(src, prefix) -> dict:
    return src.json.get(prefix + "meta/storage") or {}


def _items_for(d, kind: str, n: int, nullable: bool) -> list:
    pool = ["", "a", "héllo", "x" * 40, "\u20ac"]
    items = [d.choice(pool) for _ in range(n)]
    if nullable and n and d.boolean():
        items[d.integer(0, n - 1)] = None
    return [x.encode() if (kind == "bytes" and x is not None) else x for x in items]


def fam_vlen_cat(d, src):
    """A lying chunk, a damaged dictionary, codes out of range or missing categories;
    the checksum file rewritten to agree."""
    steps, descr = [], ""
    choices = ["chunk", "chunk", "chunk"]
    if any(_storage_of(src, p).get("categorical") for p in src.carrays):
        choices += ["codes_out_of_range", "missing_categories", "categories_short"]
    if any((_storage_of(src, p).get("vlen") or {}).get("dictionary") for p in src.carrays):
        choices += ["dict_damaged", "dict_damaged"]
    what = d.choice(choices, "vlen/cat variant")
    if what == "chunk":
        prefix = d.choice(_vlen_prefixes(src), "vlen carray")
        storage = json.loads((src.path / (prefix + "meta/storage")).read_text())
        sizes = json.loads((src.path / (prefix + "meta/sizes")).read_text())
        vl = storage.get("vlen") or {}
        kind, nullable = vl.get("kind", "str"), bool(vl.get("nullable", True))
        chunklen, n = int(storage["chunklen"]), int(sizes["shape"][0])
        files = sorted(f for f in src.files if f.startswith(prefix + "data/") and
                       f.endswith(".vlen") and f.count("/") == prefix.count("/") + 1)
        rel = d.choice(files, "chunk")
        k = int(rel.rsplit("__", 1)[1].split(".")[0])
        nitems = min(chunklen, n - k * chunklen)
        lie = d.choice(VLEN_LIES, "lie")
        if lie == "bad_utf8" and kind != "str":
            lie = "none"
        items = _items_for(d, kind, nitems, nullable and lie not in ("missing_item",))
        dict_from = prefix + "meta/storage" if vl.get("dictionary") and d.integer(0, 3) else None
        steps.append(["vlen_chunk", rel, items, kind, lie, dict_from])
        descr = f"{rel}: our chunk of {nitems} {kind} items, lie {lie}"
        if dict_from:
            descr += " (with the carray's dictionary)"
        elif vl.get("dictionary"):
            descr += " (without the carray's dictionary)"
        if lie in MUST_FAIL or (lie == "missing_item" and not nullable) or lie == "bad_utf8":
            steps.append(["expect_failure", f"vlen chunk lie {lie}"])
    elif what == "dict_damaged":
        prefix = next(p for p in src.carrays if (_storage_of(src, p).get("vlen") or {})
                      .get("dictionary"))
        pos = d.integer(0, 600, "byte")
        steps.append(["b64_flip", prefix + "meta/storage", ["vlen", "dictionary"], pos])
        steps.append(["expect_same", "a damaged dictionary"])
        descr = f"{prefix}meta/storage: dictionary byte {pos} flipped (still base64)"
    elif what == "codes_out_of_range":
        prefix = next(p for p in src.carrays if _storage_of(src, p).get("categorical"))
        wide = "r3_aux_cat_wide"
        chunk = d.choice([f for f in src.files if f.startswith(prefix + "data/__")], "codes chunk")
        steps.append(["copy", H.SB + wide + "/" + chunk[len(prefix):], chunk])
        steps.append(["expect_failure", "codes beyond the categories"])
        descr = f"{chunk}: codes copied from a 100-category carray (up to 99, 5 categories here)"
    elif what == "missing_categories":
        prefix = next(p for p in src.carrays if _storage_of(src, p).get("categorical"))
        steps.append(["remove", prefix + "categories/data/__0.vlen"])
        steps.append(["expect_failure", "categories chunk missing"])
        descr = f"{prefix}categories/data/__0.vlen removed"
    else:
        prefix = next(p for p in src.carrays if _storage_of(src, p).get("categorical"))
        rel = prefix + "categories/meta/sizes"
        sizes = json.loads((src.path / rel).read_text())
        n = int(sizes["shape"][0])
        cut = d.integer(0, max(n - 1, 0), "categories kept")
        steps.append(["json_set", rel, ["shape"], [cut]])
        chunk = prefix + "categories/data/__0.vlen"
        cats = ["red", "green", "blue", "cyan"][:cut]
        steps.append(["vlen_chunk", chunk, cats, "str", "none", None])
        steps.append(["expect_failure", "codes refer to categories that are not there"])
        descr = f"{prefix}categories cut to {cut} of {n} (chunk rewritten to match)"
    steps += [["drop_consolidated"], ["md5_rewrite"]]
    return steps, descr + "; checksums rewritten"


def fam_bomb(d, src):
    variant = d.choice(["as_is", "as_is", "slice", "verify"], "bomb variant")
    return [["expect_same", "valid"]], f"bomb {src.name} ({variant})"


DEEP_TARGETS = ("meta/sizes", "meta/storage", "__attrs__", H.CONSOLIDATED_FILE, "__rootdirs__",
                H.CHECKSUM_FILE, H.JOURNAL_DIR + "/manifest.json")


def fam_deep_json_ds(d, src):
    prefix = d.choice(sorted(src.carrays), "carray")
    target = d.choice(DEEP_TARGETS, "file")
    rel = target if target in (H.CONSOLIDATED_FILE, "__rootdirs__", H.CHECKSUM_FILE) or \
        target.startswith(H.JOURNAL_DIR) else prefix + target
    depth = d.choice([1000, 5000, 100000, 1000000], "depth")
    kind = d.choice(["list", "obj"], "kind")
    text = deep_json(depth, kind)
    if d.boolean("inside"):
        text = '{"shape": [1], "x": ' + text + "}"
    steps = [["write", rel, text]]
    if d.boolean("md5 agrees"):
        steps.append(["md5_rewrite"])
    return steps, f"{rel} is JSON nested {depth} deep ({kind})"


PACK_OPS = ["pack_read", "pack_read_verify", "unpack"]


def fam_pack(d, files):
    variant = d.choice(["flip", "flip", "truncate", "craft", "craft", "craft"], "pack variant")
    rel = H.SB + WORK + "/input.zip"
    size = files["good.zip"]
    if variant == "flip":
        flips = [[d.integer(0, size - 1), d.integer(0, 7)] for _ in range(d.integer(1, 3))]
        steps, descr = [["flip", rel, flips]], f"good.zip with bits {flips} flipped"
        steps.append(["expect_same", "a flipped pack"])
    elif variant == "truncate":
        at = d.integer(0, size - 1)
        steps, descr = [["truncate", rel, at]], f"good.zip truncated to {at} of {size}"
        steps.append(["expect_same", "a truncated pack"])
    else:
        kind = d.choice(PACK_CRAFTS, "pack craft")
        arg = None
        if kind == "bomb":
            arg = d.choice([None, 64, 256], "MiB")
        elif kind == "truncated_cd":
            arg = d.integer(0, 200)
        elif kind == "many_entries":
            arg = d.choice([100, 20000])
        steps, descr = [["craft_pack", rel, kind, arg]], f"crafted pack: {kind} ({arg})"
    return "good.zip", steps, descr


def fam_convert(d, files):
    crafted = [n for n in files if not n.startswith("good.") and n in CRAFTED]
    good = [n for n in files if n.startswith("good.") and ":" not in n and not n.endswith(".zip")]
    variant = d.choice(["crafted", "crafted", "flip", "truncate"], "convert variant")
    if variant == "crafted" and crafted:
        name = d.choice(crafted, "crafted input")
        return name, [], f"crafted {name}"
    name = d.choice(good, "input")
    target = H.SB + WORK + "/input." + name.split(".", 1)[1]
    if name.endswith(".zarr"):
        inner = d.choice(files.get(name + ":files") or ["zarr.json"], "zarr file")
        target += "/" + inner
        size = 200
    elif name.endswith(".msgpack"):
        suffix = d.choice(["", "", "", ".offsets", ".keys", ".key_hashes", ".filter", ".md5"])
        target += suffix
        size = files[name] if not suffix else 64
    else:
        size = files[name]
    if variant == "flip":
        flips = [[d.integer(0, max(size - 1, 0)), d.integer(0, 7)] for _ in range(d.integer(1, 3))]
        return name, [["flip", target, flips]], f"{name}: bits {flips} of {target[len(H.SB):]}"
    at = d.integer(0, max(size - 1, 0))
    return name, [["truncate", target, at]], f"{name}: {target[len(H.SB):]} truncated to {at}"


def fam_deep_json_file(d, files):
    name = d.choice([n for n in ("deep.parquet", "deep_obj.parquet", "deep.feather",
                                 "deep_attr.h5", "deep_meta.npz", "deep_meta_obj.npz", "deep.zarr",
                                 "deep_attrs.zarr", "v2_deep.zarr", "deep.msgpack") if n in files],
                    "deep input")
    if d.boolean("as pack") and "good.zip" in files:
        return "good.zip", [["craft_pack", H.SB + WORK + "/input.zip", "deep_json_attrs", None]], \
            "pack whose __attrs__ is JSON nested 100000 deep"
    return name, [], f"crafted {name}"


FAMILY_WEIGHTS3 = {"vlen_cat": 5, "bomb": 1, "pack": 4, "convert": 4, "deep_json": 2}


def draw_case(d, dsources: dict, files: dict, family: str | None = None, cli_share=0.1) -> dict:
    """One case: ``{"family", "source", "plan", "ops", "descr"}``."""
    if family is None:
        family = d.choice([f for f, w in FAMILY_WEIGHTS3.items() for _ in range(w)], "family")
    cli = d.integer(0, 999) < int(cli_share * 1000)
    if family == "vlen_cat":
        pool = [n for n in VLEN_SOURCES + CAT_SOURCES if n in dsources]
        src = dsources[d.choice(pool, "source")]
        plan, descr = fam_vlen_cat(d, src)
        return dict(family=family, source=src.name, plan=plan, ops=DATASET_OPS, descr=descr)
    if family == "bomb":
        src = dsources[d.choice([n for n in BOMB_SOURCES if n in dsources], "bomb")]
        plan, descr = fam_bomb(d, src)
        return dict(family=family, source=src.name, plan=plan,
                    ops=["read", "read_verify", "verify_fn"], descr=descr)
    if family == "deep_json" and d.integer(0, 2) == 0:
        pool = [s for s in dsources.values() if not s.name.startswith("r3:bomb")]
        src = d.choice(pool, "source")
        plan, descr = fam_deep_json_ds(d, src)
        return dict(family=family, source=src.name, plan=plan, ops=DATASET_OPS, descr=descr)
    if family == "deep_json":
        name, plan, descr = fam_deep_json_file(d, files)
    elif family == "pack":
        name, plan, descr = fam_pack(d, files)
    else:
        name, plan, descr = fam_convert(d, files)
    if file_format(name) == "pack":
        ops = list(PACK_OPS) + (["cli_info", "cli_verify"] if cli else [])
    else:
        ops = ["convert"] + (["cli_convert"] if cli else [])
    return dict(family=family, source="file:" + name, plan=plan, ops=ops, descr=descr)


# =============================================================================
# The worker side of the new ops (imported by harness._do_op)
# =============================================================================

def do_op(req: dict) -> dict:
    import bcolz_store
    from tests.hostile.harness import read_all, _close
    op, path = req["op"], req["path"]
    out = {}
    if op in ("pack_read", "pack_read_verify"):
        obj = bcolz_store.open(path, mode="r", verify=op == "pack_read_verify")
        try:
            out["digest"] = read_all(obj)
        finally:
            _close(obj)
    elif op == "unpack":
        dst = req["dst"]
        from bcolz_store.storage.packs import unpack
        getattr(bcolz_store, "unpack", unpack)(path, dst)
        obj = bcolz_store.open(dst, mode="r", verify=True)
        try:
            out["digest"] = read_all(obj)
        finally:
            _close(obj)
    elif op == "convert":
        from bcolz_store.converters import convert
        convert(path, req["dst"], drop_attrs=True)
        obj = bcolz_store.open(req["dst"], mode="r")
        try:
            out["digest"] = read_all(obj)
        finally:
            _close(obj)
    else:
        raise ValueError(f"unknown op {op!r}")
    return out


# =============================================================================
# Running and judging a case
# =============================================================================

@dataclass
class Case3:
    spec: dict
    ops: list = field(default_factory=list)        # harness.OpResult
    findings: list = field(default_factory=list)

    def replay(self) -> str:
        return json.dumps({k: self.spec[k] for k in ("family", "source", "plan", "ops")})


def _code_traces(marker: Path, ans: dict) -> str:
    traces = []
    if marker.exists():
        traces.append(f"marker file written: {marker.read_text()[:80]!r}")
        marker.unlink()
    if ans.get("code_env"):
        traces.append(f"${CODE_ENV} set in the process")
    return "; ".join(traces)


def _cli(args: list, cwd: Path, timeout: float) -> dict:
    """``python -m bcolz_store.cli ARGS`` under the worker's limits: a worker-style answer."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (H.WORKER_MEMORY, H.WORKER_MEMORY))
        resource.setrlimit(resource.RLIMIT_FSIZE, (H.WORKER_FILESIZE, H.WORKER_FILESIZE))
    try:
        proc = subprocess.run([sys.executable, "-m", "bcolz_store.cli"] + args, cwd=str(cwd),
                              env=H.worker_env(), capture_output=True, timeout=timeout,
                              preexec_fn=limits)
    except subprocess.TimeoutExpired:
        return {"result": "hang", "type": "timeout", "message": f"no exit within {timeout:g} s"}
    err = proc.stderr.decode(errors="replace").strip()
    lines = err.splitlines()
    if proc.returncode < 0:
        sig = -proc.returncode
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return {"result": "memory" if sig == signal.SIGKILL else "crash", "type": name,
                "message": f"the CLI was killed by {name}", "traceback": err[-1500:]}
    if proc.returncode == 0:
        return {"result": "ok"}
    if "MemoryError" in err:
        return {"result": "memory", "type": "MemoryError", "message": err[-300:],
                "traceback": err[-1500:]}
    if proc.returncode == 1 and len(lines) == 1 and "unexpected error" not in err.lower() \
            and "Traceback" not in err:
        return {"result": "error", "type": "exit 1", "message": err[:400]}
    report = proc.stdout.decode(errors="replace")
    if proc.returncode == 1 and not lines and report.strip() and "Traceback" not in report:
        # ``verify``: the problems on stdout, exit status 1
        return {"result": "error", "type": "exit 1", "message": report.strip().splitlines()[-1]}
    if proc.returncode == 3 and not lines and "not verified" in report and "Traceback" not in report:
        # ``verify`` on a dataset without a checksum file: documented, exit status 3
        return {"result": "error", "type": "exit 3", "message": report.strip().splitlines()[-1]}
    return {"result": "foreign", "type": f"exit {proc.returncode}",
            "message": (lines[-1] if lines else "(no message)")[:400], "traceback": err[-2000:]}


def _documented_builtin(ans: dict) -> bool:
    """A TypeError/ValueError/KeyError that bcolz_store raised itself (its
    last frame is the library's): the built-ins the converters document for
    input they cannot take (an HDF5 node of another kind, an unknown column),
    not an exception of a library under them."""
    if ans.get("type") not in ("TypeError", "ValueError", "KeyError"):
        return False
    frames = [line for line in ans.get("traceback", "").splitlines()
              if line.strip().startswith('File "')]
    return bool(frames) and "/bcolz_store/" in frames[-1] and "/tests/" not in frames[-1]


def judge_file(op: str, ans: dict, changes: list, spec: dict, expected) -> tuple:
    result = ans.get("result", "crash")
    outside = ans.get("outside") or []
    writes = [e for e in outside if e[0] != "read"]
    what = f"{ans.get('type', '')}: {ans.get('message', '')}".strip(": ")
    if changes or writes:
        return "escape", ("changed outside the work folder: " + "; ".join(changes[:4]) if changes
                          else f"wrote outside the work folder: {writes[:3]}") + f" [{what}]"
    if result == "foreign" and op == "convert" and _documented_builtin(ans):
        return "error", what
    if result in ("crash", "hang", "memory", "foreign"):
        tb = ans.get("traceback", "")
        tail = " | ".join(line.strip() for line in tb.strip().splitlines()[-6:]) if tb else ""
        return result, what + (f" || {tail}" if tail else "")
    if result != "ok":
        return result, what
    if outside:
        return "escape", f"read a file outside the work folder: {outside[:3]}"
    same = any(s[0] == "expect_same" for s in spec["plan"])
    digest = ans.get("digest")
    # As for folders, only a verified read must notice damage: without
    # verify=True a pack whose __attrs__ entry lost its name reads like a
    # folder without that file (docs/durability.md, threat model).
    if same and expected is not None and digest is not None \
            and op in ("pack_read_verify", "unpack") and digest != expected:
        return "silent_wrong", ("a damaged pack read back different data without an error: "
                                + H._diff(digest, expected))
    return "ok", ""


def run_case3(worker, env, spec: dict, sandbox: Path, keep=False) -> Case3:
    """Copy the source into ``sandbox``, apply the plan, run each op, judge it."""
    res = Case3(spec)
    marker = env.marker
    if marker.exists():
        marker.unlink()
    if sandbox.exists():
        shutil.rmtree(sandbox)
    sandbox.mkdir(parents=True)
    H.make_outside(sandbox)
    src_name = spec["source"]
    is_file = src_name.startswith("file:")
    try:
        if is_file:
            name = src_name[len("file:"):]
            work = sandbox / WORK
            work.mkdir()
            ext = name.split(".", 1)[1]
            inp = work / ("input." + ext)
            srcp = env.files_dir / name
            if srcp.is_dir():
                shutil.copytree(srcp, inp, symlinks=True)
            else:
                shutil.copy2(srcp, inp)
                for extra in env.files_dir.glob(name + ".*"):      # datadings index files
                    shutil.copy2(extra, work / ("input." + ext + extra.name[len(name):]))
            skipped = Planner3(sandbox).apply(spec["plan"])
            src = None
            root = work
        else:
            src = env.dsources[src_name]
            ds = sandbox / H.DS
            shutil.copytree(src.path, ds, symlinks=True)
            if src_name.startswith("r3:") or src_name.startswith("store:"):
                aux = env.dsources.get("r3:cat_wide")
                if aux is not None:
                    shutil.copytree(aux.path, sandbox / "r3_aux_cat_wide", symlinks=True)
            skipped = Planner3(sandbox).apply(spec["plan"])
            root = ds
        descr = spec.get("descr", "")
        if skipped:
            descr += f" (steps skipped: {'; '.join(skipped)})"
        eff = H.effects_of(root, src, spec["plan"]) if src is not None else None
        targets = H._link_targets(root, sandbox)
        watched = [sandbox, worker.cwd]

        def snap():
            return H.snapshot(watched, skip=[root], targets=targets)

        before = snap()
        for i, op in enumerate(spec["ops"]):
            timeout = BOMB_TIMEOUT if spec["family"] == "bomb" else H.OP_TIMEOUT
            if is_file and op.startswith("cli_"):
                dst = work / f"out{i}"
                args = {"cli_info": ["info", str(inp)], "cli_verify": ["verify", str(inp)],
                        "cli_convert": ["convert", "--no-progress", "--drop-attrs", str(inp),
                                        str(dst)]}[op]
                ans = _cli(args, work, max(CLI_TIMEOUT, timeout))
            elif is_file:
                req = {"op": op, "root": str(work), "sandbox": str(sandbox), "path": str(inp),
                       "dst": str(work / f"out{i}")}
                if spec["family"] == "convert" and "bigstring" in src_name:
                    timeout = max(timeout, 20)
                ans = worker.call(req, timeout)
            else:
                req = {"op": op, "root": str(root), "sandbox": str(sandbox)}
                ans = worker.call(req, timeout)
            after = snap()
            changes = H.diff_snapshots(before, after)
            before = after
            traces = _code_traces(marker, ans)
            if traces:
                outcome, detail = "code", traces + f" [{ans.get('result')}: {ans.get('message', '')}]"
            elif is_file:
                outcome, detail = judge_file(op, ans, changes, spec, env.pack_expected)
            else:
                outcome, detail = H.judge(op, ans, src, eff, changes)
                if outcome == "ok" and op in ("read", "read_verify") and \
                        any(s[0] == "expect_same" for s in spec["plan"]) and \
                        ans.get("digest") != src.expected:
                    outcome, detail = "silent_wrong", ("read back different data without an "
                                                       "error: " + H._diff(ans.get("digest"),
                                                                           src.expected))
            res.ops.append(H.OpResult(op, outcome, detail))
            stop = outcome in ("hang", "crash", "memory")     # the next ops would do the same
            if outcome in FINDINGS3:
                res.findings.append(f"[{outcome}] family={spec['family']} source={src_name} "
                                    f"op={op} mutation: {descr} :: {detail[:700]}\n    replay: "
                                    f"BCOLZ_STORE_FUZZ3_REPLAY={shlex.quote(res.replay())}")
            if stop and not is_file:
                break
    finally:
        if not keep:
            shutil.rmtree(sandbox, ignore_errors=True)
    return res


@dataclass
class Env3:
    dsources: dict
    files: dict              # name -> size (or format), "NAME:files" -> zarr file list
    files_dir: Path
    marker: Path
    pack_expected: dict = None
    problems: list = field(default_factory=list)


def build_env3(base: Path, worker, sources) -> Env3:
    """Write the round-3 sources (a subprocess), inventory them, read the pristine ones."""
    out = base / "r3"
    proc = subprocess.run([sys.executable, str(HERE), "--make-sources", str(out)],
                          env=H.worker_env(), capture_output=True, timeout=600, cwd=str(base))
    problems = []
    try:
        made = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        made = {"datasets": [], "files": {}, "problems": []}
        problems.append(f"round-3 source writer failed (rc {proc.returncode}): "
                        f"{proc.stderr.decode(errors='replace')[-3000:]}")
    problems += [f"[source] {p}" for p in made.get("problems", [])]
    dsources = {s.name: s for s in sources}
    for name in made["datasets"]:
        src = H.inventory(H.Source(f"r3:{name}", out / "ds" / name, False))
        ans = worker.call({"op": "read", "root": str(src.path), "sandbox": str(src.path),
                           "allow_pickle": True})
        if name.startswith("bomb"):
            # what a bomb reads back where it fits the ceiling (else it is refused)
            src.expected = ans["digest"] if ans.get("result") == "ok" else None
            dsources[src.name] = src
            continue
        if ans.get("result") != "ok":
            problems.append(f"[pristine] r3:{name}: {ans.get('result')} {ans.get('type')}: "
                            f"{ans.get('message')}")
            continue
        src.expected = ans["digest"]
        dsources[src.name] = src
    files_dir = out / "files"
    files = {}
    for name in made.get("files", {}):
        p = files_dir / name
        files[name] = p.stat().st_size if p.is_file() else 0
        if p.is_dir():
            files[name + ":files"] = sorted(x.relative_to(p).as_posix() for x in p.rglob("*")
                                            if x.is_file())
    marker = base / "code-marker.txt"
    os.environ[MARKER_ENV] = str(marker)        # the worker and CLI runs inherit it
    env = Env3(dsources, files, files_dir, marker, problems=problems)
    if "good.zip" in files:
        ans = worker.call({"op": "pack_read", "root": str(files_dir), "sandbox": str(files_dir),
                           "path": str(files_dir / "good.zip")})
        if ans.get("result") == "ok":
            env.pack_expected = ans["digest"]
        else:
            problems.append(f"[pristine] good.zip: {ans.get('result')} {ans.get('message')}")
    return env


if __name__ == "__main__":
    if "--make-sources" in sys.argv:
        target = Path(sys.argv[sys.argv.index("--make-sources") + 1])
        print(json.dumps(make_sources3(target)))
