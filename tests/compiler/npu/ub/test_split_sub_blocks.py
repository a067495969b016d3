"""SplitSubBlocks: caller-sized blocks looped over sub-blocks, or refused at the launch (level 1; one emulated run, level 4)."""

import ast

import ninetoothed.language as ntl
import pytest
import torch
from helpers import rewrite
from ninetoothed import Tensor
from ub_helpers import AUTOTUNED

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.ub.split_sub_blocks import SplitSubBlocks
from ninetoothed_ascend.runtime import UnifiedBufferOverflowError

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

    # A block a constexpr sizes: its split rewrites only its arange, not a
    # shape it is broadcast to or the axes it is placed on (a literal
    # block's split takes both).
    for placed in (
        "tl.broadcast_to(x - tl.max(x), (P,))",
        "tl.expand_dims(x - tl.max(x), 0)",
    ):
        source = SOFTMAX.replace("tl.exp(x - tl.max(x))", f"tl.exp({placed})")
        _, count = rewrite(SplitSubBlocks, source)
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


#: ntops' pooling, reduced to its form: 1024 windows per program, a block
#: size the caller fixes (``block_size=1024``), so NineToothed writes it into
#: the kernel; each window reduced along the other axis.
POOL = """
import triton
import triton.language as tl

@triton.jit
def kernel(p, q, n):
    pid = tl.program_id(0)
    lanes = pid * 1024 + tl.arange(0, 1024)
    window = tl.load(p + lanes[:, None] * 8 + tl.arange(0, 8)[None, :], mask=lanes[:, None] < n, other=float('-inf'))
    tl.store(q + lanes, tl.max(window, axis=1), mask=lanes < n)
"""


def test_split_sub_blocks_loops_over_a_literal_block_whose_lanes_are_independent(
    monkeypatch,
):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8192")
    source, count = rewrite(SplitSubBlocks, POOL)

    assert count == 1
    (loop,) = [
        node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.For)
    ]
    assert ast.unparse(loop.iter).startswith("range(0, 1024, ")
    sub = ast.literal_eval(loop.iter.args[2])
    assert 1 <= sub < 1024 and sub & (sub - 1) == 0
    # The whole body runs per sub-block: its lanes, the window load, the store.
    assert [type(statement) for statement in loop.body] == [ast.Assign] * 2 + [ast.Expr]
    assert (
        f"lanes = pid * 1024 + (ninetoothed_sub_block + tl.arange(0, {sub}))" in source
    )
    assert "tl.arange(0, 1024)" not in source
    assert "tl.arange(0, 8)[None, :]" in source
    assert "tl.max(window, axis=1)" in source


def test_split_sub_blocks_bounds_a_sub_block_s_lanes_below_by_its_start(monkeypatch):
    # NineToothed's masks hold ``arange(0, P) >= 0``; on a sub-block that
    # would be the runtime lower bound ``j + arange(0, S) >= 0`` that makes
    # triton-adapter-opt 3.2.0 read freed memory. ``j >= 0`` is the same mask.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8192")
    source, count = rewrite(
        SplitSubBlocks,
        POOL.replace(
            "mask=lanes[:, None] < n,",
            "mask=(lanes[:, None] < n) & (tl.arange(0, 1024)[:, None] >= 0),",
        ).replace("mask=lanes < n)", "mask=(lanes < n) & (tl.arange(0, 1024) >= 0))"),
    )

    assert count == 1
    assert source.count("& (ninetoothed_sub_block >= 0)") == 2
    assert ") >= 0" not in source


@pytest.mark.parametrize(
    ("original", "replacement"),
    [
        ("tl.max(window, axis=1)", "tl.max(window, axis=0)"),
        (
            "lanes[:, None] * 8 + tl.arange(0, 8)[None, :]",
            "lanes[:, None] * 8 + tl.zeros((1024, 8), tl.int32)",
        ),
        # The same lanes on two axes: no choice of the places the kernel
        # states 1024 puts the block on one axis.
        ("tl.arange(0, 8)[None, :]", "lanes[None, :]"),
    ],
    ids=["reduced-along-the-block", "constant-of-the-block-shape", "two-block-axes"],
)
def test_split_sub_blocks_leaves_a_literal_block_whose_lanes_depend_on_each_other(
    monkeypatch, original, replacement
):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8192")
    _, count = rewrite(SplitSubBlocks, POOL.replace(original, replacement))

    assert count == 0


