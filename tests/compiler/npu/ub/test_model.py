"""The UB model on small modules (level 1)."""

import ast
import textwrap

import pytest
from helpers import shared_example
from ub_helpers import FLATTENED, STRIDED

from ninetoothed_ascend.compiler.facts import LayoutFacts
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import LOAD, STORE
from ninetoothed_ascend.compiler.npu.compensate_float64_cancellation import (
    LOAD_WITH_RESIDUAL,
    SUBTRACT,
)
from ninetoothed_ascend.compiler.npu.lower_float64 import DEMOTE
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import (
    kernel_configs,
)
from ninetoothed_ascend.compiler.npu.ub.model import (
    KernelModel,
    ShapeMismatch,
    UnknownSize,
    footprint,
)
from ninetoothed_ascend.compiler.syntax import import_aliases


def model(source, constexprs, **options):
    tree = ast.parse(textwrap.dedent(source))
    kernel = next(node for node in tree.body if isinstance(node, ast.FunctionDef))

    return footprint(kernel, import_aliases(tree), constexprs, **options)


ELEMENTWISE = """
import triton
import triton.language as tl

@triton.jit
def kernel(p, q, n, B: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(p + pid * B + tl.arange(0, B), mask=pid * B + tl.arange(0, B) < n, other=0)
    tl.store(q + pid * B + tl.arange(0, B), x + 1, mask=pid * B + tl.arange(0, B) < n)
"""


def test_model_counts_double_buffered_loads_and_results():
    # load: 1024 * 4 bytes, twice (multibuffer); x + 1: 1024 * 4 bytes.
    assert model(ELEMENTWISE, {"B": 1024}).peak == 8192 + 4096
    assert model(ELEMENTWISE, {"B": 1024}).loads == 4096
    assert model(ELEMENTWISE, {"B": 1024}, multibuffer=False).peak == 4096 + 4096


def test_model_uses_element_sizes_by_pointer_parameter():
    assert model(ELEMENTWISE, {"B": 1024}, elem_sizes={"p": 2}).peak == 4096 + 2048


def test_model_sizes_casts_by_their_target_and_reductions_as_scalars():
    source = """
    import triton.language as tl
    def kernel(p, q, B: tl.constexpr):
        x = tl.cast(tl.load(p + tl.arange(0, B)[None, :]), tl.float16)
        s = tl.sum(x * x)
        tl.store(q + tl.arange(0, B)[None, :], x / s)
    """
    # Peak at the store: x (2-byte, live) + x / s (2-byte); before it, the
    # load (2 * 4 bytes) and its cast (2 bytes) at once.
    assert model(source, {"B": 256}).peak == 256 * (8 + 2)


def test_model_keeps_loop_carried_tiles_live_and_sizes_dots_in_fp32():
    source = """
    import triton.language as tl
    def kernel(a, b, c, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
        acc = tl.zeros((M, N), dtype=tl.float32)
        for k in range(K):
            x = tl.load(a + tl.arange(0, M)[:, None] + tl.arange(0, BK)[None, :])
            y = tl.load(b + tl.arange(0, BK)[:, None] + tl.arange(0, N)[None, :])
            acc += tl.dot(x, y)
        tl.store(c + tl.arange(0, M)[:, None] + tl.arange(0, N)[None, :], acc)
    """
    sizes = {"M": 64, "N": 32, "BK": 16}
    loads = 2 * 4 * (64 * 16 + 16 * 32)
    # At `acc += dot`: acc (live through the loop), x and y, the dot's
    # result and the sum (the model allocates every result, no in-place update).
    assert model(source, sizes).peak == 64 * 32 * 4 + loads + 2 * 64 * 32 * 4


def test_model_counts_loads_inside_a_tile_method_call():
    # NineToothed writes casts as methods of expressions: `(s * load(q)).to(t)`.
    source = """
    import triton.language as tl
    def kernel(p, q, B: tl.constexpr):
        x = (2.0 * tl.load(p + tl.arange(0, B))).to(tl.float16)
        tl.store(q + tl.arange(0, B), x)
    """
    # Peak: the load (2 * 4 bytes) and the product (4 bytes); the cast (2
    # bytes) is computed from the product alone.
    assert model(source, {"B": 1024}).loads == 4096
    assert model(source, {"B": 1024}).peak == 1024 * (8 + 4)


