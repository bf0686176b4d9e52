"""A corpus of Parquet files with the schemas of the public Parquet test files,
and the round trip every one of them must survive.

The files of the public corpus (the ``data/`` folder of the Parquet project's
test-data repository, parquet-testing) cannot be downloaded where these tests
run, so :func:`write_corpus` writes, with pyarrow, one file for each of them
whose schema has the same shape: the same column names, Arrow types, field
nullability and kinds of values (nulls where the original has them, NaN,
empty lists, nested lists, maps, structs, decimals, int96 timestamps, names
that are not identifiers).  Four real public files ship with pyarrow
(``pyarrow/tests/data/parquet``) and are added as they are.  Set
``BCOLZ_STORE_PARQUET_CORPUS`` to a folder of real Parquet files (say a
checkout of parquet-testing's ``data/``) to run the same round trip on them:
``python -m tests.interop.parquet_corpus [FOLDER]`` prints one line a file.

:func:`round_trip` is the judge: the file read by pyarrow, converted to a
bcolz_store table on disk, reopened, written to Parquet again and read by
pyarrow must give the same table (schema without metadata, field nullability
included, and values), or the conversion must be refused with an error that
names a column.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

__all__ = ["CORPUS_ENV", "Outcome", "corpus_files", "round_trip", "same_values", "write_corpus"]

CORPUS_ENV = "BCOLZ_STORE_PARQUET_CORPUS"


def _tables(pa):
    """name -> (pyarrow Table, write options) for each file of the corpus."""
    rng = np.random.default_rng(20261127)
    n = 300
    out = {}

    def opt(values, typ, nulls=0.2):
        mask = rng.random(len(values)) < nulls
        return pa.array([None if m else v for v, m in zip(values, mask)], type=typ)

    ints = rng.integers(-1000, 1000, n)
    # --- alltypes_* (impala): every column optional, no nulls, int96 timestamps
    alltypes = pa.table({
        "id": pa.array(np.arange(8, dtype="i4")),
        "bool_col": pa.array([i % 2 == 0 for i in range(8)]),
        "tinyint_col": pa.array(np.arange(8, dtype="i4") % 2),
        "smallint_col": pa.array(np.arange(8, dtype="i4") % 2),
        "int_col": pa.array(np.arange(8, dtype="i4") % 2),
        "bigint_col": pa.array((np.arange(8) % 2 * 10).astype("i8")),
        "float_col": pa.array((np.arange(8) % 2 * 1.1).astype("f4")),
        "double_col": pa.array(np.arange(8) % 2 * 10.1),
        "date_string_col": pa.array([b"03/01/09"] * 8, pa.binary()),
        "string_col": pa.array([str(i % 2).encode() for i in range(8)], pa.binary()),
        "timestamp_col": pa.array((np.datetime64("2009-03-01T00:00") +
                                  np.arange(8).astype("m8[m]")).astype("M8[ns]"), pa.timestamp("ns")),
    })
    for name in ("alltypes_plain", "alltypes_plain.snappy", "alltypes_dictionary",
                 "alltypes_tiny_pages", "alltypes_tiny_pages_plain"):
        out[name] = (alltypes, {"use_deprecated_int96_timestamps": True})
    out["binary"] = (pa.table({"foo": pa.array([bytes([i]) * (i % 5) for i in range(12)])}), {})
    dec = [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-9999, 9999, 24)]
    out["byte_array_decimal"] = (pa.table({"value": pa.array(dec, pa.decimal128(4, 2))}), {})
    out["int32_decimal"] = (pa.table({"value": pa.array(dec, pa.decimal128(4, 2))}), {})
    out["int64_decimal"] = (pa.table({"value": pa.array(dec, pa.decimal128(10, 2))}), {})
    big = [decimal.Decimal(int(v) * 10**15 + 7).scaleb(-2) for v in rng.integers(-10**6, 10**6, 24)]
    out["fixed_length_decimal"] = (pa.table({"value": pa.array(big, pa.decimal128(25, 2))}), {})
    out["fixed_length_decimal_legacy"] = out["fixed_length_decimal"]
    huge = [decimal.Decimal(int(v) * 10**40 + 3).scaleb(-5) for v in rng.integers(-10**6, 10**6, 8)]
    out["decimal256"] = (pa.table({"d": pa.array(huge, pa.decimal256(60, 5)),
                                   "dn": opt(huge, pa.decimal256(60, 5))}), {})
    words = ["", "a", "bb", "hello", "naïve", "日本", "x" * 40, "a\x00b"]
    strs = [words[i % len(words)] for i in range(n)]
    out["datapage_v2.snappy"] = (pa.table({
        "a": opt(strs[:5], pa.string()), "b": pa.array(np.arange(5, dtype="i4")),
        "c": pa.array(np.linspace(2.0, 6.0, 5)), "d": pa.array([True, True, True, False, True]),
        "e": pa.array([[1, 2, 3], None, None, [1, 2, 3], [1, 2]], pa.list_(pa.int32())),
    }), {"data_page_version": "2.0"})
    out["delta_binary_packed"] = (pa.table(
        {f"bitwidth{w}": pa.array(rng.integers(0, 2**min(w, 62), 200), pa.int64())
         for w in (0, 1, 7, 31, 62)} |
        {"int_value": pa.array(rng.integers(-2**31, 2**31 - 1, 200), pa.int32())}), {})
    for name in ("delta_byte_array", "delta_length_byte_array", "delta_encoding_optional_column",
                 "data_index_bloom_encoding_stats", "data_index_bloom_encoding_with_length",
                 "binary_truncated_min_max"):
        out[name] = (pa.table({"c_customer_id": opt(strs, pa.string()),
                               "c_birth_year": opt(ints.tolist(), pa.int64())}), {})
    out["delta_encoding_required_column"] = (pa.table({
        "c_customer_sk": pa.array(ints.astype("i4")),
        "c_email_address": pa.array(strs)}), {})
    out["dict-page-offset-zero"] = (pa.table({"l_partkey": pa.array(np.full(39, 1552, "i4"))}), {})
    for name in ("hadoop_lz4_compressed", "hadoop_lz4_compressed_larger", "lz4_raw_compressed",
                 "lz4_raw_compressed_larger", "non_hadoop_lz4_compressed",
                 "hadoop_lz4_compressed_block_split"):
        out[name] = (pa.table({
            "c0": pa.array((1593604800 + np.arange(4)).astype("i8")),
            "c1": pa.array([b"abc", b"def", b"abc", b"def"]),
            "v11": pa.array([42.0, 7.7, 42.125, 7.7])}), {"compression": "lz4"})
    out["int32_with_null_pages"] = (pa.table({"int32_field": opt(ints.astype("i4").tolist(),
                                                                pa.int32(), 0.4)}), {})
    out["list_columns"] = (pa.table({
        "int64_list": pa.array([[1, 2, 3], [None, 1], [4], None, []], pa.list_(pa.int64())),
        "utf8_list": pa.array([["abc", "efg", "hij"], None, ["efg", None, "hij", "xyz"], [], None],
                              pa.list_(pa.string()))}), {})
    out["nested_lists.snappy"] = (pa.table({
        "a": pa.array([[[["a", "b"], ["c"]], [None, ["d"]]], [[["a", "b"], ["c", "d"]], [None, ["e"]]],
                       [[["a", "b"], ["c", "d"], ["e"]], [None, ["f"]]]] * 2,
                      pa.list_(pa.list_(pa.list_(pa.string())))),
        "b": pa.array([1] * 6, pa.int32())}), {})
    out["nested_maps.snappy"] = (pa.table({
        "a": pa.array([[("a", [(1, True), (2, False)])], [("b", [(1, True)])], [("c", None)],
                       [("d", [])], [("e", [(1, True)])], [("f", [(3, True), (4, False), (5, True)])]],
                      pa.map_(pa.string(), pa.map_(pa.int32(), pa.bool_()))),
        "b": pa.array([1] * 6, pa.int32()), "c": pa.array([1.0] * 6)}), {})
    struct_t = pa.struct([("a", pa.int32()), ("B", pa.list_(pa.int32())),
                          ("c", pa.struct([("D", pa.list_(pa.list_(pa.struct(
                              [("e", pa.int32()), ("f", pa.string())]))))])),
                          ("G", pa.map_(pa.string(), pa.struct(
                              [("h", pa.struct([("i", pa.list_(pa.float64()))]))])))])
    impala = {
        "ID": pa.array([8, 1, 2, 3, 4, 5, 6, 7], pa.int64()),
        "Int_Array": pa.array([[-1], [1, 2, 3], [None, 1, 2, None, 3, None], [], None, [],
                               [None], [1]], pa.list_(pa.int32())),
        "int_array_array": pa.array([[[-1, -2], []], [[1, 2], [3, 4]], [[None, 1, 2, None],
                                     [3, None, 4], [], None], None, [], [[]], [None], [[1]]],
                                    pa.list_(pa.list_(pa.int32()))),
        "Int_Map": pa.array([[("k1", -1)], [("k1", 1), ("k2", 100)], [("k1", 2), ("k2", None)],
                             [], None, [], [("k1", None)], [("k3", 7)]],
                            pa.map_(pa.string(), pa.int32())),
        "int_map_array": pa.array([[[]], [[("k1", 1)]], [None, [("k1", 1)], []], None, [], [[]],
                                   [[("k2", None)]], [[("k3", 3)]]],
                                  pa.list_(pa.map_(pa.string(), pa.int32()))),
        "nested_Struct": pa.array([
            {"a": -1, "B": [-1], "c": {"D": [[{"e": -1, "f": "nonnullable"}]]},
             "G": [("x", {"h": {"i": [-1.5]}})]},
            {"a": 1, "B": [1], "c": {"D": [[{"e": 10, "f": "aaa"}, {"e": -10, "f": "bbb"}],
                                           [{"e": 11, "f": "c"}]]},
             "G": [("foo", {"h": {"i": [1.1]}})]},
            None,
            {"a": None, "B": None, "c": None, "G": None},
            {"a": None, "B": [None], "c": {"D": None}, "G": []},
            {"a": 7, "B": [2, 3, None], "c": {"D": [None, [None, {"e": None, "f": None}]]},
             "G": [("g1", {"h": None}), ("g2", {"h": {"i": None}})]},
            {"a": 8, "B": [], "c": {"D": []}, "G": [("z", None)]},
            {"a": 9, "B": [9], "c": {"D": [[]]}, "G": [("q", {"h": {"i": []}})]},
        ], struct_t),
    }
    out["nullable.impala"] = (pa.table(impala), {})
    nonnull_schema = pa.schema([pa.field(k, v.type, nullable=False) for k, v in impala.items()])
    first = {k: v.slice(0, 2) for k, v in impala.items()}
    out["nonnullable.impala"] = (pa.table(first, schema=nonnull_schema), {})
    out["null_list"] = (pa.table({"emptylist": pa.array([[]], pa.list_(pa.null()))}), {})
    out["nulls.snappy"] = (pa.table({"b_struct": pa.array([None] * 8, pa.struct(
        [("b_c_int", pa.int32())]))}), {})
    out["repeated_no_annotation"] = (pa.table({
        "id": pa.array(np.arange(1, 7, dtype="i4")),
        "phoneNumbers": pa.array([None, None, {"phone": []}, {"phone": [
            {"number": 5555555555, "kind": None}]}, {"phone": [
                {"number": 1111111111, "kind": "home"}]}, {"phone": [
                    {"number": 1111111111, "kind": "home"}, {"number": 2222222222, "kind": None},
                    {"number": 3333333333, "kind": "mobile"}]}],
            pa.struct([pa.field("phone", pa.list_(pa.field("phone", pa.struct(
                [pa.field("number", pa.int64(), nullable=False),
                 ("kind", pa.string())]), nullable=False)), nullable=False)]))}), {})
    out["repeated_primitive_no_list"] = (pa.table({
        "Int32_list": pa.array([[0, 1, 2, 3], [4, 5, 6, 7], [], [8]],
                               pa.list_(pa.field("Int32_list", pa.int32(), nullable=False))),
        "String_list": pa.array([["foo", "zero"], ["one"], [], ["x", "y"]],
                                pa.list_(pa.field("String_list", pa.string(), nullable=False))),
    }), {})
    out["old_list_structure"] = (pa.table({"a": pa.array([[[1, 2], [3, 4]]],
                                                         pa.list_(pa.list_(pa.int32())))}), {})
    out["map_no_value"] = (pa.table({
        "my_map": pa.array([[(1, None), (2, None)], [(3, None)], None],
                           pa.map_(pa.int32(), pa.int32())),
        "my_map_no_v": pa.array([[(1, None), (2, None)], [(3, None)], None],
                                pa.map_(pa.int32(), pa.int32())),
        "my_list": pa.array([[1, 2], [3], None], pa.list_(pa.int32()))}), {})
    out["incorrect_map_schema"] = (pa.table({"my_map": pa.array(
        [[("name", "alice"), ("job", "engineer")], [], None],
        pa.map_(pa.string(), pa.string()))}), {})
    out["complex_map_key"] = (pa.table({"m": pa.array(
        [[({"x": 1, "y": "a"}, 1.5)], [], None], pa.map_(
            pa.struct([("x", pa.int32()), ("y", pa.string())]), pa.float64()))}), {})
    out["nested_structs.rust"] = (pa.table({
        "roll_num": pa.array([{"count": 10, "sum": 1.5, "min": {"v": 0}, "max": {"v": 3}}] * 3,
                             pa.struct([("count", pa.uint64()), ("sum", pa.float64()),
                                        ("min", pa.struct([("v", pa.uint64())])),
                                        ("max", pa.struct([("v", pa.uint64())]))])),
        "PC_CUR": pa.array([{"count": 1, "mean": {"p": 2.5}}] * 3,
                           pa.struct([("count", pa.uint64()),
                                      ("mean", pa.struct([("p", pa.float64())]))])),
    }), {})
    out["single_nan"] = (pa.table({"mycol": pa.array([None], pa.float64())}), {})
    out["nan_in_stats"] = (pa.table({"x": pa.array([1.0, float("nan")])}), {})
    out["rle_boolean_encoding"] = (pa.table({"datatype_boolean": opt(
        [bool(v % 2) for v in ints[:68]], pa.bool_())}), {})
    # (every third value ends in NUL bytes, as small little-endian integers do)
    flba = [bytes(rng.integers(0, 256, 4, dtype="u1")) for _ in range(100)]
    out["fixed_length_byte_array"] = (pa.table({"flba_field": opt(
        [v[:2] + b"\0\0" if i % 3 == 0 else v for i, v in enumerate(flba)],
        pa.binary(4))}), {})
    halfs = np.array([0.0, -0.0, 1.0, -2.0, np.nan, 65504.0, np.nan, 0.5], dtype="f2")
    out["float16_nonzeros_and_nans"] = (pa.table({"x": opt(halfs.tolist(), pa.float16(), 0.1)}),
                                        {})
    out["float16_zeros_and_nans"] = (pa.table({"x": pa.array(halfs, pa.float16())}), {})
    out["floating_orders_nan_count"] = (pa.table({
        "f32": opt(rng.standard_normal(50).astype("f4").tolist() + [float("nan")] * 5,
                   pa.float32()),
        "f64": opt(rng.standard_normal(55).tolist(), pa.float64()),
        "f16": pa.array(rng.standard_normal(55).astype("f2"))}), {})
    out["byte_stream_split.zstd"] = (pa.table({"f32": pa.array(rng.standard_normal(300).astype("f4")),
                                               "f64": pa.array(rng.standard_normal(300))}),
                                     {"compression": "zstd", "use_byte_stream_split": True,
                                      "use_dictionary": False})
    out["byte_stream_split_extended.gzip"] = (pa.table({
        "float16_plain": pa.array(rng.standard_normal(200).astype("f2")),
        "int32_plain": pa.array(rng.integers(-9, 9, 200).astype("i4")),
        "int64_plain": opt(rng.integers(-9, 9, 200).tolist(), pa.int64()),
        "flba5_plain": pa.array([bytes(rng.integers(0, 256, 5, dtype="u1")) for _ in range(200)],
                                pa.binary(5)),
        "decimal_plain": opt([decimal.Decimal(int(v)).scaleb(-3) for v in
                              rng.integers(-10**6, 10**6, 200)], pa.decimal128(7, 3))}),
        {"compression": "gzip"})
    out["concatenated_gzip_members"] = (pa.table({"long_col": pa.array(
        np.arange(1, 514, dtype="u8"))}), {"compression": "gzip"})
    out["column_chunk_key_value_metadata"] = (pa.table({"column1": pa.array([], pa.int32()),
                                                        "column2": pa.array([], pa.int32())}), {})
    out["sort_columns"] = (pa.table({"a": pa.array([None, 2, 1, None, 2, 1], pa.int64()),
                                     "b": pa.array([b"a", b"b", None, b"a", b"b", None])}), {})
    for name in ("datapage_v1-uncompressed-checksum", "datapage_v1-snappy-compressed-checksum"):
        out[name] = (pa.table({"a": pa.array(ints.astype("i4")), "b": pa.array(ints[::-1].astype("i4"))}),
                     {})
    for name in ("rle-dict-snappy-checksum", "plain-dict-uncompressed-checksum"):
        out[name] = (pa.table({"long_field": pa.array(np.full(100, 1, "i8")),
                               "binary_field": pa.array(["c"] * 100)}), {})
    out["page_v2_empty_compressed"] = (pa.table({"integer_column": pa.array([None] * 10,
                                                                            pa.int32())}),
                                       {"data_page_version": "2.0", "compression": "zstd"})
    out["datapage_v2_empty_datapage.snappy"] = (pa.table({"value": pa.array([None], pa.float32())}),
                                                {"data_page_version": "2.0"})
    out["int96_from_spark"] = (pa.table({"a": pa.array(
        [datetime.datetime(1, 1, 1), datetime.datetime(1000, 1, 1), datetime.datetime(2262, 4, 11),
         datetime.datetime(9999, 12, 31, 23, 59, 59, 999999), None,
         datetime.datetime(2024, 1, 1, 12)], pa.timestamp("us"))}), {})
    out["int96_timestamp_order"] = (pa.table({"ts": pa.array(
        np.array(["1970-01-01T00:00:00.000000001", "1969-12-31T23:59:59", "2000-02-29T12:00"],
                 dtype="M8[ns]"))}), {"use_deprecated_int96_timestamps": True})
    out["json"] = (pa.table({"j": pa.array(['{"a":1}', '{"a":1,"b":null}', "[1,null,3]", None],
                                            pa.string())}), {})
    out["bson"] = (pa.table({"b": pa.array([b"\x0c\x00\x00\x00\x10a\x00\x01\x00\x00\x00\x00",
                                            b"\x0f\x00\x00\x00\x10a\x00\x01\x00\x00\x00\nb\x00\x00",
                                            None])}), {})
    out["duration"] = (pa.table({"d": opt([int(v) for v in ints[:20]], pa.duration("ms"))}), {})
    out["time_and_date"] = (pa.table({
        "t32": opt([int(v) % 86400000 for v in ints[:20]], pa.time32("ms")),
        "t64": pa.array([int(v) % 86400 * 10**9 for v in ints[:20]], pa.time64("ns")),
        "d32": opt([int(v) for v in ints[:20]], pa.date32()),
        "tz": opt([int(v) * 10**12 for v in ints[:20]], pa.timestamp("us", tz="Europe/Paris"))}),
        {})
    out["unsigned_and_small"] = (pa.table({
        f"{t}": opt(np.abs(ints[:50]).astype(t).tolist(), getattr(pa, t)())
        for t in ("uint8", "uint16", "uint32", "uint64", "int8", "int16")}), {})
    out["names_not_identifiers"] = (pa.table({
        "a b": pa.array([1, 2, 3]), "x.y": pa.array([1.0, 2.0, 3.0]), "1st": pa.array(["a", "b", "c"]),
        "Δ": pa.array([True, False, None]), "a/b": pa.array([1, None, 3], pa.int16()),
        "": pa.array([b"", b"x", None])}), {})
    out["dictionary_strings"] = (pa.table({"sym": pa.array(["b", "a", None, "b", "c"]).dictionary_encode(),
                                           "v": pa.array([1, 2, 3, 4, 5], pa.int32())}), {})
    out["large_types"] = (pa.table({"ls": pa.array(["x", None, "yz"], pa.large_string()),
                                    "lb": pa.array([b"x", b"", None], pa.large_binary()),
                                    "ll": pa.array([[1], None, []], pa.large_list(pa.int16()))}),
                          {})
    out["lineorder"] = (pa.table({
        "lo_orderkey": pa.array(np.arange(n, dtype="i4")),
        "lo_orderdate": pa.array(np.datetime64("1994-01-01") + rng.integers(0, 2000, n).astype("m8[D]")),
        "lo_orderpriority": pa.array([["1-URGENT", "2-HIGH", "5-LOW"][i % 3] for i in range(n)]),
        "lo_extendedprice": pa.array(rng.integers(100, 10**6, n).astype("i4")),
        "lo_discount": pa.array(rng.integers(0, 10, n).astype("i1"))}), {})
    out["empty_table"] = (pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string()),
                                    "l": pa.array([], pa.list_(pa.int32()))}), {})
    return out


def write_corpus(folder) -> dict:
    """Write the corpus into ``folder``: a dict name -> path of every file
    (the generated ones, then the four public files pyarrow ships)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, (table, options) in _tables(pa).items():
        path = folder / f"{name}.parquet"
        pq.write_table(table, path, **options)
        files[name] = path
    shipped = Path(pa.__file__).parent / "tests" / "data" / "parquet"
    for path in sorted(shipped.glob("*.parquet")):
        files[f"pyarrow:{path.stem}"] = path
    return files


