"""Carrays of variable-length str and bytes items (vlen carrays), in memory and on
disk: every read and write against a Python list model, at the chunk edges."""

import json
import os

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds.vlen.meta import vlen_result_dtype
from bcolz_store.errors import (ChunkNotFoundError, CodecError, FormatError, KindMismatchError,
                                UnsafeDataError)

# What reads give: StringDType on numpy 2, object arrays of str on numpy 1.x.
STR = vlen_result_dtype("str", False)
NSTR = vlen_result_dtype("str", True)
HAS_STRINGDTYPE = hasattr(np.dtypes, "StringDType")
needs_stringdtype = pytest.mark.skipif(not HAS_STRINGDTYPE, reason="numpy 1.x has no StringDType")
CL = 8
EDGES = [0, 1, CL - 1, CL, CL + 1, 3 * CL, 3 * CL + 1]


def words(n, seed=0, missing=False, kind="str"):
    """``n`` items of random length 0..12 (some non-ASCII), some None when ``missing``."""
    rng = np.random.default_rng(seed)
    alphabet = list("abcxyz é€😀")
    out = []
    for i in range(n):
        text = "".join(rng.choice(alphabet, rng.integers(0, 13)))
        item = text if kind == "str" else text.encode("utf-8")
        out.append(None if missing and i % 5 == 3 else item)
    return out


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    """``(make, reopen)``: a vlen carray factory and the way to read it back."""
    counter = iter(range(10**6))

    def make(items, **kwargs):
        if request.param == "disk":
            kwargs.setdefault("rootdir", str(tmp_path / f"c{next(counter)}"))
            kwargs.setdefault("mode", "w")
        return bcolz_store.carray(items, **kwargs)

    def reopen(c, mode="a"):
        return c if c.rootdir is None else bcolz_store.open(c.rootdir, mode=mode)
    return make, reopen


