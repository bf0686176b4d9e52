"""The package's shape: no import circles, no oversized modules, a light import.

Imports are read from the source (module level and inside functions alike),
so a circle closed by a function-level import counts too.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import subprocess
import tokenize
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "bcolz_store"
#: Lines of code a module may have: not its docstrings, comments or blank lines.
MAX_CODE_LINES = 450
#: Modules over it, each with what stands in the way of its split.
OVER_CODE_LINES = {
    "bcolz_store.carray": "the carray class: about 470 lines of code, every method one to "
                          "twenty lines handing its work to the parts (carray_edit, "
                          "carray_ops, carray_read, carray_dataset)",
}


def _modules() -> dict:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict) -> set:
    """The package's modules that ``name`` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                full = f"{origin}.{alias.name}"
                targets.append(full if full in modules else origin)
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        found.update(t for t in targets if t in modules and t != name)
    return found


def _cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph["bcolz_store.carray"], "the import reader found nothing: it is broken"
    assert _cycles(graph) == []


# ------------------------------------------------------------------ layers

#: The layers, top first.  A layer is a list of components, a component a
#: list of module names (a name covers its submodules; a ``*`` matches one
#: name part).  A module may import its own component and any component of a
#: lower layer; components of one layer are independent of each other.
#:
#: A kind's folder (``kinds/<kind>/``) spans the layers, one role per module
#: name: ``meta*`` beside format/, ``chunk*`` and ``engine*`` beside chunks/,
#: ``files`` beside datasets/, ``types`` over them, ``kind`` and the codecs in
#: the kinds layer, ``interop_*`` beside interop/.
LAYERS = [
    [["bcolz_store.cli"], ["bcolz_store.testing"]],
    [["bcolz_store.converters"]],
    [["bcolz_store", "bcolz_store.toplevel", "bcolz_store.constructors"]],
    [["bcolz_store.ctable", "bcolz_store.ctable_edit", "bcolz_store.ctable_ops",
      "bcolz_store.ctable_query", "bcolz_store.columns", "bcolz_store.ctable_plan",
      "bcolz_store.ctable_select"]],
    [["bcolz_store.carray", "bcolz_store.carray_edit", "bcolz_store.carray_ops",
      "bcolz_store.carray_read", "bcolz_store.carray_meta", "bcolz_store.carray_dataset",
      "bcolz_store.handles", "bcolz_store.carray_index"]],
    # The Arrow column types (arrow_types, arrow_meta, the kinds' interop_arrow) sit with
    # interop/: the carray and ctable classes' Arrow C stream builds its batches with them.
    [["bcolz_store.interop", "bcolz_store.kinds.*.interop_*"],
     ["bcolz_store.query"], ["bcolz_store.printing"],
     ["bcolz_store.integrity"], ["bcolz_store.attrs"]],
    # The column kinds (kinds/base.py): each kind's class and codec over its types, files
    # and engines below; the carray, the ctable and the Arrow paths above find a kind by
    # its registry.
    [["bcolz_store.kinds", "bcolz_store.kinds.*.kind", "bcolz_store.kinds.*"]],
    [["bcolz_store.kinds.struct.types"]],
    [["bcolz_store.kinds.*.types"]],
    [["bcolz_store.datasets", "bcolz_store.kinds.*.files"]],
    [["bcolz_store.chunks", "bcolz_store.kinds.*.chunk*", "bcolz_store.kinds.*.engine*"],
     ["bcolz_store.storage"]],
    [["bcolz_store.items"]],
    [["bcolz_store.params", "bcolz_store.defaults", "bcolz_store.cparams",
      "bcolz_store.options"], ["bcolz_store.threads"], ["bcolz_store.indexing"],
     ["bcolz_store.limits"]],
    [["bcolz_store.format", "bcolz_store.kinds.*.meta*"]],
    [["bcolz_store.errors"], ["bcolz_store._version"]],
]


def _covers(pattern: str, name: str) -> bool:
    """Whether ``pattern`` (a module name, ``*`` matching one part) covers ``name``."""
    want, got = pattern.split("."), name.split(".")
    if len(got) < len(want):
        return False
    return all(fnmatch.fnmatchcase(g, w) for w, g in zip(want, got))


def _place(name: str, layers=None) -> tuple:
    """``(layer, component)`` of a module: the most specific name that covers it
    (more parts first, then fewer wildcards)."""
    best = None
    for i, layer in enumerate(LAYERS if layers is None else layers):
        for j, component in enumerate(layer):
            for prefix in component:
                if _covers(prefix, name):
                    rank = (prefix.count("."), -prefix.count("*"), len(prefix))
                    if best is None or rank > best[0]:
                        best = (rank, i, j)
    if best is None:
        return None
    return best[1], best[2]


def _upward(graph: dict, layers=None) -> list:
    """The imports that run up a layer or across to a sibling component."""
    found = []
    for name in sorted(graph):
        here = _place(name, layers)
        for target in sorted(graph[name]):
            there = _place(target, layers)
            if here is None or there is None or there == here:
                continue
            if there[0] < here[0] or (there[0] == here[0] and there[1] != here[1]):
                found.append(f"{name} -> {target}")
    return found


