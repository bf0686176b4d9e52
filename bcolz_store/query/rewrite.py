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
"""

from __future__ import annotations

import ast
import copy

__all__ = ["between", "desugar", "desugar_text"]


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
