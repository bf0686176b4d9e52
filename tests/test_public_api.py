"""The public surface: what ``import bcolz_store as bcolz`` exports, and the
names the documentation cites.

- the package's ``__all__`` is a literal list in sorted order, every name in
  it exists, and every public name of the package is in it;
- every error the library raises is exported from ``bcolz_store``;
- every module's ``__all__`` is a literal list of names it binds, sorted;
- every dotted ``bcolz_store.*`` name cited in a docstring or, between
  backticks, in ``docs/*.md`` resolves.

The source is read with ``ast`` (no optional library is imported to scan
it).  Each checker also runs on a planted violation, so that a checker that
finds nothing fails its own test rather than passing everything.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import pydoc
import re
import types
from pathlib import Path

import pytest

import bcolz_store
import bcolz_store.errors

ROOT = "bcolz_store"
PACKAGE_DIR = Path(bcolz_store.__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent
DOCS_DIR = REPO_DIR / "docs"

# Submodules deliberately exported by the package: bcolz had ``bcolz.attrs``.
EXPORTED_MODULES = {"attrs"}

# Exception classes defined in the package that are not exported, each with
# the reason it need not be.
PRIVATE_EXCEPTIONS = {
    # Raised by the msgpack-numpy decoder of the datadings reader and turned
    # into FormatError (naming the file and sample) before it leaves that module.
    ("bcolz_store.converters.datadings", "_BadValue"),
    # Raised when the installed botocore has no conditional requests; caught in
    # the same module, which falls back to read-compare-write.
    ("bcolz_store.storage.fsspec", "_NoConditionalRequests"),
    # The command line's own failure: ``bcolz_store.cli.main`` turns it into a
    # line on stderr and an exit status; it never reaches library callers.
    ("bcolz_store.cli.common", "CommandError"),
    # Raised when the dataset reads a chunk file only whole (verify=True, a
    # staged file); caught in the same module, whose read then answers None.
    ("bcolz_store.chunks.block_reads", "_WholeFile"),
    # Raised while a query is planned, when the condition is not one the planner
    # reads; caught by ctable_plan.plan_query (the query is then evaluated by a
    # scan) and by ctable_select.row_filter (which raises a ValueError).
    ("bcolz_store.query.predicates", "Unplannable"),
}

# Dotted names in the documentation that are names of files or keys, not
# Python objects: the consolidated metadata file and the checksum file of a
# dataset, the metadata member of an .npz written by tonpz, and the attribute
# keys todataframe/fromdataframe write.
NOT_PYTHON_NAMES = {
    "bcolz_store.json",
    "bcolz_store.md5",
    "bcolz_store.json.npy",
    "bcolz_store.pandas",
    "bcolz_store.dtypes",
}

# Cited names that do not resolve yet, in files being reworked; fix the
# reference and remove it from this set.
PENDING_REFERENCES: set = set()


# --------------------------------------------------------------- the source

def package_sources(package_dir: Path = PACKAGE_DIR) -> dict:
    """``{'bcolz_store/x/y.py': source}`` for every module of the package."""
    base = package_dir.parent
    return {p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(package_dir.rglob("*.py"))}


def module_name(path: str) -> str:
    parts = path[:-len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_base(path: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``from X import ...`` in ``path`` imports from."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    if not path.endswith("/__init__.py"):
        package = package[:-1]
    package = package[:len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


SOURCES = package_sources()


# ----------------------------------------------------------------- __all__

def _bound_names(body: list, out: set) -> set:
    """Names bound at a module's top level (inside if/try/with/for too)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
            targets = [node.target]
        elif isinstance(node, ast.With):
            targets = [item.optional_vars for item in node.items if item.optional_vars]
        out.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                _bound_names(getattr(node, field, []), out)
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                _bound_names(handler.body, out)
    return out


