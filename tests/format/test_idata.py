"""The IndexedData manifest: golden bytes, every index width, hostile buffers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcolz_store.errors import FormatError
from bcolz_store.format.idata import (IDATA_FLAG_VALIDATION_KEY, decode_vlq, decode_vlq_reversed,
                                      encode_vlq, encode_vlq_reversed, fletcher16, index_widths,
                                      pack_index, parse_index, validation_key)

# ---------------------------------------------------------------- golden bytes

# 20, 220, 280: two values in 1 byte, one in 2 (the paper's own example).
#   14 dc | 18 01 | key 42 18 | rVLQ(c2=1) rVLQ(c1=2) | fb 0x22 (W=2, key flag)
GOLDEN_20_220_280 = bytes.fromhex("14dc1801" "4218" "0102" "22")
# 0, 5, 70000: counts [2, 0, 1]; the key worked out by hand:
#   Fletcher-16 of 23 02 00 01 05 70 11 01 (fb, c1..c3, I=5, last end) -> sum1 0xad, sum2 0xb4
GOLDEN_0_5_70000 = bytes.fromhex("0005" "701101" "adb4" "010002" "23")
# No items: W = 0, key of 20 00, fb.
GOLDEN_EMPTY = bytes.fromhex("204020")


@pytest.mark.parametrize("ends, golden", [
    ([20, 220, 280], GOLDEN_20_220_280),
    ([0, 5, 70000], GOLDEN_0_5_70000),
    ([], GOLDEN_EMPTY),
])
def test_pack_index_matches_golden_bytes(ends, golden):
    assert pack_index(ends) == golden
    assert parse_index(golden, data_nbytes=ends[-1] if ends else 0).tolist() == ends


# The same three ends with the index filter: deltas 20 200 | 60 (2 bytes, shuffled).
GOLDEN_FILTERED_20_220_280 = bytes.fromhex("14c8" "3c00" "4218" "0102" "22")


def test_filtered_index_matches_golden_bytes():
    assert pack_index([20, 220, 280], filtered=True) == GOLDEN_FILTERED_20_220_280
    parsed = parse_index(GOLDEN_FILTERED_20_220_280, data_nbytes=280, filtered=True)
    assert parsed.tolist() == [20, 220, 280]


def test_filtered_index_shuffles_bytes_within_a_width_group():
    # 300, 600, 1000 -> deltas 300 300 400 = 2c01 2c01 9001 -> low bytes, then high bytes
    assert pack_index([300, 600, 1000], filtered=True)[:6] == bytes.fromhex("2c2c90" "010101")


def test_golden_with_its_data_region_parses():
    data = bytes(range(20)) + b"x" * 260
    ends = parse_index(data + GOLDEN_20_220_280, "g")
    assert ends.dtype == np.int64
    assert ends.tolist() == [20, 220, 280]


def test_empty_idata_is_the_three_byte_manifest():
    assert parse_index(GOLDEN_EMPTY).tolist() == []
    assert parse_index(GOLDEN_EMPTY).dtype == np.int64


# ---------------------------------------------------------------- VLQ

@pytest.mark.parametrize("value, hexed", [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"),
    (2 ** 64 - 1, "ffffffffffffffffff01"),
])
def test_vlq_known_bytes(value, hexed):
    assert encode_vlq(value).hex() == hexed
    assert encode_vlq_reversed(value) == bytes.fromhex(hexed)[::-1]
    assert decode_vlq(bytes.fromhex(hexed)) == (value, len(hexed) // 2)


@given(st.integers(0, 2 ** 64 - 1), st.binary(max_size=4))
def test_vlq_round_trips_both_directions(value, pad):
    fwd = pad + encode_vlq(value) + pad
    assert decode_vlq(fwd, len(pad)) == (value, len(pad) + len(encode_vlq(value)))
    rev = pad + encode_vlq_reversed(value)
    assert decode_vlq_reversed(rev, len(rev)) == (value, len(pad))


@pytest.mark.parametrize("encoded, message", [
    (b"\x80", "truncated"),
    (b"\x80" * 11, "longer than 10"),
    (b"\x80\x00", "non-canonical"),
    (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "above the limit"),  # 2**70 - 1
])
def test_decode_vlq_rejects_malformed(encoded, message):
    with pytest.raises(FormatError, match=message):
        decode_vlq(encoded)
    with pytest.raises(FormatError, match=message):
        decode_vlq_reversed(encoded[::-1], len(encoded))


def test_decode_vlq_stops_at_limit():
    with pytest.raises(FormatError, match="above the limit 100"):
        decode_vlq(encode_vlq(101), limit=100)
    assert decode_vlq(encode_vlq(100), limit=100) == (100, 1)


@pytest.mark.parametrize("value", [-1, 2 ** 64])
def test_encode_vlq_rejects_out_of_range(value):
    with pytest.raises(ValueError):
        encode_vlq(value)


# ---------------------------------------------------------------- Fletcher-16

@pytest.mark.parametrize("text, key", [
    (b"abcde", 0xC8F0), (b"abcdef", 0x2057), (b"abcdefgh", 0x0627), (b"", 0),
])
def test_fletcher16_known_vectors(text, key):
    assert fletcher16(text) == key


def _fletcher16_loop(data):
    s1 = s2 = 0
    for b in data:
        s1 = (s1 + b) % 255
        s2 = (s2 + s1) % 255
    return s2 << 8 | s1


def test_fletcher16_vectorised_equals_the_loop_across_blocks():
    data = np.random.default_rng(7).integers(0, 256, 70_000, dtype=np.uint8).tobytes()
    assert fletcher16(data) == _fletcher16_loop(data)
    assert fletcher16(b"\xff" * 300) == _fletcher16_loop(b"\xff" * 300)


# ---------------------------------------------------------------- widths

@pytest.mark.parametrize("width", range(1, 9))
def test_every_index_width_round_trips(width):
    low = 1 << (8 * (width - 1)) if width > 1 else 0
    high = (1 << (8 * width)) - 1
    ends = [0, 255, 256, 65535, 65536, low, low + 1, high]
    ends = sorted(set(e for e in ends if e <= high))
    manifest = pack_index(ends)
    assert manifest[-1] == width | IDATA_FLAG_VALIDATION_KEY
    assert len(index_widths(ends)) == width
    parsed = parse_index(manifest, "wide", data_nbytes=ends[-1])
    assert [int(v) for v in parsed] == ends
    filtered = pack_index(ends, filtered=True)
    index_nbytes = sum(w * c for w, c in enumerate(index_widths(ends), 1))
    assert filtered[index_nbytes:] == manifest[index_nbytes:]  # key, counts, fb unchanged
    parsed = parse_index(filtered, "wide", data_nbytes=ends[-1], filtered=True)
    assert [int(v) for v in parsed] == ends


def test_index_widths_counts_values_by_minimal_width():
    assert index_widths([0, 5, 70000]) == [2, 0, 1]
    assert index_widths([]) == []
    assert index_widths(np.array([256, 256, 2 ** 40], dtype=np.uint64)) == [0, 2, 0, 0, 0, 1]


def test_top_of_uint64_parses_as_uint64():
    ends = [1, 2 ** 64 - 1]
    parsed = parse_index(pack_index(ends), data_nbytes=2 ** 64 - 1)
    assert parsed.dtype == np.uint64
    assert parsed.tolist() == ends


@pytest.mark.parametrize("ends", [[-1], [3, 2], [0.5], [[1, 2]], [2 ** 64], np.array([1.0]),
                                  np.array([-1, 2])])
def test_pack_index_rejects_bad_ends(ends):
    with pytest.raises(ValueError):
        pack_index(ends)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=60), st.booleans())
def test_items_round_trip_through_idata(items, filtered):
    ends = np.cumsum([len(i) for i in items], dtype=np.int64)
    buf = b"".join(items) + pack_index(ends, filtered=filtered)
    ends = parse_index(buf, filtered=filtered)
    starts = np.concatenate(([0], ends[:-1])).astype(np.int64)
    assert [buf[a:b] for a, b in zip(starts, ends)] == items


# ---------------------------------------------------------------- hostile

def _manifest(first_byte, counts, values, key=None, rcounts=None):
    """Hand-built manifest with a correct key unless one is given."""
    width = len(counts)
    stored = b"".join(v.to_bytes(w, "little") for w, c in enumerate(counts, 1)
                      for v in values[sum(counts[:w - 1]):sum(counts[:w])])
    last = stored[len(stored) - width:] if width else b""
    key = validation_key(first_byte, counts, last) if key is None else key
    if rcounts is None:
        rcounts = b"".join(encode_vlq_reversed(c) for c in reversed(counts))
    return stored + key + rcounts + bytes([first_byte])


def test_hand_built_manifest_equals_pack_index():
    assert _manifest(0x22, [2, 1], [20, 220, 280]) == GOLDEN_20_220_280


@pytest.mark.parametrize("buf, message", [
    (b"", "empty buffer"),
    (b"\x00", "0x00"),
    (b"\x29", "width 9"),
    (b"\x0f", "width 15"),
    (GOLDEN_20_220_280[:-1] + b"\x02", "flags 0x00"),
    (GOLDEN_20_220_280[:-1] + b"\x32", "flags 0x30"),
    (GOLDEN_20_220_280[:-1] + b"\xa2", "flags 0xa0"),
    (b"\x21", "truncated reversed VLQ"),
    (b"\xff" * 10 + b"\x7f\x21", "above the limit"),
    (b"\x00\x00\x21", "no value stored in 1 bytes"),
    (b"\x02\x21", "truncated"),
    (b"x" * 20 + encode_vlq_reversed(2 ** 30) + b"\x21", "above the limit 26"),
    (b"x" * 20 + encode_vlq_reversed(20) + b"\x21", "truncated"),
    (GOLDEN_20_220_280[:4] + b"\x00\x00" + GOLDEN_20_220_280[6:], "validation key 0000"),
    (_manifest(0x22, [2, 1], [20, 220, 280], rcounts=b"\x01" + b"\x00\x82"),
     "non-canonical"),
    (_manifest(0x22, [2, 1], [200, 100, 280]), "decrease"),
    (_manifest(0x22, [1, 2], [20, 220, 280]), "fits in fewer"),
    (_manifest(0x21, [2], [5, 9]), "does not match the data region of 0"),
    (b"abc" + _manifest(0x21, [2], [1, 2]), "does not match the data region of 3"),
])
def test_malformed_manifests_raise_format_error(buf, message):
    with pytest.raises(FormatError, match=message) as info:
        parse_index(buf, "chunk 7")
    assert str(info.value).startswith("chunk 7: ")


def _filtered(deltas_by_width, counts, last):
    """Hand-built filtered manifest: per width, the deltas' bytes shuffled."""
    stored = b""
    for w, deltas in deltas_by_width.items():
        matrix = np.array([list(d.to_bytes(w, "little")) for d in deltas], dtype=np.uint8)
        stored += matrix.T.tobytes()
    fb = len(counts) | IDATA_FLAG_VALIDATION_KEY
    key = validation_key(fb, counts, last.to_bytes(len(counts), "little"))
    return stored + key + b"".join(encode_vlq_reversed(c) for c in reversed(counts)) + bytes([fb])


