"""The bloscpack and Blosc headers, against golden bytes and every fixture chunk file."""

import struct

import pytest

from bcolz_store.errors import FormatError
from bcolz_store.format.bloscpack import (BLOSCPACK_HEADER_LENGTH, pack_bloscpack_header,
                                          parse_blosc_header, parse_bloscpack_header,
                                          split_chunk_file)
from tests.conftest import FIXTURES

GOLDEN = bytes.fromhex("626c706b010000000100000000000000")


def test_pack_bloscpack_header_matches_bcolz_bytes():
    assert pack_bloscpack_header() == GOLDEN
    assert parse_bloscpack_header(GOLDEN) == 1


def _chunk_files():
    if not FIXTURES.is_dir():
        return []
    return sorted(FIXTURES.rglob("*.blp"))


@pytest.mark.parametrize("path", _chunk_files(), ids=lambda p: "/".join(p.parts[-4:]))
def test_every_fixture_chunk_file_parses(path):
    data = path.read_bytes()
    assert data[:BLOSCPACK_HEADER_LENGTH] == GOLDEN
    view = split_chunk_file(data, str(path))
    hdr = parse_blosc_header(view)
    assert hdr.ctbytes == len(data) - BLOSCPACK_HEADER_LENGTH
    assert hdr.typesize >= 1


def test_fixtures_have_chunk_files():
    if FIXTURES.is_dir():
        assert len(_chunk_files()) >= 65


@pytest.mark.parametrize("bad, message", [
    (b"blp", "truncated"),
    (b"xxxx" + GOLDEN[4:], "bad magic"),
    (GOLDEN[:4] + b"\x02" + GOLDEN[5:], "version"),
    (GOLDEN[:8] + struct.pack("<q", 2), "2 chunks"),
])
def test_bad_bloscpack_headers_raise_format_error(bad, message):
    with pytest.raises(FormatError, match=message):
        parse_bloscpack_header(bad, "f.blp")


def _blosc_header(version=2, flags=1, typesize=8, nbytes=800, blocksize=800, ctbytes=40):
    return struct.pack("<BBBBIII", version, 1, flags, typesize, nbytes, blocksize, ctbytes)


@pytest.mark.parametrize("header, size, message", [
    (_blosc_header()[:10], 10, "truncated"),
    (_blosc_header(version=9), 40, "version"),
    (_blosc_header(typesize=0), 40, "typesize 0"),
    (_blosc_header(ctbytes=41), 40, "holds 41 bytes"),
    (_blosc_header(blocksize=0), 40, "blocksize 0"),
    (_blosc_header(nbytes=10**9, blocksize=8, ctbytes=40), 40, "block offsets"),
    (_blosc_header(flags=2, nbytes=800, ctbytes=40), 40, "uncompressed"),
])
def test_lying_blosc_headers_raise_format_error(header, size, message):
    data = header + bytes(size - len(header))
    with pytest.raises(FormatError, match=message):
        parse_blosc_header(data, "chunk 3")


def test_split_chunk_file_rejects_trailing_garbage():
    import blosc
    payload = blosc.compress(bytes(range(256)) * 4, 8, 5, 1, "lz4")
    data = GOLDEN + payload
    assert bytes(split_chunk_file(data)) == payload
    with pytest.raises(FormatError):
        split_chunk_file(data + b"\0")
    with pytest.raises(FormatError):
        split_chunk_file(data[:-1])
