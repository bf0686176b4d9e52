"""Every file of the Parquet corpus (tests/interop/parquet_corpus.py) survives
Parquet -> bcolz_store on disk -> reopen -> Parquet exactly: schema (types,
field nullability) and values, nulls included; or it is refused with an
error that names the column, where a type has no place in a bcolz column."""

from __future__ import annotations

import pytest

from .parquet_corpus import corpus_files, round_trip, same_values, write_corpus

pytest.importorskip("pyarrow")

#: name -> why the file is refused (the message must name the column)
REFUSED = {
    # a list of Arrow's null type: its elements have no type a column could store
    "null_list": "emptylist",
}

_GENERATED = sorted(n for n in __import__("tests.interop.parquet_corpus", fromlist=["_tables"])
                    ._tables(pytest.importorskip("pyarrow")))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.mark.parametrize("name", _GENERATED + ["pyarrow:v0.7.1", "pyarrow:v0.7.1.all-named-index",
                                               "pyarrow:v0.7.1.column-metadata-handling",
                                               "pyarrow:v0.7.1.some-named-index"])
def test_each_file_round_trips_exactly(corpus, name, tmp_path):
    if name not in corpus:
        pytest.skip(f"{name} is not shipped with this pyarrow")
    outcome = round_trip(corpus[name], tmp_path)
    if name in REFUSED:
        assert outcome.status == "refused" and repr(REFUSED[name]) in outcome.detail, outcome
    else:
        assert outcome.status == "exact", outcome


def test_files_from_elsewhere(tmp_path):
    """The same round trip over the folder named by BCOLZ_STORE_PARQUET_CORPUS
    (say parquet-testing's data/); skipped when it is not set."""
    files = corpus_files()
    if not files:
        pytest.skip("BCOLZ_STORE_PARQUET_CORPUS names no folder of Parquet files")
    wrong = {}
    for i, (name, path) in enumerate(files.items()):
        work = tmp_path / str(i)
        work.mkdir()
        outcome = round_trip(path, work)
        if outcome.status == "wrong":
            wrong[name] = outcome.detail
    assert not wrong


def test_fixed_length_byte_array_keeps_every_byte(corpus, tmp_path):
    """Items ending in NUL bytes (which a numpy ``S4`` column would cut) and
    nulls come back exactly, as a fixed-size binary column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bcolz_store
    from bcolz_store.converters.arrow import from_parquet
    from bcolz_store.kinds.fixed_binary.kind import FixedBinaryKind

    path = corpus["fixed_length_byte_array"]
    want = pq.read_table(path).column("flba_field").to_pylist()
    assert any(v is not None and v.endswith(b"\0") for v in want)
    assert None in want
    from_parquet(path, tmp_path / "t").flush()
    col = bcolz_store.open(str(tmp_path / "t"))["flba_field"]
    assert col.kind == FixedBinaryKind(4, nullable=True)
    assert col[:].tolist() == want
    got = pa.table(bcolz_store.open(str(tmp_path / "t"))).column("flba_field")
    assert got.type == pa.binary(4) and got.to_pylist() == want


@pytest.mark.parametrize("a, b, same", [
    (float("nan"), float("nan"), True), (0.0, -0.0, False), (1, True, False),
    ([1, None], [1, None], True), ({"a": 1}, {"a": 1.0}, False), (None, None, True)])
def test_the_comparison_is_strict(a, b, same):
    assert same_values(a, b) is same


def _plain(folder) -> bool:
    """Whether every column's meta/storage holds a dtype numpy knows (as the
    real bcolz needs), and nothing but the keys bcolz writes."""
    import json
    import os

    import numpy as np

    names = json.load(open(os.path.join(folder, "__rootdirs__")))["names"]
    for name in names:
        path = os.path.join(folder, name, "meta", "storage")
        if not os.path.exists(path):
            return False
        storage = json.load(open(path))
        if set(storage) - {"dtype", "cparams", "chunklen", "expectedlen", "dflt"}:
            return False
        try:
            np.dtype(storage["dtype"])
        except TypeError:
            return False
    return True


def test_the_real_bcolz_reads_every_plain_table(corpus, tmp_path):
    """Each corpus file whose table has only plain columns (numpy dtypes,
    identifier names) opens in the real bcolz with the same values."""
    import numpy as np

    import bcolz_store
    from bcolz_store.converters.arrow import from_parquet
    real = pytest.importorskip("bcolz")
    checked = 0
    for i, (name, path) in enumerate(corpus.items()):
        folder = tmp_path / str(i)
        try:
            ours = from_parquet(path, folder)
        except (TypeError, ValueError, bcolz_store.BcolzStoreError):
            continue
        if not _plain(folder):
            continue
        theirs = real.open(str(folder), mode="r")
        assert list(theirs.names) == list(ours.names), name
        for col in ours.names:
            np.testing.assert_array_equal(theirs[col][:], ours[col][:], err_msg=f"{name}: {col}")
        checked += 1
    assert checked >= 30