#: ntops' bincount as NineToothed writes it at 65 to 128 inputs, reduced to
#: its form: 128 bins a program (``block_size=128``) and 128 input lanes
#: (``T_pow2``), both ``tl.arange(0, 128)``, told apart by their indexing
#: (``[:,]``, ``[None, :]``); ``(128,)[0]`` and ``(1, 128)[1]`` are
#: NineToothed's ``bin_ids.shape[0]`` and ``input.shape[1]``. The kernel
#: reduces along the inputs: the bins are independent.
BINCOUNT = """
import triton
import triton.language as tl

@triton.jit
def kernel(x, w, out, ids, n, T: tl.constexpr):
    pid = tl.program_id(0)
    bin_ids_col = tl.expand_dims(tl.load(ids + pid * 128 + tl.arange(0, 128)[:,], mask=pid * 128 + tl.arange(0, 128)[:,] < n, other=0), 1)
    input_b = tl.broadcast_to(tl.load(x + tl.arange(0, 128)[None, :], mask=tl.arange(0, 128)[None, :] < T, other=0), ((128,)[0], (1, 128)[1]))
    weights_b = tl.broadcast_to(tl.load(w + tl.arange(0, 128)[None, :], mask=tl.arange(0, 128)[None, :] < T, other=0), ((128,)[0], (1, 128)[1]))
    col_indices = tl.arange(0, (1, 128)[1])
    col_valid = col_indices < T
    col_valid_b = tl.expand_dims(col_valid, 0)
    col_valid_b = tl.broadcast_to(col_valid_b, ((128,)[0], (1, 128)[1]))
    match_mask = input_b == bin_ids_col
    final_mask = tl.where(col_valid_b, match_mask, False)
    selected = tl.where(final_mask, weights_b, 0.0)
    result = tl.sum(selected, axis=1)
    tl.store(out + pid * 128 + tl.arange(0, 128)[:,], result, mask=pid * 128 + tl.arange(0, 128)[:,] < n)
"""


def test_split_sub_blocks_splits_the_bins_of_a_literal_block_that_meets_an_axis_of_its_extent(
    monkeypatch,
):
    """Level 1: of the two axes of 128, the bins (stored, not reduced) are split; the inputs, reduced, stay whole."""

    # 213,504 B by the model, as ntops' bincount at 65 to 128 inputs.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "65536")
    source, count = rewrite(SplitSubBlocks, BINCOUNT)

    assert count == 1
    (loop,) = [
        node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.For)
    ]
    assert ast.unparse(loop.iter) == "range(0, 128, 32)"
    # The bins: their aranges and the dimension NineToothed writes for them.
    assert "(ninetoothed_sub_block + tl.arange(0, 32))[:,]" in source
    assert "tl.arange(0, 128)[:,]" not in source
    assert "(128,)[0]" not in source
    assert source.count("(32, (1, 128)[1])") == 3
    # The inputs, whole.
    assert source.count("tl.arange(0, 128)[None, :]") == 4
    assert "col_indices = tl.arange(0, (1, 128)[1])" in source
    assert "tl.sum(selected, axis=1)" in source
    # The same on every sub-block, before the loop; ``col_valid_b``, assigned
    # again per sub-block with the bins' extent, in it (a loop cannot carry
    # it with two shapes).
    statements = ast.parse(source).body[-1].body
    assert ast.unparse(statements[2]) == "col_valid = col_indices < T"
    assert [ast.unparse(node.targets[0]) for node in loop.body[3:5]] == [
        "col_valid_b",
        "col_valid_b",
    ]


@pytest.mark.parametrize(
    ("original", "replacement"),
    [
        # Reduced along the bins, stored along the inputs.
        ("tl.sum(selected, axis=1)", "tl.sum(selected, axis=0)"),
        # The bins' dimension read as a number, not a shape: the split
        # would compare sub-block lanes with the sub-block's size.
        ("< n, other=0), 1)", "< (128,)[0], other=0), 1)"),
    ],
    ids=["reduced-along-the-bins", "dimension-read-as-a-number"],
)
def test_split_sub_blocks_leaves_a_bincount_whose_bins_it_cannot_tell(
    monkeypatch, original, replacement
):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "65536")
    assert original in BINCOUNT
    _, count = rewrite(SplitSubBlocks, BINCOUNT.replace(original, replacement))

    assert count == 0


