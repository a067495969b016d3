"""UnscaleStridedLaneBounds: pass tests on small ASTs (level 1), a dilated tile emulated on the CPU (level 4) and run lowered, fenced."""

import ninetoothed
import pytest
import torch
from helpers import assert_no_rewrite, npu_without, rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.unscale_strided_lane_bounds import (
    UnscaleStridedLaneBounds,
)

LANES = "tl.arange(0, C)[:, None]"


def test_a_bound_on_strided_lanes_becomes_a_bound_on_the_lanes():
    source, count = rewrite(
        UnscaleStridedLaneBounds,
        f"""
        import triton.language as tl
        tl.load(p, mask=(i < m) & (i * (C * 6) + {LANES} * 6 < n) & (i * (C * 6) + {LANES} * 6 >= 0), other=0)
        """,
    )

    assert f"mask=(i < m) & ({LANES} < (n - i * (C * 6) + 5) // 6) & (i >= 0)" in source
    assert count == 2


def test_either_order_of_the_sum_and_the_product_is_read():
    source, count = rewrite(
        UnscaleStridedLaneBounds,
        f"""
        import triton.language as tl
        tl.store(p, x, mask=(4 * {LANES} + s < n) & ((C * 4) * i + 4 * {LANES} >= 0))
        """,
    )

    assert f"mask=({LANES} < (n - s + 3) // 4) & (i >= 0)" in source
    assert count == 2


@pytest.mark.parametrize(
    "mask",
    [
        # unit stride: the adapter folds it as it is
        f"i * C + {LANES} < n",
        # a stride that is not a constant may be 0 or negative
        f"i * (C * k) + {LANES} * k < n",
        # the bound depends on the lanes
        f"i * (C * 6) + {LANES} * 6 < {LANES} + n",
        # a lower bound other than 0, or a start that is not index * (C * K)
        f"i * (C * 6) + {LANES} * 6 >= 1",
        f"i * (D * 6) + {LANES} * 6 >= 0",
    ],
)
def test_other_bounds_are_left_alone(mask):
    assert_no_rewrite(
        UnscaleStridedLaneBounds,
        f"""
        import triton.language as tl
        tl.load(p, mask={mask}, other=0)
        """,
    )


def test_the_rewrite_is_exact_on_every_integer_start_and_bound():
    # ``start + a * K < n`` and ``a < (n - start + K - 1) // K``, under
    # floor division (Python) and truncating division (C, Triton) alike.
    def truncating(a, b):
        return int(a / b)

    for stride in (2, 3, 6, 9):
        for start in range(-20, 21):
            for bound in range(-20, 21):
                for lane in range(8):
                    expected = start + lane * stride < bound

                    for divide in (int.__floordiv__, truncating):
                        limit = divide(bound - start + stride - 1, stride)
                        assert (lane < limit) == expected


def _diagonal(stride):
    # ntops' ``diag`` extraction: tiles of ``BLOCK`` lanes ``stride`` elements apart.
    def arrangement(input, output, BLOCK=ninetoothed.block_size()):
        input_arranged = input.tile(
            (BLOCK,), strides=(BLOCK * stride,), dilation=(stride,)
        )

        return input_arranged, output.tile((BLOCK,))

    def application(input, output):
        output = input  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement, application, (Tensor(1, other=0), Tensor(1))
    )


@pytest.mark.parametrize("size", [4, 5, 7])
def test_a_diagonal_emulated_on_the_cpu_matches_torch(size):
    kernel = _diagonal(size + 1)
    matrix = torch.arange(size * size, dtype=torch.float32).view(size, size)
    output = torch.full((size,), float("nan"))

    assert "UnscaleStridedLaneBounds" in dict(kernel.rewrites("npu"))

    kernel.emulated("cpu")(matrix.flatten(), output)

    assert torch.equal(output, matrix.diagonal())


@pytest.mark.ascend
@pytest.mark.parametrize("without", [False, True], ids=["with", "without"])
def test_a_diagonal_run_lowered_reads_nothing_past_its_input(
    without, monkeypatch, tmp_path
):
    """The lowered level, fenced: without the pass, the copy of 32 strided lanes reads past the input's end."""

    from ninetoothed_ascend.check.lowered import faults, tools

    if reason := tools.missing():
        pytest.skip(reason)

    if without:
        npu_without(monkeypatch, UnscaleStridedLaneBounds)

    kernel = _diagonal(6)
    matrix = torch.arange(25, dtype=torch.float32).view(5, 5)
    output = torch.full((5,), float("nan"))
    launch = kernel.lowered(directory=tmp_path, timeout=120)

    if without:
        with pytest.raises(faults.Fault) as caught:
            launch(matrix.flatten(), output)

        assert caught.value.placement == "end" and caught.value.access == "read"
    else:
        launch(matrix.flatten(), output)

        assert torch.equal(output, matrix.diagonal())
