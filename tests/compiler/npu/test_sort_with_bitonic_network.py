"""SortWithBitonicNetwork: on small modules (level 1), through BiShengIR (level 3), emulated on the CPU (level 4)."""

import pytest
import torch
from helpers import launch_sort_rows, npu_without, rewrite, rows_to_sort, sort_rows

from ninetoothed_ascend.compiler.npu.sort_with_bitonic_network import (
    SORT,
    SortWithBitonicNetwork,
)


@pytest.mark.parametrize(
    ("call", "expected"),
    (
        ("tl.sort(x)", f"{SORT}(x, None, False)"),
        ("tl.sort(x, 1)", f"{SORT}(x, 1, False)"),
        ("tl.sort(x, dim=1, descending=True)", f"{SORT}(x, 1, True)"),
        ("triton.language.sort(x, None, d)", f"{SORT}(x, None, d)"),
        ("tl.sort(x, descending=d)", f"{SORT}(x, None, d)"),
    ),
)
def test_sort_with_bitonic_network_calls_the_helper(call, expected):
    source, count = rewrite(
        SortWithBitonicNetwork,
        f"import triton\nimport triton.language as tl\ny = {call}\n",
    )

    assert source.splitlines()[-1] == f"y = {expected}"
    assert count == 1
    assert "return triton.language.standard.sort(x, dim, descending)" in source


def test_sort_with_bitonic_network_leaves_other_sorts():
    source, count = rewrite(
        SortWithBitonicNetwork,
        "import triton\nimport triton.language as tl\ny = sorted(x) + x.sort()\n",
    )

    assert count == 0
    assert SORT not in source


#: The dtypes the helper sorts with triton-ascend's ``tt.sort`` (BiShengIR's
#: vsort), and those it sorts with Triton's bitonic network.
VSORT = (torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.int16)
NETWORK = (torch.int32, torch.int64)


@pytest.mark.parametrize("dtype", (*VSORT, *NETWORK))
def test_rows_sort_emulated_on_the_cpu(dtype):
    """Level 4: the NPU variant on Triton's interpreter (the network for 32- and 64-bit integers) against torch."""

    kernel = sort_rows()
    input = rows_to_sort(dtype)

    output = launch_sort_rows(kernel.emulated("cpu"), input)

    assert ("SortWithBitonicNetwork", 1) in kernel.rewrites("npu")
    torch.testing.assert_close(output, torch.sort(input, -1).values, rtol=0, atol=0)


@pytest.fixture(scope="module")
def stage():
    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import BiShengIRStage

    if bishengir.missing():
        pytest.fail(bishengir.missing())

    # Every config through BiShengIR in under 60 s (the network's launch
    # solves sync by injection: SolveSyncByInjection).
    with BiShengIRStage(timeout=60) as stage:
        yield stage


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", (*VSORT, *NETWORK))
def test_rows_sort_reaches_hivmc(dtype, stage):
    """Level 3: every dtype reaches BiShengIR's external hivmc step (ascendnpu-ir 1.2.0, Ascend910B1)."""

    from ninetoothed_ascend.check.compile_check import check_variant

    results = check_variant(
        sort_rows(), launch_sort_rows, rows_to_sort(dtype), bishengir=stage
    )

    assert results
    assert all(result.bishengir.outcome == "hivmc" for result in results), [
        result.bishengir.message for result in results
    ]


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", NETWORK)
def test_without_the_pass_vsort_refuses_wide_integers(dtype, stage, monkeypatch):
    from ninetoothed_ascend.check.compile_check import check_variant

    npu_without(monkeypatch, SortWithBitonicNetwork)

    (result,) = check_variant(
        sort_rows(), launch_sort_rows, rows_to_sort(dtype), bishengir=stage
    )

    assert result.bishengir.outcome == "error"
    assert "hivm.hir.vsort" in result.bishengir.message
