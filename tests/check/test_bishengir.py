"""Level 3, BiShengIR: every example's NPU variant, compiled as a launch compiles it, through bishengir-compile to the external hivmc step.

Runs in the triton-ascend environment of .ci/run (ascendnpu-ir 1.2.0,
Ascend910B1); no NPU and no CANN are involved. Each example, each of its shape
cases (``CASES``), each dtype, with
contiguous and non-contiguous inputs (``examples.noncontiguous``), for the
smallest and the largest config its autotuner tries for the launch (by the UB
model's bytes). The full sweep of every config is bench/bishengir_sweep.py.
"""

import importlib.util
import json

import pytest
import torch
from conftest import EXAMPLE_NAMES, EXAMPLES
from helpers import shared_example

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import bishengir
from ninetoothed_ascend.check.compile_check import BiShengIRStage, check_variant

pytestmark = pytest.mark.ascend


#: Seconds a compile may take here: under 60 s per config.
TIMEOUT = 60


#: Cases that do not reach hivmc yet: (example, shape case, dtype, inputs) -> reason,
#: each a strict xfail. None on the merged pipeline (ascendnpu-ir 1.2.0,
#: Ascend910B1, 196,608 B of UB, 2026-11-23): flat_lt/flat_mul with
#: non-contiguous inputs and instance_norm, UB-model under-estimates until
#: then, fit since the model prices gathers' index vectors, the layout
#: flags and hoisted constants (docs/ub.md, "Rules calibrated on BiShengIR").
KNOWN_FAILURES = {}


def _marks(name, case, dtype, kind):
    if reason := KNOWN_FAILURES.get((name, case, str(dtype), kind)):
        return [pytest.mark.xfail(reason=reason, strict=True)]

    return []


def _cases():
    return [
        pytest.param(
            name,
            case,
            dtype,
            kind,
            id=f"{name}{f'[{case}]' if case else ''}-{str(dtype).removeprefix('torch.')}-{kind}",
            marks=_marks(name, case, dtype, kind),
        )
        for name in EXAMPLE_NAMES
        for case in range(len(examples.cases(shared_example(name))))
        for dtype in examples.dtypes(shared_example(name))
        for kind in ("contiguous", "non-contiguous")
    ]


@pytest.fixture(scope="module")
def stage(run_cache):
    if bishengir.missing():
        pytest.fail(bishengir.missing())

    with BiShengIRStage(timeout=TIMEOUT, cache=run_cache) as stage:
        yield stage


@pytest.mark.parametrize(("name", "case", "dtype", "kind"), _cases())
def test_smallest_and_largest_config_reach_hivmc(
    name, case, dtype, kind, stage, run_cache
):
    module = shared_example(name)
    inputs = module.inputs("cpu", dtype, **examples.cases(module)[case])

    if kind == "non-contiguous":
        inputs = examples.noncontiguous(inputs)

    results = check_variant(
        module.kernel,
        module.launch,
        *inputs,
        extremes="bytes",
        bishengir=stage,
        cache=run_cache,
    )
    outcomes = {
        str(result.config): (
            result.bishengir.outcome,
            result.bishengir.ub_required_bytes,
            result.bishengir.message[:300],
        )
        for result in results
    }

    assert results
    assert all(outcome == "hivmc" for outcome, _, _ in outcomes.values()), outcomes


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_every_config_conv2d_with_an_nchw_output_tries_reaches_hivmc(
    dtype, batch, stage
):
    # Batch 1 collapses the NCHW output's rows; its filters step P * Q. With
    # the store's fast path taken on that layout, 32x64x32 and 64x32x32
    # overflowed the UB in fp16 and bf16 (197,504 and 198,144 B); stored
    # transposed (TransposeStridedTiles), one DMA, every config fits. Batch 2
    # (rows collapsing only within an image) stores one such DMA per image a
    # tile reaches, in a loop, and every config fits too.
    module = shared_example("conv2d")
    (case,) = [case for case in examples.cases(module) if case.get("batch") == batch]
    results = check_variant(
        module.kernel,
        module.launch,
        *module.inputs("cpu", dtype, **case),
        configs="launch",
        bishengir=stage,
    )

    assert len(results) > 1
    assert all(result.bishengir.outcome == "hivmc" for result in results), [
        (result.config, result.bishengir.outcome, result.bishengir.ub_required_bytes)
        for result in results
    ]
    # The window load's gather alone (one scalar loop, reading each lane's
    # address and mask): the store is a DMA.
    assert [
        result.linalg.count("scf.yield {DiscreteMemAccess}") for result in results
    ] == [1] * len(results)