def all_problems(source: str) -> list:
    """What is wrong with a module's ``__all__`` (none: [] too)."""
    tree = ast.parse(source)
    assigned, problems = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assigned.append(node)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "__all__"):
            problems.append(f"line {node.lineno}: __all__.{node.func.attr}(): "
                            f"__all__ must be one literal list")
    if not assigned:
        return problems
    if len(assigned) > 1 or any(not isinstance(n, ast.Assign) or n not in tree.body
                                for n in assigned):
        problems.append(f"line {assigned[-1].lineno}: __all__ must be assigned once, at the "
                        f"top level, as one literal list")
    value = assigned[0].value
    if not (isinstance(value, ast.List) and all(isinstance(e, ast.Constant)
                                                 and isinstance(e.value, str)
                                                 for e in value.elts)):
        problems.append(f"line {value.lineno}: __all__ is not a literal list of str "
                        f"(found {ast.unparse(value)[:60]!r})")
        return problems
    names = [e.value for e in value.elts]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        problems.append(f"__all__ lists {duplicates} more than once")
    if names != sorted(names):
        first = next(a for a, b in zip(names, sorted(names)) if a != b)
        problems.append(f"__all__ is not in sorted order (first out of place: {first!r}); "
                        f"sorted it is {sorted(names)}")
    missing = [n for n in names if n not in _bound_names(tree.body, set())]
    if missing:
        problems.append(f"__all__ lists {missing}, which the module does not define")
    return problems


def _is_sort_problem(problem: str) -> bool:
    return problem.startswith("__all__ is not in sorted order")


def test_all_checker_finds_planted_violations():
    assert all_problems("import os\n__all__ = ['a', 'b']\ndef a(): pass\nb = 1\n") == []
    assert all_problems("x = 1\n") == []
    (problem,) = all_problems("__all__ = ['b', 'a']\na = b = 1\n")
    assert _is_sort_problem(problem) and "'b'" in problem
    assert "not a literal list" in all_problems("__all__ = sorted(['a'])\na = 1\n")[0]
    assert "not a literal list" in all_problems("__all__ = ('a',)\na = 1\n")[0]
    assert "assigned once" in all_problems("__all__ = ['a']\n__all__ += ['b']\na = b = 1\n")[0]
    assert ".extend()" in all_problems("__all__ = ['a']\n__all__.extend(['b'])\na = b = 1\n")[0]
    assert "more than once" in all_problems("__all__ = ['a', 'a']\na = 1\n")[0]
    assert "does not define" in all_problems("__all__ = ['a', 'gone']\na = 1\n")[0]
    # names bound under if/try and by imports count
    assert all_problems("try:\n    import json as a\nexcept ImportError:\n    a = None\n"
                        "if a:\n    from os import path as b\n__all__ = ['a', 'b']\n") == []


@pytest.mark.parametrize("path", sorted(SOURCES))
def test_module_all_is_a_sorted_literal_list(path):
    problems = all_problems(SOURCES[path])
    assert problems == [], f"{path}: " + "; ".join(problems)


# ---------------------------------------------------- the package namespace

def test_package_all_is_a_literal_sorted_list():
    assert all_problems(SOURCES["bcolz_store/__init__.py"]) == []
    assert bcolz_store.__all__ == sorted(bcolz_store.__all__)


def test_every_name_in_all_exists():
    missing = [name for name in bcolz_store.__all__ if not hasattr(bcolz_store, name)]
    assert missing == []


def unexported_public_names(namespace: dict, exported: list, exported_modules: set) -> list:
    """Public names of a package namespace missing from ``exported`` (its
    ``__all__``); submodules count only if deliberately exported."""
    return sorted(name for name, value in namespace.items()
                  if not name.startswith("_") and name not in exported
                  and (not isinstance(value, types.ModuleType) or name in exported_modules))


def test_public_name_checker_finds_planted_violations():
    fake = types.ModuleType("fake")
    sub = types.ModuleType("fake.sub")
    namespace = {"carray": object(), "helper": len, "sub": sub, "attrs": sub, "_private": 1}
    assert unexported_public_names(namespace, ["carray"], {"attrs"}) == ["attrs", "helper"]
    assert unexported_public_names(namespace, ["attrs", "carray", "helper"], {"attrs"}) == []
    assert unexported_public_names(vars(fake), [], set()) == []


def test_every_public_name_of_the_package_is_in_all():
    assert unexported_public_names(vars(bcolz_store), bcolz_store.__all__, EXPORTED_MODULES) == []
    for name in EXPORTED_MODULES:
        assert isinstance(getattr(bcolz_store, name), types.ModuleType)
        assert name in bcolz_store.__all__


def test_bcolz_api_names_are_exported():
    # bcolz 1.x's top-level API, which this package keeps.
    bcolz_api = {"arange", "attrs", "blosc_compressor_list", "blosc_set_nthreads",
                 "blosc_version", "carray", "cparams", "ctable", "defaults",
                 "detect_number_of_cores", "eval", "fill", "fromiter", "iterblocks",
                 "numexpr_here", "ones", "open", "print_versions", "set_nthreads",
                 "walk", "zeros"}
    assert bcolz_api - set(bcolz_store.__all__) == set()


