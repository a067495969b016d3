"""Level 1 (AST): ContiguousFlatAccess gives flattened addresses a launch-decided affine fast path."""

import ast

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import (
    FLATTENED,
    TRANSPOSED,
    canary_payload,
    launch_flag,
    launch_keywords,
    shared_example,
)
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.contiguous_flat_access import (
    COLLAPSES,
    FLAG_PREFIX,
    ContiguousFlatAccess,
)
from ninetoothed_ascend.compiler.npu.flat_index_digits import WINDOW, scalar_accesses
from ninetoothed_ascend.compiler.passes import run_pipeline


def rewrite(source):
    return run_pipeline(source, [ContiguousFlatAccess])


def kernel_of(source):
    (kernel,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "kernel"
    ]

    return kernel


def test_the_div_mod_address_gets_an_affine_branch_and_a_launch_flag():
    rewritten = rewrite(FLATTENED)

    assert rewritten.rewrites == (("ContiguousFlatAccess", 1),)
    kernel = kernel_of(rewritten.source)
    flags = [arg.arg for arg in kernel.args.args if arg.arg.startswith(FLAG_PREFIX)]
    assert len(flags) == 1
    assert ast.unparse(kernel.args.args[-1].annotation) == "triton.language.constexpr"
    (load,) = [
        node
        for node in ast.walk(kernel)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load"
    ]
    address = load.args[0].right
    assert isinstance(address, ast.IfExp)
    assert ast.unparse(address.test) == flags[0]
    assert ast.unparse(address.body) == (
        "(i * BLOCK + tl.arange(0, BLOCK)) * x_stride_1"
    )
    assert "//" in ast.unparse(address.orelse)
    mask = load.keywords[0].value
    assert isinstance(mask, ast.IfExp)
    assert "//" not in ast.unparse(mask.body) and "%" not in ast.unparse(mask.body)
    assert ast.unparse(mask.orelse).count("//") == 1
    assert (
        f"{flags[0]}={COLLAPSES}((x.size(0), x.size(1)), (x.stride(0), x.stride(1)))"
        in rewritten.source
    )


def test_terms_that_are_not_digits_are_left_alone():
    # The divisor of the first term should be x_size_1: the terms are no
    # longer the digits of the flat index, so no layout makes them affine.
    wrong = FLATTENED.replace("// x_size_1 * x_stride_0", "// x_size_0 * x_stride_0")

    assert rewrite(wrong).rewrites == ()


