"""Chunks of variable-length str/bytes items: round trips, golden bytes, hostile chunks."""

import dataclasses
import struct

import numpy as np
import pytest
import zstandard as zstd
from hypothesis import given, settings
from hypothesis import strategies as st

from bcolz_store.kinds.vlen.chunk import decode_chunk, encode_chunk, train_dictionary
from bcolz_store.kinds.vlen.chunk_header import (VLEN_HEADER_LENGTH, VlenHeader, pack_vlen_header,
                                            parse_vlen_header)
from bcolz_store.errors import CodecError, FormatError
from bcolz_store.format.idata import pack_index
from bcolz_store.kinds.vlen import meta as vlen_meta

HAS_STRINGDTYPE = hasattr(np.dtypes, "StringDType")
needs_stringdtype = pytest.mark.skipif(not HAS_STRINGDTYPE, reason="numpy < 2")

# ---------------------------------------------------------------- golden bytes

GOLDEN_ITEMS = ["a", None, "", "é"]
#   magic "bvlc", version 1, kind 1 (str), flags 3 (bitmap, filtered index),
#   codec 1 (zstd), nitems 4, rawbytes 12, dict_id 0, then cbytes (depends on
#   the zstd version)
GOLDEN_HEADER_START = bytes.fromhex("62766c6301010301" "0400000000000000" "0c00000000000000"
                                    "00000000")
#   data "a" "é" | ends 1 1 1 3 stored as deltas 1 0 0 2 | key 2c9b (of the real
#   last end, 3) | rVLQ(4) | fb 0x21 | bitmap 0b1101
GOLDEN_PAYLOAD = bytes.fromhex("61c3a9" "01000002" "2c9b" "04" "21" "0d")
# A whole chunk as written by bcolz_store 0.1 (zstandard 0.25): must always decode.
GOLDEN_CHUNK = bytes.fromhex(
    "62766c630101030104000000000000000c00000000000000000000001900000028b52ffd240c61000061c3a9"
    "010000022c9b04210d89cecdcb")
GOLDEN_BYTES_CHUNK = bytes.fromhex(
    "62766c630102030103000000000000000a00000000000000000000001700000028b52ffd240a51000000ff02"
    "0000299503210345a07134")
# The paper's plain layout (flags 1: no index filter), as a reader must still accept.
GOLDEN_PLAIN_CHUNK = bytes.fromhex(
    "62766c630101010104000000000000000c00000000000000000000001900000028b52ffd240c61000061c3a9"
    "010101032c9b04210da8de03a5")


def test_encode_writes_the_golden_header_and_payload():
    chunk = encode_chunk(GOLDEN_ITEMS, "str")
    assert chunk[:28] == GOLDEN_HEADER_START
    assert struct.unpack_from("<I", chunk, 28)[0] == len(chunk) - VLEN_HEADER_LENGTH
    assert zstd.ZstdDecompressor().decompress(chunk[VLEN_HEADER_LENGTH:]) == GOLDEN_PAYLOAD


def test_golden_chunks_decode():
    assert decode_chunk(GOLDEN_CHUNK, "str", "golden").tolist() == GOLDEN_ITEMS
    assert decode_chunk(GOLDEN_BYTES_CHUNK, "bytes").tolist() == [b"\x00\xff", b"", None]
    assert decode_chunk(GOLDEN_PLAIN_CHUNK, "str").tolist() == GOLDEN_ITEMS


def test_header_round_trips():
    hdr = parse_vlen_header(GOLDEN_CHUNK)
    assert hdr == VlenHeader(1, "str", 3, 1, 4, 12, 0, len(GOLDEN_CHUNK) - 32)
    assert hdr.has_validity and hdr.index_filtered and hdr.bitmap_nbytes == 1
    assert pack_vlen_header(hdr) == GOLDEN_CHUNK[:32]


# ---------------------------------------------------------------- round trips

STR_CASES = {
    "ascii": ["apple", "banana", "", "cherry pie", "x"],
    "utf8": ["é", "日本語", "🙂🙃", "a\u0301", "", "Ω≈ç√", "mixed ascii é"],
    "empty_strings": ["", "", ""],
    "with_none": [None, "a", None, "", "é", None],
    "all_none": [None, None],
    "single": ["only"],
    "empty_chunk": [],
    "nul_inside": ["a\x00b", "\x00", "", "c"],
    "every_ascii_byte": [chr(i) for i in range(128)] * 3 + ["é", None],
}


