"""UUID columns (Arrow's ``arrow.uuid``): the kind's contract
(:class:`~bcolz_store.testing.kinds.KindTests`) and its own paths: Python
items (``uuid.UUID``, text, bytes, None), the ``meta/storage`` entry, the real
bcolz's view of the bytes, Parquet."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError
from bcolz_store.kinds.uuid.kind import UuidKind
from bcolz_store.testing.kinds import KindTests

pa = pytest.importorskip("pyarrow")
if not hasattr(pa, "uuid"):                 # pragma: no cover (pyarrow < 18)
    pytest.skip("pyarrow has no uuid type", allow_module_level=True)


def _uuids(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [uuid.UUID(bytes=bytes(row)) for row in rng.integers(0, 256, (n, 16), dtype=np.uint8)]


def _array(n: int = 1234, nulls: bool = True):
    items = _uuids(n)
    return pa.array([None if nulls and i % 5 == 3 else v for i, v in enumerate(items)],
                    pa.uuid())


class TestUuidKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return UuidKind

    @pytest.fixture
    def arrow_array(self):
        return _array()


class TestWithoutNulls(KindTests):
    @pytest.fixture
    def kind_class(self):
        return UuidKind

    @pytest.fixture
    def arrow_array(self):
        return _array(1001, nulls=False)


def test_python_items_of_every_form_make_the_same_carray(tmp_path):
    items = _uuids(6)
    forms = [items[0], str(items[1]), items[2].bytes, None, items[4].hex, items[5]]
    c = bcolz_store.carray(forms, dtype="uuid", rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    again = bcolz_store.open(str(tmp_path / "c"))
    assert isinstance(again.kind, UuidKind) and again.nullable
    got = pa.RecordBatchReader.from_stream(again).read_all().column(0)
    assert got.type == pa.uuid()
    assert got.to_pylist() == [items[0], items[1], items[2], None, items[4], items[5]]
    raw = again[:]
    assert raw.dtype == np.dtype("V16") and raw.mask.tolist() == [False] * 3 + [True, False, False]
    assert uuid.UUID(bytes=bytes(raw[5])) == items[5]


def test_uuid_carrays_are_nullable_unless_told():
    assert bcolz_store.carray(_uuids(3), dtype="uuid").nullable
    c = bcolz_store.carray(_uuids(3), dtype="uuid", nullable=False)
    assert isinstance(c.kind, UuidKind) and not c.nullable
    assert [bytes(v) for v in c[:]] == [u.bytes for u in _uuids(3)]


@pytest.mark.parametrize("items,error,text", [
    ([uuid.uuid4(), 3], TypeError, "item 1"),
    (["not a uuid"], ValueError, "item 0"),
    ([b"short"], ValueError, "16 bytes"),
])
def test_items_that_are_not_uuids_are_refused_with_their_position(items, error, text):
    with pytest.raises(error, match=text):
        bcolz_store.carray(items, dtype="uuid")


def test_a_missing_item_with_nullable_false_is_refused():
    with pytest.raises(ValueError, match="nullable=False"):
        bcolz_store.carray([uuid.uuid4(), None], dtype="uuid", nullable=False)


def test_the_entry_is_written_and_a_later_version_is_refused(tmp_path):
    root = tmp_path / "c"
    bcolz_store.carray(_array(10), rootdir=str(root), mode="w").flush()
    storage = json.loads((root / "meta" / "storage").read_text())
    assert storage["uuid"] == {"version": 1} and storage["dtype"] == "|V16"
    storage["uuid"]["version"] = 2
    (root / "meta" / "storage").write_text(json.dumps(storage))
    (root / "bcolz_store.json").unlink(missing_ok=True)
    with pytest.raises(FormatError, match="layout version 2"):
        bcolz_store.open(str(root))


def test_parquet_keeps_the_uuid_type(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from bcolz_store.converters.arrow import from_parquet, to_parquet
    t = bcolz_store.ctable(pa.table({"id": _array(50), "n": np.arange(50)}))
    to_parquet(t, tmp_path / "t.parquet")
    back = pq.read_table(tmp_path / "t.parquet")
    assert back.column("id").to_pylist() == _array(50).to_pylist()
    from_parquet(tmp_path / "t.parquet", str(tmp_path / "again"))
    again = bcolz_store.open(str(tmp_path / "again"))
    assert isinstance(again["id"].kind, UuidKind)
    assert pa.table(again).column("id").to_pylist() == _array(50).to_pylist()


def test_the_real_bcolz_reads_the_bytes(tmp_path):
    bcolz = pytest.importorskip("bcolz")
    items = _uuids(20)
    root = str(tmp_path / "c")
    bcolz_store.carray(items, dtype="uuid", rootdir=root, mode="w").flush()
    got = bcolz.open(root, mode="r")[:]
    assert [bytes(v) for v in got] == [u.bytes for u in items]
