"""SplitSubBlocks: caller-sized blocks looped over sub-blocks, or refused at the launch (level 1)."""

import ast

import pytest
from helpers import rewrite
from ub_helpers import AUTOTUNED

from ninetoothed_ascend.compiler.npu.ub.split_sub_blocks import SplitSubBlocks

SOFTMAX = """
import triton
import triton.language as tl

@triton.jit
def kernel(p, q, n, C: tl.constexpr, P: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(p + pid * n + tl.arange(0, P), mask=tl.arange(0, P) < C, other=float('-inf'))
    y = tl.exp(x - tl.max(x))
    tl.store(q + pid * n + tl.arange(0, P), y / tl.sum(y), mask=tl.arange(0, P) < C)
"""


def test_split_sub_blocks_makes_a_three_pass_softmax(monkeypatch):
    # 28 bytes per lane at the peak (double-buffered load with its -inf
    # padding's select, 8 + 10; the max's scratch, 2; x - max and exp, 4 each):
    # 8192 bytes fit 256 lanes.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8192")
    source, count = rewrite(SplitSubBlocks, SOFTMAX)

    assert count == 1
    assert "if P <= 256:" in source
    assert source.count("for ninetoothed_sub_block in range(0, P, 256):") == 3
    assert "ninetoothed_sub_block + tl.arange(0, 256)" in source
    assert (
        "ninetoothed_reduced_0 = triton.language.maximum(ninetoothed_reduced_0, "
        "triton.language.cast(tl.max(x), triton.language.float32))" in source
    )
    assert "y = tl.exp(x - ninetoothed_reduced_0)" in source
    assert (
        "ninetoothed_reduced_1 = ninetoothed_reduced_1 + "
        "triton.language.cast(tl.sum(y), triton.language.float32)" in source
    )
    assert "y / ninetoothed_reduced_1, mask=ninetoothed_sub_block" in source


def test_split_sub_blocks_leaves_what_it_cannot_split(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "4096")

    # A scan is not lane by lane.
    _, count = rewrite(SplitSubBlocks, SOFTMAX.replace("tl.exp(", "tl.cumsum("))
    assert count == 0

    # A reduction along an axis keeps a tile.
    _, count = rewrite(SplitSubBlocks, SOFTMAX.replace("tl.sum(y)", "tl.sum(y, 0)"))
    assert count == 0

    # Autotuned block sizes are FitUnifiedBuffer's.
    _, count = rewrite(SplitSubBlocks, AUTOTUNED)
    assert count == 0


@pytest.mark.parametrize(
    "launch",
    [
        "def launch(p, q, n, C, P):\n    kernel[lambda meta: (n,)](p, q, n, C, P)\n",
        # A launch under an ``if`` (an empty launch skipped, say) is guarded
        # where it is.
        "def launch(p, q, n, C, P):\n    if n > 0:\n"
        "        kernel[lambda meta: (n,)](p, q, n, C, P)\n",
        # The block size found by its parameter's name, passed by keyword.
        "def launch(p, q, n, C, P):\n    kernel[lambda meta: (n,)](p, q, n, C, P=P)\n",
    ],
    ids=["top-level", "nested", "keyword"],
)
def test_split_sub_blocks_guards_the_launch_of_what_it_cannot_split(
    monkeypatch, launch
):
    # 28 bytes per lane, as in the three-pass softmax above.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8192")
    source, count = rewrite(
        SplitSubBlocks, SOFTMAX.replace("tl.exp(", "tl.cumsum(") + "\n" + launch
    )
    launched = []

    class Kernel:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append((*args, *kwargs.values()))

    namespace = {"kernel": Kernel()}
    exec(ast.unparse(ast.parse(source).body[-1]), namespace)

    assert count == 1
    namespace["launch"](0, 0, 1, 200, 256)
    assert launched == [(0, 0, 1, 200, 256)]

    with pytest.raises(
        ValueError,
        match="cannot run a block of 512 lanes on Ascend: at most 256 lanes fit "
        "the 8192-byte Unified Buffer",
    ):
        namespace["launch"](0, 0, 1, 300, 512)