def _expected(items):
    return [None if x is None else x for x in items]


@pytest.mark.parametrize("name", STR_CASES)
def test_str_items_round_trip(name):
    items = STR_CASES[name]
    out = decode_chunk(encode_chunk(items, "str"), "str", name)
    assert out.shape == (len(items),)
    assert out.tolist() == items


BYTES_CASES = {
    "plain": [b"abc", b"", b"\x00\x01", b"z" * 1000],
    "with_none": [None, b"", b"x", None],
    "every_byte_value": [bytes([i]) for i in range(256)] * 2 + [b""],
    "empty_chunk": [],
}


@pytest.mark.parametrize("name", BYTES_CASES)
def test_bytes_items_round_trip(name):
    items = BYTES_CASES[name]
    out = decode_chunk(encode_chunk(items, "bytes"), "bytes")
    assert out.dtype == object
    assert out.tolist() == items


def test_bytes_like_items_are_stored_as_bytes():
    out = decode_chunk(encode_chunk([bytearray(b"ab"), memoryview(b"cd")], "bytes"), "bytes")
    assert out.tolist() == [b"ab", b"cd"]


@needs_stringdtype
def test_decoded_str_dtype_is_stringdtype_with_none_only_when_missing():
    plain = decode_chunk(encode_chunk(["a", ""], "str"), "str")
    assert plain.dtype == np.dtypes.StringDType()
    assert not hasattr(plain.dtype, "na_object")
    missing = decode_chunk(encode_chunk(["a", None], "str"), "str")
    assert missing.dtype.na_object is None
    assert missing[1] is None and missing[0] == "a"


def test_decoded_str_is_an_object_array_without_stringdtype(monkeypatch):
    monkeypatch.setattr(vlen_meta, "_HAS_STRINGDTYPE", False)   # the one dtype decision
    out = decode_chunk(encode_chunk(["a", None, "é"], "str"), "str")
    assert out.dtype == object
    assert out.tolist() == ["a", None, "é"]


def test_a_huge_single_item_round_trips():
    rng = np.random.default_rng(3)
    item = rng.integers(32, 127, 5_000_000, dtype=np.uint8).tobytes().decode() + "é"
    out = decode_chunk(encode_chunk(["", item, None], "str", level=1), "str")
    assert out[1] == item and out[0] == "" and out[2] is None


def test_short_ascii_items_take_the_fixed_width_path_intact():
    items = ["A", "", "BCDEFGHIJKLMNOPQ", "z" * 16, "", "Q"] * 50_000  # > 1 MiB: several blocks
    out = decode_chunk(encode_chunk(items, "str"), "str")
    assert out.tolist() == items
    assert (np.strings.str_len(out) == [len(x) for x in items]).all() if HAS_STRINGDTYPE else True


def test_many_items_span_several_blocks():
    rng = np.random.default_rng(4)
    lengths = rng.integers(0, 200, 30_000)
    text = rng.integers(97, 123, int(lengths.sum()), dtype=np.uint8).tobytes().decode()
    ends = np.cumsum(lengths).tolist()
    items = [text[a:b] for a, b in zip([0] + ends[:-1], ends)]
    items[7] = None
    items[20_000] = "ünïcode"
    assert decode_chunk(encode_chunk(items, "str"), "str").tolist() == items


def test_highly_compressible_chunk_is_within_the_ratio_bound():
    items = ["a" * 4_000_000, "b" * 1000]
    chunk = encode_chunk(items, "str", level=19)
    assert parse_vlen_header(chunk).rawbytes > 1000 * len(chunk)
    assert decode_chunk(chunk, "str").tolist() == items


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=40),
       st.sampled_from([1, 3, 22]))
def test_any_str_items_round_trip(items, level):
    assert decode_chunk(encode_chunk(items, "str", level=level), "str").tolist() == items


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=40))
def test_any_bytes_items_round_trip(items):
    assert decode_chunk(encode_chunk(items, "bytes"), "bytes").tolist() == items


