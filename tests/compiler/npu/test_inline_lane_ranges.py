"""InlineLaneRanges: an ``arange`` bound to a name, written where an address or mask reads it (level 1; level 2 and an emulated run, level 4)."""

import functools

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import assert_no_rewrite, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.inline_lane_ranges import InlineLaneRanges

SOURCE = """
import triton
import triton.language as tl

@triton.jit
def kernel(p, q, n, B: tl.constexpr):
    pid = tl.program_id(0)
    indices = tl.arange(0, B)
    x = tl.load(p + pid * B + indices, mask=pid * B + indices < n)
    tl.store(q + pid * B + indices, tl.where(indices < 3, x, 0), mask=pid * B + indices < n)
"""


def test_a_range_bound_to_a_name_is_written_in_addresses_and_masks():
    source, count = rewrite(InlineLaneRanges, SOURCE)

    assert count == 4
    assert (
        "x = tl.load(p + pid * B + tl.arange(0, B), mask=pid * B + tl.arange(0, B) < n)"
        in source
    )
    # The value stored keeps the name, and the name stays bound.
    assert "tl.where(indices < 3, x, 0), mask=pid * B + tl.arange(0, B) < n)" in source
    assert "indices = tl.arange(0, B)" in source


def test_a_name_bound_twice_or_to_something_else_is_left():
    assert_no_rewrite(
        InlineLaneRanges,
        SOURCE.replace("    x = tl.load", "    indices = indices + 1\n    x = tl.load"),
    )
    assert_no_rewrite(
        InlineLaneRanges,
        SOURCE.replace("indices = tl.arange(0, B)", "indices = tl.arange(0, B) * 2"),
    )


def _maximum():
    """``torch.maximum`` of two tensors flattened into blocks, the block's lanes bound to a name before the store, as ntops' maximum writes it."""

    def arrangement(input, other, output, block_size=ninetoothed.block_size()):
        return (
            input.flatten().tile((block_size,)),
            other.flatten().tile((block_size,)),
            output.flatten().tile((block_size,)),
        )

    def application(input, other, output):
        value = ntl.maximum(input, other)
        indices = ntl.arange(0, input.shape[0])
        output[indices] = value

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (Tensor(2), Tensor(2), Tensor(2)),
        kernel_name="maximum",
    )


@functools.cache
def maximum():
    return _maximum()


def test_the_store_through_a_named_range_matches_torch_emulated():
    """Level 4 (CPU interpreter): the NPU variant, against torch."""

    input, other = torch.randn(12, 25), torch.randn(12, 25)
    output = torch.empty(12, 25)

    maximum().emulated("cpu")(input, other, output)

    assert torch.equal(output, torch.maximum(input, other))


@pytest.mark.ascend
def test_the_store_through_a_named_range_is_one_dma():
    """Level 2: a contiguous launch has no scalar access; without the pass its store was one (``DiscreteMemAccess``)."""

    from ninetoothed_ascend.check.compile_check import check_variant

    def launch(kernel, input, other):
        kernel(input, other, torch.empty_like(input))

    inputs = (torch.randn(12, 25), torch.randn(12, 25))
    results = check_variant(maximum(), launch, *inputs)

    assert results
    assert all("DiscreteMemAccess" not in result.linalg for result in results)