def check(c, model):
    """``c`` reads back exactly as the list ``model``, by every kind of read."""
    assert len(c) == len(model)
    assert c[:].tolist() == model
    assert list(c) == model
    if model:
        assert c[-1] == model[-1] and c[0] == model[0]
        idx = [len(model) - 1, 0, len(model) // 2, 0]
        assert c[idx].tolist() == [model[i] for i in idx]
        assert c[::3].tolist() == model[::3]
        assert c[::-2].tolist() == model[::-2]
        mask = np.arange(len(model)) % 3 == 1
        assert c[mask].tolist() == [m for m, k in zip(model, mask) if k]


@pytest.mark.parametrize("n", EDGES)
@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_items_read_back_at_every_chunk_edge(where, n, kind):
    make, reopen = where
    model = words(n, seed=n, missing=True, kind=kind)
    c = make(model, dtype=bcolz_store.vlen(kind), chunklen=CL)
    check(c, model)
    back = reopen(c, "r")
    check(back, model)
    assert (back.nchunks, back.nleftover) == divmod(n, CL)


def test_reads_give_stringdtype_and_missing_items_stay_apart_from_empty(where):
    make, reopen = where
    plain = make(["a", "", "ccc"], dtype=bcolz_store.vlen(nullable=False))
    assert plain.dtype == STR and plain[:].dtype == STR
    nullable = make(["a", None, "", None], dtype="vlen-str", chunklen=2)
    back = reopen(nullable, "r")
    assert back.dtype == NSTR and back[:].dtype == NSTR
    assert back[:].tolist() == ["a", None, "", None]
    assert back[1] is None and back[2] == ""
    raw = make([b"\x00", None, b""], dtype="vlen-bytes")
    assert reopen(raw, "r")[:].tolist() == [b"\x00", None, b""]
    assert raw.dtype == np.dtype(object)


@needs_stringdtype
def test_list_object_array_and_stringdtype_array_are_all_accepted(where):
    make, _ = where
    items = ["x", "yy", None]
    for given in (items, np.array(items, dtype=object), np.array(items, dtype=NSTR)):
        c = make(given, dtype="vlen-str")
        assert c[:].tolist() == items
    from_stringdtype = make(np.array(["a", "b"], dtype=STR))    # no dtype needed
    assert from_stringdtype.vlen == bcolz_store.vlen("str", nullable=False)
    assert make(np.array(["ab", "c"]), dtype="vlen-str")[:].tolist() == ["ab", "c"]


def test_a_list_of_str_without_dtype_stays_fixed_width_as_in_bcolz():
    c = bcolz_store.carray(["ab", "c"])
    assert c.dtype == np.dtype("<U2") and c.vlen is None


@pytest.mark.parametrize("kind,items,error,text", [
    ("str", ["a", 3], TypeError, "item 1 is 3"),
    ("str", ["a", b"b"], TypeError, "item 1"),
    ("bytes", [b"a", "b"], TypeError, "item 1"),
    ("str", ["\ud800"], ValueError, "UTF-8"),
    ("str", np.zeros((2, 2), dtype=object), ValueError, "one-dimensional"),
    ("str", np.array([b"x"]), TypeError, "bytes"),
    ("bytes", np.arange(3), TypeError, "int64"),
    ("str", ["a", b"b"], KindMismatchError, r"item 1 is b'b' \(bytes\)"),
    ("bytes", [b"a", "b"], KindMismatchError, r"item 1 is 'b' \(str\)"),
    ("str", np.array([b"x"]), KindMismatchError, "bytes .* array cannot be stored as str"),
    ("bytes", np.array(["x"]), KindMismatchError, "str .* array cannot be stored as bytes"),
])
def test_wrong_items_are_refused_with_their_position(kind, items, error, text):
    with pytest.raises(error, match=text):
        bcolz_store.carray(items, dtype=bcolz_store.vlen(kind))


def test_none_is_refused_where_missing_items_are_not_allowed(where):
    make, reopen = where
    c = make(["a", "b"], dtype=bcolz_store.vlen(nullable=False))
    assert c.vlen.nullable is False
    with pytest.raises(ValueError, match="missing items"):
        c.append([None])
    with pytest.raises(ValueError, match="missing items"):
        c[0] = None
    assert reopen(c, "r")[:].tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="nullable=False"):
        make(["a", None], dtype=bcolz_store.vlen(nullable=False))
    assert make([], dtype=bcolz_store.vlen(nullable=True)).dtype == NSTR


def test_appending_a_carray_is_checked_before_anything_changes(where):
    """A missing item deep in a vlen carray appended to one that allows none,
    or an item of another type in an object carray: refused before the first
    block is written, pending appends kept; a carray of the other kind too."""
    make, reopen = where
    c = make(["a", "b"], dtype=bcolz_store.vlen(nullable=False))
    c.append(["c"])
    late_none = bcolz_store.carray(["x"] * 100 + [None], dtype="vlen-str", chunklen=8)
    with pytest.raises(ValueError, match="missing items"):
        c.append(late_none)
    objects = bcolz_store.carray(np.array(["x"] * 20 + [3], dtype=object), chunklen=4)
    with pytest.raises(TypeError, match=r"is 3 \(int\)"):
        c.append(objects)
    with pytest.raises(KindMismatchError, match="a vlen carray of bytes cannot be appended"):
        c.append(bcolz_store.carray([b"x"], dtype="vlen-bytes"))
    assert c[:].tolist() == ["a", "b", "c"]
    c.append(bcolz_store.carray(["x", "y"] * 20, dtype=bcolz_store.vlen(nullable=False)))
    c.append(bcolz_store.carray(np.array(["z"], dtype=object)))
    c.flush()
    assert reopen(c, "r")[:].tolist() == ["a", "b", "c"] + ["x", "y"] * 20 + ["z"]


@pytest.mark.parametrize("dtype", [bcolz_store.vlen(), bcolz_store.vlen("bytes"), "vlen-str",
                                   "vlen-bytes", bcolz_store.vlen(nullable=None)],
                         ids=["vlen", "vlen-bytes-type", "vlen-str", "vlen-bytes", "None"])