# ---------------------------------------------------------------- input forms

def _forms(items):
    obj = np.empty(len(items), dtype=object)
    obj[:] = items
    forms = {"list": list(items), "tuple": tuple(items), "object": obj}
    if HAS_STRINGDTYPE:
        forms["stringdtype"] = np.array(items, dtype=np.dtypes.StringDType(na_object=None))
    return forms


@pytest.mark.parametrize("form", ["list", "tuple", "object", "stringdtype"])
def test_every_input_form_gives_the_same_chunk(form):
    forms = _forms(GOLDEN_ITEMS)
    if form not in forms:
        pytest.skip("numpy < 2")
    assert encode_chunk(forms[form], "str") == encode_chunk(GOLDEN_ITEMS, "str")


@needs_stringdtype
def test_stringdtype_without_na_and_with_nan_na():
    plain = np.array(["x", "", "é"], dtype=np.dtypes.StringDType())
    assert decode_chunk(encode_chunk(plain, "str"), "str").tolist() == ["x", "", "é"]
    nan_na = np.array(["x", np.nan, ""], dtype=np.dtypes.StringDType(na_object=np.nan))
    assert decode_chunk(encode_chunk(nan_na, "str"), "str").tolist() == ["x", None, ""]


def test_fixed_width_arrays_are_accepted():
    assert decode_chunk(encode_chunk(np.array(["ab", "c"]), "str"), "str").tolist() == ["ab", "c"]
    assert decode_chunk(encode_chunk(np.array([b"ab", b"c"]), "bytes"),
                        "bytes").tolist() == [b"ab", b"c"]


@pytest.mark.parametrize("items, kind, error, message", [
    (["a", 1], "str", TypeError, "must be str"),
    (["a", b"b"], "str", TypeError, "must be str"),
    ([b"a", "b"], "bytes", TypeError, "bytes-like"),
    ([memoryview(np.arange(3, dtype=np.int32))], "bytes", TypeError, "itemsize 1"),
    ([np.array(7, dtype=np.uint8)], "bytes", TypeError, "itemsize 1"),
    (np.arange(3), "str", TypeError, "int64"),
    (np.array([["a"]], dtype=object), "str", ValueError, "one-dimensional"),
    ("abc", "str", TypeError, "sequence"),
    (["a", None, "\ud800"], "str", ValueError, "item 2 cannot be encoded"),
    (["a"], "text", ValueError, "kind"),
])
def test_bad_items_are_refused(items, kind, error, message):
    with pytest.raises(error, match=message):
        encode_chunk(items, kind)


@needs_stringdtype
def test_stringdtype_array_is_refused_for_a_bytes_chunk():
    with pytest.raises(TypeError, match="StringDType"):
        encode_chunk(np.array(["a"], dtype=np.dtypes.StringDType()), "bytes")


@pytest.mark.parametrize("level", [0, 23, -1, True, 3.0, "3"])
def test_bad_levels_are_refused(level):
    with pytest.raises(ValueError, match="level"):
        encode_chunk(["a"], "str", level=level)


def test_decode_with_a_bad_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        decode_chunk(GOLDEN_CHUNK, "unicode")


@needs_stringdtype
def test_decoded_arrays_do_not_share_string_storage():
    # numpy#32013: StringDType arrays that share a dtype instance can corrupt
    # each other (np.fromiter); each decode must stand alone.
    chunk = encode_chunk(["a" * 20, "b" * 30] * 5000, "str")
    first, second = decode_chunk(chunk, "str"), decode_chunk(chunk, "str")
    del first
    third = decode_chunk(chunk, "str")
    assert second.tolist() == third.tolist() == ["a" * 20, "b" * 30] * 5000


# ---------------------------------------------------------------- dictionaries

def _samples(prefix, n=3000):
    return [f"{prefix}-{i % 97:03d}-{'user' if i % 3 else 'admin'}@example.org" for i in range(n)]


@pytest.fixture(scope="module")
def dictionary():
    return train_dictionary(_samples("alpha"), size=2048)