# ---------------------------------------------------------------- the errors

def _scan(sources: dict, root: str):
    """(classes, bindings): each class defined at a module's top level, and
    each module's names bound to the package's modules or names."""
    classes, bindings = {}, {}
    for path, source in sources.items():
        module = module_name(path)
        local = bindings.setdefault(module, {})
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _import_base(path, node)
                if base == root or base.startswith(root + "."):
                    for alias in node.names:
                        local[alias.asname or alias.name] = (base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == root or alias.name.startswith(root + "."):
                        if alias.asname:
                            local[alias.asname] = (alias.name, None)
                        else:
                            local[alias.name.split(".")[0]] = (alias.name.split(".")[0], None)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes[(module, node.name)] = (node, f"{path}:{node.lineno}")
                local[node.name] = (module, node.name)
    return classes, bindings


def _resolve(expr, module, classes, bindings, modules, depth=0):
    """What a Name or dotted Attribute in ``module`` names: ``(module, name)``
    of a class, ``(module, None)`` of a module, ``('builtins', name)``, or None."""
    if depth > 10:
        return None
    if isinstance(expr, ast.Name):
        target = bindings.get(module, {}).get(expr.id)
        if target is None:
            return ("builtins", expr.id) if hasattr(builtins, expr.id) else None
        return _canonical(target, classes, bindings, modules, depth)
    if isinstance(expr, ast.Attribute):
        owner = _resolve(expr.value, module, classes, bindings, modules, depth + 1)
        if owner is not None and owner[1] is None:
            return _canonical((owner[0], expr.attr), classes, bindings, modules, depth)
    return None


def _canonical(target, classes, bindings, modules, depth):
    base, name = target
    if name is None or f"{base}.{name}" in modules:
        return (base if name is None else f"{base}.{name}", None)
    if target in classes:
        return target
    if name in bindings.get(base, {}):      # a name re-exported by another module
        return _canonical(bindings[base][name], classes, bindings, modules, depth + 1)
    return None


def exception_classes(sources: dict, root: str = ROOT) -> dict:
    """``{(module, name): 'path:line'}`` of every exception class the package defines."""
    classes, bindings = _scan(sources, root)
    modules = {module_name(path) for path in sources}
    found: dict = {}
    changed = True
    while changed:
        changed = False
        for key, (node, where) in classes.items():
            if key in found:
                continue
            for base in node.bases:
                resolved = _resolve(base, key[0], classes, bindings, modules)
                builtin = (resolved is not None and resolved[0] == "builtins"
                           and isinstance(getattr(builtins, resolved[1]), type)
                           and issubclass(getattr(builtins, resolved[1]), BaseException))
                if builtin or resolved in found:
                    found[key] = where
                    changed = True
                    break
    return found


def raised_exceptions(sources: dict, root: str = ROOT) -> dict:
    """``{(module, name): ['path:line', ...]}``: the package's exception
    classes that a ``raise`` raises or that any call constructs."""
    classes, bindings = _scan(sources, root)
    modules = {module_name(path) for path in sources}
    exceptions = exception_classes(sources, root)
    raised: dict = {}
    for path, source in sources.items():
        module = module_name(path)
        for node in ast.walk(ast.parse(source)):
            # ``raise X(...)`` is seen as its call; ``raise X`` as a raise
            if isinstance(node, ast.Raise) and node.exc is not None \
                    and not isinstance(node.exc, ast.Call):
                expr = node.exc
            elif isinstance(node, ast.Call):
                expr = node.func
            else:
                continue
            resolved = _resolve(expr, module, classes, bindings, modules)
            if resolved in exceptions:
                raised.setdefault(resolved, []).append(f"{path}:{node.lineno}")
    return raised


PLANTED = {
    "pkg/__init__.py": "from .errors import Exported, RootError\n",
    "pkg/errors.py": ("class RootError(Exception):\n    pass\n"
                      "class Exported(RootError):\n    pass\n"
                      "class Hidden(RootError):\n    pass\n"
                      "class NotAnError:\n    pass\n"),
    "pkg/sub/__init__.py": "",
    "pkg/sub/mod.py": ("import pkg.errors as errs\n"
                       "from .. import errors\n"
                       "from .. import RootError as Root\n"
                       "from ..errors import NotAnError\n"
                       "class _Local(ValueError):\n    pass\n"
                       "class _Derived(Root):\n    pass\n"
                       "def f():\n    from ..errors import Hidden as H\n    raise H('x')\n"
                       "def g():\n    raise errors.Exported\n"
                       "def h():\n    raise _Local('y') from None\n"
                       "def i():\n    raise ValueError('builtin')\n"
                       "def j():\n    raise NotAnError()\n"
                       "def k():\n    return errs.Exported('built here, raised elsewhere')\n"),
}


def test_error_scanner_finds_planted_exceptions():
    assert set(exception_classes(PLANTED, "pkg")) == {
        ("pkg.errors", "RootError"), ("pkg.errors", "Exported"), ("pkg.errors", "Hidden"),
        ("pkg.sub.mod", "_Local"), ("pkg.sub.mod", "_Derived")}
    raised = raised_exceptions(PLANTED, "pkg")
    assert set(raised) == {("pkg.errors", "Hidden"), ("pkg.errors", "Exported"),
                           ("pkg.sub.mod", "_Local")}
    assert raised[("pkg.errors", "Exported")] == ["pkg/sub/mod.py:13", "pkg/sub/mod.py:21"]
    assert unexported(raised, {"Exported": "pkg.errors"}, set()) == [
        "pkg.errors.Hidden (pkg/sub/mod.py:11)", "pkg.sub.mod._Local (pkg/sub/mod.py:15)"]
    assert unexported(raised, {"Exported": "pkg.errors", "Hidden": "pkg.errors"},
                      {("pkg.sub.mod", "_Local")}) == []
    # a class of the same name exported from another module is not the one raised
    assert unexported(raised, {"Exported": "pkg.other", "Hidden": "pkg.errors",
                               "_Local": "pkg.sub.mod"}, set()) == [
        "pkg.errors.Exported (pkg/sub/mod.py:13)"]


def unexported(raised: dict, exported: dict, allowed: set) -> list:
    """The raised classes not exported: ``exported`` maps each exported name
    to the module that defines the object exported under it."""
    return sorted(f"{module}.{name} ({where[0]})" for (module, name), where in raised.items()
                  if exported.get(name) != module and (module, name) not in allowed)


def _exported_classes() -> dict:
    return {name: getattr(bcolz_store, name).__module__ for name in bcolz_store.__all__
            if isinstance(getattr(bcolz_store, name), type)}


def test_every_error_raised_is_exported():
    raised = raised_exceptions(SOURCES)
    assert ("bcolz_store.errors", "FormatError") in raised    # the scanner sees the package
    assert unexported(raised, _exported_classes(), PRIVATE_EXCEPTIONS) == []


def test_private_exceptions_are_exception_classes_not_exported():
    defined = exception_classes(SOURCES)
    assert sorted(PRIVATE_EXCEPTIONS - set(defined)) == [], "gone: remove from PRIVATE_EXCEPTIONS"
    exported = _exported_classes()
    assert [key for key in sorted(PRIVATE_EXCEPTIONS) if exported.get(key[1]) == key[0]] == []


def test_every_class_of_errors_is_exported():
    in_errors = {name for (module, name) in exception_classes(SOURCES)
                 if module == "bcolz_store.errors"}
    at_runtime = {name for name, value in vars(bcolz_store.errors).items()
                  if isinstance(value, type) and issubclass(value, BaseException)
                  and value.__module__ == "bcolz_store.errors"}
    assert in_errors == at_runtime and "IntegrityWarning" in in_errors
    assert in_errors == set(bcolz_store.errors.__all__)
    for name in in_errors:
        assert getattr(bcolz_store, name) is getattr(bcolz_store.errors, name)
        assert name in bcolz_store.__all__


def test_every_error_says_when_it_is_raised():
    for name in bcolz_store.errors.__all__:
        doc = getattr(bcolz_store.errors, name).__doc__ or ""
        # "Raised ...", "raised by/when/on ..." ("bcolz raised IOError" says nothing of when)
        assert re.search(r"\bRaised\b|\braised (by|when|on)\b|\bIssued\b", doc), \
            f"{name}: {doc!r}"


# --------------------------------------------------------- cited references

REFERENCE = re.compile(r"(?<![\w./\\-])bcolz_store(?:\.[A-Za-z_]\w*)+")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)