def test_vlen_columns_are_nullable_whatever_data_they_start_with(where, dtype):
    make, reopen = where
    kind = "bytes" if "bytes" in str(dtype) else "str"
    item = b"x" if kind == "bytes" else "x"
    empty, plain, holding = (make(data, dtype=dtype) for data in
                             ([], [item], [item, None]))
    for c in (empty, plain, holding):
        assert c.vlen.nullable is True and c.dtype == holding.dtype
        c.append([None, item])
        c[0] = None
    assert reopen(empty, "r")[:].tolist() == [None, item]
    assert reopen(plain, "r")[:].tolist() == [None, None, item]
    assert reopen(holding, "r").vlen == holding.vlen


def test_nullable_false_and_stringdtype_without_na_object_refuse_none(where):
    make, _ = where
    made = [make([], dtype=bcolz_store.vlen(nullable=False)),
            make([b"x"], dtype=bcolz_store.vlen("bytes", nullable=False))]
    if HAS_STRINGDTYPE:
        made += [make(np.array(["a"], dtype=STR)), make([], dtype=STR)]
        assert make(np.array(["a"], dtype=NSTR)).vlen.nullable is True
    for c in made:
        assert c.vlen.nullable is False and c.dtype == vlen_result_dtype(c.vlen.kind, False)
        with pytest.raises(ValueError, match="missing items"):
            c.append([None])


def test_datasets_recorded_not_nullable_stay_so(tmp_path):
    root = tmp_path / "old"
    bcolz_store.carray(["a", "b"], dtype="vlen-str", rootdir=str(root), mode="w")
    storage = json.loads((root / "meta" / "storage").read_text())
    storage["vlen"]["nullable"] = False         # as earlier versions wrote it
    (root / "meta" / "storage").write_text(json.dumps(storage) + "\n")
    for name in ("bcolz_store.json", "bcolz_store.md5"):
        if (root / name).exists():
            (root / name).unlink()
    old = bcolz_store.open(str(root), mode="a")
    assert old.vlen.nullable is False and old.dtype == STR and old[:].tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="missing items"):
        old.append([None])
    old.append(["c"])
    old.flush()
    assert bcolz_store.open(str(root), mode="r").vlen.nullable is False
    copy = old.copy()
    assert copy.vlen.nullable is False


def test_append_trim_resize_cross_chunk_edges(where):
    make, reopen = where
    model = words(5, missing=True)
    c = make(model, dtype="vlen-str", chunklen=CL, dflt="-")
    for step, n in enumerate([3, CL, 1, 2 * CL + 3, 0]):
        extra = words(n, seed=10 + step, missing=True)
        c.append(extra)
        model += extra
    c.append("one")
    c.append(np.array(["two"], dtype=NSTR))
    model += ["one", "two"]
    c.flush()
    check(reopen(c), model)
    c = reopen(c)
    c.trim(CL + 2)
    del model[-(CL + 2):]
    c.resize(len(model) + CL + 1)
    model += ["-"] * (CL + 1)
    check(reopen(c), model)
    c = reopen(c)
    c.resize(3)
    check(reopen(c, "r"), model[:3])


def test_setitem_by_int_slice_step_mask_and_index_array(where):
    make, reopen = where
    model = words(3 * CL + 2, missing=True)
    c = make(model, dtype="vlen-str", chunklen=CL)
    c[1] = "one"
    model[1] = "one"
    c[-1] = None
    model[-1] = None
    c[2:CL + 4] = ["s%d" % i for i in range(CL + 2)]
    model[2:CL + 4] = ["s%d" % i for i in range(CL + 2)]
    c[::5] = "five"
    model[::5] = ["five"] * len(model[::5])
    c[CL + 1::-3] = ["r%d" % i for i in range(len(model[CL + 1::-3]))]
    model[CL + 1::-3] = ["r%d" % i for i in range(len(model[CL + 1::-3]))]
    mask = np.arange(len(model)) % 4 == 2
    c[mask] = "m"
    model = ["m" if k else v for v, k in zip(model, mask)]
    c[[0, 3 * CL + 1, 7]] = ["p", "q", None]
    model[0], model[3 * CL + 1], model[7] = "p", "q", None
    check(c, model)
    check(reopen(c, "r"), model)


