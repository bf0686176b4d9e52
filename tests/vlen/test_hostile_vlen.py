"""Hostile vlen and categorical datasets: refused with bcolz_store's errors,
within bounded memory, whatever path reads them.

Each test here pins one defect class: a damaged zstd dictionary, a missing
item where none may be, a missing category, amplification (tiny files that
legitimately decode huge), leftovers sized from a chunklen, and data that
could be written but not read back.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds.vlen.chunk import decode_chunk, encode_chunk, train_dictionary
from tests.hostile.harness import write_md5_file

pytestmark = pytest.mark.oldest


def run_limited(code: str, address_space: int, timeout: float = 120) -> str:
    """Run ``code`` in a child Python under RLIMIT_AS; its stdout (it must exit 0)."""
    prelude = ("import resource\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space}))\n")
    out = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


# ---------------------------------------------------------------- zstd dictionary

def test_damaged_zstd_dictionary_is_a_codec_error():
    """zstd refuses some damaged dictionaries only when a decompressor is made
    from them; that was outside the try, so zstandard.ZstdError escaped."""
    items = [("k%05d" % (i % 500)).encode() * 3 for i in range(3000)]
    good = train_dictionary(items, size=1024)
    chunk = encode_chunk(items, "bytes", dictionary=good)
    rng = random.Random(1)
    outcomes = {"codec": 0, "same": 0}
    for _ in range(300):
        damaged = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(8, len(damaged))] = rng.randrange(256)
        try:
            got = decode_chunk(chunk, "bytes", dictionary=bytes(damaged))
        except bcolz_store.CodecError:
            outcomes["codec"] += 1
        else:
            assert got.tolist() == items    # a harmless flip: the frame's checksum agrees
            outcomes["same"] += 1
    assert outcomes["codec"] > 200


# ---------------------------------------------------------------- missing items

def _swap_chunk(tmp_path, make_target, make_donor, rel):
    """A dataset made by ``make_target`` whose file ``rel`` is replaced by the
    one ``make_donor`` wrote, with its checksum file rewritten to agree."""
    target, donor = tmp_path / "target", tmp_path / "donor"
    make_target(str(target))
    make_donor(str(donor))
    shutil.copyfile(donor / rel, target / rel)
    (target / "bcolz_store.json").unlink(missing_ok=True)   # no consolidated sizes
    write_md5_file(target)
    return str(target)


def test_missing_item_in_a_non_nullable_vlen_column_is_refused(tmp_path):
    """Every read path refuses it; before, c[1] gave None, c[1:2] the str
    'None' and c[:] a bare ValueError."""
    def target(p):
        bcolz_store.carray(["a", "b", "c", "d"], dtype=bcolz_store.vlen("str", nullable=False),
                           chunklen=4, rootdir=p, mode="w").flush()

    def donor(p):
        bcolz_store.carray(["a", None, "c", "d"], dtype=bcolz_store.vlen("str", nullable=True),
                           chunklen=4, rootdir=p, mode="w").flush()

    root = _swap_chunk(tmp_path, target, donor, "data/__0.vlen")
    for verify in (False, True):
        c = bcolz_store.open(root, "r", verify=verify)
        reads = [lambda: c[1], lambda: c[1:2], lambda: c[:], lambda: list(c),
                 lambda: c[[0, 1]], lambda: list(bcolz_store.iterblocks(c, 2))]
        for read in reads:
            with pytest.raises(bcolz_store.FormatError, match="not nullable"):
                read()


def test_missing_category_is_refused(tmp_path):
    """Before, a missing category read as the category 'None'."""
    def target(p):
        bcolz_store.carray(["x", "y", "x"], dtype=bcolz_store.category(["x", "y", "z"]),
                           rootdir=p, mode="w").flush()

    def donor(p):
        # a non-nullable vlen column's layout, with a missing item among three
        bcolz_store.carray(["x", None, "z"], dtype=bcolz_store.vlen("str", nullable=True),
                           chunklen=64, rootdir=p, mode="w").flush()

    (tmp_path / "donor").mkdir()
    root = _swap_chunk(tmp_path, target,
                       lambda p: donor(p + "/categories"), "categories/data/__0.vlen")
    c = bcolz_store.open(root, "r")
    for read in (lambda: c[:], lambda: c[0], lambda: c[[2, 1]], lambda: list(c)):
        with pytest.raises(bcolz_store.FormatError):
            read()


# ---------------------------------------------------------------- memory

def test_long_items_decode_without_extra_copies():
    """A chunk of long str items decodes into its result plus the payload:
    numpy's S -> StringDType cast (128 times an item's size) and a slice of
    each item are gone.  Measured with tracemalloc (numpy reports its
    allocations there)."""
    tracemalloc = pytest.importorskip("tracemalloc")
    if not hasattr(np.dtypes, "StringDType"):
        pytest.skip("numpy 1.x reads str items as objects")
    items = [(chr(65 + i % 26) * (1 << 16)) for i in range(256)]      # 16 MiB of 64 KiB items
    chunk = encode_chunk(items, "str")
    tracemalloc.start()
    try:
        out = decode_chunk(chunk, "str")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.tolist() == items
    payload = 1 << 24
    assert peak < 2.6 * payload, peak / payload       # payload + items (+ arena slack)


def test_empty_vlen_columns_with_a_huge_chunklen_open_in_little_memory(tmp_path):
    """40 empty vlen columns of chunklen 2**22 took 5.7 GB of address space
    to open (each leftover took chunklen slots up front); a leftover now
    grows with its items."""
    root = tmp_path / "t"
    cols = [bcolz_store.carray([], dtype="vlen-str", chunklen=1 << 22) for _ in range(40)]
    bcolz_store.ctable(cols, names=[f"c{i}" for i in range(40)], rootdir=str(root), mode="w",
                       chunklen=1 << 22).flush()
    out = run_limited(f"""
        import bcolz_store
        t = bcolz_store.open({str(root)!r}, "a")
        assert len(t[:]) == 0
        t.append(tuple(["v"] * 40))
        t.append(tuple(["w"] * 40))
        t.flush()
        t = bcolz_store.open({str(root)!r}, "r")
        print(len(t), t["c7"][:].tolist())
    """, 1536 << 20)
    assert out.split() == ["2", "['v',", "'w']"]


def test_a_long_category_repeated_is_refused_before_allocating(tmp_path):
    """One 16 MiB category and 4,000 codes: appending the category 4,000
    times took a copy of it each time, and reading them back asked for 64 GB.
    Now appends take references, and a read over the memory ceiling is a
    LimitError; the carray stays readable by slices that fit."""
    root = tmp_path / "c"
    big_len = 16 << 20
    out = run_limited(f"""
        import bcolz_store
        big = "x" * {big_len}
        c = bcolz_store.carray(["a", big], dtype=bcolz_store.category(), rootdir={str(root)!r},
                               mode="w")
        c.append([big] * 4000)
        c.flush()
        c = bcolz_store.open({str(root)!r}, "r")
        try:
            c[:]
        except bcolz_store.LimitError as err:
            print("refused", "4002 categorical items" in str(err))
        print(len(c), c[0], len(c[3]), [len(v) for v in c[1000:1004]])
    """, 2 << 30)
    # numpy 1.x reads str items as objects: the 4,002 items are references to one str
    refused = ["refused", "True"] if hasattr(np.dtypes, "StringDType") else []
    assert out.split() == refused + ["4002", "a", str(big_len)] + \
        [f"[{big_len},", f"{big_len},", f"{big_len},", f"{big_len}]"]


def test_unhashable_item_for_a_categorical_is_a_type_error():
    c = bcolz_store.carray(["a", "b"], dtype=bcolz_store.category())
    with pytest.raises(TypeError, match="item 1 \\(list\\)"):
        c.append(["a", ["b"]])
    assert c[:].tolist() == ["a", "b"]


# ---------------------------------------------------------------- written, then unreadable

def test_atoms_of_32_dimensions_are_refused_at_write(tmp_path):
    """meta/sizes may hold 32 dimensions (length + atom); a carray of more was
    committed and then refused by every reader."""
    ok = bcolz_store.carray(np.zeros((2,) + (1,) * 31), rootdir=str(tmp_path / "ok"), mode="w")
    ok.flush()
    assert bcolz_store.open(str(tmp_path / "ok"))[:].shape == (2,) + (1,) * 31
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        return                          # numpy 1.x itself has no arrays of 33 dimensions
    for shape in ((2,) + (1,) * 32, (2, 3) + (1,) * 40):
        with pytest.raises(bcolz_store.LimitError, match="more than the 32"):
            bcolz_store.carray(np.zeros(shape), rootdir=str(tmp_path / "bad"), mode="w")
        assert not (tmp_path / "bad").exists()
    with pytest.raises(bcolz_store.LimitError):
        bcolz_store.carray(np.zeros(2), dtype=np.dtype(("f8", (1,) * 32)))


def test_chunks_over_blosc_limit_are_refused_at_creation():
    """A chunklen whose chunk Blosc cannot compress asked numpy for 16 TiB."""
    with pytest.raises(bcolz_store.LimitError, match="Blosc"):
        bcolz_store.carray(np.zeros(3), chunklen=2 ** 41)
    with pytest.raises(bcolz_store.LimitError):
        bcolz_store.carray(np.zeros(3, dtype="i4"), chunklen=2 ** 29)
    assert len(bcolz_store.carray(np.zeros(3, dtype="i1"), chunklen=2 ** 30)) == 3
