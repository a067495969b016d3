"""CompensateFloat64Cancellation: on small modules (level 1), ntops' acosh emulated on the CPU (level 4) and through BiShengIR (level 3)."""

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import npu_without, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import LOAD
from ninetoothed_ascend.compiler.npu.compensate_float64_cancellation import (
    LOAD_WITH_RESIDUAL,
    SUBTRACT,
    CompensateFloat64Cancellation,
)


def test_a_difference_of_a_loaded_name_and_a_constant_keeps_the_residual():
    source, count = rewrite(
        CompensateFloat64Cancellation,
        f"""
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p, q, dtype: tl.constexpr):
            for i in range(4):
                x = tl.cast({LOAD}(p + i, None, None), dtype)
                twice = {LOAD}(q, None, None)
                twice = {LOAD}(q + i, None, None)
                a = x - tl.cast(1.0, dtype)
                b = 2.0 - x
                c = x - twice
                d = twice - 1.0
                e = x + 1.0
        """,
    )

    assert (
        "ninetoothed_loaded_x, ninetoothed_residual_x = "
        f"{LOAD_WITH_RESIDUAL}(p + i, None, None)\n"
        "        x = tl.cast(ninetoothed_loaded_x, dtype)"
    ) in source
    assert f"a = {SUBTRACT}(ninetoothed_residual_x, x, tl.cast(1.0, dtype))" in source
    assert f"b = -{SUBTRACT}(ninetoothed_residual_x, x, 2.0)" in source
    # Not a constant; a name bound twice; not a difference.
    assert "c = x - twice" in source
    assert "d = twice - 1.0" in source
    assert "e = x + 1.0" in source
    assert source.count(f"def {SUBTRACT}(") == 1
    assert count == 2


def test_a_reassigned_name_a_parameter_and_a_taken_name_are_respected():
    source, count = rewrite(
        CompensateFloat64Cancellation,
        f"""
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p, x):
            ninetoothed_residual_z = 0
            y = {LOAD}(p, None, None)
            y = y * 2
            x = {LOAD}(p, None, None)
            z = {LOAD}(p, None, None).to(tl.float32)
            return (y - 1.0) + (x - 1.0) + (z - 1)
        """,
    )

    assert "ninetoothed_loaded_z, ninetoothed_residual_z_ = " in source
    assert (
        f"return y - 1.0 + (x - 1.0) + {SUBTRACT}(ninetoothed_residual_z_, z, 1)"
        in source
    )
    assert count == 1


def _arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def _acosh(input, output):
    # ntops' formulation: log(x + sqrt((x - 1)(x + 1))), computed in the
    # output's dtype, its constants cast to it.
    dtype = output.dtype
    x = ntl.cast(input, dtype)
    root = ntl.sqrt((x - ntl.cast(1.0, dtype)) * (x + ntl.cast(1.0, dtype)))
    output = ntl.log(x + root)  # noqa: F841


def _acosh_kernel():
    return ninetoothed_ascend.make(_arrangement, _acosh, (Tensor(1), Tensor(1)))


def _launch_acosh(kernel, input):
    output = torch.empty_like(input)
    kernel(input, output)

    return output


def _one_less(input, output):
    x = input
    output = 1.0 - x  # noqa: F841


#: Near 1, where fp32 ``1 - x`` keeps few digits or none, and away from it.
_NEAR_1 = (1 + 1e-6, 1 - 3e-7, 1 + 1e-9, 1 + 2**-30, 1 - 1e-12, 1 + 3 * 2**-25)
_AWAY = (2.5, 0.75, 1e-3, -1e5)