def test_dictionary_round_trip_records_its_id(dictionary):
    items = _samples("alpha", 40)
    chunk = encode_chunk(items, "str", dictionary=dictionary)
    assert parse_vlen_header(chunk).dict_id == zstd.ZstdCompressionDict(dictionary).dict_id() != 0
    assert decode_chunk(chunk, "str", dictionary=dictionary).tolist() == items
    assert len(chunk) < len(encode_chunk(items, "str"))


def test_missing_dictionary_is_a_codec_error(dictionary):
    chunk = encode_chunk(["a", "b"], "str", dictionary=dictionary)
    with pytest.raises(CodecError, match="pass that dictionary"):
        decode_chunk(chunk, "str", "c.vlen")


def test_wrong_dictionary_is_a_codec_error(dictionary):
    other = train_dictionary(_samples("beta"), size=2048)
    chunk = encode_chunk(["a", "b"], "str", dictionary=dictionary)
    with pytest.raises(CodecError, match="needs zstd dictionary"):
        decode_chunk(chunk, "str", dictionary=other)


def test_raw_content_dictionary_is_refused():
    with pytest.raises(CodecError, match="no dictionary id"):
        encode_chunk(["a"], "str", dictionary=b"just some raw content")


def test_chunk_without_dictionary_ignores_a_given_one(dictionary):
    assert decode_chunk(GOLDEN_CHUNK, "str", dictionary=dictionary).tolist() == GOLDEN_ITEMS


def test_training_on_too_few_samples_is_a_codec_error():
    with pytest.raises(CodecError, match="could not train"):
        train_dictionary(["a", "b"], size=1024)
    with pytest.raises(ValueError, match="256"):
        train_dictionary(_samples("x"), size=100)


# ---------------------------------------------------------------- hostile

def _chunk(raw, nitems, kind=1, flags=0, rawbytes=None, cbytes=None, version=1, codec=1,
           magic=b"bvlc", frame=None, dict_id=0):
    """A chunk around a hand-made payload (checksummed zstd frame)."""
    if frame is None:
        frame = zstd.ZstdCompressor(write_checksum=True).compress(raw)
    rawbytes = len(raw) if rawbytes is None else rawbytes
    cbytes = len(frame) if cbytes is None else cbytes
    return struct.pack("<4sBBBBQQII", magic, version, kind, flags, codec, nitems, rawbytes,
                       dict_id, cbytes) + frame


def test_hand_made_chunk_helper_matches_encode():
    raw = b"ab" + pack_index([1, 2])
    assert decode_chunk(_chunk(raw, 2), "str").tolist() == ["a", "b"]


RAW2 = b"ab" + pack_index([1, 2])


