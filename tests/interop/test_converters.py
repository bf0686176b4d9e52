"""Every registered converter keeps the contract of
:class:`bcolz_store.testing.converters.ConverterTests`, and the contract
itself fails a converter that does not."""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.converters import (ConverterRegistry, RemoteFormatError, UnknownFormatError,
                                    convert, converter_for_suffix, get_converter,
                                    registered_converters)
from bcolz_store.converters.npz import NpzConverter, from_npz, to_npz
from bcolz_store.testing.converters import ConverterTests

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _quiet_zarr_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        yield


class TestBcolzConverter(ConverterTests):
    format_name = "bcolz"


class TestParquetConverter(ConverterTests):
    format_name = "parquet"


class TestArrowConverter(ConverterTests):
    format_name = "arrow"


class TestZarrConverter(ConverterTests):
    format_name = "zarr"


class TestNpzConverter(ConverterTests):
    format_name = "npz"


class TestHdf5Converter(ConverterTests):
    format_name = "hdf5"
    columns = ("i", "x", "b", "s")         # PyTables refuses U and datetime64 columns


class TestDatadingsConverter(ConverterTests):
    format_name = "datadings"
    write_options = {"drop_attrs": True}
    read_options = {"key_column": None}
    empty_keeps_columns = False             # the fields are told by the samples


# --- every converter has its test class ----------------------------------------------

def _contract_classes() -> dict:
    """``{format_name: class}`` of the ConverterTests subclasses of the test modules
    that mention ConverterTests."""
    found = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "ConverterTests" not in text:
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef) and any(
                    getattr(base, "id", getattr(base, "attr", None)) == "ConverterTests"
                    for base in node.bases):
                module = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)
                cls = getattr(importlib.import_module(module), node.name)
                assert issubclass(cls, ConverterTests)
                found.setdefault(cls.format_name, cls)
    return found


def test_every_registered_converter_has_a_contract_test_class():
    tested = _contract_classes()
    assert {"parquet", "npz"} <= set(tested), "the finder found nothing: it is broken"
    missing = [cls.name for cls in registered_converters() if cls.name not in tested]
    assert not missing, f"converters without a ConverterTests subclass: {missing}"


# --- the registry's errors ------------------------------------------------------------

def test_lookups_and_their_errors(tmp_path):
    assert get_converter("npz") is NpzConverter and converter_for_suffix(".NPZ") is NpzConverter
    with pytest.raises(UnknownFormatError, match="unknown format 'csv'"):
        get_converter("csv")
    with pytest.raises(UnknownFormatError, match="no format has the suffix '.csv'"):
        converter_for_suffix(".csv")
    src = bcolz.carray(np.arange(3), rootdir=str(tmp_path / "src"), mode="w")
    with pytest.raises(UnknownFormatError, match="unknown format 'csv'"):
        convert(src.rootdir, tmp_path / "out", to="csv")
    with pytest.raises(RemoteFormatError, match="local paths only"):
        convert(src.rootdir, "s3://bucket/out.npz")
    with pytest.raises(ValueError):
        convert(src.rootdir, tmp_path / "out.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_a_registry_takes_only_concrete_converters():
    registry = ConverterRegistry()
    with pytest.raises(TypeError):
        registry.register(int)

    class Unnamed(NpzConverter):
        name = ""
        suffixes = (".unnamed",)

    with pytest.raises(ValueError, match="no name"):
        registry.register(Unnamed)

    class Shouting(NpzConverter):
        name = "shouting"
        suffixes = (".NPZ2",)

    with pytest.raises(ValueError, match="lower case"):
        registry.register(Shouting)
    assert len(registry) == 0


# --- the contract can fail -------------------------------------------------------------

class ToyConverter(NpzConverter):
    """npz under another name and suffix, in a registry of its own."""

    name = "toy"
    suffixes = (".toy", ".toy2")


class LossyToyConverter(ToyConverter):
    """Reads float64 back as float32: close, not exact."""

    name = "lossy-toy"
    suffixes = (".lossy",)

    def read(self, src, rootdir=None, mode="w", *, progress=None, **kwargs):
        obj = from_npz(src, progress=progress)
        if type(obj).__name__ == "carray" and obj.dtype == np.float64:
            out = bcolz.carray(obj[:].astype("f4"), rootdir=rootdir, mode=mode)
            out.attrs.update(obj.attrs.getall())
            return out
        return from_npz(src, rootdir, mode, progress=progress, **kwargs)


class ShortToyConverter(ToyConverter):
    """Writes all rows but the last."""

    name = "short-toy"
    suffixes = (".short",)

    def write(self, obj, path, *, overwrite=False, progress=None, **kwargs):
        short = type(obj)(obj[:max(len(obj) - 1, 0)])
        short.attrs.update(obj.attrs.getall())
        return to_npz(short, path, overwrite=overwrite)


class TestToyConverter(ConverterTests):
    """A converter outside the package registry passes the contract."""

    format_name = "toy"

    @pytest.fixture
    def registry(self):
        return ConverterRegistry([ToyConverter, LossyToyConverter, ShortToyConverter])


@pytest.mark.parametrize("broken", [LossyToyConverter, ShortToyConverter])
def test_the_round_trip_contract_fails_a_lossy_converter(tmp_path, broken):
    contract = TestToyConverter()
    (tmp_path / "sound").mkdir()
    contract.test_round_trip_is_exact(ToyConverter, tmp_path / "sound" / "x.toy",
                                      tmp_path / "sound", "carray", 19)
    (tmp_path / "broken").mkdir()
    with pytest.raises(AssertionError):
        contract.test_round_trip_is_exact(broken, tmp_path / "broken" / "x.toy",
                                          tmp_path / "broken", "carray", 19)


def test_the_suffix_contract_fails_an_unregistered_suffix(tmp_path):
    class Undeclared(ToyConverter):
        name = "undeclared"
        suffixes = (".und",)

    registry = ConverterRegistry([ToyConverter])
    with pytest.raises(UnknownFormatError):
        TestToyConverter().test_every_suffix_finds_the_class(Undeclared, registry, tmp_path)
