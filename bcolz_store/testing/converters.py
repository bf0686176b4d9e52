"""The contract every :class:`~bcolz_store.converters.Converter` keeps.

A format proves itself by inheriting :class:`ConverterTests` in a test module
and naming its converter::

    from bcolz_store.testing.converters import ConverterTests

    class TestParquetConverter(ConverterTests):
        format_name = "parquet"

The inherited tests then check it: a carray (of scalars and of rows) and a
ctable of fixed-width columns, and vlen and categorical columns where the
converter declares them, are written and read back exactly (kind, dtypes,
column names, values, and attrs where the converter keeps them); every
declared suffix finds the class; writing over an existing target raises
:class:`~bcolz_store.errors.DatasetExistsError` and leaves it as it was;
reading a missing source raises
:class:`~bcolz_store.errors.DatasetNotFoundError`; and a registry refuses a
second converter with the same name or suffix.  When the converter's optional
library is missing the tests skip.

This module imports pytest; ``import bcolz_store`` never imports it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

import bcolz_store

from ..converters import ConverterRegistry, DuplicateConverterError, convert, detect_format
from ..converters.base import MissingDependencyError, registry as default_registry
from ..errors import DatasetExistsError, DatasetNotFoundError

__all__ = ["ConverterTests", "SAMPLE_ATTRS", "snapshot"]

#: attrs set on every sample (kept where the converter keeps attrs).
SAMPLE_ATTRS = {"source": "contract", "nested": {"a": [1, 2.5, None]}}
_CHUNKLEN = 8
_LENGTHS = (0, 1, 2 * _CHUNKLEN + 3)


def snapshot(paths) -> dict:
    """``{path: md5}`` of every file under ``paths`` (folders walked), to tell
    that nothing of them changed.

    Parameters
    ----------
    paths : iterable of os.PathLike

    Returns
    -------
    dict
    """
    out = {}
    for path in map(Path, paths):
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            out[str(file)] = hashlib.md5(file.read_bytes()).hexdigest()
    return out


def _fixed_columns(n: int) -> dict:
    """Fixed-width columns; every string value as wide as its dtype."""
    return {
        "i": np.arange(n, dtype="i4") - 7,
        "x": np.linspace(-1.5, 2.0, n),
        "b": np.arange(n) % 3 == 0,
        "s": np.array([b"s%03d" % i for i in range(n)], dtype="S4"),
        "w": np.array(["\u00fc%03d" % i for i in range(n)], dtype="U4"),
        "t": np.datetime64("2021-06-01T00", "h") + np.arange(n),
    }


class ConverterTests:
    """The tests every converter passes; a subclass names the converter.

    Attributes
    ----------
    format_name : str
        The registered name of the converter under test.
    columns : tuple of str
        The fixed-width sample columns the format holds (of ``i`` int32,
        ``x`` float64, ``b`` bool, ``s`` bytes, ``w`` str, ``t``
        datetime64); a format that refuses some by design leaves them out.
    write_options, read_options : dict
        Passed to every ``write`` and ``read``.
    empty_keeps_columns : bool
        Whether a container of no rows comes back with its columns (False
        for a format that records columns only in its rows: it comes back as
        a ctable of no columns and no rows).

    Notes
    -----
    Fixtures a subclass may override: ``registry`` (where the converter is
    registered; a test of a converter outside the package registry gives its
    own), ``converter`` (the class) and ``target`` (a path with the
    converter's first suffix in a temporary folder).
    """

    format_name = ""
    columns = ("i", "x", "b", "s", "w", "t")
    write_options: dict = {}
    read_options: dict = {}
    empty_keeps_columns = True

    # --- fixtures ---------------------------------------------------------------

    @pytest.fixture
    def registry(self):
        """The registry the converter is in (the package's)."""
        return default_registry

    @pytest.fixture
    def converter(self, registry):
        """The converter class under test; skips when its library is missing."""
        cls = registry.get(self.format_name)
        try:
            cls().check_available()
        except MissingDependencyError as err:
            pytest.skip(str(err))
        return cls

    @pytest.fixture
    def target(self, tmp_path, converter):
        """Where to write: a fresh path with the converter's first suffix."""
        return tmp_path / f"data{converter.suffixes[0]}"

    # --- helpers ---------------------------------------------------------------

    def samples(self, kind: str, n: int):
        """A sample container of ``kind`` with ``n`` rows and :data:`SAMPLE_ATTRS`."""
        if kind == "carray":
            obj = bcolz_store.carray(np.arange(n, dtype="f8") * 0.25, chunklen=_CHUNKLEN)
        elif kind == "rows":
            obj = bcolz_store.carray(np.arange(n * 6, dtype="i2").reshape(n, 2, 3),
                                     chunklen=_CHUNKLEN)
        else:
            cols = _fixed_columns(n)
            obj = bcolz_store.ctable(columns=[cols[c] for c in self.columns],
                                     names=list(self.columns), chunklen=_CHUNKLEN)
            obj.cols[self.columns[0]].attrs["unit"] = "m"
        obj.attrs.update(SAMPLE_ATTRS)
        return obj

    def round_trip(self, converter, obj, target, tmp_path):
        """Write ``obj`` to ``target`` and read it back into a new rootdir."""
        converter().write(obj, target, **self.write_options)
        return converter().read(target, str(tmp_path / "back.bcolz"), **self.read_options)

    def assert_same(self, converter, back, orig) -> None:
        """``back`` holds exactly ``orig``, as far as ``converter`` keeps it."""
        if orig.__class__.__name__ == "carray" and not converter.keeps_kind:
            assert back.names == ["data"], back.names
            back = back.cols["data"]
        assert type(back).__name__ == type(orig).__name__
        assert back.dtype == orig.dtype
        assert len(back) == len(orig) and back.shape == orig.shape
        if type(orig).__name__ == "ctable":
            assert back.names == orig.names
            for name in orig.names:
                a, b = back.cols[name], orig.cols[name]
                assert a.dtype == b.dtype, name
                assert getattr(a, "vlen", None) == getattr(b, "vlen", None), name
                assert getattr(a, "category", None) == getattr(b, "category", None), name
                assert a[:].tolist() == b[:].tolist(), name
                if converter.keeps_column_attrs:
                    assert a.attrs.getall() == b.attrs.getall(), name
        else:
            np.testing.assert_array_equal(back[:], orig[:])
        if converter.keeps_attrs and converter.keeps_kind:
            assert back.attrs.getall() == orig.attrs.getall()

    # --- the contract ----------------------------------------------------------

    def test_declares_a_name_suffixes_and_an_extra(self, converter):
        assert isinstance(converter.name, str) and converter.name == self.format_name
        assert converter.suffixes and all(s.startswith(".") and s == s.lower()
                                          for s in converter.suffixes)
        assert converter.extra is None or isinstance(converter.extra, str)
        assert isinstance(converter.remote, bool)
        assert callable(converter().read) and callable(converter().write)

    def test_every_suffix_finds_the_class(self, converter, registry, tmp_path):
        assert registry.get(converter.name) is converter
        for suffix in converter.suffixes:
            assert registry.for_suffix(suffix) is converter
            assert registry.for_suffix(suffix.upper()) is converter
            if registry is default_registry:
                assert detect_format(tmp_path / f"x{suffix}", reading=False) == converter.name

    @pytest.mark.parametrize("n", _LENGTHS)
    @pytest.mark.parametrize("kind", ["carray", "rows", "ctable"])
    def test_round_trip_is_exact(self, converter, target, tmp_path, kind, n):
        orig = self.samples(kind, n)
        if not converter.keeps_attrs or not converter.keeps_column_attrs:
            self._drop_attrs(orig, converter)
        back = self.round_trip(converter, orig, target, tmp_path)
        if n == 0 and not self.empty_keeps_columns:
            assert type(back).__name__ == "ctable" and back.names == [] and len(back) == 0
            return
        self.assert_same(converter, back, orig)

    def test_vlen_columns_round_trip(self, converter, target, tmp_path):
        if not converter.vlen:
            pytest.skip(f"{converter.name} declares no vlen columns")
        n = 2 * _CHUNKLEN + 1
        orig = bcolz_store.ctable(
            [np.arange(n, dtype="i8"),
             bcolz_store.carray(["é" * (i % 4) + str(i) for i in range(n)], dtype="vlen-str"),
             bcolz_store.carray([b"\x00" * (i % 3) + b"b" for i in range(n)],
                                dtype="vlen-bytes")],
            names=["i", "text", "raw"], chunklen=_CHUNKLEN)
        self._drop_attrs(orig, converter)
        self.assert_same(converter, self.round_trip(converter, orig, target, tmp_path), orig)

    def test_categorical_columns_round_trip(self, converter, target, tmp_path):
        if not converter.categorical:
            pytest.skip(f"{converter.name} declares no categorical columns")
        n = 2 * _CHUNKLEN + 1
        colors = bcolz_store.category(["r", "g", "b"], ordered=True)
        orig = bcolz_store.ctable(
            [np.arange(n, dtype="i4"),
             bcolz_store.carray([["r", "g", "b"][i % 3] for i in range(n)], dtype=colors)],
            names=["i", "color"], chunklen=_CHUNKLEN)
        self._drop_attrs(orig, converter)
        self.assert_same(converter, self.round_trip(converter, orig, target, tmp_path), orig)

    def test_an_existing_target_is_refused_and_kept(self, converter, target, tmp_path):
        first = self.samples("ctable", 3)
        self._drop_attrs(first, converter)
        converter().write(first, target, **self.write_options)
        outputs = [p for p in converter().outputs(target) if os.path.lexists(p)]
        before = snapshot(outputs)
        assert before
        second = self.samples("ctable", 5)
        self._drop_attrs(second, converter)
        with pytest.raises(DatasetExistsError):
            converter().write(second, target, **self.write_options)
        assert snapshot(outputs) == before
        if converter.name in default_registry and default_registry.get(converter.name) is converter:
            src = second.copy(rootdir=str(tmp_path / "src.bcolz"), mode="w")
            with pytest.raises(DatasetExistsError):
                convert(src.rootdir, target, to=converter.name, **self.write_options)
            assert snapshot(outputs) == before

    def test_a_missing_source_is_not_found(self, converter, tmp_path):
        missing = tmp_path / f"missing{converter.suffixes[0]}"
        with pytest.raises(DatasetNotFoundError):
            converter().read(missing, **self.read_options)
        assert not os.path.lexists(missing)

    def test_a_registry_refuses_a_taken_name_or_suffix(self, converter):
        registry = ConverterRegistry([converter])

        class SameName(converter):
            suffixes = (".contract-unused",)

        class SameSuffix(converter):
            name = f"{converter.name}-other"
            suffixes = (".contract-unused", converter.suffixes[-1])

        for cls in (SameName, SameSuffix):
            with pytest.raises(DuplicateConverterError):
                registry.register(cls)
        assert list(registry) == [converter]
        assert registry.for_suffix(converter.suffixes[-1]) is converter

    @staticmethod
    def _drop_attrs(obj, converter) -> None:
        """Remove the attrs ``converter`` has no place for (it refuses them)."""
        if not converter.keeps_attrs:
            for key in list(obj.attrs.getall()):
                del obj.attrs[key]
        if not converter.keeps_column_attrs and type(obj).__name__ == "ctable":
            for name in obj.names:
                for key in list(obj.cols[name].attrs.getall()):
                    del obj.cols[name].attrs[key]
