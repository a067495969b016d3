"""Level 2, the Ascend compile check: NPU variants through triton-ascend's ttir and ttadapter stages.

Runs in the triton-ascend environment of .ci/run; no NPU is involved.
"""

import pathlib
import re

import pytest
import torch
from helpers import (
    assert_adapter_crashes_then_cured,
    example_cases,
    load_example,
    npu_without,
    shared_example,
)

from ninetoothed_ascend import examples
from ninetoothed_ascend.check.compile_check import (
    StageError,
    check_variant,
    compile_stages,
    launch_arguments,
)
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.npu.fold_true_mask import FoldTrueMask
from ninetoothed_ascend.compiler.npu.group_mask_terms import GroupMaskTerms
from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    ScalarizeTileLowerBounds,
)
from ninetoothed_ascend.compiler.passes import run_pipeline

pytestmark = pytest.mark.ascend


@pytest.mark.parametrize(
    ("name", "dtype", "case"),
    example_cases(
        "compile_check", dtypes=(torch.float16, torch.float32), all_cases=False
    ),
)
def test_npu_variant_passes_ttir_and_ttadapter_for_every_config(
    name, dtype, case, run_cache
):
    module = shared_example(name)
    inputs = module.inputs("cpu", dtype, **case)

    results = check_variant(module.kernel, module.launch, *inputs, cache=run_cache)

    assert results
    assert all("func.func" in result.linalg for result in results)


def test_without_fold_true_mask_the_frontend_fails(monkeypatch):
    """Why FoldTrueMask exists: NineToothed's masks fail triton-ascend's frontend.

    GroupMaskTerms, which puts constant terms last, would hide it too, so both
    are left out.
    """

    npu_without(monkeypatch, FoldTrueMask, GroupMaskTerms)
    module = load_example("add")

    with pytest.raises(
        StageError, match=r"(?s)\[ttir\].*'bool' object has no attribute 'type'"
    ):
        check_variant(module.kernel, module.launch, *module.inputs("cpu"))


def test_cuda_variant_cannot_even_be_imported_without_an_npu_driver():
    """Why DeferAutotune exists: Triton 3.2 creates the autotuner's benchmarker at import."""

    module = load_example("add")

    with pytest.raises(RuntimeError, match="active drivers"):
        module.kernel.module("cuda")

    assert module.kernel.module("npu")


@pytest.mark.parametrize("pointer", ["*fp16", "*fp32"])
def test_adapter_lower_bound_crash_and_its_cure(pointer, tmp_path):
    """The reproducer behind ScalarizeTileLowerBounds: the original crashes triton-adapter-opt, the pass's rewrite does not.

    The crash is heap corruption, so it is not certain on every run; three tries are allowed.
    """

    from reproducers import adapter_lower_bound_crash as reproducer

    rewritten = run_pipeline(
        pathlib.Path(reproducer.__file__).read_text(),
        (ScalarizeTileLowerBounds,),
    )
    assert rewritten.rewrites == (("ScalarizeTileLowerBounds", 4),)
    assert_adapter_crashes_then_cured(
        reproducer.repro,
        rewritten.source,
        {"x_ptr": pointer, "N": "i32"},
        {"B": 32},
        tmp_path,
    )


#: Keyword arguments to each flattened example's ``inputs`` beside the layout.
FLATTENED = {
    "flat_cast": {"shape": (2, 3, 4, 5)},
    "flat_lt": {"shape": (2, 3, 4, 5)},
    "flat_mul": {"shape": (2, 3, 4, 5), "other_shape": (2, 3, 4, 5)},
    "flat_sigmoid": {"shape": (2, 3, 4, 5)},
    # Rows of the last dim: contiguous rows when the tensor is.
    "flat_sum_dim": {"shape": (2, 3, 4, 5), "dim": -1},
}


@pytest.mark.parametrize("name", sorted(FLATTENED))
def test_flattened_contiguous_launches_have_no_scalar_accesses(name):
    """ContiguousFlatAccess: a contiguous launch compiles every access to one DMA per tile; a transposed one keeps the gather."""

    module = shared_example(name)
    contiguous = module.inputs("cpu", torch.float16, **FLATTENED[name])
    transposed = module.inputs(
        "cpu", torch.float16, **FLATTENED[name], layout="transposed"
    )

    for result in check_variant(module.kernel, module.launch, *contiguous):
        assert result.linalg.count("DiscreteMemAccess") == 0, result.config

    (first, *_) = check_variant(module.kernel, module.launch, *transposed)
    assert first.linalg.count("DiscreteMemAccess") > 0