def test_a_launch_with_unit_strides_fits_where_the_unspecialized_kernel_overflows(
    stage,
):
    """Why the check specializes as a launch does: add fp32 at its largest block overflows UB unspecialized (262,144 B at 4096, 524,288 B at 8192 lanes)."""

    from ninetoothed_ascend.check.compile_check import compile_arguments, compile_stages

    module = shared_example("add")
    handle = module.kernel
    inputs = module.inputs("cpu", torch.float32)
    kernel, plain = compile_arguments(
        handle.module("npu"), handle, module.launch, inputs, "npu"
    )
    signature, constants = plain[-1]
    unspecialized = stage.submit(
        compile_stages(kernel, signature, constants)[0]
    ).result()
    (launched,) = check_variant(
        handle, module.launch, *inputs, extremes="bytes", bishengir=stage
    )[-1:]

    assert unspecialized.outcome == "ub_overflow"
    assert unspecialized.ub_required_bytes > unspecialized.ub_available_bytes == 196608
    assert launched.bishengir.outcome == "hivmc"


def test_check_reports_each_config_and_the_seconds_of_each_stage():
    from click.testing import CliRunner

    from ninetoothed_ascend.cli import main

    add = str(EXAMPLES / "elementwise" / "add.py")
    result = CliRunner().invoke(
        main, ["check", add, "--dtype", "float32", "--extremes", "block", "--jobs", "2"]
    )

    assert result.exit_code == 0, result.output
    assert result.output.count("reached hivmc (ttir ") == 2
    assert "bishengir" in result.output
    assert "1 kernels, 0 failures" in result.output

    as_json = CliRunner().invoke(
        main,
        [
            "check",
            add,
            "--dtype",
            "float32",
            "--extremes",
            "block",
            "--memory-report",
            "--json",
        ],
    )
    report = json.loads(as_json.output)
    smallest, largest = report["results"]

    assert [row["bishengir"]["outcome"] for row in report["results"]] == ["hivmc"] * 2
    assert report["ascendnpu_ir"] == bishengir.version()
    # The model's bytes and BiShengIR's plan, each growing with the block.
    assert 0 < smallest["ub_model_bytes"] < largest["ub_model_bytes"]
    assert 0 < (
        smallest["bishengir"]["planned_ub_bytes"]
        < largest["bishengir"]["planned_ub_bytes"]
    )


def test_without_ascendnpu_ir_check_says_once_how_to_install_it(monkeypatch):
    from click.testing import CliRunner

    from ninetoothed_ascend.cli import main

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "ascendnpuir" else find_spec(name, *rest),
    )

    result = CliRunner().invoke(
        main, ["check", str(EXAMPLES / "elementwise" / "add.py"), "--dtype", "float32"]
    )

    assert result.exit_code == 0, result.output
    assert result.output.count("pip install 'ninetoothed-ascend[bishengir]'") == 1
    assert "hivmc" not in result.output


def test_every_config_a_launch_with_innermost_strides_of_3_tries_reaches_hivmc(stage):
    """The strided launch's configs, where the UB model once kept 4096 lanes of fp32 add that BiShengIR refuses (262,144 B: two strided loads' buffers of 32-byte blocks)."""

    module = shared_example("add")
    input, other = (torch.randn(3 * 8192)[::3] for _ in range(2))

    results = check_variant(
        module.kernel, module.launch, input, other, configs="launch", bishengir=stage
    )

    assert max(max(result.config.values()) for result in results) == 2048
    assert all(result.bishengir.outcome == "hivmc" for result in results), [
        (result.config, result.bishengir.ub_required_bytes) for result in results
    ]


def test_a_stage_with_a_cache_takes_a_remembered_outcome_but_not_a_timeout(
    monkeypatch, tmp_path
):
    from ninetoothed_ascend.cache import Cache
    from ninetoothed_ascend.check.compile_check import compile_stages, launch_arguments

    module = shared_example("add")
    handle = module.kernel
    kernel, ((_, signature, constants, attrs, options), *_) = launch_arguments(
        handle.module("npu"), handle, module.launch, module.inputs("cpu"), "npu"
    )
    linalg, _ = compile_stages(kernel, signature, constants, attrs=attrs)
    cache = Cache(tmp_path / "cache")

    with BiShengIRStage(cache=cache) as first:
        compiled = first.submit(linalg, options).result()

    assert compiled.outcome == "hivmc"

    def compile_linalg(*args, **kwargs):
        raise AssertionError("bishengir-compile ran")

    monkeypatch.setattr(bishengir, "compile_linalg", compile_linalg)

    with BiShengIRStage(cache=cache) as second:
        assert second.submit(linalg, options).result() == compiled

    (record,) = (tmp_path / "cache" / "memos" / "bishengir").glob("*")
    record.write_text('{"outcome": "hivmc"}')
    monkeypatch.setattr(
        bishengir,
        "compile_linalg",
        lambda *args, **kwargs: bishengir.BiShengIRResult(
            "timeout", None, None, None, 60.0, "", "Ascend910B1"
        ),
    )

    # A damaged record is compiled again; a timeout is not remembered.
    with BiShengIRStage(cache=cache) as third:
        assert third.submit(linalg, options).result().outcome == "timeout"

    assert record.read_text() == '{"outcome": "hivmc"}'
