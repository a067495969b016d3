"""The user's kernel means what it says: block-size bounds and ``max_num_configs`` kept by every variant.

A kernel made with ``ninetoothed.block_size(lower_bound, upper_bound)`` is
valid for blocks within its bounds only; the NPU variant may narrow its
configs for the Unified Buffer, never widen them (FitUnifiedBuffer).
"""

import ast

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import (
    kernel_configs,
    launch_configs,
)
from ninetoothed_ascend.jit import GeneratedSource, observe, rebuild, unobserve


def lane_arrangement(
    input, output, BLOCK_SIZE=ninetoothed.block_size(lower_bound=32, upper_bound=128)
):
    input_arranged = input.tile((1, BLOCK_SIZE)).tile((1, -1))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    return input_arranged, output.tile((1, 1))


def lane_application(input, output):
    # ``logsumexp`` of a row with one running maximum and sum per lane of
    # the block, combined at the end: a lane that sees no column (a block
    # wider than the row) holds -inf and NaN. The bounds say the kernel is
    # for blocks of 32 to 128, hence rows of at least 128 columns.
    lane_max = ntl.full(input.dtype.shape, float("-inf"), ntl.float32)

    for i in range(input.shape[0]):
        lane_max = ntl.maximum(lane_max, ntl.cast(input[i], ntl.float32))

    lane_sum = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        lane_sum += ntl.exp(ntl.cast(input[i], ntl.float32) - lane_max)

    row_max = ntl.max(lane_max)
    output = row_max + ntl.log(ntl.sum(lane_sum * ntl.exp(lane_max - row_max)))  # noqa: F841


def make_lane_logsumexp():
    return ninetoothed_ascend.make(
        lane_arrangement,
        lane_application,
        (Tensor(2, other=float("-inf")), Tensor(2)),
        kernel_name="lane_logsumexp",
    )


def block_values(source):
    return {
        size
        for _, configs in kernel_configs(ast.parse(source))
        for config in configs
        for size in config.values()
    }


def test_every_variant_keeps_the_user_s_block_size_bounds():
    kernel = make_lane_logsumexp()

    assert block_values(kernel.source("cuda")) == {32, 64, 128}
    # Before, the NPU variant tried 32 to 4096.
    assert block_values(kernel.source("npu")) <= {32, 64, 128}
    # The CPU variant and the NPU variant emulated on the CPU run one config
    # (the largest): the bound.
    for source in (kernel.source("cpu"), kernel.emulated_source("cpu").source):
        assert _launch_block_sizes(source) == [128]


def _launch_block_sizes(source):
    return [
        keyword.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg is not None and "BLOCK_SIZE" in keyword.arg
    ]


def test_emulated_npu_variant_is_right_on_a_781_column_row():
    # Blocks of 1024 and more (the NPU variant's largest configs before)
    # leave lanes that see no column: NaN, where the CPU variant is right.
    kernel = make_lane_logsumexp()
    input = torch.randn((3, 781), generator=torch.Generator().manual_seed(0))
    expected = torch.logsumexp(input, dim=-1)

    for launch in (kernel, kernel.emulated("cpu")):
        output = torch.empty((3, 1))
        launch(input, output)

        torch.testing.assert_close(output.view(-1), expected)


def make_add(**options):
    def arrangement(input, other, output, BLOCK_SIZE=ninetoothed.block_size()):
        return (
            input.tile((BLOCK_SIZE,)),
            other.tile((BLOCK_SIZE,)),
            output.tile((BLOCK_SIZE,)),
        )

    def application(input, other, output):
        output = input + other  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement, application, (Tensor(1), Tensor(1), Tensor(1)), **options
    )


def test_npu_variant_tries_at_most_the_user_s_max_num_configs():
    # Before, 8 configs per launch (9 in all), whatever the user allowed.
    kernel = make_add(max_num_configs=3)
    tree = ast.parse(kernel.source("npu"))
    (kernel_def,) = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == kernel.kernel_name
    ]
    contiguous = {argument.arg: 1 for argument in kernel_def.args.args}
    strided = {name: 2 if "stride" in name else 1 for name in contiguous}

    assert kernel.entry.launch["max_num_configs"] == 3

    for named in (contiguous, strided):
        assert 1 <= len(launch_configs(tree, named)) <= 3


def test_a_manifest_s_max_num_configs_rebuilds_the_same_npu_variant(tmp_path):
    records = []

    def observer(handle, record):
        records.append(record)

    observe(observer)

    try:
        kernel = make_add(max_num_configs=2)
    finally:
        unobserve(observer)

    (record,) = records
    npu = kernel.source("npu")

    assert record["max_num_configs"] == 2

    handle, built = rebuild(
        record["definition"],
        GeneratedSource(
            record["source"],
            record["kernel_name"],
            record["launch_name"],
            record["max_num_configs"],
        ),
        record["counters_delta"],
        kernel.entry.digests(),
        cache=Cache(tmp_path / "elsewhere"),
        compare=("npu",),
    )

    assert built
    assert handle.source("npu") == npu