def test_model_raises_for_an_extent_it_was_not_given():
    with pytest.raises(UnknownSize):
        model(ELEMENTWISE, {})


def test_model_counts_strided_accesses_at_32_bytes_per_element():
    tree = ast.parse(STRIDED)
    kernel = tree.body[2]
    aliases = import_aliases(tree)

    def peak(**options):
        return footprint(kernel, aliases, {"B": 1024} | options).peak

    # Contiguous (s = t = 1, as a launch specializes them): 12 bytes per lane.
    assert peak(s=1, t=1) == 1024 * 12
    assert footprint(kernel, aliases, {"B": 1024}, contiguous=True).peak == 1024 * 12
    contiguous = footprint(kernel, aliases, {"B": 1024}, contiguous=True)
    assert contiguous.unit_strides == {"s", "t"}
    # Strided: the load's 32-byte block per element, single-buffered; x + 1,
    # laid out so too, computed in place of x (its last read) and scattered
    # from there.
    assert peak() == peak(s=2) == 1024 * 32


def test_model_prices_a_flattened_gather_by_its_layout_flag():
    tree = ast.parse(FLATTENED)
    kernel = tree.body[2]
    aliases = import_aliases(tree)

    def peak(**options):
        return footprint(kernel, aliases, {"B": 1024, "s1": 1} | options).peak

    # The flag true: the affine address, a double-buffered load and x + 1.
    assert peak(F=True) == 1024 * 12
    # False: the gather's 32-byte blocks and its index vectors (16 bytes per
    # lane, to the statement's end; flat_cast/flat_mul, BiShengIR).
    assert peak(F=False) == 1024 * (32 + 16)
    # The flags are the facts ContiguousFlatAccess publishes: which
    # parameter chooses an address form is not guessed from the address.
    layout = LayoutFacts(layout_flags=frozenset({"F"}))
    flags = footprint(kernel, aliases, {"B": 1024}, contiguous=True, layout=layout)
    assert flags.layout_flags == {"F"}
    assert not footprint(kernel, aliases, {"B": 1024}, contiguous=True).layout_flags


def test_model_drops_a_reduced_negative_axis():
    source = """
    import triton.language as tl

    @triton.jit
    def kernel(p, q, B: tl.constexpr):
        x = tl.load(p + tl.arange(0, B)[:, None] * 4 + tl.arange(0, 4)[None, :])
        tl.store(q + tl.arange(0, B), tl.max(x, axis=-1))
    """

    # A (B, 4) load, double-buffered, and its (B,) maximum; before, the
    # maximum kept its 4 lanes and the store broadcast it to B x B.
    # The reduction adds its scratch (2 bytes per lane reduced); each row of
    # 4 lanes takes one 32-byte UB block per copy.
    assert model(source, {"B": 256}).peak == 256 * 32 * 2 + 256 * 4 * 2 + 256 * 4


@pytest.mark.parametrize("name", ["flash_attention", "conv2d", "matmul"])
def test_one_kernel_model_gives_what_a_fresh_model_gives_for_each_set_of_values(
    name,
):
    # KernelModel keeps what does not depend on the values between
    # footprints; nothing that does may leak from one set to the next.
    tree = ast.parse(shared_example(name).kernel.source("cuda"))
    aliases = import_aliases(tree)
    ((kernel, configs),) = kernel_configs(tree)
    sizes = [
        {**config, **dict.fromkeys(_launch_sized(kernel, aliases, config), value)}
        for config in configs[:3]
        for value in (16, 64)
    ]
    model = KernelModel(kernel, aliases)

    for contiguous in (True, False, True):
        for constexprs in sizes:
            assert model.footprint(constexprs, contiguous=contiguous) == footprint(
                kernel, aliases, constexprs, contiguous=contiguous
            )


def _launch_sized(kernel, aliases, config):
    known = dict(config)

    while True:
        try:
            footprint(kernel, aliases, known, contiguous=True)
        except UnknownSize as error:
            known[error.args[0]] = 16
            continue

        return sorted(set(known) - set(config))


