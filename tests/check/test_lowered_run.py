"""The lowered level: a kernel's ``ttadapter`` Linalg lowered to native code and run on the CPU over its grid, every tensor fenced.

Runs in the triton-ascend environment of .ci/run; needs LLVM 19's MLIR tools
(Debian's mlir-19-tools and llvm-19) and is skipped, with what to install,
where they are missing. No NPU is involved.
"""

import pytest
import torch
from lowered_kernels import add, divide, flip, lower_bound_mask, unmasked_store
from reproducers import strided_lane_bound_reads_masked_lanes as strided
from reproducers import subtracted_lane_bound_reads_masked_lanes as padded
from reproducers.masked_gather_reads_masked_lanes import (
    CONSTANTS,
    SIGNATURE,
    masked_gather,
    masked_gather_confined,
)

from ninetoothed_ascend.check.compile_check import compile_stages
from ninetoothed_ascend.check.lowered import faults, launch, lowering, tools

pytestmark = pytest.mark.ascend


@pytest.fixture(autouse=True)
def _tools():
    if reason := tools.missing():
        pytest.skip(reason)


def _linalg(kernel, signature, constants):
    return compile_stages(kernel, signature, constants)[0]


def _run(kernel, signature, constants, grid, arguments, tmp_path):
    return launch.run_linalg(
        _linalg(kernel, signature, constants),
        grid,
        list(arguments.items()),
        kernel_name=kernel.__name__,
        directory=tmp_path / "lowered",
        timeout=120,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_persistent_grid_covers_every_tile(dtype, tmp_path):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1000, generator=generator).to(dtype)
    y = torch.randn(1000, generator=generator).to(dtype)
    out = torch.full_like(x, float("nan"))
    kind = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]

    execution = _run(
        add,
        {"x_ptr": f"*{kind}", "y_ptr": f"*{kind}", "out_ptr": f"*{kind}", "n": "i32"},
        {"BLOCK": 64},
        (3,),  # 16 tiles on 3 programs
        {"x": x, "y": y, "out": out, "n": 1000},
        tmp_path,
    )

    assert torch.equal(out, x + y)
    assert execution.differing == ()


@pytest.mark.parametrize("dim", [0, 1])
def test_a_flip_runs_as_torch_flips(dim, tmp_path):
    # triton-ascend lowers tl.flip to a call of triton_flip, which the
    # lowered level defines (check/lowered/library.py).
    x = torch.arange(4 * 8, dtype=torch.float32).reshape(4, 8)
    out = torch.full_like(x, float("nan"))

    _run(
        flip,
        {"x_ptr": "*fp32", "out_ptr": "*fp32"},
        {"DIM": dim, "ROWS": 4, "COLS": 8},
        (1,),
        {"x": x, "out": out},
        tmp_path,
    )

    assert torch.equal(out, torch.flip(x, (dim,)))


GATHER = (SIGNATURE, CONSTANTS)


def test_a_gather_reads_its_masked_lanes_past_the_tensor(tmp_path):
    # 30 elements as 5 rows of 6: the second block's lanes 30 and 31 are
    # masked out, and the adapter's scalar loop reads them anyway.
    x = torch.arange(30, dtype=torch.float32)
    out = torch.zeros(32)

    with pytest.raises(faults.Fault) as caught:
        _run(
            masked_gather,
            *GATHER,
            (2,),
            {"x": x, "out": out, "n": 30, "cols": 6, "row_stride": 6},
            tmp_path,
        )

    fault = caught.value
    assert fault.kernel == "masked_gather"
    assert fault.signal_name == "SIGSEGV"
    assert fault.placement == "end"
    assert fault.tensor == "x"
    assert fault.outside == 1  # the first byte past the last element
    assert fault.access == "read"
    assert fault.program == (1, 0, 0)
    assert "memref.load" in fault.operation
    assert "x" in str(fault) and "masked_gather" in str(fault)


def test_the_confined_gather_reads_no_masked_lane(tmp_path):
    # ConfineMaskedLanes' rewrite of the same load: the offset selected
    # under the mask, so lanes 30 and 31 read x[0] and are discarded.
    x = torch.arange(30, dtype=torch.float32)
    out = torch.zeros(32)

    execution = _run(
        masked_gather_confined,
        *GATHER,
        (2,),
        {"x": x, "out": out, "n": 30, "cols": 6, "row_stride": 6},
        tmp_path,
    )

    assert torch.equal(out[:30], x)
    assert torch.equal(out[30:], torch.zeros(2))
    assert execution.differing == ()


def test_a_gather_whose_lanes_stay_inside_runs(tmp_path):
    x = torch.arange(32, dtype=torch.float32)
    out = torch.zeros(32)

    _run(
        masked_gather,
        *GATHER,
        (2,),
        {"x": x, "out": out, "n": 32, "cols": 8, "row_stride": 8},
        tmp_path,
    )

    assert torch.equal(out, x)


