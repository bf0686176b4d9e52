"""Spellings of conditions that every engine evaluates once rewritten.

Two forms have no operator in numpy or numexpr, and are rewritten into
``&`` of single comparisons before an expression is evaluated (and before a
query is planned, so that both see the same expression):

``lo <= ts < hi``
    A chained comparison is ``(lo <= ts) & (ts < hi)``: element by element,
    as Python's chained comparison is for single values (Python's own
    ``and`` would ask an array for one truth value and fail).
``between(x, lo, hi)``
    Inclusive at both ends: ``(x >= lo) & (x <= hi)``.  A missing item (NaN,
    NaT, None) is between no bounds.

Any other expression is left as it is (the same object, and the same text).

:func:`parse_expression` parses an expression once (its rewritten text,
tree and names are kept for the next query of the same text).
"""

from __future__ import annotations

import ast
import copy
import functools

from ..errors import QueryError

__all__ = ["between", "desugar", "desugar_text", "parse_expression"]

_CONSTANTS = frozenset({"None", "False", "True"})


def between(x, lo, hi):
    """Whether each item of ``x`` lies in ``[lo, hi]``, bounds included
    (False for a missing item)."""
    return (x >= lo) & (x <= hi)


def _both(left, right) -> ast.BinOp:
    return ast.BinOp(left=left, op=ast.BitAnd(), right=right)


class _Desugar(ast.NodeTransformer):
    def __init__(self):
        self.changed = False

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        self.changed = True
        operands = [node.left] + list(node.comparators)
        parts = [ast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]])
                 for i, op in enumerate(node.ops)]
        out = parts[0]
        for part in parts[1:]:
            out = _both(out, part)
        return out

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (isinstance(node.func, ast.Name) and node.func.id == "between"
                and len(node.args) == 3 and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return node
        self.changed = True
        x, lo, hi = node.args
        return _both(ast.Compare(left=x, ops=[ast.GtE()], comparators=[lo]),
                     ast.Compare(left=x, ops=[ast.LtE()], comparators=[hi]))


def desugar(tree: ast.AST) -> tuple:
    """``(tree, changed)``: ``tree`` with chained comparisons and ``between``
    calls rewritten (a new tree when ``changed``; ``tree`` itself otherwise)."""
    rewriter = _Desugar()
    if not any(isinstance(n, ast.Compare) and len(n.ops) > 1 or
               isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
               n.func.id == "between" for n in ast.walk(tree)):
        return tree, False
    out = ast.fix_missing_locations(rewriter.visit(copy.deepcopy(tree)))
    return out, rewriter.changed


def desugar_text(expression: str, tree: ast.AST) -> tuple:
    """``(expression, tree)`` rewritten: the same objects when nothing is."""
    out, changed = desugar(tree)
    if not changed:
        return expression, tree
    return ast.unparse(out), out


def _parse(expression) -> ast.Expression:
    """The tree of ``expression`` (QueryError: not a str, or invalid)."""
    if not isinstance(expression, str):
        raise QueryError(f"the expression must be a string, got {type(expression).__name__}")
    try:
        return ast.parse(expression.strip(), mode="eval")
    except SyntaxError as err:
        raise QueryError(f"invalid expression {expression!r}: {err.msg}") from err


def parse_expression(expression) -> tuple:
    """``(text, tree, names)`` of an expression: its text with chained
    comparisons and ``between`` rewritten (:func:`desugar`; the text itself
    when nothing is), the tree of that text, and the names it reads, in
    order.  An expression is parsed once (the last few hundred are kept).

    Raises
    ------
    QueryError
        Not a string, or invalid syntax.
    """
    if not isinstance(expression, str):
        _parse(expression)
    return _parsed(expression)


@functools.lru_cache(maxsize=256)
def _parsed(expression: str) -> tuple:
    text, tree = desugar_text(expression, _parse(expression))
    return text, tree, tuple(_free_names(tree))


def _free_names(tree: ast.AST) -> list:
    """Names the expression reads, in order (attribute names and bound names excluded)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arguments):
            bound.update(a.arg for a in node.posonlyargs + node.args + node.kwonlyargs)
    names = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                and node.id not in bound and node.id not in _CONSTANTS
                and node.id not in names):
            names.append(node.id)
    return names
