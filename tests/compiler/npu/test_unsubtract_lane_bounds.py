"""UnsubtractLaneBounds: pass tests on small ASTs (level 1), a tensor padded in front emulated on the CPU (level 4) and run lowered, fenced."""

import ninetoothed
import pytest
import torch
from helpers import assert_no_rewrite, npu_without, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.unsubtract_lane_bounds import (
    UnsubtractLaneBounds,
)

LANES = "tl.arange(0, B)[:,]"


def test_a_bound_on_lanes_less_a_pad_becomes_a_bound_on_a_sum():
    # NineToothed's mask of a tile of a tensor padded by 30 in front.
    source, count = rewrite(
        UnsubtractLaneBounds,
        f"""
        import triton.language as tl
        tl.load(p + (i * B + {LANES} - 30) * s, mask=(i >= 0) & ((i * B + {LANES} < n + 30) & (i * B + {LANES} - 30 < n) & (i * B + {LANES} - 30 >= 0)), other=0)
        """,
    )

    assert (
        f"mask=(i >= 0) & ((i * B + {LANES} < n + 30) & (i * B + {LANES} < n + 30) "
        f"& (i * B + {LANES} >= 30))" in source
    )
    # The address is not a mask: it stays as it was.
    assert f"tl.load(p + (i * B + {LANES} - 30) * s" in source
    assert count == 2


@pytest.mark.parametrize(
    "bound, moved",
    [
        (f"{LANES} - s >= 0", f"{LANES} >= s"),
        (f"s - t + {LANES} < n", f"s + {LANES} < n + t"),
        (f"-s + {LANES} - t >= 0", f"{LANES} >= s + t"),
    ],
)
def test_every_subtracted_term_changes_side(bound, moved):
    source, count = rewrite(
        UnsubtractLaneBounds,
        f"""
        import triton.language as tl
        tl.store(p, x, mask={bound})
        """,
    )

    assert f"mask={moved})" in source
    assert count == 1


@pytest.mark.parametrize(
    "mask",
    [
        # sums and the lanes alone: what the adapter folds already
        f"{LANES} >= 0",
        f"i * B + {LANES} < n",
        f"s + {LANES} >= 0",
        # lanes subtracted, or lanes on both sides
        f"s - {LANES} >= 0",
        f"{LANES} - s < {LANES} + n",
        # another comparison
        f"{LANES} - s <= n",
    ],
)
def test_other_bounds_are_left_alone(mask):
    assert_no_rewrite(
        UnsubtractLaneBounds,
        f"""
        import triton.language as tl
        tl.load(p, mask={mask}, other=0)
        """,
    )


def _padded_in_front(pad):
    # ntops' rot90 reads its input so: padded in front to whole tiles.
    def arrangement(input, output, BLOCK=ninetoothed.block_size()):
        return input.pad(((pad, 0),)).tile((BLOCK,)), output.tile((BLOCK,))

    def application(input, output):
        output = input  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement, application, (Tensor(1, other=0), Tensor(1))
    )


@pytest.mark.parametrize("size", [5, 40, 100])
def test_a_tensor_padded_in_front_emulated_on_the_cpu_matches_torch(size):
    kernel = _padded_in_front(30)
    input = torch.arange(1, size + 1, dtype=torch.float32)
    output = torch.full((size + 30,), float("nan"))

    assert "UnsubtractLaneBounds" in dict(kernel.rewrites("npu"))

    kernel.emulated("cpu")(input, output)

    assert torch.equal(output, torch.nn.functional.pad(input, (30, 0)))


@pytest.mark.ascend
@pytest.mark.parametrize("without", [False, True], ids=["with", "without"])
def test_a_tensor_padded_in_front_run_lowered_reads_nothing_before_its_input(
    without, monkeypatch, tmp_path
):
    """The lowered level, fenced: without the pass, a tile's copy reads every lane, before the input and past it."""

    from ninetoothed_ascend.check.lowered import faults, tools

    if reason := tools.missing():
        pytest.skip(reason)

    if without:
        npu_without(monkeypatch, UnsubtractLaneBounds)

    kernel = _padded_in_front(30)
    input = torch.arange(1, 41, dtype=torch.float32)
    output = torch.full((70,), float("nan"))
    launch = kernel.lowered(directory=tmp_path, timeout=120)

    if without:
        with pytest.raises(faults.Fault) as caught:
            launch(input, output)

        assert caught.value.access == "read"
    else:
        launch(input, output)

        assert torch.equal(output, torch.nn.functional.pad(input, (30, 0)))
