"""Level 3, emulation: the NPU variant itself (persistent grid, UB-fitted configs, sub-blocks) against torch.

The NPU variant runs emulated (``handle.emulated``, ``compiler/emulation.py``): on
the CPU in Triton's interpreter; on a CUDA GPU, where there is one, as
compiled Triton. Neither is an
NPU: these check the rewritten program's semantics, not triton-ascend.
"""

import ast
import inspect
import re

import pytest
import torch
from helpers import launch_flag, launch_keywords, load_example, shared_example

from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler.npu.transpose_strided_tiles import FLAG_PREFIX
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import kernel_configs


def module_globals(launch):
    """The globals of the emulated module ``launch`` comes from (through the CPU handle's placeholder wrapper)."""

    return inspect.unwrap(launch).__globals__


def assert_matches(module, output, expected, dtype):
    outputs = output if isinstance(output, tuple) else (output,)
    expecteds = expected if isinstance(expected, tuple) else (expected,)
    atol, rtol = getattr(module, "TOLERANCES", {}).get(
        dtype, examples.TOLERANCES[dtype]
    )

    for got, want in zip(outputs, expecteds, strict=True):
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol)


def npu_configs(handle):
    (configs,) = [sizes for _, sizes in kernel_configs(ast.parse(handle.source("npu")))]

    return configs


def test_persistent_grid_covers_every_task_with_few_cores(monkeypatch):
    # 3 programs for 41 tasks: each program loops 13 or 14 times.
    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_VECTORCORE", "3")
    module = load_example("add")
    launch = module.kernel.emulated("cpu")
    # The CPU emulation runs the largest config (FixAutotuneConfig).
    block = max(
        size for config in npu_configs(module.kernel) for size in config.values()
    )
    generator = torch.Generator().manual_seed(1)
    input, other = (torch.randn(block * 40 + 7, generator=generator) for _ in range(2))

    output = module.launch(launch, input, other)

    assert module_globals(launch)["ninetoothed_num_cores"](False) == 3
    torch.testing.assert_close(output, input + other, atol=0, rtol=0)


@pytest.mark.slow
def test_npu_variant_on_the_interpreter_runs_more_than_65535_tasks(monkeypatch):
    # More tasks than coreDim allows programs (65535), on 48 programs. The
    # interpreter spends ~13 ms per task whatever its size, so the tasks are
    # made as small as possible: a UB that only fits 1-element blocks makes
    # every element a task (minutes, not the hour of 8192-element blocks).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "24")
    module = load_example("add")
    launch = module.kernel.emulated("cpu")
    size = 65535 + 8
    generator = torch.Generator().manual_seed(4)
    input, other = (torch.randn(size, generator=generator) for _ in range(2))

    output = module.launch(launch, input, other)

    assert [set(config.values()) for config in npu_configs(module.kernel)] == [{1}]
    assert module_globals(launch)["ninetoothed_num_cores"](False) == 48
    torch.testing.assert_close(output, input + other, atol=0, rtol=0)


@pytest.mark.parametrize(
    ("name", "shape"), [("softmax", (4, 781)), ("rms_norm", (3, 1000))]
)
@pytest.mark.parametrize("dtype", (torch.float16, torch.float32))
def test_rows_too_large_for_the_ub_are_split_into_sub_blocks(
    monkeypatch, name, shape, dtype
):
    # A 4 KB UB forces 128- or 256-lane sub-blocks on these 1024-lane rows:
    # the split path, cheaply (docs/ub.md). The default 192 KB needs rows of
    # more than 8192 lanes for the same.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "4096")
    module = load_example(name)
    source = module.kernel.source("npu")
    launch = module.kernel.emulated("cpu")
    generator = torch.Generator().manual_seed(2)
    input = torch.randn(shape, generator=generator).to(dtype)
    inputs = (input,) + module.inputs("cpu", dtype)[1:]

    (sub_block,) = map(int, re.findall(r" <= (\d+):", source))

    assert ("SplitSubBlocks", 1) in module.kernel.rewrites("npu")
    assert sub_block < 1024  # the rows' power-of-two block
    assert_matches(
        module, module.launch(launch, *inputs), module.reference(*inputs), dtype
    )