def _bincount(inputs_pow2):
    """A weighted bincount arranged as ntops arranges its own: 128 bins a program (``block_size=128``), every program reading the whole input, padded to ``inputs_pow2`` lanes; the bins' sums reduced along the inputs."""

    def arrangement(input, weights, output, bin_ids, length, bins):
        output_tiled = output.tile((128,))
        bin_ids_tiled = bin_ids.tile((128,))
        programs = output_tiled.shape[0]
        input_tiled = (
            input.unsqueeze(0).expand((programs, -1)).tile((1, inputs_pow2)).squeeze(1)
        )
        weights_tiled = (
            weights.unsqueeze(0)
            .expand((programs, -1))
            .tile((1, inputs_pow2))
            .squeeze(1)
        )

        return input_tiled, weights_tiled, output_tiled, bin_ids_tiled, length, bins

    def application(input, weights, output, bin_ids, length, bins):
        bin_ids_col = ntl.expand_dims(bin_ids, 1)
        input_b = ntl.broadcast_to(input, (bin_ids.shape[0], input.shape[1]))
        weights_b = ntl.broadcast_to(weights, (bin_ids.shape[0], weights.shape[1]))
        col_indices = ntl.arange(0, input.shape[1])
        col_valid = col_indices < length
        col_valid_b = ntl.expand_dims(col_valid, 0)
        col_valid_b = ntl.broadcast_to(col_valid_b, (bin_ids.shape[0], input.shape[1]))
        match_mask = input_b == bin_ids_col
        final_mask = ntl.where(col_valid_b, match_mask, False)
        selected = ntl.where(final_mask, weights_b, 0.0)
        output = ntl.sum(selected, axis=1)  # noqa: F841

    constexpr = {"constexpr": True}

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (
            Tensor(1, shape_options=constexpr),
            Tensor(1, shape_options=constexpr),
            Tensor(1, shape_options=constexpr),
            Tensor(1, shape_options=constexpr),
            Tensor(0, constexpr=True),
            Tensor(0, constexpr=True),
        ),
        kernel_name="bincount",
    )


def _bincount_inputs(length, bins):
    generator = torch.Generator().manual_seed(0)
    input = torch.randint(0, bins, (length,), generator=generator, dtype=torch.int32)
    weights = torch.rand(length, generator=generator)

    return (
        input,
        weights,
        torch.zeros(bins),
        torch.arange(bins, dtype=torch.int32),
        length,
        bins,
    )


def test_a_bincount_split_along_its_bins_matches_torch_emulated(monkeypatch):
    """Level 4 (CPU interpreter): 100 inputs padded to 128 lanes meet 128 bins a program, both ``tl.arange(0, 128)``; under a 64 KB Unified Buffer the bins run in sub-blocks, and the sums are torch's over two programs and a ragged end."""

    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "65536")
    handle = _bincount(128)
    inputs = _bincount_inputs(100, 200)

    handle.emulated("cpu")(*inputs)

    assert "for ninetoothed_sub_block in range(0, 128, " in handle.source("npu")
    input, weights, output = inputs[:3]
    expected = torch.bincount(input, weights, minlength=200).to(torch.float32)
    assert torch.allclose(output, expected, atol=1e-5)


@pytest.mark.ascend
def test_a_bincount_split_along_its_bins_reaches_hivmc():
    """Level 3: BiShengIR (ascendnpu-ir 1.2.0, Ascend910B1) plans the bincount of 100 inputs split along its bins within the UB; unsplit, its launch was refused (213,504 B by the model; BiShengIR needed 198,656 B)."""

    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import BiShengIRStage, check_variant

    if bishengir.missing():
        pytest.fail(bishengir.missing())

    handle = _bincount(128)

    with BiShengIRStage(timeout=120) as stage:
        (result,) = check_variant(
            handle,
            lambda kernel, *inputs: kernel(*inputs),
            *_bincount_inputs(100, 100),
            bishengir=stage,
        )

    assert "for ninetoothed_sub_block in range(0, 128, " in handle.source("npu")
    assert result.bishengir.outcome == "hivmc", result.bishengir.message


def test_split_sub_blocks_takes_libdevice_math_as_lane_by_lane(monkeypatch):
    # ntops' lp_pool1d raises each window to a power with libdevice's pow.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8192")
    source = POOL.replace(
        "import triton.language as tl",
        "import triton.language as tl\nfrom triton.language.extra.ascend import libdevice",
    )
    powered = source.replace("tl.max(window", "tl.sum(libdevice.pow(window, 2.0)")
    flipped = source.replace("tl.max(window", "tl.max(libdevice.flip(window, 1)")

    assert rewrite(SplitSubBlocks, powered)[1] == 1
    assert rewrite(SplitSubBlocks, flipped)[1] == 0


def _max_pool1d():
    """A max pool of windows of 2, stride 2, arranged as ntops' ``max_pool1d`` arranges it (``block_size=1024``)."""

    def rows(input, output):
        windows = input.tile((1, 1, 2), (1, 1, 2)).ravel()
        windows = windows.flatten(end_dim=3).flatten(start_dim=1).tile((1, 2))
        outputs = output.tile((1, 1, 1)).ravel()

        return windows, outputs.flatten(end_dim=3).flatten(start_dim=1)

    return _max_of_rows(rows, 3, "max_pool1d")