def test_a_gather_through_an_index_tensor_is_left_alone_and_reported():
    source = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, x_size_1, x_stride_0, x_stride_1, index_pointer, y_pointer, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    rows = tl.load(index_pointer + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(y_pointer + i * BLOCK + tl.arange(0, BLOCK), tl.load(x_pointer + rows // x_size_1 * x_stride_0 + rows % x_size_1 * x_stride_1))

def launch_kernel(x, index, y):
    kernel[(1,)](x, x.size(1), x.stride(0), x.stride(1), index, y)
"""

    assert rewrite(source).rewrites == ()
    assert scalar_accesses(source) == [
        ("kernel", "load", "address read from a loaded tensor (an index)")
    ]
    assert scalar_accesses(FLATTENED) == []


def test_collapses_accepts_exactly_the_layouts_with_one_stride():
    (definition,) = [
        node
        for node in ast.parse(rewrite(FLATTENED).source).body
        if isinstance(node, ast.FunctionDef) and node.name == COLLAPSES
    ]
    namespace = {}
    exec(ast.unparse(definition), namespace)
    collapses = namespace[COLLAPSES]

    def of(tensor):
        return collapses(tensor.shape, tensor.stride())

    base = torch.empty(3, 4, 10)
    assert of(base)
    assert of(base[..., ::2])
    assert of(base[:1].expand(1, 4, 10))
    assert of(torch.empty(3, 1, 5).as_strided((3, 1, 5), (5, 77, 1)))
    assert not of(base.transpose(0, 1))
    assert not of(base[..., :7])
    assert not of(base[:1].expand(3, 4, 10))


def test_fires_on_the_flattened_examples_and_not_on_the_row_examples():
    assert dict(
        rewrite(shared_example("flat_sigmoid").kernel.source("cuda")).rewrites
    ) == {"ContiguousFlatAccess": 2}
    assert rewrite(shared_example("add").kernel.source("cuda")).rewrites == ()


#: A pooling store, as NineToothed writes ``output.tile((1, 1)).ravel().flatten().tile((B, -1))``:
#: divisors ``s - 1 + 1``, and each digit plus the index of a size-1 tile level (``j = i % 1``).
POOLED = """
import triton
import triton.language as tl

@triton.jit
def kernel(y_pointer, y_size_0, y_size_1, y_stride_0, y_stride_1, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    j = i % 1
    tl.store(y_pointer + (((i * BLOCK + tl.arange(0, BLOCK)) // (y_size_1 - 1 + 1) + j) * y_stride_0 + ((i * BLOCK + tl.arange(0, BLOCK)) % (y_size_1 - 1 + 1) + j % 1) * y_stride_1), 0.0, mask=(i >= 0) & (i * BLOCK + tl.arange(0, BLOCK) < (y_size_0 - 1 + 1) * (y_size_1 - 1 + 1)) & ((i * BLOCK + tl.arange(0, BLOCK)) // (y_size_1 - 1 + 1) < y_size_0 - 1 + 1) & ((i * BLOCK + tl.arange(0, BLOCK)) // (y_size_1 - 1 + 1) + j < y_size_0) & ((i * BLOCK + tl.arange(0, BLOCK)) % (y_size_1 - 1 + 1) + j % 1 >= 0))

def launch_kernel(y):
    kernel[(1,)](y, y.size(0), y.size(1), y.stride(0), y.stride(1))
"""


def _store(source):
    (store,) = [
        node
        for node in ast.walk(kernel_of(source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.store"
    ]

    return store


def test_digits_plus_a_per_program_offset_and_size_expressions_get_the_fast_path():
    rewritten = rewrite(POOLED)

    assert rewritten.rewrites == (("ContiguousFlatAccess", 1),)
    store = _store(rewritten.source)
    # ``j`` is ``i % 1``: 0 for every program, so the fast path leaves it out.
    assert ast.unparse(store.args[0].right.body) == (
        "(i * BLOCK + tl.arange(0, BLOCK)) * y_stride_1"
    )
    mask = store.keywords[0].value
    assert ast.unparse(mask.body) == (
        "(i >= 0) & (i * BLOCK + tl.arange(0, BLOCK) < (y_size_0 - 1 + 1) * (y_size_1 - 1 + 1))"
    )


def test_an_offset_that_is_not_zero_stays_in_the_fast_path_and_its_bounds_in_the_mask():
    source = POOLED.replace("j = i % 1", "j = i % 2")
    store = _store(rewrite(source).source)

    # ``j % 1`` is still 0.
    assert ast.unparse(store.args[0].right.body) == (
        "(i * BLOCK + tl.arange(0, BLOCK)) * y_stride_1 + j * y_stride_0"
    )
    fast_mask = ast.unparse(store.keywords[0].value.body)
    assert "+ j < y_size_0" in fast_mask
    assert "< y_size_0 - 1 + 1)" not in fast_mask


def test_a_digit_bound_by_something_other_than_its_size_is_kept():
    source = POOLED.replace(
        "(y_size_1 - 1 + 1) < y_size_0 - 1 + 1)", "(y_size_1 - 1 + 1) < y_size_0 - 1)"
    )

    assert "< y_size_0 - 1)" in ast.unparse(
        _store(rewrite(source).source).keywords[0].value.body
    )


def test_pooling_stores_get_the_fast_path_and_their_windows_are_reported():
    for name in ("max_pool2d", "avg_pool2d", "max_pool2d_fixed"):
        source = shared_example(name).kernel.source("cuda")

        assert rewrite(source).rewrites == (("ContiguousFlatAccess", 1),), name
        assert scalar_accesses(source) == [(name, "load", WINDOW)], name

    conv2d = shared_example("conv2d").kernel.source("cuda")
    assert scalar_accesses(conv2d) == [("conv2d", "load", WINDOW)]


def _launch_flags(source, kernel="kernel"):
    return {
        name: expression
        for name, expression in launch_keywords(source, kernel).items()
        if name.startswith(FLAG_PREFIX)
    }


def test_a_store_takes_the_fast_path_only_with_a_unit_stride_on_its_innermost_axis():
    rewritten = rewrite(TRANSPOSED)

    assert rewritten.rewrites == (("ContiguousFlatAccess", 2),)
    load_flag, store_flag = _launch_flags(rewritten.source).values()
    # The load's columns may step by any stride (a transposed DMA BiShengIR
    # plans well: flat_sum_dim with dim=0); the store's must step by 1.
    assert load_flag == (
        f"{COLLAPSES}((x.size(0), x.size(2)), (x.stride(0), x.stride(2)))"
    )
    assert store_flag == (
        f"{COLLAPSES}((y.size(0), y.size(2)), (y.stride(0), y.stride(2)))"
        " and y.stride(1) == 1"
    )


def test_a_flattened_store_along_the_innermost_axis_asks_for_its_last_stride_to_be_1():
    flags = _launch_flags(rewrite(POOLED).source)

    assert list(flags.values()) == [
        f"{COLLAPSES}((y.size(0), y.size(1)), (y.stride(0), y.stride(1)))"
        " and y.stride(1) == 1"
    ]


def test_conv2d_with_an_nchw_output_stores_through_the_gather_and_channels_last_through_the_dma():
    source = shared_example("conv2d").kernel.source("npu")
    (store_flag,) = [
        flag for flag in _launch_flags(source, "conv2d").values() if "== 1" in flag
    ]
    taken = launch_flag(source, store_flag)
    nchw = torch.empty(1, 33, 8, 9)

    assert taken(nchw) is False
    assert taken(nchw.to(memory_format=torch.channels_last)) is True


def test_a_mask_comparator_is_evaluated_never_executed(tmp_path):
    canary = tmp_path / "canary"
    payload = canary_payload(canary)
    crafted = FLATTENED.replace(
        "< x_size_0 * x_size_1)", f"< x_size_0 * x_size_1 + {payload} * 0)"
    )

    assert payload in crafted
    rewritten = rewrite(crafted)

    assert not canary.exists()
    # The comparator is no size expression: the flat bound is not proven, so
    # the digit bounds stay in the mask (the address still gets its fast path).
    (load,) = [
        node
        for node in ast.walk(kernel_of(rewritten.source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load"
    ]
    assert not isinstance(load.keywords[0].value, ast.IfExp)


def test_size_expressions_are_evaluated_with_their_operators_only():
    # The operators NineToothed writes in sizes and digits still prove the
    # bounds: the crafted test above differs only in its comparator.
    rewritten = rewrite(
        FLATTENED.replace("x_size_0 * x_size_1)", "(x_size_0 - 1 + 1) * x_size_1)")
    )
    (load,) = [
        node
        for node in ast.walk(kernel_of(rewritten.source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load"
    ]

    assert isinstance(load.keywords[0].value, ast.IfExp)


def _max_of_all_elements():
    """The max of every element of a 2-D tensor of constexpr shape, flattened into blocks, as ntops' ``max`` without ``dim`` arranges it."""

    def arrangement(input, output, block_size=ninetoothed.block_size()):
        return input.flatten().tile((block_size,)), output.tile((1,))

    def application(input, output):
        output[0] = ntl.max(input, 0)

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (
            Tensor(2, other=float("-inf"), shape_options={"constexpr": True}),
            Tensor(1),
        ),
        kernel_name="max_of_all",
    )


def _launch_max_of_all(kernel, input):
    output = torch.full((1,), float("-inf"))
    kernel(input, output)

    return output


def test_a_constexpr_shape_the_launch_binds_to_a_name_gets_the_fast_path():
    """The launch passes a constexpr size through a name (``S = T.size(1)``): the flag still names ``T.size(1)``, and the NPU variant, emulated on the CPU (level 4), matches torch."""

    handle = _max_of_all_elements()
    input = torch.randn(3, 5)

    assert f"{FLAG_PREFIX}0" in handle.source("npu")
    # One program: its block covers every element.
    assert torch.equal(
        _launch_max_of_all(handle.emulated("cpu"), input), input.max().reshape(1)
    )


@pytest.mark.ascend
def test_a_constexpr_shape_the_launch_binds_to_a_name_compiles_to_a_dma():
    """Level 2: a contiguous launch has no scalar access (before, its load was one)."""

    from ninetoothed_ascend.check.compile_check import check_variant

    results = check_variant(
        _max_of_all_elements(), _launch_max_of_all, torch.randn(3, 5)
    )

    assert results
    assert all("DiscreteMemAccess" not in result.linalg for result in results)
