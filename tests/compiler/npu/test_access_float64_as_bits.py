"""AccessFloat64AsBits: on small modules (level 1), emulated on the CPU against torch (level 4), through BiShengIR (level 3)."""

import importlib.util
import math
import re

import ninetoothed
import pytest
import torch
from helpers import load_example, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import (
    LOAD,
    STORE,
    AccessFloat64AsBits,
)
from ninetoothed_ascend.compiler.npu.lower_float64 import DEMOTE, LowerFloat64
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU

KERNEL = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, y_pointer, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = LOAD
    tl.store(y_pointer + offsets, x * 2, mask=mask)
"""


def _lowered(load):
    # LowerFloat64 first, as the pipeline runs it: each load in its wrapper.
    return rewrite(
        LowerFloat64, KERNEL.replace("LOAD", load), then=(AccessFloat64AsBits,)
    )[0]


@pytest.mark.parametrize(
    ("load", "call"),
    (
        (
            "tl.load(x_pointer + offsets, mask=mask, other=float('-inf'))",
            f"{LOAD}(x_pointer + offsets, mask, float('-inf'))",
        ),
        (
            "tl.load(x_pointer + offsets, mask)",
            f"{LOAD}(x_pointer + offsets, mask, None)",
        ),
        ("tl.load(x_pointer + offsets)", f"{LOAD}(x_pointer + offsets, None, None)"),
        (
            "tl.load(pointer=x_pointer + offsets, other=0, mask=mask)",
            f"{LOAD}(x_pointer + offsets, mask, 0)",
        ),
    ),
)
def test_a_wrapped_load_becomes_a_load_of_fp64_bits(load, call):
    source = _lowered(load)

    assert f"x = {call}" in source
    assert f"{STORE}(y_pointer + offsets, x * 2, mask)" in source
    # The wrapper went with its load.
    assert DEMOTE not in source
    assert f"def {LOAD}(pointer, mask, other):" in source
    assert f"def {STORE}(pointer, value, mask):" in source


def test_a_load_no_pass_wrapped_and_a_store_without_mask_are_rewritten_too():
    source, count = rewrite(
        AccessFloat64AsBits,
        f"""
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p, q, m):
            tl.store(q, tl.trans(tl.load(p, mask=m, other=0)))
            # A later pass moved the wrapped load into a call of its own.
            tl.store(q + 1, {DEMOTE}(tl.trans(tl.load(p + 1, mask=m, other=0))))
        """,
    )

    assert f"{STORE}(q, tl.trans({LOAD}(p, m, 0)), None)" in source
    assert f"{STORE}(q + 1, tl.trans({LOAD}(p + 1, m, 0)), None)" in source
    assert count == 4


def test_loads_with_other_arguments_keep_their_wrapper():
    source = _lowered(
        "tl.load(x_pointer + offsets, mask=mask, other=0, eviction_policy='evict_last')"
    )

    assert (
        f"x = {DEMOTE}(tl.load(x_pointer + offsets, mask=mask, other=0, "
        "eviction_policy='evict_last'))"
    ) in source
    assert f"def {DEMOTE}(x):" in source


def test_loads_and_stores_outside_kernels_are_left_as_written():
    source, count = rewrite(
        AccessFloat64AsBits,
        """
        import triton.language as tl
        def host(p, m):
            tl.store(p, tl.load(p, mask=m, other=0))
        """,
    )

    assert count == 0
    assert LOAD not in source


def _arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def _copy(input, output):
    output = input  # noqa: F841


#: fp64 values whose fp32 is each case of the conversion: zeros, fp32
#: subnormals (rounded, and to 0), overflow, infinities, NaN, ties to even
#: (down and up), a value just past a tie, fp32's largest and its overflow
#: by rounding, fp64 subnormals.
SPECIAL = (
    0.0,
    -0.0,
    1e-40,
    -1e-40,
    2.0**-149,
    2.0**-150,
    3 * 2.0**-151,
    2.0**-126 * (1 - 2.0**-30),
    1e39,
    -1e39,
    math.inf,
    -math.inf,
    math.nan,
    1 + 2.0**-24,
    1 + 3 * 2.0**-24,
    1 + 2.0**-24 + 2.0**-52,
    3.4028234663852886e38,
    3.4028235677973366e38,
    5e-324,
    -1e-300,
    math.pi,
)


def _values(dtype):
    generator = torch.Generator().manual_seed(0)
    bits = torch.randint(-(2**62), 2**62, (2000,), generator=generator)
    random = (
        bits.view(torch.float64)
        if dtype == torch.float64
        else bits.to(torch.int32).view(torch.float32)
    )

    return torch.cat(
        [
            torch.tensor(SPECIAL, dtype=torch.float64).to(dtype),
            torch.randn(1000, generator=generator, dtype=dtype) * 1e3,
            random,
        ]
    )


@pytest.mark.parametrize(
    ("source", "destination"),
    (
        (torch.float64, torch.float32),
        (torch.float32, torch.float64),
        (torch.float64, torch.float64),
    ),
)
def test_fp64_tensors_convert_as_torch_converts_emulated_on_the_cpu(
    source, destination
):
    """Level 4: the NPU variant, its fp64 loads and stores through int64 bits, on Triton's interpreter; every value's bits are torch's through fp32 (any NaN for a NaN)."""

    kernel = ninetoothed_ascend.make(_arrangement, _copy, (Tensor(1), Tensor(1)))
    input = _values(source)
    output = torch.empty(input.shape, dtype=destination)

    kernel.emulated("cpu")(input, output)

    assert ("AccessFloat64AsBits", 2) in kernel.rewrites("npu")
    # Computed on in fp32 (LowerFloat64), whatever the tensors hold.
    expected = input.to(torch.float32).to(destination)
    integer = torch.int64 if destination == torch.float64 else torch.int32
    same = (output.view(integer) == expected.view(integer)) | (
        output.isnan() & expected.isnan()
    )
    assert same.all(), [
        (value, got)
        for value, got, ok in zip(input.tolist(), output.tolist(), same.tolist())
        if not ok
    ][:10]