def test_layer_check_finds_a_planted_violation():
    layers = [[["p.top"]], [["p.a"], ["p.b"]], [["p.low"]]]
    graph = {"p.top": {"p.a"}, "p.a": {"p.low", "p.a.x"}, "p.a.x": {"p.b"},
             "p.b": set(), "p.low": {"p.top"}}
    assert _upward(graph, layers) == ["p.a.x -> p.b", "p.low -> p.top"]


def test_every_module_has_a_layer():
    missing = sorted(name for name in _modules() if _place(name) is None)
    assert not missing, f"modules with no layer in LAYERS: {missing}"


def test_no_import_runs_up_a_layer():
    """Module-level and function-level imports alike."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    found = _upward(graph)
    assert not found, "imports that run up a layer:\n" + "\n".join(found)


def code_lines(source: str) -> int:
    """Lines of ``source`` that hold code: not a docstring (of the module, a
    class or a function), a comment or a blank line."""
    docs = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docs.update(range(first.lineno, first.end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docs)


def test_code_lines_leave_out_docstrings_comments_and_blank_lines():
    source = ('"""Module."""\n\n# a comment\ndef f(x):\n    """Doc\n    more."""\n'
              '    return (x +\n            1)  # why\n\nTEXT = """a\nb"""\n')
    assert code_lines(source) == 5      # def, return over two lines, TEXT over two


@pytest.mark.parametrize("name", sorted(_modules()))
def test_module_size(name):
    lines = code_lines(_modules()[name].read_text(encoding="utf-8"))
    if name in OVER_CODE_LINES:
        assert lines > MAX_CODE_LINES, f"{name} has {lines} lines of code: take it off the list"
        return
    assert lines <= MAX_CODE_LINES, (f"{name} has {lines} lines of code; split it along a seam")


def test_import_is_light():
    """``import bcolz_store`` loads none of the optional heavy libraries."""
    code = ("import sys, bcolz_store; "
            "print(sorted(m for m in ('pandas', 'dask', 'pyarrow', 'zarr', 's3fs', 'fsspec', "
            "'tables', 'numexpr', 'msgpack') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]"


# ------------------------------------------- one way into the commit machinery

#: The commit machinery: only ``storage/`` imports these; everything above it
#: goes through :class:`bcolz_store.storage.dataset.DatasetStore`.
COMMIT_MODULES = {f"bcolz_store.storage.{name}" for name in (
    "journal", "commit", "committed", "generation", "commit_lock", "apply", "staging")}


def _in_storage(path: Path) -> bool:
    return path.parent == PACKAGE / "storage"


def _attribute_names(tree) -> list:
    """``(line, name)`` of every attribute access (``x.name``, and
    ``getattr``/``setattr``/``hasattr``/``delattr`` with a constant name),
    with the expression it is taken of."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr, node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "hasattr", "delattr") and \
                len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and \
                isinstance(node.args[1].value, str):
            out.append((node.lineno, node.args[1].value, node.args[0]))
    return out