@pytest.mark.parametrize("name", ["softmax", "rms_norm"])
def test_rows_too_large_for_the_default_ub_are_split_into_sub_blocks(monkeypatch, name):
    # Atlas A2's 192 KB: softmax splits rows above 16384 lanes, RMS norm
    # above 8192 (docs/ub.md); 20000 lanes are a 32768-lane block.
    monkeypatch.delenv("NINETOOTHED_ASCEND_UB_BYTES", raising=False)
    monkeypatch.delenv("ASCEND_UB_CAPACITY_BITS", raising=False)
    module = load_example(name)
    launch = module.kernel.emulated("cpu")
    inputs = module.inputs("cpu", torch.float32, rows=2, columns=20000)
    (sub_block,) = map(int, re.findall(r" <= (\d+):", module.kernel.source("npu")))

    assert sub_block < 32768
    assert_matches(
        module,
        module.launch(launch, *inputs),
        module.reference(*inputs),
        torch.float32,
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_npu_variant_on_cuda_launches_more_than_65535_tasks():
    module = shared_example("add")
    launch = module.kernel.emulated("cuda")
    block = 64
    size = block * 70000 + 3
    generator = torch.Generator().manual_seed(3)
    input, other = (torch.randn(size, generator=generator).to("cuda") for _ in range(2))
    config = next(
        config
        for config in npu_configs(module.kernel)
        if set(config.values()) == {block}
    )
    factory = module_globals(launch)[f"{module.kernel.kernel_name}_with_auto_tuning"]
    tuner = factory()
    saved = tuner.configs
    tuner.configs = [c for c in saved if c.kwargs == config]

    try:
        output = module.launch(launch, input, other)
    finally:
        tuner.configs = saved

    torch.testing.assert_close(output, input + other, atol=0, rtol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_npu_variant_on_cuda_tries_only_the_configs_that_fit_its_head_dimension(
    monkeypatch,
):
    # The real autotuner calls FitUnifiedBuffer's early_config_prune; the CPU
    # emulation has no autotuner, so this runs on a GPU only.
    module = load_example("flash_attention")
    launch = module.kernel.emulated("cuda")
    pruner = f"ninetoothed_fit_unified_buffer_{module.kernel.kernel_name}"
    original = module_globals(launch)[pruner]
    kept = []

    def recording(configs, named_args, **kwargs):
        chosen = original(configs, named_args, **kwargs)
        kept.append([config.kwargs for config in chosen])

        return chosen

    monkeypatch.setitem(module_globals(launch), pruner, recording)

    for head_dim in (64, 512):
        inputs = module.inputs("cuda", torch.float16, head_dim=head_dim)
        assert_matches(
            module,
            module.launch(launch, *inputs),
            module.reference(*inputs),
            torch.float16,
        )

    small, large = kept
    assert len(kept) == 2
    assert (
        max(max(config.values()) for config in large)
        <= 16
        < max(max(config.values()) for config in small)
    )


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
def test_flattened_npu_variant_takes_the_path_its_layout_allows(layout):
    """ContiguousFlatAccess on the interpreter: the affine path (contiguous) and the general one (transposed, broadcast) both match torch."""

    module = shared_example("flat_mul")
    input, other = module.inputs(
        "cpu",
        torch.float32,
        shape=(2, 3, 4, 5),
        other_shape=(2, 3, 4, 5),
        layout=layout,
    )
    launch = module.kernel.emulated("cpu")
    collapses = module_globals(launch)["ninetoothed_ascend_collapses"]

    assert collapses(input.shape, input.stride()) == (layout == "contiguous")
    assert_matches(
        module, module.launch(launch, input, other), input * other, torch.float32
    )


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "max_pool2d_fixed"])
def test_pooling_npu_variant_stores_through_the_path_its_output_layout_allows(name):
    """ContiguousFlatAccess on a pooling store: the affine path (contiguous output) and the general one (transposed output) both match torch, for a contiguous and a strided input."""

    module = shared_example(name)
    (input,) = module.inputs("cpu", torch.float32)
    expected = module.reference(input)
    launch = module.kernel.emulated("cpu")
    collapses = module_globals(launch)["ninetoothed_ascend_collapses"]
    contiguous = torch.empty_like(expected)
    batch, channels, height, width = expected.shape
    transposed = torch.empty(batch, channels, width, height).transpose(2, 3)

    assert collapses(contiguous.shape, contiguous.stride())
    assert not collapses(transposed.shape, transposed.stride())

    for output in (contiguous, transposed):
        launch(input, output)
        assert_matches(module, output, expected, torch.float32)

    strided = input.transpose(2, 3).contiguous().transpose(2, 3)
    assert_matches(module, module.launch(launch, strided), expected, torch.float32)


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize(
    "memory_format", ["contiguous_format", "channels_last", "width_major"]
)
def test_conv2d_npu_variant_stores_through_the_path_its_output_layout_allows(
    memory_format, batch
):
    """conv2d's output store on the interpreter: an NCHW output of batch 1 through the transposed store (TransposeStridedTiles), of batch 2 through one transposed store per image a tile reaches, a channels-last one through the DMA, a width-major one through the scalar store; all match torch, for a contiguous and a strided input."""

    module = shared_example("conv2d")
    (case,) = [case for case in examples.cases(module) if case.get("batch") == batch]
    input, weight, bias = module.inputs("cpu", torch.float32, **case)
    expected = module.reference(input, weight, bias)
    launch = module.kernel.emulated("cpu")
    if memory_format == "width_major":
        # Pixels stored column by column: no layout collapses the rows.
        output = expected.transpose(2, 3).contiguous().transpose(2, 3)
    else:
        output = torch.empty_like(expected, memory_format=getattr(torch, memory_format))
    taken = _conv2d_store_paths(module, output)

    # The output seen as ``(N * P * Q, K)``: its rows collapse whole for an
    # NCHW output of batch 1 or a channels-last one, within each image for
    # an NCHW output of any batch, never for a width-major one; its filters
    # step 1 only in channels-last, which takes ContiguousFlatAccess's DMA
    # instead.
    nchw = memory_format == "contiguous_format"
    assert taken == {"single": nchw and batch == 1, "segments": nchw and batch > 1}

    strided = input.transpose(2, 3).contiguous().transpose(2, 3)

    for operand in (input, strided):
        output.zero_()
        launch(operand, weight, bias.view(1, -1, 1, 1).expand_as(output), output)
        assert_matches(module, output, expected, torch.float32)


