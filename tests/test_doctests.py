"""The examples in the package's docstrings run and show what they say.

Every module whose docstrings hold examples (``>>>``) is found by reading the
source with ``ast``, so a new module with examples is run without any
configuration.  A module that needs an optional library which is not
installed, or whose examples import one, is skipped, and says which.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import io
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "bcolz_store"
ROOT = "bcolz_store"
OPTIONFLAGS = doctest.ELLIPSIS

_PARSER = doctest.DocTestParser()


def module_name(path: str) -> str:
    parts = path[:-len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstring_examples(source: str) -> list:
    """The ``doctest.Example`` of every docstring (module, class, function,
    nested or not) of a module's source."""
    examples = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                examples.extend(_PARSER.get_examples(doc))
    return examples


def runnable(examples: list) -> list:
    """The examples not marked ``# doctest: +SKIP``."""
    return [e for e in examples if not e.options.get(doctest.SKIP)]


def modules_with_examples(sources: dict) -> dict:
    """``{module name: number of examples}`` for ``{'pkg/x.py': source}``."""
    found = {}
    for path, source in sorted(sources.items()):
        count = len(docstring_examples(source))
        if count:
            found[module_name(path)] = count
    return found


def imported_libraries(examples: list) -> set:
    """The top-level names of what the examples import (outside this package)."""
    names = set()
    for example in examples:
        try:
            tree = ast.parse(example.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - {ROOT}


def _sources() -> dict:
    base = PACKAGE_DIR.parent
    return {p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(PACKAGE_DIR.rglob("*.py"))}


SOURCES = _sources()
MODULES = modules_with_examples(SOURCES)


def test_finder_finds_planted_examples():
    sources = {
        "pkg/__init__.py": '"""The package.\n\n>>> 1 + 1\n2\n"""\n',
        "pkg/plain.py": ('"""No examples; ``>>>`` in prose is none."""\n'
                         'TEXT = """\n>>> not a docstring\n"""\n'
                         '# >>> nor a comment\n'),
        "pkg/sub/mod.py": ('def f():\n    """Add.\n\n    >>> f()\n    3\n    """\n    return 3\n'
                           'class C:\n    def g(self):\n        """\n        >>> import numpy\n'
                           '        >>> C().g()\n        """\n'
                           '        def inner():\n            """>>> inner()"""\n'),
    }
    assert modules_with_examples(sources) == {"pkg": 1, "pkg.sub.mod": 4}
    examples = docstring_examples(sources["pkg/sub/mod.py"])
    assert imported_libraries(examples) == {"numpy"}
    skipping = _PARSER.get_examples(">>> import zarr  # doctest: +SKIP\n>>> 1\n1\n")
    assert [e.source for e in runnable(skipping)] == ["1\n"]
    assert imported_libraries(runnable(skipping)) == set()
    assert imported_libraries(_PARSER.get_examples(
        ">>> import bcolz_store as bcolz\n>>> from pandas import DataFrame\n"
        ">>> import dask.array as da\n")) == {"pandas", "dask"}


def test_the_package_has_examples():
    # the examples cited in the docs and README live in these modules
    assert {"bcolz_store.toplevel", "bcolz_store.constructors", "bcolz_store.printing"} \
        <= set(MODULES)


def _run(module, tmp_path, monkeypatch):
    """(examples attempted, failures report) of a module's doctests."""
    import tempfile

    import bcolz_store
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the examples' folders go here
    monkeypatch.chdir(tmp_path)
    printoptions = bcolz_store.get_printoptions()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report = io.StringIO()
    try:
        found = doctest.DocTestFinder().find(module)
        for test in found:
            runner.run(test, out=report.write)
    finally:
        bcolz_store.set_printoptions(**printoptions)
    return runner.tries, runner.failures, report.getvalue()


def test_runner_reports_a_failing_example(tmp_path, monkeypatch):
    import types
    module = types.ModuleType("planted")
    module.__doc__ = ">>> 1 + 1\n3\n>>> 'ok'\n'ok'\n"
    tries, failures, report = _run(module, tmp_path, monkeypatch)
    assert (tries, failures) == (2, 1) and "Expected:\n    3\nGot:\n    2" in report


@pytest.mark.parametrize("name", sorted(MODULES))
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    path = next(p for p in SOURCES if module_name(p) == name)
    examples = runnable(docstring_examples(SOURCES[path]))
    missing = sorted(lib for lib in imported_libraries(examples)
                     if importlib.util.find_spec(lib) is None)
    if missing:
        pytest.skip(f"{name}: its examples import {', '.join(missing)}, not installed")
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and not err.name.startswith(ROOT):
            pytest.skip(f"{name} needs {err.name}, which is not installed")
        raise
    tries, failures, report = _run(module, tmp_path, monkeypatch)
    assert failures == 0, f"{name}: {failures} of {tries} examples failed\n{report}"
    # every example in the source runs (not one in a nested function, or in
    # an object doctest's finder does not visit), less those marked +SKIP
    assert tries == len(examples), (
        f"{name}: {len(examples)} examples to run in its docstrings, {tries} run")