@pytest.mark.parametrize("buf, data_nbytes, message", [
    # deltas 2**64 - 1 and 2 wrap around to 1: the values decrease
    (_filtered({8: [2 ** 64 - 1, 2]}, [0] * 7 + [2], 1), 1, "decrease|fits in fewer"),
    # deltas 200 and 100 in 1-byte slots sum to 300: does not fit in 1 byte
    (_filtered({1: [200, 100]}, [2], 300 % 256), 300, "does not fit in its 1 bytes"),
    # a plain manifest read as filtered: 1, 3 become ends 1, 4
    (pack_index([1, 3]), 3, "does not match the data region of 3"),
])
def test_malformed_filtered_indexes_raise_format_error(buf, data_nbytes, message):
    with pytest.raises(FormatError, match=message):
        parse_index(buf, data_nbytes=data_nbytes, filtered=True)


def test_bytes_before_a_detached_manifest_are_refused():
    with pytest.raises(FormatError, match="precede"):
        parse_index(b"z" + GOLDEN_20_220_280, data_nbytes=280)


def test_absurd_counts_are_refused_before_allocating():
    # Eight widths each claiming as many values as the buffer has bytes:
    # the index would need 36 times the buffer, refused without allocating.
    counts = b"".join(encode_vlq_reversed(29) for _ in range(8))
    buf = b"\x00" * 20 + counts + b"\x28"
    with pytest.raises(FormatError, match="truncated"):
        parse_index(buf)


