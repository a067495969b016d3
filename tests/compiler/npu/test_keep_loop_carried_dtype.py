"""KeepLoopCarriedDtype: on small modules (level 1), through the compile check (level 2), emulated on the CPU (level 4)."""

import textwrap

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import assert_no_rewrite, npu_without, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.keep_loop_carried_dtype import (
    KEEP,
    KeepLoopCarriedDtype,
)


def _kernel(body):
    lines = textwrap.indent(textwrap.dedent(body).strip(), "    ")

    return (
        "import triton\n"
        "import triton.language as tl\n"
        "@triton.jit\n"
        "def kernel(p, n, B: tl.constexpr):\n"
        "    x = tl.load(p + tl.arange(0, B))\n"
        f"{lines}\n"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    (
        (
            """
            d = tl.cast(0, p.dtype.element_ty)
            for i in range(n):
                d = d * 2 + tl.sum(x)
            """,
            f"d = {KEEP}(d * 2 + tl.sum(x), d)",
        ),
        (
            """
            m = tl.load(p)
            for i in range(n):
                m = tl.maximum(m, tl.max(x))
            """,
            f"m = {KEEP}(tl.maximum(m, tl.max(x)), m)",
        ),
        (
            """
            d = tl.load(p)
            for i in range(n):
                d += tl.sum(x)
            """,
            f"d = {KEEP}(d + tl.sum(x), d)",
        ),
        (
            """
            d = tl.load(p)
            while n > 0:
                s = tl.sum(x)
                e = tl.exp(s)
                d = d + e
            """,
            f"d = {KEEP}(d + e, d)",
        ),
        (
            """
            d = tl.load(p)
            for i in range(n):
                for j in range(n):
                    d = d + tl.sum(x)
            """,
            f"d = {KEEP}(d + tl.sum(x), d)",
        ),
        (
            """
            d = tl.load(p)
            s = tl.sum(x)
            for i in range(n):
                d = d + s
            """,
            f"d = {KEEP}(d + s, d)",
        ),
    ),
)
def test_keep_loop_carried_dtype_wraps_a_carried_variable_that_may_widen(
    body, expected
):
    source, count = rewrite(KeepLoopCarriedDtype, _kernel(body))

    assert count == 1
    assert expected in source
    assert f"def {KEEP}(value, carried):" in source


@pytest.mark.parametrize(
    "body",
    (
        # Not loop-carried: bound first in the loop.
        """
        for i in range(n):
            d = tl.sum(x)
        """,
        # Cast back to a dtype before it is carried.
        """
        d = tl.load(p)
        for i in range(n):
            d = tl.cast(tl.maximum(d, tl.max(x)), p.dtype.element_ty)
        """,
        """
        d = tl.load(p)
        for i in range(n):
            m = (d + tl.sum(x)).to(tl.float16)
            d = m
        """,
        # The carried dtype is fixed, and not bf16.
        """
        d = tl.zeros((B,), tl.float32)
        for i in range(n):
            d = d + tl.sum(x)
        """,
        """
        d = tl.full((B,), 0, dtype=tl.float16)
        for i in range(n):
            d = tl.maximum(d, x)
        """,
        """
        d = tl.load(p).to(tl.float32)
        for i in range(n):
            d = d + tl.sum(x)
        """,
        # No promoting function reaches the value.
        """
        d = tl.load(p)
        for i in range(n):
            d = d * 2 + tl.exp(x)
        """,
        # Outside any loop.
        """
        d = tl.load(p)
        d = d + tl.sum(x)
        """,
    ),
)
def test_keep_loop_carried_dtype_leaves_what_cannot_widen(body):
    assert KEEP not in assert_no_rewrite(KeepLoopCarriedDtype, _kernel(body))


def test_keep_loop_carried_dtype_reads_the_binding_at_the_loops_entry():
    """A name whose dtype is fixed, then rebound to a value of unknown dtype before the loop, may be bf16 again."""

    source, count = rewrite(
        KeepLoopCarriedDtype,
        _kernel(
            """
            d = tl.zeros((B,), tl.float32)
            d = tl.load(p)
            for i in range(n):
                d = d + tl.sum(x)
            """
        ),
    )

    assert count == 1
    assert f"d = {KEEP}(d + tl.sum(x), d)" in source


def _softmax_denominator():
    """The denominator of ntops' softmax: a bf16 (the output's dtype) running sum of ``exp``, over blocks of a row."""

    def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
        input_arranged = input.tile((1, BLOCK_SIZE)).tile((1, -1))
        input_arranged.dtype = input_arranged.dtype.squeeze(0)
        input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(0)
        output_arranged = output.tile((1, 1))
        output_arranged.dtype = output_arranged.dtype.squeeze(0)

        return input_arranged, output_arranged

    def application(input, output):
        dtype = output.dtype
        denominator = ntl.cast(0, dtype)

        for i in range(input.shape[0]):
            exponential = ntl.cast(ntl.exp(ntl.cast(input[i], ntl.float32)), dtype)
            denominator = denominator * 1 + ntl.sum(exponential)

        output = denominator  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (Tensor(2, other=float("-inf")), Tensor(2)),
        kernel_name="softmax_denominator",
    )


def _launch(kernel, input):
    output = torch.empty((input.shape[0], 1), dtype=input.dtype)
    kernel(input, output)

    return output


def _input(dtype):
    generator = torch.Generator().manual_seed(0)

    return torch.randn((3, 300), generator=generator).to(dtype)


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16, torch.float32))
def test_the_softmax_denominator_runs_emulated_on_the_cpu(dtype):
    """Level 4: the NPU variant on Triton's interpreter against torch."""

    kernel = _softmax_denominator()
    input = _input(dtype)

    output = _launch(kernel.emulated("cpu"), input)

    assert ("KeepLoopCarriedDtype", 1) in kernel.rewrites("npu")
    torch.testing.assert_close(
        output[:, 0].float(), input.float().exp().sum(1), rtol=2e-2, atol=0
    )


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16, torch.float32))
def test_the_softmax_denominator_passes_the_frontend(dtype):
    """Level 2; in bf16, without the pass, the frontend refuses the loop."""

    from ninetoothed_ascend.check.compile_check import check_variant

    results = check_variant(_softmax_denominator(), _launch, _input(dtype))

    assert results
    assert all("func.func" in result.linalg for result in results)


@pytest.mark.ascend
def test_without_the_pass_the_frontend_refuses_the_bfloat16_loop(monkeypatch):
    from ninetoothed_ascend.check.compile_check import StageError, check_variant

    npu_without(monkeypatch, KeepLoopCarriedDtype)

    with pytest.raises(StageError, match="Loop-carried variable denominator"):
        check_variant(_softmax_denominator(), _launch, _input(torch.bfloat16))