def docstring_references(source: str) -> list:
    """``(name, line)`` of each dotted ``bcolz_store.*`` name in the docstrings."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.body and isinstance(node.body[0], ast.Expr) \
                    and isinstance(node.body[0].value, ast.Constant) \
                    and isinstance(node.body[0].value.value, str):
                doc = node.body[0].value
                for match in REFERENCE.finditer(doc.value):
                    line = doc.lineno + doc.value.count("\n", 0, match.start())
                    found.append((match.group(), line))
    return found


def markdown_references(text: str) -> list:
    """``(name, line)`` of each dotted ``bcolz_store.*`` name between backticks
    (code spans; fenced code blocks are code, not citations)."""
    text = _FENCE.sub(lambda m: "\n" * m.group().count("\n"), text)
    found = []
    for span in _CODE_SPAN.finditer(text):
        for match in REFERENCE.finditer(span.group(2)):
            found.append((match.group(), text.count("\n", 0, span.start(2) + match.start()) + 1))
    return found


class _MissingLibrary(Exception):
    pass


def _outside(err: ModuleNotFoundError) -> bool:
    return bool(err.name) and not (err.name == ROOT or err.name.startswith(ROOT + "."))


def _load(module: str):
    """The module, or None when there is no such module of the package;
    _MissingLibrary when importing it needs a library that is not installed."""
    try:
        if importlib.util.find_spec(module) is None:
            return None
        return importlib.import_module(module)
    except ModuleNotFoundError as err:   # (also: the parent is a module, not a package)
        if _outside(err):
            raise _MissingLibrary(err.name) from err
        return None


def resolve_reference(name: str):
    """The object a dotted name cites: walked attribute by attribute from the
    package (``bcolz_store.defaults.vm`` is the ``defaults`` object's), else
    the longest importable module then its attributes.  AttributeError when
    it names nothing; _MissingLibrary when the module needs an optional
    library that is not installed."""
    parts = name.split(".")
    obj = _load(parts[0])
    for i, part in enumerate(parts[1:], 1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif isinstance(obj, types.ModuleType) and (sub := _load(".".join(parts[:i + 1]))):
            obj = sub
        else:
            break
    else:
        return obj
    for i in range(len(parts), 1, -1):
        obj = _load(".".join(parts[:i]))
        if obj is not None:
            for part in parts[i:]:
                obj = getattr(obj, part)      # AttributeError: the name is broken
            return obj
    raise AttributeError(f"{name}: no such module or attribute")


def _cited() -> dict:
    cited: dict = {}
    for path, source in SOURCES.items():
        for name, line in docstring_references(source):
            cited.setdefault(name, []).append(f"{path}:{line}")
    for doc in sorted(DOCS_DIR.glob("*.md")):
        for name, line in markdown_references(doc.read_text(encoding="utf-8")):
            cited.setdefault(name, []).append(f"docs/{doc.name}:{line}")
    return cited


CITED = _cited()


def test_reference_finders_find_planted_references():
    source = ('"""See :class:`bcolz_store.storage.base.Store` and bcolz_store.nothing_here."""\n'
              'def f():\n    """Not bcolz_store/format.py nor my_bcolz_store.x;\n'
              '    but ``bcolz_store.errors.FormatError``."""\n'
              'x = "bcolz_store.not_a_docstring"\n')
    assert docstring_references(source) == [("bcolz_store.storage.base.Store", 1),
                                            ("bcolz_store.nothing_here", 1),
                                            ("bcolz_store.errors.FormatError", 4)]
    text = ("Use `bcolz_store.open` or ``bcolz_store.carray.carray``.\n"
            "Prose bcolz_store.toplevel is not cited.\n"
            "```python\nimport bcolz_store.gone\n```\n"
            "Then `x = bcolz_store.limits.check_alloc(n)`.\n")
    assert markdown_references(text) == [("bcolz_store.open", 1),
                                         ("bcolz_store.carray.carray", 1),
                                         ("bcolz_store.limits.check_alloc", 6)]


