"""LowerIntegerPower: on small modules (level 1), through the compile check (level 2), emulated on the CPU (level 4)."""

import ninetoothed
import pytest
import torch
from helpers import assert_no_rewrite, npu_without, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.lower_integer_power import POWER, LowerIntegerPower


def _kernel(body):
    return (
        "import triton\n"
        "import triton.language as tl\n"
        "@triton.jit\n"
        "def kernel(p, n, B: tl.constexpr):\n"
        "    x = tl.load(p + tl.arange(0, B))\n"
        f"    {body}\n"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    (
        ("tl.store(p, x ** 3)", f"tl.store(p, {POWER}(x, 3))"),
        ("tl.store(p, 0.5 * x ** 2 + 1)", f"tl.store(p, 0.5 * {POWER}(x, 2) + 1)"),
        (
            "tl.store(p, tl.load(p) ** 4)",
            f"tl.store(p, {POWER}(tl.load(p), 4))",
        ),
        ("y = (x + 1) ** 1", f"y = {POWER}(x + 1, 1)"),
        ("y = (x ** 2) ** 3", f"y = {POWER}({POWER}(x, 2), 3)"),
    ),
)
def test_lower_integer_power_rewrites_a_tensor_to_a_positive_integer_literal(
    body, expected
):
    source, count = rewrite(LowerIntegerPower, _kernel(body))

    assert source.splitlines()[-1].strip() == expected
    assert count == expected.count(POWER)
    assert f"def {POWER}(x, n: triton.language.constexpr):" in source


@pytest.mark.parametrize(
    "body",
    (
        "y = B ** 2",  # a constexpr: the frontend folds it
        "y = 2 ** B",
        "y = n ** 2",  # a parameter: a constant in some launches
        "y = x ** 0",
        "y = x ** -1",
        "y = x ** 2.0",
        "y = x ** n",
        "y = x ** True",
    ),
)
def test_lower_integer_power_leaves_other_powers(body):
    source = assert_no_rewrite(LowerIntegerPower, _kernel(body))

    assert POWER not in source


def test_lower_integer_power_leaves_functions_that_are_not_kernels():
    assert_no_rewrite(
        LowerIntegerPower,
        """
        import triton.language as tl
        def host(x):
            return tl.load(x) ** 3
        """,
    )


def _cube():
    """``output = 0.5 * input**3``, written as ntops writes GELU's cube."""

    def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
        return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))

    def application(input, output):
        input_loaded = input
        output = 0.5 * input_loaded**3  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement, application, (Tensor(1), Tensor(1)), kernel_name="half_cube"
    )


def _launch_cube(kernel, input):
    output = torch.empty_like(input)
    kernel(input, output)

    return output


def _input(dtype):
    generator = torch.Generator().manual_seed(0)

    return (torch.randn(1000, generator=generator) * 3).to(dtype)


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32))
def test_a_cube_runs_emulated_on_the_cpu(dtype):
    """Level 4: the NPU variant on Triton's interpreter, negative inputs included (no log/exp form)."""

    kernel = _cube()
    input = _input(dtype)

    output = _launch_cube(kernel.emulated("cpu"), input)

    assert ("LowerIntegerPower", 1) in kernel.rewrites("npu")
    torch.testing.assert_close(
        output.float(), 0.5 * input.float() ** 3, **_TOLERANCES[dtype]
    )


_TOLERANCES = {
    torch.float16: {"rtol": 2e-3, "atol": 1e-3},
    torch.bfloat16: {"rtol": 2e-2, "atol": 1e-2},
    torch.float32: {"rtol": 1e-6, "atol": 1e-6},
}


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32))
def test_a_cube_passes_the_frontend(dtype):
    """Level 2; without the pass the frontend fails ("'tensor' object has no attribute '__pow__'")."""

    from ninetoothed_ascend.check.compile_check import check_variant

    results = check_variant(_cube(), _launch_cube, _input(dtype))

    assert results
    assert all("func.func" in result.linalg for result in results)


@pytest.mark.ascend
def test_without_the_pass_the_frontend_fails(monkeypatch):
    from ninetoothed_ascend.check.compile_check import StageError, check_variant

    npu_without(monkeypatch, LowerIntegerPower)

    with pytest.raises(StageError, match="__pow__"):
        check_variant(_cube(), _launch_cube, _input(torch.float32))