def _conv2d_store_paths(module, output):
    """Which of conv2d's transposed stores (TransposeStridedTiles) the launch takes for ``output``: ``{"single": bool, "segments": bool}``."""

    source = module.kernel.source("npu")
    flagged = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.IfExp, ast.If))
        and isinstance(node.test, ast.Name)
        and node.test.id.startswith(FLAG_PREFIX)
    ]
    (single,) = [
        node.test.id
        for node in flagged
        if isinstance(node, ast.IfExp) and "store" in ast.unparse(node.body.func)
    ]
    (segments,) = [node.test.id for node in flagged if isinstance(node, ast.If)]
    flags = launch_keywords(source, "conv2d")

    return {
        path: launch_flag(source, flags[flag])(output)
        for path, flag in (("single", single), ("segments", segments))
    }


@pytest.mark.parametrize(
    "shape",
    [
        # P * Q = 6: a tile of 32 or 64 rows reaches 6 images, the last
        # partly; the output's width (Q) is 1 in the second.
        {"batch": 7, "height": 5, "width": 5},
        {"batch": 6, "height": 13, "width": 3},
    ],
)
def test_conv2d_per_image_stores_cover_tiles_that_reach_many_images(shape):
    """conv2d's NCHW output stored one transposed DMA per image on the interpreter, where a tile reaches several images: every element written (the output starts as NaN) and equal to torch's."""

    module = shared_example("conv2d")
    case = examples.cases(module)[0] | shape
    input, weight, bias = module.inputs("cpu", torch.float32, **case)
    expected = module.reference(input, weight, bias)
    output = torch.full_like(expected, float("nan"))

    assert _conv2d_store_paths(module, output) == {"single": False, "segments": True}

    module.kernel.emulated("cpu")(
        input, weight, bias.view(1, -1, 1, 1).expand_as(output), output
    )
    assert_matches(module, output, expected, torch.float32)


def test_a_caller_sized_tile_too_large_for_the_ub_is_refused_at_the_launch():
    """flat_sum_dim's tile is ROWS x next_power_of_2(the reduced length), both from its caller: the launch evaluates the UB model and refuses 16 x 4096 (BiShengIR: 524,288 B needed in fp16, docs/ub.md) before anything compiles, and runs 16 x 512."""

    from ninetoothed_ascend.runtime import UnifiedBufferOverflowError

    module = shared_example("flat_sum_dim")
    launch = module.kernel.emulated("cpu")
    input, dim = module.inputs("cpu", torch.float32, shape=(64, 4096), dim=-1)

    with pytest.raises(UnifiedBufferOverflowError) as refused:
        module.launch(launch, input, dim)

    message = str(refused.value)
    assert "`flat_sum_dim` (NPU variant)" in message
    assert "786432 bytes" in message and "196608 available" in message
    assert "BLOCK_SIZE_N = 4096" in message and "next_power_of_2" not in message

    input, dim = module.inputs("cpu", torch.float32, shape=(512, 64), dim=0)
    assert_matches(
        module, module.launch(launch, input, dim), input.sum(dim), torch.float32
    )