def test_iteration_where_and_blocks(where):
    make, _ = where
    model = words(2 * CL + 3, missing=True)
    c = make(model, dtype="vlen-str", chunklen=CL)
    assert list(c.iter(2, 20, 3)) == model[2:20:3]
    assert list(c.iter(limit=4, skip=2)) == model[2:6]
    mask = np.array([m is None for m in model])
    assert list(c.where(mask)) == [None] * int(mask.sum())
    assert [x for b in bcolz_store.iterblocks(c, blen=5) for x in b.tolist()] == model


def test_copy_keeps_kind_level_dictionary_and_missing_items(tmp_path):
    items = ["ticker%d" % (i % 300) for i in range(6000)] + [None]
    c = bcolz_store.carray(items, dtype=bcolz_store.vlen(level=9, dictionary=True,
                                                         dict_size=1024))
    d = c.copy(rootdir=str(tmp_path / "copy"), mode="w")
    assert d.vlen == c.vlen and d.vlen.level == 9 and isinstance(d.vlen.dictionary, bytes)
    back = bcolz_store.open(str(tmp_path / "copy"), mode="r")
    assert back[:].tolist() == items and back.vlen == c.vlen


def test_files_and_metadata_on_disk(tmp_path):
    root = tmp_path / "names.bcolz"
    bcolz_store.carray(words(20), dtype=bcolz_store.vlen(level=7), chunklen=CL,
                       rootdir=str(root), mode="w")
    assert sorted(os.listdir(root / "data")) == ["__0.vlen", "__1.vlen", "__2.vlen"]
    storage = json.loads((root / "meta" / "storage").read_text())
    assert storage["dtype"].startswith("vlen-str: column 'names.bcolz' holds variable-length")
    assert "," not in storage["dtype"]
    assert storage["vlen"] == {"kind": "str", "codec": "zstd", "level": 7, "nullable": True,
                               "dictionary": None}
    assert storage["chunklen"] == CL and storage["dflt"] == ""
    sizes = json.loads((root / "meta" / "sizes").read_text())
    assert sizes["shape"] == [20]
    files = sum((root / "data" / f).stat().st_size for f in os.listdir(root / "data"))
    assert sizes["cbytes"] == files == bcolz_store.open(str(root)).cbytes
    assert bcolz_store.verify(str(root)).ok


def test_bytes_vlen_never_asks_for_allow_pickle(tmp_path):
    root = str(tmp_path / "b")
    bcolz_store.carray([b"a", b"bc"], dtype="vlen-bytes", rootdir=root, mode="w")
    back = bcolz_store.open(root, mode="r")
    assert back[:].tolist() == [b"a", b"bc"] and back[1] == b"bc"
    assert bcolz_store.open(root).sum is not None
    objects = bcolz_store.carray([b"a"], dtype=object, rootdir=str(tmp_path / "o"), mode="w")
    with pytest.raises(UnsafeDataError):
        bcolz_store.open(objects.rootdir)[:]