def test_model_keeps_a_strided_load_s_buffer_through_lower_float64s_helper():
    # LowerFloat64 wraps every load in a helper that the frontend folds away
    # for every dtype but fp64: the add computes on both strided loads'
    # buffers of 32-byte blocks at once, in place of one (add fp32 with
    # innermost strides of 3 at 4096 lanes: 262,144 B, BiShengIR's
    # overflow), and on a contiguous load's block as for any function.
    source = f"""
    import triton.language as tl
    def kernel(a, b, c, s, B: tl.constexpr):
        x = {DEMOTE}(tl.load(a + tl.arange(0, B) * s))
        y = {DEMOTE}(tl.load(b + tl.arange(0, B) * s))
        tl.store(c + tl.arange(0, B), x + y)
    """

    assert model(source, {"B": 4096, "s": 3}).peak == 4096 * (32 + 32)
    # Contiguous, at y's statement: x, y's double-buffered load and its
    # block after the helper.
    assert model(source, {"B": 4096, "s": 1}).peak == 4096 * (4 + 2 * 4 + 4)


def test_model_keeps_a_strided_load_s_layout_in_the_values_computed_from_it():
    # BiShengIR gives every value computed from a strided load one 32-byte
    # block per element, as the load (ntops' atan along a dimension of
    # stride 3: 8,192-B buffers for 256 lanes, 1,024-B with stride 1).
    source = """
    import triton.language as tl
    def kernel(p, q, s, B: tl.constexpr):
        x = tl.load(p + tl.arange(0, B) * s)
        y = x * x
        z = y + x
        tl.store(q + tl.arange(0, B) * s, z)
    """

    # x, and y beside it (x is read again); z in place of y, both read for
    # the last time.
    assert model(source, {"B": 1024, "s": 3}).peak == 1024 * (32 + 32)
    # Contiguous: 4 bytes per element, x double-buffered.
    assert model(source, {"B": 1024, "s": 1}).peak == 1024 * (2 * 4 + 4 + 4)


def test_model_lays_out_a_broadcast_result_by_its_own_innermost_axis():
    # A strided column (one element per row, whatever its layout) broadcast
    # along a contiguous row: the result's rows are the row's, 4 bytes per
    # element.
    source = """
    import triton.language as tl
    def kernel(p, q, r, s, B: tl.constexpr, C: tl.constexpr):
        column = tl.load(p + tl.arange(0, B)[:, None] * s)
        row = tl.load(q + tl.arange(0, C)[None, :])
        tl.store(r + tl.arange(0, B)[:, None] * C + tl.arange(0, C)[None, :], column + row)
    """

    # column: B rows of one 32-byte block; row: C elements, double-buffered;
    # the sum: B x C elements of 4 bytes.
    assert (
        model(source, {"B": 64, "C": 64, "s": 3}).peak
        == 64 * 32 + 2 * 64 * 4 + 64 * 64 * 4
    )


@pytest.mark.parametrize("stride", (1, 3))
def test_model_costs_the_loads_and_stores_of_fp64_bits_as_the_accesses_they_replace(
    stride,
):
    # AccessFloat64AsBits' helpers stand where LowerFloat64's wrapper wrapped
    # a load and where a store was: the variant as generated is costed as
    # the passes before them saw it.
    wrapped = f"""
    import triton.language as tl
    def kernel(a, b, c, s, n, B: tl.constexpr):
        x = {DEMOTE}(tl.load(a + tl.arange(0, B) * s, mask=tl.arange(0, B) < n, other=0))
        y = {DEMOTE}(tl.load(b + tl.arange(0, B) * s))
        tl.store(c + tl.arange(0, B), x + y, mask=tl.arange(0, B) < n)
    """
    accessed = f"""
    import triton.language as tl
    def kernel(a, b, c, s, n, B: tl.constexpr):
        x = {LOAD}(a + tl.arange(0, B) * s, tl.arange(0, B) < n, 0)
        y = {LOAD}(b + tl.arange(0, B) * s, None, None)
        {STORE}(c + tl.arange(0, B), x + y, tl.arange(0, B) < n)
    """
    constexprs = {"B": 4096, "s": stride}

    assert model(accessed, constexprs) == model(wrapped, constexprs)


def test_model_costs_a_load_with_its_residual_as_the_load_and_one_more_block():
    source = """
    import triton.language as tl
    def kernel(a, c, B: tl.constexpr):
        x = LOADED
        tl.store(c + tl.arange(0, B), (x - 1.0) * 2)
    """
    load = f"{LOAD}(a + tl.arange(0, B), None, None)"
    split = (
        f"{LOAD_WITH_RESIDUAL}(a + tl.arange(0, B), None, None)\n"
        f"        d = {SUBTRACT}(r, x, 1.0)"
    )
    alone = model(source.replace("LOADED", load), {"B": 1024}).peak

    kept = model(
        source.replace("x = LOADED", f"x, r = {split}").replace("x - 1.0", "d"),
        {"B": 1024},
    ).peak

    assert kept == alone + 1024 * 4


