"""bcolz_store.eval: blockwise evaluation over carrays, numpy arrays and scalars."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import QueryError
from bcolz_store.query.eval import evaluate, resolve_variables

VMS = ["python"] + (["numexpr"] if bcolz.numexpr_here else []) + (["dask"] if bcolz.dask_here else [])
GLOBAL_OFFSET = 100


@pytest.fixture(params=VMS)
def vm(request):
    return request.param


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000])
def test_carray_numpy_scalar_mix_matches_numpy(vm, n):
    a = np.arange(n)
    c = bcolz.carray(a, chunklen=64)
    b = np.arange(n) * 3
    result = bcolz.eval("c + 2 * b - 3", vm=vm, blen=64)
    assert isinstance(result, bcolz.carray)
    assert_array_equal(result[:], a + 2 * b - 3)


def test_blocks_not_aligned_with_chunks(vm):
    a = np.arange(1001.0)
    c = bcolz.carray(a, chunklen=100)
    assert_array_equal(bcolz.eval("c * c", vm=vm, blen=37)[:], a * a)


def test_numpy_out_flavor(vm):
    c = bcolz.arange(500, chunklen=50)
    result = bcolz.eval("c > 250", vm=vm, out_flavor="numpy", blen=60)
    assert type(result) is np.ndarray
    assert_array_equal(result, np.arange(500) > 250)


def test_result_carray_takes_kwargs(tmp_path):
    c = bcolz.arange(300)
    path = str(tmp_path / "out")
    result = bcolz.eval("c * 2", rootdir=path, chunklen=32, cparams=bcolz.cparams(clevel=9))
    assert result.rootdir == path and result.chunklen == 32 and result.cparams.clevel == 9
    assert_array_equal(bcolz.open(path)[:], np.arange(300) * 2)


def test_defaults_choose_flavor_and_vm():
    c = bcolz.arange(10)
    with bcolz.defaults_ctx(out_flavor="numpy", vm="python"):
        assert type(bcolz.eval("c + 1")) is np.ndarray


def test_scalars_only_give_a_scalar(vm):
    x, y = 3, 4.5
    assert bcolz.eval("2 * x + y", vm=vm) == 10.5
    assert np.ndim(bcolz.eval("2 * x + y", vm=vm)) == 0


def test_variable_lookup_order_user_dict_then_locals_then_globals():
    c = bcolz.arange(4)
    GLOBAL_OFFSET = 1  # noqa: N806 - a local shadowing the module global
    assert_array_equal(bcolz.eval("c + GLOBAL_OFFSET")[:], np.arange(4) + 1)
    assert_array_equal(bcolz.eval("c + GLOBAL_OFFSET", user_dict={"GLOBAL_OFFSET": 7})[:],
                       np.arange(4) + 7)


def _uses_global():
    c = bcolz.arange(4)
    return bcolz.eval("c + GLOBAL_OFFSET")


def test_globals_of_the_caller_are_found():
    assert_array_equal(_uses_global()[:], np.arange(4) + 100)


def test_evaluate_uses_only_the_given_variables():
    c = bcolz.arange(4)  # noqa: F841 - must not be found
    with pytest.raises(NameError, match="c"):
        evaluate("c + 1", {})
    assert_array_equal(evaluate("c + 1", {"c": np.arange(3)}, out_flavor="numpy"), [1, 2, 3])


def test_resolve_variables_skips_engine_functions():
    found = resolve_variables("sin(a) + b.real", {"a": 1, "b": 2, "sin": None}, vm="numexpr")
    assert found == {"a": 1, "b": 2}


def test_unknown_variable_is_a_name_error(vm):
    c = bcolz.arange(3)  # noqa: F841
    with pytest.raises(NameError, match="nowhere_to_be_found"):
        bcolz.eval("c + nowhere_to_be_found", vm=vm)


def test_syntax_error_is_a_query_error_naming_the_expression():
    with pytest.raises(QueryError, match=r"'a \+'"):
        bcolz.eval("a +")
    with pytest.raises(ValueError):
        bcolz.eval("a +")


def test_lists_are_rejected_with_value_error():
    with pytest.raises(ValueError, match="numpy/carray sequences"):
        bcolz.eval("a * 3", user_dict={"a": [1, 2, 3]})


def test_different_lengths_are_rejected():
    a, b = bcolz.arange(3), np.arange(4)  # noqa: F841
    with pytest.raises(QueryError, match="same length"):
        bcolz.eval("a + b")


@pytest.mark.parametrize("kwargs, message", [({"vm": "java"}, "vm"), ({"out_flavor": "csv"}, "out_flavor"),
                                             ({"blen": 0}, "blen")])
def test_bad_parameters(kwargs, message):
    c = bcolz.arange(3)  # noqa: F841
    with pytest.raises(QueryError, match=message):
        bcolz.eval("c", **kwargs)


def test_evaluation_error_is_query_error_with_expression():
    c = bcolz.arange(3)  # noqa: F841
    with pytest.raises(QueryError, match="c \\+ 'x'"):
        bcolz.eval("c + 'x'", vm="python")


def test_python_vm_has_no_builtins():
    with pytest.raises(NameError, match="__import__"):
        bcolz.eval("__import__('os')", vm="python")
    with pytest.raises(NameError, match="open"):
        bcolz.eval("open('/etc/passwd')", vm="python")


def test_python_vm_offers_numexpr_function_names():
    c = bcolz.arange(1, 200)
    assert_allclose(bcolz.eval("sin(c) + log(c)", vm="python", blen=50)[:],
                    np.sin(np.arange(1, 200)) + np.log(np.arange(1, 200)))
    assert_array_equal(bcolz.eval("where(c > 5, c, 0)", vm="python")[:],
                       np.where(np.arange(1, 200) > 5, np.arange(1, 200), 0))


def test_python_vm_uses_modules_of_the_caller():
    c = bcolz.arange(10)
    assert_allclose(bcolz.eval("np.sqrt(c)", vm="python")[:], np.sqrt(np.arange(10)))


@pytest.mark.parametrize("expression, expected", [
    ("sum(c)", np.arange(1000).sum()), ("max(c)", 999), ("min(c + 5)", 5),
    ("sum(c * 2)", np.arange(1000).sum() * 2)])
def test_top_level_reductions_combine_across_blocks(vm, expression, expected):
    if vm == "dask":
        pytest.skip("dask expressions use da.* reductions")
    c = bcolz.arange(1000, chunklen=64)
    assert bcolz.eval(expression, vm=vm, blen=100) == expected


def test_python_vm_sum_reduces_first_axis_like_builtin_sum():
    a = np.arange(12).reshape(3, 4)
    b = bcolz.carray(a)
    assert_array_equal(bcolz.eval("sum(b)", vm="python"), sum(a))


@pytest.mark.skipif(not bcolz.numexpr_here, reason="needs numexpr")
def test_numexpr_row_wise_reduction_concatenates_blocks():
    a = np.arange(400).reshape(100, 4)
    b = bcolz.carray(a, chunklen=16)
    assert_array_equal(bcolz.eval("sum(b, axis=1)", vm="numexpr", blen=16)[:], a.sum(axis=1))


def test_nested_reduction_over_several_blocks_is_refused():
    c = bcolz.arange(100)  # noqa: F841
    with pytest.raises(QueryError, match="blen"):
        bcolz.eval("sum(c) * 2", vm="python", blen=10)
    assert bcolz.eval("sum(c) * 2", vm="python") == 9900


@pytest.mark.parametrize("shape", [(3, 4), (30, 4, 5), (7, 40, 2)])
def test_multidimensional_atoms(vm, shape):
    a = np.arange(np.prod(shape)).reshape(shape)
    b = bcolz.carray(a, chunklen=2)
    assert_array_equal(bcolz.eval("b * 2. + 1", vm=vm, blen=2)[:], a * 2.0 + 1)
    assert_array_equal(bcolz.eval("b > 5", vm=vm, out_flavor="numpy"), a > 5)


def test_columnar_shape_n_by_1(vm):
    a = bcolz.ones((50, 1))
    b = bcolz.zeros(a.shape)
    assert bcolz.eval("a + b", vm=vm).sum() == 50


@pytest.mark.skipif(not bcolz.numexpr_here, reason="needs numexpr")
def test_numexpr_falls_back_to_python_for_unicode():
    s = bcolz.carray(np.array(["a", "b", "c"]))  # noqa: F841
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = bcolz.eval("s == 'b'", vm="numexpr")
    assert_array_equal(result[:], [False, True, False])
    assert any("python" in str(w.message) for w in caught)


@pytest.mark.skipif(not bcolz.numexpr_here, reason="needs numexpr")
def test_numexpr_int64_result_is_numpy_int64():
    c = bcolz.arange(5)  # noqa: F841
    result = bcolz.eval("c + c", vm="numexpr", out_flavor="numpy")
    assert result.dtype.char == np.dtype(np.int64).char


@pytest.mark.skipif(not bcolz.numexpr_here, reason="needs numexpr")
def test_uint64_is_exact_under_numexpr_default():
    u = bcolz.carray(np.array([2**63 + 5], dtype="u8"))  # noqa: F841
    assert bcolz.eval("u + 1", vm="numexpr")[0] == 2**63 + 6


def test_bytes_comparison(vm):
    s = bcolz.carray(np.array([b"abcde", b"abcdf", b"abcde"]))  # noqa: F841
    strval = b"abcdf"  # noqa: F841
    assert list(bcolz.eval("s == strval", vm=vm)) == [False, True, False]


def test_ctable_eval_sees_columns_and_caller_variables():
    t = bcolz.ctable(np.fromiter(((i, i * 2.0) for i in range(20)), dtype="i4,f8"))
    offset = 0.5
    assert_array_equal(t.eval("f0 + f1 + offset")[:], np.arange(20) * 3 + 0.5)


def test_querying_guide_examples_run():
    import doctest
    from pathlib import Path
    guide = Path(__file__).resolve().parents[1] / "docs" / "querying.md"
    result = doctest.testfile(str(guide), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 20 and result.failed == 0


@pytest.mark.skipif(not bcolz.numexpr_here, reason="needs numexpr")
@pytest.mark.parametrize("condition", [
    "(x > 0.5) & (k < 100)", "~(x <= -0.25) | (k == 7)", "(i8 >= 3) ^ (f4 != 0.5)",
    "(k < x) & (flag == True)", "(i8 < 1000) & (u1 > 200)", "x != x", "(f4 < 1e20) & (k > -3)",
    "(i8 == 2.5) | (u1 <= 255)"])
def test_plain_conditions_give_numexprs_answer(condition):
    """Comparisons joined by &, |, ^, ~ run on numpy under vm='numexpr': the
    booleans are numexpr's, whatever the operands' dtypes."""
    import numexpr
    from bcolz_store.query import eval as query_eval
    rng = np.random.default_rng(11)
    n = 20_000
    x = rng.standard_normal(n)
    x[::97] = np.nan
    data = {"x": x, "k": rng.integers(-5, 200, n), "f4": (x * 2).astype(np.float32),
            "i8": rng.integers(-128, 127, n).astype(np.int8),
            "u1": rng.integers(0, 256, n).astype(np.uint8), "flag": rng.random(n) > 0.3}
    tree = query_eval.parse_expression(condition)[1]
    assert query_eval._is_plain_condition(tree)
    columns = {name: bcolz.carray(v, chunklen=3_000) for name, v in data.items()}
    got = bcolz.eval(condition, vm="numexpr", out_flavor="numpy", user_dict=columns, blen=4_000)
    assert got.dtype == np.bool_
    assert_array_equal(got, numexpr.evaluate(condition, local_dict=data))


def test_what_is_not_a_plain_condition_stays_with_its_engine():
    from bcolz_store.query import eval as query_eval
    plain = lambda text: query_eval._is_plain_condition(  # noqa: E731
        query_eval.parse_expression(text)[1])
    for expression in ["x + 1 > 2", "(x > 1) and (y > 2)", "sin(x) > 0",
                       "x > 'a'", "x", "(x > 1) & 2", "(x > 1) & flag"]:
        assert not plain(expression), expression
    # chained comparisons and between() are rewritten into & of single comparisons
    assert plain("0 < x < 1") and plain("between(x, 0, 1)")
