"""GroupMaskTerms, on small modules (level 1)."""

import ast
import itertools
import types

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import assert_no_rewrite, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import LOAD, STORE
from ninetoothed_ascend.compiler.npu.group_mask_terms import GroupMaskTerms

_INTERLEAVED_MASK = (
    "(i < n) & (tl.arange(0, 4)[:, None] < m) & (tl.arange(0, 8)[None, :] < k)"
    " & (i >= 0) & (tl.arange(0, 4)[:, None] < m)"
    " & (i * 4 + tl.arange(0, 4)[:, None] < n) & (tl.arange(0, 8)[None, :] >= j)"
)


def test_group_mask_terms_combines_scalars_then_rows_then_columns():
    source, count = rewrite(
        GroupMaskTerms,
        f"""
        import triton.language as tl
        i = tl.program_id(0)
        x = tl.load(p, mask={_INTERLEAVED_MASK}, other=0)
        """,
    )

    assert count == 1
    assert (
        "mask=(i < n) & (i >= 0)"
        " & ((tl.arange(0, 4)[:, None] < m) & (i * 4 + tl.arange(0, 4)[:, None] < n))"
        " & ((tl.arange(0, 8)[None, :] < k) & (tl.arange(0, 8)[None, :] >= j))"
    ) in source


def test_group_mask_terms_keeps_the_mask_elementwise():
    numpy = pytest.importorskip("numpy")
    source, _ = rewrite(GroupMaskTerms, f"tl.store(p, x, mask={_INTERLEAVED_MASK})\n")
    (rewritten,) = (
        keyword.value
        for call in ast.walk(ast.parse(source))
        if isinstance(call, ast.Call)
        for keyword in call.keywords
        if keyword.arg == "mask"
    )
    tl = types.SimpleNamespace(arange=numpy.arange)

    for i, n, m, k, j in itertools.product(
        (-1, 0, 2), (0, 3, 9), (0, 2, 4), (1, 8), (0, 5)
    ):
        names = {"tl": tl, "i": i, "n": n, "m": m, "k": k, "j": j}
        expected = eval(_INTERLEAVED_MASK, names)
        actual = eval(compile(ast.Expression(rewritten), "mask", "eval"), names)

        numpy.testing.assert_array_equal(
            numpy.broadcast_to(actual, expected.shape), expected
        )


def test_group_mask_terms_puts_constant_terms_last():
    """The frontend makes ``(0 < 1)`` a Python bool, and fails on ``bool & tensor`` (silu_and_mul)."""

    source, _ = rewrite(
        GroupMaskTerms,
        "import triton.language as tl\n"
        "i = tl.program_id(0)\n"
        "tl.store(p, x, mask=(0 < 1) & (tl.arange(0, 8)[None, :] < k) & (i < n) & (tl.arange(0, 4)[:, None] < m))\n",
    )

    assert (
        "mask=(i < n) & (tl.arange(0, 8)[None, :] < k) & (tl.arange(0, 4)[:, None] < m) & (0 < 1))"
        in source
    )


def test_group_mask_terms_leaves_grouped_masks_and_other_arguments():
    assert_no_rewrite(
        GroupMaskTerms,
        """
        import triton.language as tl
        i = tl.program_id(0)
        x = tl.load(p, mask=(i < n) & (tl.arange(0, 4)[:, None] < m) & (tl.arange(0, 8)[None, :] < k), other=0)
        y = (tl.arange(0, 8)[None, :] < k) & (i < n)
        tl.store(q, y, mask=tl.arange(0, 8) < k)
        """,
    )


