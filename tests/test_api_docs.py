"""Every public method of carray and ctable has its numpydoc reference:
Parameters naming each parameter, Returns when it returns something, Raises
unless it raises nothing of its own (the short list below says which); and
that reference is the docstring in the method's own source, so ``help()``
and an editor show it from the code."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import pytest

import bcolz_store

#: Public methods that raise nothing of their own (they only hand on what
#: their parts raise, which no caller can act on differently).
NO_RAISES = {"view", "free_cachemem"}

#: Dunder methods that are part of the documented API.
DOCUMENTED_DUNDERS = {"__getitem__", "__setitem__"}

_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}$", re.M)


def sections(doc: str) -> dict:
    """``{section title: its text}`` of a numpydoc docstring."""
    found = list(_SECTION.finditer(doc))
    return {m.group(1): doc[m.end():found[i + 1].start() if i + 1 < len(found) else len(doc)]
            for i, m in enumerate(found)}


def documented_names(text: str) -> set:
    """The parameter names a Parameters section describes (``a, b : int``
    describes both; ``**kwargs`` is ``kwargs``)."""
    names = set()
    for line in text.splitlines():
        if line and not line[0].isspace():
            head = line.split(" : ")[0]
            names.update(n.strip().lstrip("*") for n in head.split(","))
    return names


def returns_value(func) -> bool:
    """Whether the method's source returns a value or yields."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, ast.Return) and node.value is not None and \
                not (isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
    return False


def problems(name: str, func) -> list:
    """What the docstring of method ``name`` lacks."""
    doc = inspect.getdoc(func) or ""
    if not doc.strip():
        return [f"{name}: no docstring"]
    found = sections(doc)
    out = []
    params = [p for p in inspect.signature(func).parameters.values() if p.name != "self"
              and not p.name.startswith("_")]
    if params:
        described = documented_names(found.get("Parameters", ""))
        missing = [p.name for p in params if p.name not in described]
        if missing:
            out.append(f"{name}: Parameters does not describe {missing}")
    if returns_value(func) and "Returns" not in found and "Yields" not in found:
        out.append(f"{name}: returns a value but has no Returns")
    if name.rsplit(".", 1)[1] not in NO_RAISES and "Raises" not in found:
        out.append(f"{name}: no Raises")
    return out


def public_methods(cls) -> list:
    return sorted((f"{cls.__name__}.{name}", member) for name, member in vars(cls).items()
                  if callable(member) and not isinstance(member, type)
                  and (not name.startswith("_") or name in DOCUMENTED_DUNDERS))


def test_checker_finds_what_a_docstring_lacks():
    def good(self, a, b=1, **kwargs):
        """Do.

        Parameters
        ----------
        a, b : int
        **kwargs
            More.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            Never.
        """
        return a

    def bad(self, a, c):
        """Do.

        Parameters
        ----------
        a : int
        """
        return a
    assert problems("C.good", good) == []
    assert problems("C.bad", bad) == ["C.bad: Parameters does not describe ['c']",
                                      "C.bad: returns a value but has no Returns",
                                      "C.bad: no Raises"]


METHODS = public_methods(bcolz_store.carray) + public_methods(bcolz_store.ctable)


@pytest.mark.parametrize("name,method", METHODS, ids=[name for name, _ in METHODS])
def test_public_method_has_its_numpydoc(name, method):
    assert problems(name, method) == []


def test_classes_are_documented():
    for cls in (bcolz_store.carray, bcolz_store.ctable):
        found = sections(inspect.getdoc(cls))
        assert {"Parameters", "Raises"} <= set(found), cls.__name__


def _function(member):
    """The function behind a class member (a property's getter)."""
    if isinstance(member, property):
        return member.fget
    return getattr(member, "__func__", member)


@pytest.mark.parametrize("name,method", METHODS, ids=[name for name, _ in METHODS])
def test_the_docstring_is_in_the_source(name, method):
    cls = getattr(bcolz_store, name.split(".")[0])
    function = _function(inspect.getattr_static(cls, name.split(".")[1]))
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    node = next(n for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    assert ast.get_docstring(node) == inspect.getdoc(function), name


def test_the_class_docstrings_are_in_the_source():
    for cls in (bcolz_store.carray, bcolz_store.ctable):
        node = ast.parse(inspect.getsource(inspect.getmodule(cls)))
        found = next(n for n in node.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
        assert ast.get_docstring(found) == inspect.getdoc(cls)