def test_only_storage_touches_the_journal():
    """Above ``storage/``, the dataset's ``DatasetStore`` is the one way into
    the commit machinery: no ``.journal``, no import of its modules."""
    modules = _modules()
    assert COMMIT_MODULES <= set(modules), "a commit module moved: update COMMIT_MODULES"
    found = []
    for name, path in sorted(modules.items()):
        if _in_storage(path):
            continue
        where = path.relative_to(PACKAGE.parent)
        found += [f"{where}: imports {target}"
                  for target in sorted(_imports(name, path, modules) & COMMIT_MODULES)]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{where}:{line}: .{attr}" for line, attr, _of in
                  sorted(_attribute_names(tree), key=lambda a: a[0]) if attr == "journal"]
    assert not found, "the commit machinery reached from outside storage/ (use " \
        "DatasetStore's methods):\n" + "\n".join(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and len(name) > 1


def _names_bound(body) -> set:
    """Names a module or class body binds: defs, assignments, imports."""
    out = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                out.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            out |= _names_bound([n for n in ast.iter_child_nodes(node)
                                 if isinstance(n, ast.stmt)])
    return out


def _is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _private_defined(tree) -> set:
    """The ``_private`` names a module defines: its module-level names, its
    classes' attributes and methods, and the attributes it assigns to
    ``self``/``cls`` (``self._name = ...``, ``setattr(self, "_name", ...)``)."""
    out = _names_bound(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            out |= _names_bound(node.body)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and _is_self(node.value):
            out.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "setattr" and len(node.args) >= 2 and \
                _is_self(node.args[0]) and isinstance(node.args[1], ast.Constant):
            out.add(node.args[1].value)
    return {name for name in out if isinstance(name, str) and _private(name)}


def _private_reach(sources: dict) -> list:
    """Where a module reads or writes a ``_private`` attribute of an object
    other than ``self``/``cls`` whose name is defined only in other folders of
    the package.  ``sources``: ``{path relative to the package's parent:
    source}``; folders are the paths' parents."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    defined = {}
    for path, tree in trees.items():
        defined.setdefault(Path(path).parent, set()).update(_private_defined(tree))
    found = []
    for path, tree in sorted(trees.items()):
        folder = Path(path).parent
        for line, attr, of in _attribute_names(tree):
            if not _private(attr) or attr in defined[folder] or _is_self(of):
                continue
            owners = sorted(f.as_posix() for f, names in defined.items() if attr in names)
            if owners:
                found.append((path, line, f"{path}:{line}: .{attr} (defined in "
                                          f"{', '.join(owners)})"))
    return [text for _path, _line, text in sorted(found)]


def test_private_reach_finds_a_planted_violation():
    sources = {
        "pkg/storage/journal.py": "def _helper():\n"
                                  "    pass\n"
                                  "class Journal:\n"
                                  "    def __init__(self):\n"
                                  "        self._depth = 0\n"
                                  "        self.__slots = 1\n"
                                  "    def _sync(self):\n"
                                  "        return self._depth\n",
        "pkg/storage/dataset.py": "def depth(journal):\n"
                                  "    return journal._depth\n",      # same folder: allowed
        "pkg/chunks/engine.py": "from ..storage import journal as _journal\n"
                                "def f(journal):\n"
                                "    if journal._depth == 0:\n"
                                "        return getattr(journal, '_sync')()\n"
                                "    journal._depth = _journal._helper()\n"
                                "    return journal.__slots, journal._unknown\n",
        "pkg/chunks/own.py": "class A:\n"
                             "    def g(self):\n"
                             "        return self._depth, self._sync()\n"
                             "    @classmethod\n"
                             "    def h(cls):\n"
                             "        return cls._depth\n",
    }
    assert _private_reach(sources) == [
        "pkg/chunks/engine.py:3: ._depth (defined in pkg/storage)",
        "pkg/chunks/engine.py:4: ._sync (defined in pkg/storage)",
        "pkg/chunks/engine.py:5: ._depth (defined in pkg/storage)",
        "pkg/chunks/engine.py:5: ._helper (defined in pkg/storage)",
    ]


def _private_imports(sources: dict) -> list:
    """``from x import _name`` where ``x`` is a module of another folder."""
    found = []
    for path, text in sorted(sources.items()):
        folder = Path(path).parent
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = folder
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*(node.module or "").split(".")) if node.module else base
            else:
                target = Path(*(node.module or "").split("."))
            other = target.parent if target.suffix == "" and target != folder else target
            for alias in node.names:
                if _private(alias.name) and other != folder and target != folder:
                    found.append(f"{path}:{node.lineno}: imports {alias.name}")
    return found


def test_private_import_finder_finds_a_planted_one():
    sources = {"pkg/a/x.py": "from ..b.y import _hidden, shown\nfrom .z import _mine\n",
               "pkg/b/y.py": "def _hidden():\n    pass\n"}
    assert _private_imports(sources) == ["pkg/a/x.py:1: imports _hidden"]


def test_no_private_names_imported_across_folders():
    root = PACKAGE.parent
    sources = {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
               for path in PACKAGE.rglob("*.py")}
    found = _private_imports(sources)
    assert not found, "private names imported from another folder:\n" + "\n".join(found)


def test_no_private_attributes_across_folders():
    """A ``_private`` attribute is its folder's: other folders use public names."""
    root = PACKAGE.parent
    sources = {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
               for path in PACKAGE.rglob("*.py")}
    found = _private_reach(sources)
    assert not found, "private attributes reached from another folder:\n" + "\n".join(found)


# ------------------------------------------------ one class, one module

def _spread_classes(sources: dict) -> list:
    """Classes spread across modules by inheritance: a class whose base, a
    class of the package defined in another module, has no other subclass
    (a base that several classes share, as ``Store`` or ``Converter``, is a
    contract; a base used once is half of one class).  ``sources``:
    ``{module name: source}``."""
    defined, subclasses = {}, {}
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, set()).add(module)
                for base in node.bases:
                    name = ast.unparse(base).split(".")[-1]
                    subclasses.setdefault(name, []).append((node.name, module))
    found = []
    for base, users in sorted(subclasses.items()):
        homes = defined.get(base)
        if homes is None or len(users) != 1:
            continue
        (name, module), = users
        if module not in homes:
            found.append(f"{name} ({module}) extends {base} ({', '.join(sorted(homes))})")
    return found


def test_spread_finder_finds_a_planted_spread():
    sources = {"p.a": "class Half:\n    pass\nclass Shared:\n    pass\n",
               "p.b": "from .a import Half, Shared\nclass Whole(Half):\n    pass\n"
                      "class One(Shared):\n    pass\n",
               "p.c": "from .a import Shared\nclass Two(Shared):\n    pass\n"
                      "class Local:\n    pass\nclass Mine(Local):\n    pass\n"}
    assert _spread_classes(sources) == ["Whole (p.b) extends Half (p.a)"]


def test_no_class_spread_across_modules():
    sources = {name: path.read_text(encoding="utf-8") for name, path in _modules().items()}
    found = _spread_classes(sources)
    assert not found, "classes spread across modules (compose a part instead):\n" + \
        "\n".join(found)