def test_group_mask_terms_leads_with_a_term_that_is_a_tensor_in_every_launch():
    """A term of parameters and constexprs is a bool where the launch specializes the parameter (a size of 1).

    Triton 3.2's frontend fails on ``bool & tensor``: ntops' reductions
    along a dim with a size-1 output dimension, whose first scalar term was
    ``0 < (size - (B - 1) - 1 + B - 1) // B + 1``.
    """

    source, count = rewrite(
        GroupMaskTerms,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p, n, B: tl.constexpr):
            pid = tl.program_id(0)
            i = pid // n
            tl.store(p, 0, mask=(0 < (n - (B - 1) - 1 + B - 1) // B + 1) & (tl.arange(0, B) < n) & (i < n))
        """,
    )

    assert count == 1
    assert (
        "mask=(i < n) & (0 < (n - (B - 1) - 1 + B - 1) // B + 1) & (tl.arange(0, B) < n)"
        in source
    )


def test_group_mask_terms_puts_scalars_after_the_first_row_term_where_none_is_a_tensor():
    source, count = rewrite(
        GroupMaskTerms,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p, n, m, k):
            tl.store(p, 0, mask=(n > 0) & (tl.arange(0, 4)[:, None] < m) & (tl.arange(0, 8)[None, :] < k) & (0 < k) & (tl.arange(0, 4)[:, None] >= 0))
        """,
    )

    assert count == 1
    assert (
        "mask=(tl.arange(0, 4)[:, None] < m) & (n > 0) & (0 < k)"
        " & (tl.arange(0, 4)[:, None] >= 0) & (tl.arange(0, 8)[None, :] < k)"
    ) in source


@pytest.mark.parametrize(
    ("bindings", "tensor"),
    (
        ("i = tl.program_id(0) // n", True),
        ("i = tl.load(q) + 1", True),
        ("for i in range(n):", True),
        ("for i in tl.range(0, n):", True),
        ("i = tl.program_id(0)\n    i = i * 2 + n", True),
        ("i = 0\n    for j in range(n):\n        i = i + j", False),
        ("for i in tl.static_range(2):", False),
        ("i = n - 1", False),
        ("i, j = tl.program_id(0), 0", False),
        ("i = tl.program_id(0) if n > 0 else 0", False),
        ("", False),
    ),
)
def test_group_mask_terms_reads_tensors_from_the_kernels_bindings(bindings, tensor):
    """Whether ``i`` leads the chain: only where every binding of it makes a tensor."""

    body = f"    {bindings}\n" if bindings else ""
    indent = "        " if bindings.endswith(":") else "    "
    source, _ = rewrite(
        GroupMaskTerms,
        "import triton\n"
        "import triton.language as tl\n"
        "@triton.jit\n"
        "def kernel(p, q, n):\n"
        f"{body}"
        f"{indent}tl.store(p, 0, mask=(n > 1) & (tl.arange(0, 4) < n) & (i < n))\n",
    )
    leads = "mask=(i < n) & (n > 1) & (tl.arange(0, 4) < n)"
    follows = "mask=(tl.arange(0, 4) < n) & (n > 1) & (i < n)"

    assert (leads if tensor else follows) in source


def test_group_mask_terms_never_leads_with_a_parameter():
    """An integer argument equal to 1 is a constant in the launch (Triton 3.2's JIT): ``i < n`` may be a bool."""

    source, _ = rewrite(
        GroupMaskTerms,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p, n, i):
            tl.store(p, 0, mask=(i < n) & (tl.arange(0, 4) < n))
        """,
    )

    assert "mask=(tl.arange(0, 4) < n) & (i < n)" in source


def _row_sum():
    """A sum along the last dim into a ``(rows, 1)`` output, arranged as ntops arranges reductions along a dim."""

    def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
        def arrange(tensor):
            arranged = tensor.tile((1, BLOCK_SIZE)).tile((1, -1))
            arranged.dtype = arranged.dtype.squeeze(0)
            arranged.dtype.dtype = arranged.dtype.dtype.squeeze(0)

            return arranged

        return arrange(input), arrange(output)

    def application(input, output):
        total = ntl.zeros(input.dtype.shape, ntl.float32)

        for i in range(input.shape[0]):
            total += ntl.cast(input[i], ntl.float32)

        output[0] = ntl.sum(total, 0)

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (Tensor(2, other=0), Tensor(2)),
        kernel_name="row_sum",
    )


def _launch_row_sum(kernel, input):
    output = torch.empty((input.shape[0], 1), dtype=input.dtype, device=input.device)
    kernel(input, output)

    return output


@pytest.mark.ascend
@pytest.mark.parametrize("rows", (1, 3))
def test_a_reduction_into_a_size_1_dimension_passes_the_frontend(rows):
    """Level 2: the output's size-1 dimension is a constant in the launch, and a mask term of it a bool.

    Without the tensor-first order, GroupMaskTerms put that term first and
    the frontend failed (``'bool' object has no attribute 'type'``).
    """

    from ninetoothed_ascend.check.compile_check import check_variant

    kernel = _row_sum()
    input = torch.randn((rows, 40), generator=torch.Generator().manual_seed(0))

    results = check_variant(kernel, _launch_row_sum, input)

    assert results
    assert all("func.func" in result.linalg for result in results)


def test_a_reduction_into_a_size_1_dimension_leads_its_masks_with_a_tensor():
    """Level 1 on the same kernel's NPU variant: no mask of it begins with a term of parameters and literals only."""

    kernel = _row_sum()
    tree = ast.parse(kernel.source("npu"))
    (function,) = (
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "row_sum"
    )
    parameters = {argument.arg for argument in function.args.args}
    firsts = []

    # Every access goes through AccessFloat64AsBits' helpers: the load's
    # mask is its second argument, the store's its third.
    masks = {LOAD: 1, STORE: 2}

    for call in ast.walk(function):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in masks
        ):
            term = call.args[masks[call.func.id]]

            while isinstance(term, ast.BinOp) and isinstance(term.op, ast.BitAnd):
                term = term.left

            firsts.append(term)

    assert "GroupMaskTerms" in dict(kernel.rewrites("npu"))
    assert firsts

    for term in firsts:
        names = {node.id for node in ast.walk(term) if isinstance(node, ast.Name)}

        assert names - parameters - {"triton"}, ast.unparse(term)


@pytest.mark.parametrize("rows", (1, 3))
def test_the_row_sum_runs_emulated_on_the_cpu(rows):
    """Level 4: the NPU variant of the same kernel on Triton's interpreter, against torch."""

    kernel = _row_sum()
    input = torch.randn((rows, 40), generator=torch.Generator().manual_seed(0))

    output = _launch_row_sum(kernel.emulated("cpu"), input)

    torch.testing.assert_close(output[:, 0], input.sum(1), rtol=1e-5, atol=1e-5)