@pytest.mark.parametrize("with_the_pass", (True, False))
def test_a_constant_less_an_fp64_block_is_the_fp32_nearest_emulated_on_the_cpu(
    with_the_pass, monkeypatch
):
    """Level 4: ``(1 - hi) - lo`` from the block's bits rounds once, to fp32; ``1 - fp32(x)`` loses every digit at ``1 + 1e-9``."""

    if not with_the_pass:
        npu_without(monkeypatch, CompensateFloat64Cancellation)

    kernel = ninetoothed_ascend.make(_arrangement, _one_less, (Tensor(1), Tensor(1)))
    input = torch.tensor(_NEAR_1 + _AWAY, dtype=torch.float64)
    output = torch.empty_like(input)

    kernel.emulated("cpu")(input, output)

    expected = 1.0 - input
    error = ((output - expected) / expected).abs()

    if with_the_pass:
        assert ("CompensateFloat64Cancellation", 1) in kernel.rewrites("npu")
        assert (error <= 2.0**-24).all(), error
    else:
        assert error.max() == 1


#: Where fp32 ``x - 1`` cancels: ntops' boundary value, then others.
_ACOSH_VALUES = (1.000001, 1.0000001, 1.001, 1.5, 100.0, 1e10)


@pytest.mark.parametrize("with_the_pass", (True, False))
def test_acosh_near_1_in_fp64_matches_torch_emulated_on_the_cpu(
    with_the_pass, monkeypatch
):
    """Level 4: ntops' acosh test's tolerance for fp64 (``rtol=1e-5, atol=1e-6``); fp32 ``x - 1`` misses it by 33 times at 1.000001 and 41 times at 1.0000001."""

    if not with_the_pass:
        npu_without(monkeypatch, CompensateFloat64Cancellation)

    kernel = _acosh_kernel()
    input = torch.tensor(_ACOSH_VALUES, dtype=torch.float64)

    output = _launch_acosh(kernel.emulated("cpu"), input)

    assert output.dtype == torch.float64

    if with_the_pass:
        assert ("CompensateFloat64Cancellation", 1) in kernel.rewrites("npu")
        torch.testing.assert_close(output, torch.acosh(input), rtol=1e-5, atol=1e-6)
    else:
        with pytest.raises(AssertionError, match="Mismatched elements: 2 / 6"):
            torch.testing.assert_close(output, torch.acosh(input), rtol=1e-5, atol=1e-6)


def test_acosh_of_fp32_computes_as_written_emulated_on_the_cpu(monkeypatch):
    """Level 4: for fp32 tensors the subtraction is the kernel's own, bit for bit."""

    input = torch.tensor(_ACOSH_VALUES, dtype=torch.float32)
    output = _launch_acosh(_acosh_kernel().emulated("cpu"), input)
    npu_without(monkeypatch, CompensateFloat64Cancellation)

    written = _launch_acosh(_acosh_kernel().emulated("cpu"), input)

    assert torch.equal(output, written)


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", (torch.float32, torch.float64))
def test_acosh_reaches_hivmc(dtype):
    """Level 3: ascendnpu-ir 1.2.0, Ascend910B1; in fp64 it stopped at BiShengIR's fp64 conversions before AccessFloat64AsBits.

    The configs are sized for 4-byte elements (``FitUnifiedBuffer``); the
    conversions of fp64 bits take about 76 B a lane, so fp64 blocks past
    2,048 lanes overflow the UB (311,904 B at 4,096), and the launch drops
    them (``DropRefusedConfigs``).
    """

    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import BiShengIRStage, check_variant

    if bishengir.missing():
        pytest.fail(bishengir.missing())

    with BiShengIRStage(timeout=120) as stage:
        results = check_variant(
            _acosh_kernel(),
            _launch_acosh,
            torch.tensor(_ACOSH_VALUES, dtype=dtype),
            bishengir=stage,
        )

    outcomes = {
        max(result.config.values()): result.bishengir.outcome for result in results
    }
    fitting = 2048 if dtype == torch.float64 else max(outcomes)
    assert min(outcomes) <= fitting
    assert outcomes == {
        block: "hivmc" if block <= fitting else "ub_overflow" for block in outcomes
    }, [result.bishengir.message for result in results]