def test_a_lower_bound_mask_reads_below_the_tensor(tmp_path):
    x = torch.arange(16, dtype=torch.float32)
    out = torch.zeros(16)

    with pytest.raises(faults.Fault) as caught:
        _run(
            lower_bound_mask,
            {"x_ptr": "*fp32", "out_ptr": "*fp32", "cols": "i32"},
            {"BLOCK": 16},
            (1,),
            {"x": x, "out": out, "cols": 4},
            tmp_path,
        )

    fault = caught.value
    # Only the start-fenced placement sees it: with the end fenced, the 16
    # bytes before x are the page's own and are read without a fault.
    assert fault.placement == "start"
    assert fault.others == ()
    assert fault.tensor == "x"
    assert fault.outside == -16  # cols (4) float32 before the first element
    assert "memref.copy" in fault.operation


@pytest.mark.parametrize("summed", [False, True], ids=["subtracted", "summed"])
def test_a_bound_on_lanes_less_a_pad_reads_every_lane(summed, tmp_path):
    # tests/reproducers/subtracted_lane_bound_reads_masked_lanes.py: the
    # adapter folds ``a < n + pad`` and ``a >= pad`` into the copy, not
    # ``a - pad < n`` and ``a - pad >= 0`` (UnsubtractLaneBounds).
    kernel = padded.padded_copy_summed if summed else padded.padded_copy
    x = torch.arange(1, 17, dtype=torch.float32)
    out = torch.zeros(32)
    arguments = {"x": x, "out": out, "n": 16, "pad": 4}

    if summed:
        _run(kernel, padded.SIGNATURE, padded.CONSTANTS, (1,), arguments, tmp_path)

        assert torch.equal(out[4:20], x) and not out[:4].any() and not out[20:].any()
    else:
        with pytest.raises(faults.Fault) as caught:
            _run(kernel, padded.SIGNATURE, padded.CONSTANTS, (1,), arguments, tmp_path)

        assert (caught.value.tensor, caught.value.access) == ("x", "read")


@pytest.mark.parametrize("unscaled", [False, True], ids=["scaled", "unscaled"])
def test_a_bound_on_strided_lanes_offsets_reads_every_lane(unscaled, tmp_path):
    # tests/reproducers/strided_lane_bound_reads_masked_lanes.py: the adapter
    # folds ``a < m`` into the strided copy, not ``a * K < n``
    # (UnscaleStridedLaneBounds).
    kernel = strided.diagonal_unscaled if unscaled else strided.diagonal
    x = torch.arange(25, dtype=torch.float32)
    out = torch.zeros(8)
    arguments = {"x": x, "out": out, "n": 25}

    if unscaled:
        _run(kernel, strided.SIGNATURE, strided.CONSTANTS, (1,), arguments, tmp_path)

        assert torch.equal(out[:5], x.view(5, 5).diagonal()) and not out[5:].any()
    else:
        with pytest.raises(faults.Fault) as caught:
            _run(
                kernel, strided.SIGNATURE, strided.CONSTANTS, (1,), arguments, tmp_path
            )

        assert (caught.value.tensor, caught.value.access) == ("x", "read")


def test_an_unmasked_store_past_the_tensor_is_a_write_fault(tmp_path):
    x = torch.arange(16, dtype=torch.float32)
    out = torch.zeros(10)

    with pytest.raises(faults.Fault) as caught:
        _run(
            unmasked_store,
            {"x_ptr": "*fp32", "out_ptr": "*fp32"},
            {"BLOCK": 16},
            (1,),
            {"x": x, "out": out},
            tmp_path,
        )

    assert caught.value.tensor == "out"
    assert caught.value.access == "write"
    assert caught.value.outside == 1


def test_an_integer_division_by_zero_is_reported_not_a_crash(tmp_path):
    x = torch.arange(16, dtype=torch.int32)
    out = torch.zeros(16, dtype=torch.int32)

    with pytest.raises(faults.Fault) as caught:
        _run(
            divide,
            {"x_ptr": "*i32", "out_ptr": "*i32", "divisor": "i32"},
            {"BLOCK": 16},
            (1,),
            {"x": x, "out": out, "divisor": 0},
            tmp_path,
        )

    assert caught.value.signal_name == "SIGFPE"
    assert caught.value.tensor is None


def test_a_lowered_kernel_is_cached_and_a_changed_one_is_not_trusted(tmp_path):
    linalg = _linalg(masked_gather, *GATHER)
    directory = tmp_path / "lowered"

    first = lowering.lower(linalg, directory)
    second = lowering.lower(linalg, directory)

    assert not first.cached and second.cached
    assert second.library == first.library

    first.library.write_bytes(first.library.read_bytes() + b"\0")
    third = lowering.lower(linalg, directory)

    assert not third.cached