def test_reference_resolver():
    assert resolve_reference("bcolz_store.storage.base.Store").__name__ == "Store"
    assert resolve_reference("bcolz_store.carray.carray") is bcolz_store.carray
    assert resolve_reference("bcolz_store.errors") is bcolz_store.errors
    assert resolve_reference("bcolz_store.defaults.vm") == bcolz_store.defaults.vm
    for broken in ("bcolz_store.storage.Store", "bcolz_store.nothing_here",
                   "bcolz_store.errors.NoSuchError", "bcolz_store.carray.carray.no_attr"):
        with pytest.raises(AttributeError):
            resolve_reference(broken)


@pytest.mark.parametrize("name", sorted(CITED))
def test_cited_name_resolves(name):
    if name in NOT_PYTHON_NAMES:
        return
    try:
        resolve_reference(name)
    except _MissingLibrary as err:
        pytest.skip(f"{name} needs {err}, which is not installed")
    except AttributeError as err:
        if name in PENDING_REFERENCES:
            pytest.xfail(f"pending: {name} ({err})")
        pytest.fail(f"{name}, cited at {', '.join(CITED[name])}, does not resolve: {err}")


def test_exemption_lists_are_used():
    assert NOT_PYTHON_NAMES <= set(CITED), "no longer cited: remove from NOT_PYTHON_NAMES"
    unresolved = set()
    for name in NOT_PYTHON_NAMES | PENDING_REFERENCES:
        try:
            resolve_reference(name)
        except (AttributeError, _MissingLibrary):
            unresolved.add(name)
    assert NOT_PYTHON_NAMES | PENDING_REFERENCES == unresolved, "resolves now: remove it"


