"""Evaluate expressions over carrays, numpy arrays and scalars, block by block.

``eval("2*a + b")`` finds ``a`` and ``b`` (in ``user_dict``, then in the
caller's local and global variables), reads ``blen`` rows of every array
operand at a time, evaluates the expression on those rows and appends the
result to a new carray (or fills a numpy array).  Only one block of each
operand is in memory at a time, so operands and result may be far larger
than RAM.

Three engines ("virtual machines") are available:

``'numexpr'`` (default when installed)
    :func:`numexpr.evaluate`; numexpr's functions (``sin``, ``where``,
    ``sum``...) are available by name.  When numexpr refuses an expression
    (unicode strings, unsupported types) the block is evaluated by the
    ``'python'`` engine instead, with a warning.  Expressions over fixed
    bytes (``S``) items or bytes constants are numpy's: numexpr orders bytes
    as signed chars (``b'\\x80' < b'a'``), numpy byte-wise unsigned with
    trailing NULs stripped, as the chunk statistics do.  So are comparisons
    over float32 or float16 items: numexpr compares them with a float
    constant in float64, numpy in the items' precision (``f4 == 0.1`` holds
    for ``float32(0.1)``).
``'python'``
    Python's ``eval`` over numpy arrays, in a namespace with no Python
    builtins: only the variables of the expression, numpy versions of
    numexpr's functions and a few safe builtins (``abs``, ``min``, ``max``,
    ``sum``, ``round``, ``len``, ``int``, ``float``, ``bool``, ``complex``,
    ``any``, ``all``, ``pow``), and the string functions of
    :mod:`.strings` (``startswith``, ``contains``, ``isnull``...).
    Expressions over columns of variable-length str/bytes always use it.
``'dask'`` (when installed)
    The expression is built over ``dask.array`` operands (reachable as
    ``da`` in the expression) and computed chunk by chunk.

Chained comparisons (``lo <= x < hi``) and ``between(x, lo, hi)`` (bounds
included) are rewritten into ``&`` of single comparisons first
(:mod:`.rewrite`), so every engine evaluates them.

A reduction at the top of the expression (``sum(a)``, ``max(a)``,
``np.prod(a)``...) is computed per block and the partial results combined
with the matching operation, so it is correct however many blocks there are.

Source: bcolz 1.x ``chunked_eval.eval`` (semantics, defaults and errors).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import warnings
from collections.abc import Mapping

import numpy as np

from .. import threads
from ..defaults import defaults
from ..errors import MissingDependencyError, QueryError
from .operands import NULLS, Operands
from .rewrite import between, parse_expression
from .strings import STRING_FUNCTIONS, is_vlen_operand

__all__ = ["evaluate", "parse_expression", "resolve_variables"]

_VMS = ("numexpr", "python", "dask")
_OUT_FLAVORS = ("bcolz", "carray", "numpy")

# Reductions whose per-block results combine with a ufunc.
_COMBINE = {
    "sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
    "amin": np.minimum, "amax": np.maximum, "any": np.logical_or, "all": np.logical_and,
    "nansum": np.add, "nanprod": np.multiply, "nanmin": np.fmin, "nanmax": np.fmax,
}


# ----------------------------------------------------------------- engines

def _import_engine(vm: str):
    module = {"numexpr": "numexpr", "dask": "dask.array"}[vm]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        extra = {"numexpr": "query", "dask": "dask"}[vm]
        raise MissingDependencyError(
            f"eval(..., vm={vm!r}) requires {vm}, which is not installed: "
            f"pip install 'bcolz_store[{extra}]'") from err


@functools.lru_cache(maxsize=None)
def _numexpr_functions() -> frozenset:
    try:
        from numexpr.expressions import functions
    except ImportError:  # pragma: no cover - numexpr always has them
        return frozenset()
    return frozenset(functions)


def _reduce_axis0(ufunc):
    def reduce(x, axis=0, **kwargs):
        return ufunc.reduce(np.asarray(x), axis=axis, **kwargs)
    return reduce


def _min_or_max(ufunc, name):
    def extreme(*args, axis=0):
        if not args:
            raise TypeError(f"{name} expected at least 1 argument, got 0")
        if len(args) == 1:
            return ufunc.reduce(np.asarray(args[0]), axis=axis)
        return functools.reduce(ufunc, args)
    extreme.__name__ = name
    return extreme


def _contains(haystack, needle):
    return np.char.find(haystack, needle) >= 0


@functools.lru_cache(maxsize=None)
def _python_namespace() -> dict:
    """Functions the 'python' engine offers by name (never Python's builtins)."""
    namespace = {"__builtins__": {}}
    for name in ("arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
                 "ceil", "conj", "copy", "copysign", "cos", "cosh", "exp", "expm1", "floor",
                 "fmod", "hypot", "imag", "isfinite", "isinf", "isnan", "log", "log10", "log1p",
                 "log2", "maximum", "minimum", "nextafter", "ones_like", "real", "sign",
                 "signbit", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "where"):
        namespace[name] = getattr(np, name)
    namespace.update({
        "abs": np.abs, "round": np.round, "contains": _contains,
        "sum": _reduce_axis0(np.add), "prod": _reduce_axis0(np.multiply),
        "any": _reduce_axis0(np.logical_or), "all": _reduce_axis0(np.logical_and),
        "min": _min_or_max(np.minimum, "min"), "max": _min_or_max(np.maximum, "max"),
    })
    for name in ("bool", "complex", "float", "int", "len", "pow"):
        namespace[name] = getattr(builtins, name)
    namespace.update(STRING_FUNCTIONS)   # startswith, contains, isnull... (query/strings.py)
    namespace["between"] = between       # (calls of it are rewritten: query/rewrite.py)
    return namespace


# ------------------------------------------------------------ the expression

@functools.lru_cache(maxsize=None)
def _provided(vm: str) -> frozenset:
    """Names the engine ``vm`` provides (functions), which are not variables."""
    provided = (_numexpr_functions() if vm == "numexpr"
                else _python_namespace() if vm == "python" else {"da": None})
    return frozenset(provided) | frozenset(STRING_FUNCTIONS) | {"between"}   # ('python')


def _top_reduction(tree: ast.Expression):
    """The ufunc combining per-block results when the whole expression is a
    reduction over rows (``sum(x)``, ``np.max(x, axis=0)``...), else None."""
    call = tree.body
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name not in _COMBINE:
        return None
    if name in ("min", "max") and len(call.args) > 1 and isinstance(func, ast.Name):
        return None  # min(a, b): elementwise
    axis = ast.Constant(None)
    if len(call.args) > 1:
        axis = call.args[1]
    for keyword in call.keywords:
        if keyword.arg == "axis":
            axis = keyword.value
    if not isinstance(axis, ast.Constant) or axis.value not in (None, 0):
        return None
    return _COMBINE[name]


# ------------------------------------------------------------- the variables

def resolve_variables(expression: str, namespace: Mapping, vm: str | None = None) -> dict:
    """Look up the variables of ``expression`` in ``namespace``.

    Parameters
    ----------
    expression : str
        A Python expression.
    namespace : mapping
        Where names are looked up (for instance a :class:`collections.ChainMap`
        of a user dict, a frame's locals and globals).
    vm : {'numexpr', 'python', 'dask'}, optional
        Default ``defaults.vm``.  With numexpr, numexpr's function names are
        not variables.

    Returns
    -------
    dict
        ``name -> value`` for every variable of the expression found.

    Raises
    ------
    QueryError
        If the expression is not valid Python.
    NameError
        If a variable is found nowhere, and is not a function the engine
        provides.
    """
    vm = vm or defaults.vm
    provided = _provided(vm)
    found = {}
    for name in parse_expression(expression)[2]:
        if name in namespace and not (vm != "python" and name in provided):
            found[name] = namespace[name]
        elif name not in provided:
            raise NameError(f"variable name ``{name}`` not found (evaluating {expression!r})")
    return found


# -------------------------------------------------------------- evaluation

def _run_python(code, expression, variables):
    try:
        result = builtins.eval(code, {**_python_namespace(), **variables})
    except NameError:
        raise
    except Exception as err:
        raise QueryError(f"cannot evaluate {expression!r}: {type(err).__name__}: {err}") from err
    if isinstance(result, np.ma.MaskedArray) and result.dtype == np.bool_:
        return result.filled(False)     # a condition on a null: false (SQL's semantics)
    return result


def _run_numexpr(expression, variables):
    ne = _import_engine("numexpr")
    result = ne.evaluate(expression, local_dict=variables, global_dict={})
    canonical = np.dtype(result.dtype.str)
    if canonical.char != result.dtype.char:
        # numexpr answers int64 as C 'long long'; give numpy's own int64.
        result = result.view(canonical)
    return result


_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_NUMERIC_KINDS = frozenset("biuf")


def _is_plain_condition(node) -> bool:
    """True for comparisons of variables and number constants, single (not
    chained), joined by ``&``, ``|``, ``^`` and ``~``: ``(x > 0.5) & (k < 100)``."""
    if isinstance(node, ast.Expression):
        return _is_plain_condition(node.body)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and \
            _is_plain_condition(node.left) and _is_plain_condition(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Invert) and _is_plain_condition(node.operand)
    if isinstance(node, ast.Compare):
        return len(node.ops) == 1 and isinstance(node.ops[0], _COMPARISONS) and \
            _is_operand(node.left) and _is_operand(node.comparators[0])
    return False


def _is_operand(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
        return isinstance(node, ast.Constant) and type(node.value) in (int, float)
    return isinstance(node, ast.Name) or (isinstance(node, ast.Constant)
                                          and type(node.value) in (int, float, bool))


def _numeric(variables: dict) -> bool:
    """Every value is a number, or an array of numbers or booleans."""
    for value in variables.values():
        kind = getattr(getattr(value, "dtype", None), "kind", None)
        if kind is None:
            if type(value) not in (int, float, bool):
                return False
        elif kind not in _NUMERIC_KINDS:
            return False
    return True


class _Engine:
    """Evaluates one block, with numexpr falling back to Python when it must.

    A plain condition (comparisons of numbers joined by ``&``, ``|``, ``^``,
    ``~``) over numeric operands is evaluated by numpy even under numexpr:
    the boolean result is the same element for element (both compare in the
    common type of the operands), and numpy does it several times faster
    (measured on 5 million rows, ``(x > 0.5) & (k < 100)`` with x float64 and
    k int64: 3.5 ms against numexpr's 24.6 ms on one thread).
    """

    def __init__(self, expression: str, vm: str, tree=None):
        self.expression = expression
        self.vm = vm
        self.code = compile(expression.strip(), "<expression>", "eval")
        self.plain = vm == "numexpr" and tree is not None and _is_plain_condition(tree)

    def __call__(self, variables: dict):
        if NULLS in variables:      # a plain condition over nullable numbers: nulls false
            variables = dict(variables)
            nulls = variables.pop(NULLS)
            result = self(variables)
            return result if nulls is None else result & ~nulls
        if self.vm == "python" or (self.plain and _numeric(variables)):
            return _run_python(self.code, self.expression, variables)
        try:
            return _run_numexpr(self.expression, variables)
        except Exception as err:  # numexpr's refusals come as many types
            warnings.warn(
                f"numexpr cannot evaluate {self.expression!r} ({err}); falling back to the "
                "'python' virtual machine (choose one with the `vm` parameter)", UserWarning,
                stacklevel=4)
            self.vm = "python"
            return _run_python(self.code, self.expression, variables)


def _scalar(value):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


@contextlib.contextmanager
def _engine_threads(vm: str, parallel: bool):
    """While blocks are evaluated on the thread pool, numexpr's own threads
    are 1: concurrent numexpr calls with more threads each wait for one
    another (numexpr serialises its parallel runs), so the pool's threads are
    the parallelism.  The previous number is restored afterwards."""
    if not (parallel and vm == "numexpr"):
        yield
        return
    ne = _import_engine("numexpr")
    previous = ne.set_num_threads(1)
    try:
        yield
    finally:
        ne.set_num_threads(previous)


def _later_blocks(engine, operands, blen, nrows, fill=None):
    """Yield the results of blocks 2, 3... in order, evaluated on the thread
    pool (each task reads its rows of every operand and evaluates them; a
    window of blocks at a time).  With ``fill``, a task hands its result to
    ``fill(start, result)`` itself and yields None."""
    def one(start):
        result = engine(operands.block(start, start + blen))
        if fill is None:
            return result
        fill(start, result)
        return None
    starts = list(range(blen, nrows, blen))
    with _engine_threads(engine.vm, len(starts) > 1 and threads.get_nthreads() > 1):
        yield from threads.map_ordered(one, starts)


def _evaluate_blocks(expression, tree, operands, vm, out_flavor, blen, kwargs, make_result):
    engine = _Engine(expression, vm, tree)
    nrows = operands.nrows
    combine = _top_reduction(tree)
    first = engine(operands.block(0, min(blen, nrows)))
    first_rows = min(blen, nrows)
    nblocks = max(-(-nrows // blen), 1)
    by_rows = (combine is None and isinstance(first, np.ndarray) and first.ndim >= 1
               and first.shape[0] == first_rows)
    if not by_rows:
        if nblocks == 1:
            return _scalar(first)
        if combine is None:
            raise QueryError(
                f"{expression!r} gives {np.shape(first)} for a block of {first_rows} rows: its "
                "blocks can neither be concatenated nor combined (a reduction nested inside "
                f"the expression?); pass blen >= {nrows} to evaluate it in one block")
        result = first        # partial results combined in block order, whatever the threads
        for partial in _later_blocks(engine, operands, blen, nrows):
            result = combine(result, partial)
        return _scalar(result)

    if out_flavor == "numpy":
        empty = np.ma.empty if isinstance(first, np.ma.MaskedArray) else np.empty
        result = empty((nrows,) + first.shape[1:], dtype=first.dtype)   # (masked: nulls kept)
        result[:first_rows] = first

        def fill(start, block):
            result[start:start + blen] = block
        for _ in _later_blocks(engine, operands, blen, nrows, fill):
            pass
        return result
    kwargs = dict(kwargs)
    kwargs.setdefault("expectedlen", nrows)
    result = make_result(first, **kwargs)
    for block in _later_blocks(engine, operands, blen, nrows):
        result.append(block)
    result.flush()
    return result


def _evaluate_dask(expression, operands, out_flavor, blen, kwargs, make_result):
    da = _import_engine("dask")
    namespace = dict(operands.variables)
    for name, value in operands.rows.items():
        namespace[name] = da.from_array(value, chunks=(blen,) + tuple(value.shape[1:]))
    namespace["da"] = da
    code = compile(expression.strip(), "<expression>", "eval")
    lazy = _run_python(code, expression, namespace)
    shape = getattr(lazy, "shape", ())
    if out_flavor == "numpy" or not shape:
        return _scalar(np.asarray(lazy))
    kwargs = dict(kwargs)
    kwargs.setdefault("expectedlen", shape[0])
    result = None
    for start in range(0, shape[0], blen):
        block = np.asarray(lazy[start:start + blen].compute())
        if result is None:
            result = make_result(block, **kwargs)
        else:
            result.append(block)
    if result is None:
        result = make_result(np.asarray(lazy.compute()), **kwargs)
    result.flush()
    return result


def evaluate(expression: str, variables: Mapping, vm: str | None = None,
             out_flavor: str | None = None, blen: int | None = None, make_result=None,
             **kwargs):
    """Evaluate ``expression`` with its variables taken from ``variables`` only.

    The entry point for callers that resolve variables themselves (ctable
    columns, a frame chosen by the caller); :func:`eval` is this plus the
    look-up in the caller's frame.

    Parameters
    ----------
    expression : str
        A Python expression, e.g. ``'2*a + 3*b > c'``.
    variables : mapping
        ``name -> value``: carrays, numpy arrays, scalars, functions.  Only
        the names of the expression are read.
    vm : {'numexpr', 'python', 'dask'}, optional
        Default ``defaults.vm``.
    out_flavor : {'bcolz', 'carray', 'numpy'}, optional
        Default ``defaults.out_flavor``.
    blen : int, optional
        Rows per block.  Default: a multiple of the operands' largest
        chunklen holding about 2 MB (numexpr, python) or 32 MB (dask) of
        operand rows.  Blocks after the first are evaluated on the thread
        pool (:func:`bcolz_store.set_nthreads`), a window at a time; results
        are put together in block order, so they do not depend on the number
        of threads.
    make_result : callable, optional
        Builds the result from its first block and ``**kwargs`` (the carray
        class); required unless ``out_flavor`` is 'numpy'.
    **kwargs
        Passed to the result's :class:`carray` constructor (``rootdir``,
        ``mode``, ``cparams``, ``chunklen``, ``expectedlen``...); ignored for
        numpy and scalar results.

    Returns
    -------
    carray, numpy.ndarray or scalar
        Of ``len(operands)`` rows for row-wise expressions; a numpy value for
        expressions of scalars only and for reductions.

    Raises
    ------
    QueryError
        Invalid syntax, bad ``vm``/``out_flavor``/``blen``, unsupported
        operands (lists, object arrays), operands of different lengths, or
        an evaluation error (the message holds the expression).
    NameError
        A variable of the expression is not found.
    ImportError
        ``vm`` is 'numexpr' or 'dask' and that package is not installed.
    """
    vm = vm or defaults.vm
    if vm not in _VMS:
        raise QueryError(f"`vm` must be either 'numexpr', 'python' or 'dask', got {vm!r}")
    out_flavor = out_flavor or defaults.out_flavor
    if out_flavor not in _OUT_FLAVORS:
        raise QueryError(
            f"`out_flavor` must be 'bcolz', 'carray' or 'numpy', got {out_flavor!r}")
    if vm != "python":
        _import_engine(vm)
    if blen is not None and (isinstance(blen, bool) or not isinstance(blen, (int, np.integer))
                             or blen < 1):
        raise QueryError(f"blen must be a positive integer, got {blen!r}")

    # lo < x < hi and between(x, lo, hi) as & of comparisons (query/rewrite.py)
    expression, tree, _ = parse_expression(expression)
    operands = Operands(expression, resolve_variables(expression, variables, vm))
    if vm == "numexpr" and operands.uses_uint64():
        vm = "python"  # numexpr silently casts uint64 to int64
    if vm == "numexpr" and operands.has_bytes():
        vm = "python"  # numexpr orders bytes as signed chars: numpy's comparison instead
    if vm == "numexpr" and operands.has_small_floats() and \
            any(isinstance(node, ast.Compare) for node in ast.walk(tree)):
        vm = "python"  # numexpr compares float32 items in float64, numpy in float32
    if vm != "dask" and _is_plain_condition(tree) and operands.can_split_nulls() and \
            not any(isinstance(v, np.ma.MaskedArray) for v in operands.rows.values()):
        # comparisons joined by & | ^ ~: a null anywhere makes the row false
        # (numpy.ma's masks join so), so the values are compared as they are
        # and the rows with a null are cleared afterwards
        operands.split_nulls = True
    elif operands.nullable or any(isinstance(v, np.ma.MaskedArray) for v in
                                  operands.rows.values()):
        vm = "python"  # masked blocks: numpy.ma's comparisons, nulls false
    if operands.vlen or any(is_vlen_operand(v) for v in operands.rows.values()):
        vm = "python"  # items of any length: numpy's string functions, block by block
    if operands.nrows is None:
        # Scalars only.
        engine = _Engine(expression, vm if vm != "dask" else "python")
        if vm == "dask":
            operands.variables["da"] = _import_engine("dask")
        return _scalar(engine(operands.variables))
    blen = int(blen) if blen else operands.default_blen(vm)
    if make_result is None:
        out_flavor = "numpy"
    if vm == "dask":
        return _evaluate_dask(expression, operands, out_flavor, blen, kwargs, make_result)
    return _evaluate_blocks(expression, tree, operands, vm, out_flavor, blen, kwargs,
                            make_result)