def test_every_truncation_of_an_idata_buffer_raises():
    items = [b"", b"ab", b"c" * 300, b"", b"d" * 70_000]
    buf = b"".join(items) + pack_index(np.cumsum([len(i) for i in items]))
    for cut in list(range(len(buf) - 40, len(buf))) + list(range(0, 40)):
        with pytest.raises(FormatError):
            parse_index(buf[:cut])
        with pytest.raises(FormatError):
            parse_index(buf[cut + 1:])


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_raise_format_error_or_parse_consistently(buf):
    try:
        ends = parse_index(buf)
    except FormatError:
        return
    assert np.all(np.diff(ends) >= 0)
    assert (int(ends[-1]) if ends.size else 0) <= len(buf)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=20), st.data())
def test_bit_flips_in_the_manifest_are_caught_or_harmless(lengths, data):
    ends = np.cumsum(lengths, dtype=np.int64)
    manifest = pack_index(ends)
    bit = data.draw(st.integers(0, 8 * len(manifest) - 1))
    flipped = bytearray(manifest)
    flipped[bit // 8] ^= 1 << (bit % 8)
    try:
        parsed = parse_index(bytes(flipped), data_nbytes=int(ends[-1]) if ends.size else 0)
    except FormatError:
        return
    # Only the middle index values are outside the key; a flip there must
    # still leave a valid, canonical, non-decreasing index.
    assert np.all(np.diff(parsed) >= 0)
    assert parsed.size == ends.size