def corpus_files(folder=None) -> dict:
    """name -> path of the Parquet files under ``folder`` (or the folder named by
    ``BCOLZ_STORE_PARQUET_CORPUS``), recursively; {} when there is none."""
    folder = folder or os.environ.get(CORPUS_ENV)
    if not folder:
        return {}
    return {str(p.relative_to(folder)): p for p in sorted(Path(folder).rglob("*.parquet"))}


class Outcome:
    """What became of one file: ``status`` is ``'exact'``, ``'refused'``,
    ``'unreadable'`` (pyarrow itself cannot read or write it) or ``'wrong'``."""

    def __init__(self, status: str, detail: str = ""):
        self.status, self.detail = status, detail

    def __repr__(self):
        return f"Outcome({self.status!r}, {self.detail!r})"


def same_values(a, b) -> bool:
    """Whether two values from ``to_pylist`` are the same: NaN equals NaN (any
    payload), -0.0 differs from 0.0, a value's type counts (1 is not True)."""
    if isinstance(a, float) and isinstance(b, float):
        if a != a or b != b:
            return a != a and b != b
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_values(a[k], b[k]) for k in a)
    return a == b


def _plain_schema(schema):
    return schema.remove_metadata()


def round_trip(path, workdir) -> Outcome:
    """Parquet -> bcolz_store on disk -> reopen -> Parquet, compared by pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bcolz_store as bcolz
    from bcolz_store.converters.arrow import from_parquet, to_parquet

    workdir = Path(workdir)
    try:
        original = pq.read_table(path)
        pq.write_table(original, workdir / "pyarrow-copy.parquet")
    except Exception as err:            # noqa: BLE001 - pyarrow cannot read or write it
        return Outcome("unreadable", f"{type(err).__name__}: {err}")
    names = [f.name for f in original.schema]
    try:
        from_parquet(path, workdir / "table.bcolz")
    except (TypeError, ValueError, bcolz.BcolzStoreError) as err:
        message = str(err)
        named = any(repr(n) in message or f"'{n}'" in message or f'"{n}"' in message
                    for n in names)
        return Outcome("refused" if named else "wrong",
                       f"{type(err).__name__}: {message}" +
                       ("" if named else " (the message names no column)"))
    back = bcolz.open(str(workdir / "table.bcolz"))
    to_parquet(back, workdir / "back.parquet")
    again = pq.read_table(workdir / "back.parquet")
    if not _plain_schema(again.schema).equals(_plain_schema(original.schema)):
        return Outcome("wrong", f"schema {_plain_schema(original.schema)} came back as "
                                f"{_plain_schema(again.schema)}")
    for name in names:
        got, want = again.column(name).to_pylist(), original.column(name).to_pylist()
        if not same_values(got, want):
            return Outcome("wrong", f"column {name!r}: {want[:5]} came back as {got[:5]}")
    return Outcome("exact")


def _main(argv) -> int:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        files = corpus_files(argv[0]) if argv else write_corpus(Path(tmp) / "corpus")
        counts = {}
        for i, (name, path) in enumerate(files.items()):
            work = Path(tmp) / f"w{i}"
            work.mkdir()
            outcome = round_trip(path, work)
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
            print(f"{outcome.status:10} {name}  {outcome.detail[:300]}")
        print(json.dumps(counts))
    return 0 if not counts.get("wrong") else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