@pytest.mark.parametrize("name", ["avg_pool2d", "max_pool2d", "max_pool2d_fixed"])
def test_pooling_contiguous_launches_keep_only_the_window_gather(name):
    """ContiguousFlatAccess on a pooling store: one DMA per tile; the window load stays a scalar loop (flat_access.WINDOW)."""

    module = shared_example(name)

    for result in check_variant(
        module.kernel, module.launch, *module.inputs("cpu", torch.float16)
    ):
        # One scalar loop, the load's: it yields the gathered tile, and reads
        # each lane's address and mask (ConfineMaskedLanes: ``offset *
        # mask``), two marked operations; a scalar store would add a loop.
        assert result.linalg.count("scf.yield {DiscreteMemAccess}") == 1, result.config
        assert result.linalg.count("DiscreteMemAccess") == 2, result.config


@pytest.mark.parametrize("batch", [1, 2])
def test_conv2d_nchw_output_is_stored_with_dmas(batch):
    """TransposeStridedTiles on conv2d's store: an NCHW launch keeps only the window gather's scalar loop (a scalar store adds one, docs/benchmarks.md); batch 1 stores one DMA, batch 2 one per image a tile reaches."""

    module = shared_example("conv2d")
    (case,) = [case for case in examples.cases(module) if case.get("batch") == batch]
    results = check_variant(
        module.kernel,
        module.launch,
        *module.inputs("cpu", torch.float16, **case),
        extremes="bytes",
    )

    assert results
    for result in results:
        # The window gather's loop alone (its address and mask lane, two
        # marked operations): the store is a DMA.
        assert result.linalg.count("scf.yield {DiscreteMemAccess}") == 1, result.config
        assert result.linalg.count("DiscreteMemAccess") == 2, result.config


def _whole_tile_ands(monkeypatch, pipeline):
    # The first config of conv2d (fp16), compiled as its launch compiles it.
    monkeypatch.setitem(pipelines.VARIANTS, "npu", pipeline)
    module = load_example("conv2d")
    kernel, arguments = launch_arguments(
        module.kernel.module("npu"),
        module.kernel,
        module.launch,
        module.inputs("cpu", torch.float16),
    )
    _, signature, constants, attrs, options = arguments[0]
    linalg, _ = compile_stages(
        kernel, signature, constants, attrs=attrs, options=options
    )
    shapes = re.findall(r"arith\.andi .*: tensor<(\d+)x(\d+)xi1>", linalg)

    return sum(1 for rows, columns in shapes if int(rows) > 1 and int(columns) > 1)


def test_conv2d_mask_has_few_whole_tile_ands(monkeypatch):
    """Why GroupMaskTerms exists: without it conv2d's masks are ~60 whole-tile ``andi`` (99 before ContiguousFlatAccess), and BiShengIR did not finish in 300 s (docs/benchmarks.md)."""

    without = tuple(step for step in pipelines.NPU if step is not GroupMaskTerms)

    assert _whole_tile_ands(monkeypatch, without) > 50
    assert _whole_tile_ands(monkeypatch, pipelines.NPU) < 20


def test_compile_stages_remember_their_output_and_recompile_a_damaged_record(
    monkeypatch, tmp_path
):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    from ninetoothed_ascend.cache import Cache

    module = shared_example("add")
    handle = module.kernel
    kernel, ((_, signature, constants, attrs, _), *_) = launch_arguments(
        handle.module("npu"),
        handle,
        module.launch,
        module.inputs("cpu"),
        "npu",
        "Ascend910B1",
    )
    arguments = (kernel, signature, constants)
    cache = Cache(tmp_path / "cache")
    linalg, seconds = compile_stages(*arguments, attrs=attrs, cache=cache)
    (record,) = (tmp_path / "cache" / "memos" / "stages").glob("*")

    # With the adapter gone, only a remembered compile can succeed.
    backend = make_backend(GPUTarget("npu", "Ascend910B1", 0))

    def gone(*args, **kwargs):
        raise RuntimeError("the adapter ran")

    monkeypatch.setitem(type(backend).add_stages.__globals__, "ttir_to_linalg", gone)

    assert compile_stages(*arguments, attrs=attrs, cache=cache) == (linalg, seconds)
    assert "func.func" in linalg and seconds["ttir"] > 0

    with pytest.raises(StageError, match="the adapter ran"):
        compile_stages(*arguments, attrs=attrs)

    record.write_text('{"linalg": 1}')

    with pytest.raises(StageError, match="the adapter ran"):
        compile_stages(*arguments, attrs=attrs, cache=cache)