@pytest.mark.parametrize("chunk, error, message", [
    (b"bvlc", FormatError, "truncated vlen header"),
    (_chunk(RAW2, 2, magic=b"blpk"), FormatError, "bad magic"),
    (_chunk(RAW2, 2, version=2), FormatError, "version 2"),
    (_chunk(RAW2, 2, kind=3), FormatError, "kind code 3"),
    (_chunk(RAW2, 2, kind=2), FormatError, "holds bytes items, expected str"),
    (_chunk(RAW2, 2, flags=0x04), FormatError, "flags 0x04"),
    (_chunk(b"abc" + pack_index([1, 3]), 2, flags=0x02), FormatError, "data region of 3"),
    (_chunk(RAW2, 2, codec=2), FormatError, "codec 2"),
    (_chunk(RAW2, 2, cbytes=9999), FormatError, "9999 bytes"),
    (_chunk(RAW2, 2, rawbytes=2 ** 31 + 1), FormatError, "limit"),
    (_chunk(RAW2, 2, rawbytes=2 ** 20), FormatError, "can hold"),
    (_chunk(RAW2, 2 ** 40), FormatError, "cannot fit"),
    (_chunk(RAW2, 0, flags=1), FormatError, "cannot fit|empty chunk"),
    (_chunk(RAW2, 3), FormatError, "manifest holds 2 items, header says 3"),
    (_chunk(RAW2, 2, rawbytes=len(RAW2) + 1), FormatError, "frame declares"),
    (_chunk(RAW2, 2, dict_id=5), CodecError, "dictionary 5"),
    (_chunk(RAW2, 2, frame=zstd.ZstdCompressor(
        write_checksum=True, dict_data=zstd.ZstdCompressionDict(train_dictionary(
            [f"sample {i}" for i in range(1000)], size=512))).compress(RAW2)),
     FormatError, "frame names dictionary"),
    (_chunk(RAW2, 2, frame=zstd.ZstdCompressor().compress(RAW2)), FormatError, "checksum"),
    (_chunk(RAW2, 2, frame=zstd.ZstdCompressor(write_checksum=True,
                                               write_content_size=False).compress(RAW2)),
     FormatError, "frame declares"),
    (_chunk(RAW2, 2, frame=zstd.ZstdCompressor(write_checksum=True).compress(RAW2) + b"\0"),
     CodecError, "unused data"),
    (_chunk(RAW2, 2, frame=b"not a zstd frame at all"), CodecError, "not a zstd frame"),
    (_chunk(b"\xff" + pack_index([1]), 1), FormatError, "item 0 is not valid UTF-8"),
    (_chunk("é".encode() + pack_index([1, 2]), 2), FormatError, "item 0 is not valid UTF-8"),
    (_chunk(bytes(range(128)) + b"\xff" + pack_index(list(range(1, 130))), 129), FormatError,
     "not valid UTF-8"),
    (_chunk(RAW2 + b"\x03", 2, flags=1), FormatError, "no item is missing"),
    (_chunk(RAW2 + b"\x05", 2, flags=1), FormatError, "padding bits"),
    (_chunk(RAW2 + b"\x02", 2, flags=1), FormatError, "missing item 0 has 1 bytes"),
    (_chunk(b"ab" + b"\x01\x02" + b"\x00\x00" + b"\x02\x21", 2), FormatError, "validation key"),
    (_chunk(b"", 0), FormatError, "cannot fit"),
])
def test_malformed_chunks_raise_format_or_codec_error(chunk, error, message):
    with pytest.raises(error, match=message) as info:
        decode_chunk(chunk, "str", "data/__3.vlen")
    assert str(info.value).startswith("data/__3.vlen: ")


def test_absurd_raw_size_is_refused_before_decompressing():
    # 2 GiB of zeros compresses to a ~64 KiB frame that declares 2 GiB; the
    # header may not claim more than 32768x its frame, nor more than 2 GiB.
    frame = zstd.ZstdCompressor(write_checksum=True).compress(b"\0" * 1000)
    with pytest.raises(FormatError, match="can hold"):
        decode_chunk(_chunk(b"", 1, rawbytes=len(frame) * 32768 + 1, frame=frame), "bytes")


def test_every_truncation_raises():
    chunk = encode_chunk(["abc", None, "", "日本", "x" * 50], "str")
    for cut in range(len(chunk)):
        with pytest.raises((FormatError, CodecError)):
            decode_chunk(chunk[:cut], "str")
    with pytest.raises(FormatError):
        decode_chunk(chunk + b"\0", "str")


def test_every_truncation_of_the_frame_raises_even_with_a_matching_cbytes():
    chunk = encode_chunk(["abc", None, "", "日本", "x" * 50], "str")
    hdr = parse_vlen_header(chunk)
    frame = chunk[VLEN_HEADER_LENGTH:]
    for cut in range(len(frame)):
        lying = pack_vlen_header(dataclasses.replace(hdr, cbytes=cut)) + frame[:cut]
        with pytest.raises((FormatError, CodecError)):
            decode_chunk(lying, "str")


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_bit_flips_are_caught_or_harmless(data):
    items = data.draw(st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=8))
    kind = "str"
    chunk = bytearray(encode_chunk(items, kind))
    bit = data.draw(st.integers(0, 8 * len(chunk) - 1))
    chunk[bit // 8] ^= 1 << (bit % 8)
    try:
        out = decode_chunk(bytes(chunk), kind)
    except (FormatError, CodecError):
        return
    assert out.tolist() == items


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=80))
def test_random_payloads_raise_only_format_or_codec_errors(payload):
    frame = zstd.ZstdCompressor(write_checksum=True).compress(payload)
    try:
        decode_chunk(_chunk(payload, 2, frame=frame), "bytes")
    except (FormatError, CodecError):
        pass