def test_an_fp64_softmax_fills_masked_lanes_with_its_other_emulated_on_the_cpu():
    """Level 4: rows of 781 in blocks of 1,024, filled with ``-inf``: 0 there would add 243 ``exp(-max)`` to each sum."""

    example = load_example("softmax")
    (input,) = example.inputs("cpu", torch.float64)

    output = example.launch(example.kernel.emulated("cpu"), input)

    assert f"{LOAD}(" in example.kernel.source("npu")
    assert output.dtype == torch.float64
    torch.testing.assert_close(
        output, torch.softmax(input, dim=-1), rtol=1e-5, atol=1e-7
    )


#: A kernel reading and writing its tensors without masks (no fill value).
UNMASKED = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, y_pointer):
    offsets = tl.arange(0, 1024)
    x = tl.load(x_pointer + offsets)
    tl.store(y_pointer + offsets, tl.exp(x - tl.max(x, 0)))
"""


@pytest.mark.ascend
@pytest.mark.parametrize("with_the_pass", (True, False))
def test_an_fp64_kernel_reaches_hivmc_only_through_bits(with_the_pass, tmp_path):
    """Level 3: ascendnpu-ir 1.2.0, Ascend910B1; without the pass BiShengIR refuses the fp64 to fp32 conversion."""

    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import compile_stages

    if bishengir.missing():
        pytest.fail(bishengir.missing())

    pipeline = (
        NPU
        if with_the_pass
        else tuple(step for step in NPU if step is not AccessFloat64AsBits)
    )
    path = tmp_path / "kernel.py"
    path.write_text(run_pipeline(UNMASKED, pipeline).source)
    spec = importlib.util.spec_from_file_location("kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    linalg, _ = compile_stages(
        module.kernel, {"x_pointer": "*fp64", "y_pointer": "*fp64"}, {}
    )

    result = bishengir.compile_linalg(linalg, timeout=120)

    conversions = [
        line for line in linalg.splitlines() if "arith." in line and "f64" in line
    ]

    if with_the_pass:
        # fp64 is left only in the kernel's memory references.
        assert not conversions
        assert result.outcome == "hivmc", result.message
    else:
        assert conversions
        assert result.outcome == "error"
        assert re.search(
            r"unsupported datatype for arith::(TruncF|ExtF)Op", result.message
        ), result.message


@pytest.mark.ascend
def test_an_fp64_softmax_reaches_hivmc():
    """Level 3: every config the launch tries (ascendnpu-ir 1.2.0, Ascend910B1); before the pass, BiShengIR refused its conversions."""

    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import BiShengIRStage, check_variant

    if bishengir.missing():
        pytest.fail(bishengir.missing())

    example = load_example("softmax")

    with BiShengIRStage(timeout=120) as stage:
        results = check_variant(
            example.kernel,
            example.launch,
            *example.inputs("cpu", torch.float64),
            bishengir=stage,
        )

    assert results
    assert all(result.bishengir.outcome == "hivmc" for result in results), [
        result.bishengir.message for result in results
    ]