@pytest.mark.parametrize("function", ("zeros", "full"))
def test_model_sizes_a_constant_shaped_like_a_tile_as_one_of_its_extents(function):
    # ntops' conv2d: `tl.zeros(mm_output.shape, dtype=...)`.
    source = f"""
    import triton.language as tl
    def kernel(p, q, B: tl.constexpr):
        x = tl.load(p + tl.arange(0, B)[:, None] + tl.arange(0, B)[None, :])
        acc = tl.{function}(SHAPE, {"0.0, " if function == "full" else ""}dtype=tl.float32)
        tl.store(q + tl.arange(0, B)[:, None] + tl.arange(0, B)[None, :], acc + x)
    """

    assert model(source.replace("SHAPE", "x.shape"), {"B": 64}) == model(
        source.replace("SHAPE", "(B, B)"), {"B": 64}
    )
    with pytest.raises(UnknownSize):
        model(source.replace("SHAPE", "y.shape"), {"B": 64})


def test_model_prices_pythons_max_of_two_operands_as_elementwise():
    # ntops' relu: `max(0.0, x)`, which Triton computes elementwise; the
    # model took it for the reduction `tl.max` and priced the kernel at 0 B.
    source = """
    import triton.language as tl
    def kernel(p, q, B: tl.constexpr):
        tl.store(q + tl.arange(0, B), FUNCTION(0.0, tl.load(p + tl.arange(0, B))))
    """

    for function in ("max", "min"):
        assert model(source.replace("FUNCTION", function), {"B": 1024}).peak == (
            model(source.replace("FUNCTION", "tl.maximum"), {"B": 1024}).peak
        )
    assert model(source.replace("FUNCTION", "max"), {"B": 1024}).peak > 0


def test_model_sizes_a_broadcast_as_a_tile_of_its_shape_and_an_expanded_axis_as_a_view():
    # ntops' bincount: `broadcast_to(input, (bin_ids.shape[0], input.shape[1]))`
    # and `expand_dims(bin_ids, 1)`; the broadcasts were priced as their
    # inputs (8,756 B where BiShengIR needed 198,656).
    source = """
    import triton.language as tl
    def kernel(p, q, r, B: tl.constexpr, T: tl.constexpr):
        x = tl.load(p + tl.arange(0, T))
        ids = tl.load(q + tl.arange(0, B))
        hits = tl.broadcast_to(x, (B, T)) == tl.expand_dims(ids, 1)
        tl.store(r + tl.arange(0, B), tl.sum(hits.to(tl.float32), axis=1))
    """
    sizes = {"B": 1024, "T": 64}
    peak = model(source, sizes).peak
    # At least the broadcast (4 bytes) and the comparison (1 byte) of B x T.
    assert peak >= 1024 * 64 * (4 + 1)
    # expand_dims allocates nothing: the same peak as the indexed form.
    assert (
        peak
        == model(source.replace("tl.expand_dims(ids, 1)", "ids[:, None]"), sizes).peak
    )


def _trace(source, constexprs):
    tree = ast.parse(textwrap.dedent(source))
    kernel = next(node for node in tree.body if isinstance(node, ast.FunctionDef))

    return KernelModel(kernel, import_aliases(tree)).trace(constexprs)


#: ntops' bincount with its 128 bins a parameter ``E`` and its 128 input
#: lanes not: ``E`` bins meet ``128`` inputs in ``match`` and ``where``.
BROADCAST = """
import triton.language as tl
def kernel(p, q, r, E: tl.constexpr):
    ids = tl.expand_dims(tl.load(q + tl.arange(0, E)), 1)
    x = tl.broadcast_to(tl.load(p + tl.arange(0, 128)[None, :]), (E, 128))
    valid = tl.broadcast_to(tl.expand_dims(tl.arange(0, 128) < 100, 0), (E, 128))
    hits = tl.where(valid, x == ids, False)
    tl.store(r + tl.arange(0, E), tl.sum(hits.to(tl.float32), axis=1))
"""