def _pool_inputs():
    input = torch.randn(2, 3, 1500)

    return input, torch.empty(2, 3, 750)


def test_a_window_gather_s_row_digits_split_its_literal_block_emulated():
    """Level 4 (CPU interpreter): the 1024 rows of ntops' max_pool1d arrangement overflow the UB by their row digits (BiShengIR: 462,944 B at window 2, fp32), so they run in sub-blocks; the result is torch's."""

    handle = _max_pool1d()
    input, output = _pool_inputs()

    handle.emulated("cpu")(input, output)

    assert "for ninetoothed_sub_block in range(0, 1024, " in handle.source("npu")
    assert torch.equal(output, torch.nn.functional.max_pool1d(input, 2))


@pytest.mark.ascend
def test_a_window_gather_split_for_its_row_digits_reaches_hivmc():
    """Level 3: BiShengIR (ascendnpu-ir 1.2.0, Ascend910B1) plans the split kernel within the UB; unsplit it needs 462,944 B."""

    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import BiShengIRStage, check_variant

    if bishengir.missing():
        pytest.fail(bishengir.missing())

    with BiShengIRStage(timeout=120) as stage:
        (result,) = check_variant(
            _max_pool1d(),
            lambda kernel, *inputs: kernel(*inputs),
            *_pool_inputs(),
            bishengir=stage,
        )

    assert result.bishengir.outcome == "hivmc", result.bishengir.message


def _window_max():
    """The max of each row of 8 (``block_size=1024``)."""

    return _max_of_rows(
        lambda input, output: (input.tile((1, 8)), output), 2, "window_max"
    )


def _max_of_rows(rows, ndim, kernel_name):
    """The max of each window, 1024 windows per program, arranged as ntops arranges its pooling: ``rows(input, output)`` gives the windows, one ``(1, W)`` tile a row, and the outputs, one a row."""

    def arrangement(input, output):
        input_arranged, output_arranged = rows(input, output)
        input_arranged.dtype = input_arranged.dtype.squeeze(0)
        input_arranged = input_arranged.tile((1024, -1))
        input_arranged.dtype = input_arranged.dtype.ravel().squeeze(1)
        output_arranged = output_arranged.tile((1024, -1))
        output_arranged.dtype = output_arranged.dtype.squeeze(1)

        return input_arranged, output_arranged

    def application(input, output):
        output = ntl.max(input, axis=1)  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (Tensor(ndim, other=float("-inf")), Tensor(ndim)),
        kernel_name=kernel_name,
    )


def test_a_literal_block_split_into_sub_blocks_matches_torch_emulated(monkeypatch):
    """Level 4 (CPU interpreter): the NPU variant, its 1024 rows in sub-blocks, against torch, over three programs and a ragged end."""

    # 1024 rows of 8 fp32 do not fit 32 KB by the model.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "32768")
    handle = _window_max()
    input = torch.randn(3000, 8)
    output = torch.empty(3000, 1)

    handle.emulated("cpu")(input, output)

    assert "for ninetoothed_sub_block in range(0, 1024, " in handle.source("npu")
    assert torch.equal(output[:, 0], input.max(1).values)


def test_a_literal_block_it_cannot_split_is_refused_at_the_launch_emulated(
    monkeypatch,
):
    """Level 4 (CPU interpreter): a prefix sum over a block of 1024 the kernel states overflows a 2 KB Unified Buffer by the model, and its lanes depend on each other; the launch raises before anything compiles, naming the kernel and the bytes, and the same kernel runs where it fits."""

    def arrangement(input, output):
        return input.tile((1024,)), output.tile((1024,))

    def application(input, output):
        output = ntl.cumsum(input, 0)  # noqa: F841

    def make():
        return ninetoothed_ascend.make(
            arrangement,
            application,
            (Tensor(1, other=0), Tensor(1)),
            kernel_name="block_prefix_sum",
        )

    input = torch.randn(3000)
    output = torch.empty(3000)
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "2048")

    with pytest.raises(UnifiedBufferOverflowError) as refused:
        make().emulated("cpu")(input, output)

    message = str(refused.value)
    assert "kernel `block_prefix_sum` (NPU variant)" in message
    assert "2048 available" in message

    monkeypatch.delenv("NINETOOTHED_ASCEND_UB_BYTES")
    make().emulated("cpu")(input, output)

    expected = torch.nn.functional.pad(input, (0, 72)).view(3, 1024).cumsum(1)
    assert torch.allclose(output, expected.flatten()[:3000], atol=1e-3)