def test_zstd_level_and_trained_dictionary(tmp_path):
    rng = np.random.default_rng(1)
    tickers = ["".join(rng.choice(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), rng.integers(1, 6)))
               for _ in range(3000)]
    plain = bcolz_store.carray(tickers, dtype=bcolz_store.vlen(level=1), chunklen=100)
    high = bcolz_store.carray(tickers, dtype=bcolz_store.vlen(level=19), chunklen=100)
    trained = bcolz_store.carray(tickers, dtype=bcolz_store.vlen(level=19, dictionary=True,
                                                                 dict_size=2048),
                                 chunklen=100, rootdir=str(tmp_path / "t"), mode="w")
    assert high.cbytes <= plain.cbytes
    assert trained.cbytes < high.cbytes          # small chunks: the dictionary pays
    storage = json.loads((tmp_path / "t" / "meta" / "storage").read_text())
    assert isinstance(storage["vlen"]["dictionary"], str)
    back = bcolz_store.open(str(tmp_path / "t"), mode="r")
    assert back[:].tolist() == tickers and back.vlen.dictionary == trained.vlen.dictionary
    with pytest.raises(ValueError, match="initial items"):
        bcolz_store.carray([], dtype=bcolz_store.vlen(dictionary=True))
    with pytest.raises(CodecError):
        bcolz_store.carray(["a"], dtype=bcolz_store.vlen(dictionary=b"not a dictionary"))
    with pytest.raises(ValueError, match="1..22"):
        bcolz_store.vlen(level=23)


def test_sum_and_multidimensional_reshape_are_refused():
    c = bcolz_store.carray(["a", "b"], dtype="vlen-str")
    with pytest.raises(TypeError):
        c.sum()
    with pytest.raises(ValueError, match="one-dimensional"):
        c.reshape((1, 2))
    assert c.reshape(2)[:].tolist() == ["a", "b"]


@needs_stringdtype
def test_repr_shows_the_vlen_type():
    c = bcolz_store.carray(["a", None], dtype="vlen-str")
    text = repr(c)
    assert "carray((2,), StringDType(na_object=None))" in text
    assert "vlen := vlen('str', level=1, dictionary=False, nullable=True)" in text


def test_hostile_metadata_and_chunks_are_format_errors(tmp_path):
    root = tmp_path / "h"
    bcolz_store.carray(words(20), dtype="vlen-str", chunklen=CL, rootdir=str(root), mode="w")
    storage = json.loads((root / "meta" / "storage").read_text())

    def broken(**changes):
        bad = json.loads(json.dumps(storage))
        for key, value in changes.items():
            if value is None:
                bad["vlen"].pop(key)
            else:
                bad["vlen"][key] = value
        (root / "meta" / "storage").write_text(json.dumps(bad) + "\n")
        with pytest.raises(FormatError):
            bcolz_store.open(str(root))[:]

    broken(level=0)
    broken(kind="bytes")
    broken(codec="lz4")
    broken(dictionary="***")
    broken(nullable=None)
    broken(nullable="yes")
    (root / "meta" / "storage").write_text(json.dumps(storage) + "\n")
    chunk1 = (root / "data" / "__1.vlen").read_bytes()
    (root / "data" / "__1.vlen").write_bytes(chunk1[:-3])
    with pytest.raises(FormatError, match="__1.vlen"):
        bcolz_store.open(str(root))[:]
    (root / "data" / "__1.vlen").write_bytes((root / "data" / "__2.vlen").read_bytes())
    with pytest.raises(FormatError, match="holds 4 items"):
        bcolz_store.open(str(root))[:]
    os.remove(root / "data" / "__2.vlen")
    with pytest.raises(ChunkNotFoundError):
        bcolz_store.open(str(root))[:]


def test_the_kind_may_be_given_as_a_type_and_bad_parameters_are_named():
    assert repr(bcolz_store.vlen(str)) == repr(bcolz_store.vlen("str"))
    assert bcolz_store.vlen(bytes).kind == "bytes"
    c = bcolz_store.carray([b"a", b"", None], dtype=bcolz_store.vlen(bytes))
    assert list(c[:]) == [b"a", b"", None]
    with pytest.raises(ValueError, match="'str' or 'bytes'"):
        bcolz_store.vlen(int)
    with pytest.raises(ValueError, match="'str' or 'bytes'"):
        bcolz_store.vlen("unicode")
    with pytest.raises(ValueError, match="1..22"):
        bcolz_store.vlen(level=23)
    with pytest.raises(ValueError, match="dict_size"):
        bcolz_store.vlen(dict_size=10)
    with pytest.raises(TypeError, match="dictionary"):
        bcolz_store.vlen(dictionary="yes")