def test_model_trace_refuses_shapes_that_do_not_broadcast():
    # The extent made a parameter everywhere the kernel states it: the
    # trace follows the bins, the reduction along the inputs, the store.
    trace = _trace(BROADCAST, {"E": 257})
    assert (257, 128) in trace.shapes
    assert trace.reduced == (128,)
    assert trace.stored == frozenset({(257,)})

    # The bins a parameter in the loads but not in the shapes the kernel
    # broadcasts to: ``(257, 1) == (128, 128)`` does not broadcast.
    with pytest.raises(ShapeMismatch):
        _trace(BROADCAST.replace("(E, 128)", "(128, 128)"), {"E": 257})

    # A broadcast_to of a (1, 257) tile to (257, 128).
    with pytest.raises(ShapeMismatch):
        _trace(
            BROADCAST.replace("tl.arange(0, 128)[None, :]", "tl.arange(0, E)[None, :]"),
            {"E": 257},
        )

    # A footprint takes the larger extent of each axis, as it did.
    mismatched = BROADCAST.replace("(E, 128)", "(128, 128)")
    assert model(mismatched, {"E": 257}).peak > 0


def test_model_pads_each_row_of_a_tile_to_whole_ub_blocks():
    # BiShengIR plans a (1024, 1) int32 tile as memref<1024x8x1xi32> and a
    # (1024, 2) fp32 window as 32 bytes per row (ntops' max_pool1d).
    source = """
    import triton.language as tl
    def kernel(p, q, W: tl.constexpr):
        offsets = tl.arange(0, 1024)[:, None] * W + tl.arange(0, W)[None, :]
        tl.store(q + offsets, tl.load(p + offsets) + 1)
    """

    # Two copies of the load and the sum, 32 bytes per row each whatever
    # the window, until a row holds more than one block.
    narrow = model(source, {"W": 2}).peak
    assert narrow >= 3 * 1024 * 32
    assert model(source, {"W": 8}).peak == narrow
    assert model(source, {"W": 16}).peak > narrow


def test_model_counts_a_where_s_widened_condition():
    # BiShengIR widens a where's condition to i16 and f16 for the vector
    # select (ntops' bincount: one 128x128xi16 and one 128x128xf16 per where).
    source = """
    import triton.language as tl
    def kernel(p, q):
        x = tl.load(p + tl.arange(0, 4096))
        tl.store(q + tl.arange(0, 4096), OPERATION)
    """
    where = model(source.replace("OPERATION", "tl.where(x > 0, x, 0.0)"), {}).peak
    product = model(source.replace("OPERATION", "(x > 0) * x"), {}).peak

    assert where - product == 4096 * 4


ROW_DIGITS = """
import triton
import triton.language as tl

@triton.jit
def kernel(p, q, C, L, s0, s1, s2):
    rows = tl.program_id(0) * 1024 + tl.arange(0, 1024)[:, None]
    window = tl.arange(0, 2)[None, :]
    x = tl.load(p + rows // (C * L) * s0 + rows % (C * L) // L * s1 + (rows % L * 2 + window) * s2)
    tl.store(q + tl.program_id(0) * 1024 + tl.arange(0, 1024), tl.max(x, axis=1))
"""


def test_model_counts_the_row_digits_of_a_window_gather_once_each_while_they_live():
    # ntops' pooling (block_size=1024): each row's output position is split
    # into digits on (1024, 1) int32 tiles, 32 bytes per row each in
    # BiShengIR's plan (max_pool1d, window 2, fp32: 462,944 B in all); the
    # flat rate of 16 bytes per gathered lane counted 32,768 of them.
    peak = model(ROW_DIGITS, {}).peak
    load = 1024 * 2 * 32

    assert peak - load >= 4 * 1024 * 32
    # `rows % (C * L)` is written twice and computed once.
    assert peak == model(ROW_DIGITS.replace("rows % L", "rows % (C * L) % L"), {}).peak


def test_model_gives_a_kernel_that_moves_one_element_a_ub_block():
    # ntops' select_copy: one element loaded and stored per program
    # (BiShengIR plans 194 B); a kernel that loads is never 0 bytes.
    source = """
    import triton.language as tl
    def kernel(p, q, i):
        pid = tl.program_id(0)
        tl.store(q + pid, tl.load(p + pid * 8 + i))
    """
    assert model(source, {}).peak == 32