# ------------------------------------------------- help() and signatures

#: Methods the package's own modules once called on carrays, which are not
#: part of the API (they are private now; none may come back as public).
INTERNAL_METHODS = {"adopt_chunks", "stage_chunk", "iterblocks_"}


def public_callables():
    """``(name, object)`` of every exported function and class, the
    ``bcolz_store.attrs.attrs`` class, and each class's public methods."""
    found = [(name, getattr(bcolz_store, name)) for name in bcolz_store.__all__]
    found.append(("attrs.attrs", bcolz_store.attrs.attrs))
    out = []
    for name, obj in found:
        if isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        out.append((name, obj))
        if isinstance(obj, type):
            out.append((f"{name}.__init__", obj.__init__))
            out.extend((f"{name}.{member}", getattr(obj, member)) for member in dir(obj)
                       if not member.startswith("_") and callable(getattr(obj, member)))
    return out


def private_parameters(obj) -> list:
    """The ``_private`` parameters of ``inspect.signature(obj)``."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):     # a builtin without a signature
        return []
    return [p for p in signature.parameters if p.startswith("_")]


def test_private_parameter_finder_finds_a_planted_one():
    def planted(a, _hidden=None):
        pass
    assert private_parameters(planted) == ["_hidden"]
    assert private_parameters(len) == []


def test_signatures_show_no_private_parameters():
    found = [f"{name}: {private_parameters(obj)}" for name, obj in public_callables()
             if private_parameters(obj)]
    assert found == [], "private parameters in public signatures:\n" + "\n".join(found)


def test_constructor_signatures_are_bcolz_ones():
    carray_params = list(inspect.signature(bcolz_store.carray).parameters)
    assert carray_params[:9] == ["array", "cparams", "dtype", "dflt", "expectedlen",
                                 "chunklen", "rootdir", "safe", "mode"]
    assert list(inspect.signature(bcolz_store.ctable).parameters)[:2] == ["columns", "names"]
    assert list(inspect.signature(bcolz_store.chunk).parameters) == ["dobject", "atom",
                                                                     "cparams"]


@pytest.mark.parametrize("cls", [bcolz_store.carray, bcolz_store.ctable, bcolz_store.chunk,
                                 bcolz_store.attrs.attrs], ids=lambda c: c.__name__)
def test_help_shows_no_private_parameters_or_internal_methods(cls):
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    assert re.findall(r"\b_[a-z]\w*=", text) == []
    listed = set(re.findall(r"^ \|  (\w+)\(", text, re.M))
    assert listed & INTERNAL_METHODS == set()


@pytest.mark.parametrize("cls", [bcolz_store.carray, bcolz_store.ctable],
                         ids=lambda c: c.__name__)
def test_no_internal_method_is_public(cls):
    public = {name for name in dir(cls) if not name.startswith("_")}
    assert public & INTERNAL_METHODS == set()
    assert sorted(name for name in public if name.endswith("_")) == []


def test_private_parameters_still_reach_the_constructors(tmp_path):
    # the package's own callers pass the hidden parameters; they still work
    made = bcolz_store.carray([1, 2, 3], rootdir=str(tmp_path / "c"), mode="w")
    again = bcolz_store.carray(rootdir=str(tmp_path / "c"), mode="r", _store=None)
    assert again[:].tolist() == made[:].tolist() == [1, 2, 3]
