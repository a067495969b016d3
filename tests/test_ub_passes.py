"""The UB model, FitUnifiedBuffer, SplitSubBlocks and PersistentGrid on small modules (level 1)."""

import ast
import itertools
import textwrap

import pytest
import torch
from helpers import example_cases, rewrite, shared_example

from ninetoothed_ascend.ascendify import (
    FilterAutotuneKey,
    FitUnifiedBuffer,
    PersistentGrid,
    RewriteError,
    SplitSubBlocks,
)
from ninetoothed_ascend.compiler.npu.ub import configs as ub_configs
from ninetoothed_ascend.compiler.npu.ub.configs import kernel_configs, launch_configs
from ninetoothed_ascend.compiler.npu.ub.model import KernelModel, UnknownSize, footprint
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU
from ninetoothed_ascend.compiler.syntax import import_aliases, resolve
from ninetoothed_ascend.compiler.target import Soc, Target, soc
from ninetoothed_ascend.runtime.handle import VariantUnavailableError

#: FitUnifiedBuffer names the parameters its configs depend on;
#: FilterAutotuneKey puts them first in the key.
KEYED = (FilterAutotuneKey,)


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


def test_soc_defaults_to_a2_and_reads_the_environment(monkeypatch):
    monkeypatch.delenv("NINETOOTHED_ASCEND_UB_BYTES", raising=False)
    monkeypatch.delenv("ASCEND_UB_CAPACITY_BITS", raising=False)
    assert soc() == Soc(ub_bytes=196608, num_aicore=24, num_vectorcore=48)

    monkeypatch.setenv("ASCEND_UB_CAPACITY_BITS", str(8 * 1000))
    assert soc().ub_bytes == 1000

    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "2048")
    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_VECTORCORE", "40")
    assert (soc().ub_bytes, soc().num_vectorcore) == (2048, 40)

    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_AICORE", "many")
    with pytest.raises(ValueError, match="NINETOOTHED_ASCEND_NUM_AICORE"):
        soc()


AUTOTUNED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, B: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + pid * B + triton.language.arange(0, B))
    triton.language.store(q + pid * B + triton.language.arange(0, B), x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.size(0) + meta['B'] - 1) // meta['B'],)](p, q, p.size(0))
"""


def fitted_sizes(source):
    tree = ast.parse(source)

    return [config["B"] for _, configs in kernel_configs(tree) for config in configs]


def test_fit_unified_buffer_grows_blocks_to_the_budget(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, count = rewrite(FitUnifiedBuffer, AUTOTUNED)

    # 12 bytes per element (a double-buffered load and a result): NineToothed's
    # 32 and 1024, and 1024 doubled while it fits.
    assert fitted_sizes(source) == [32, 1024, 2048, 4096]
    assert "num_warps=8" in source
    assert count == 1


def test_fit_unified_buffer_shrinks_blocks_below_nineToothed_s(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 8))
    source, _ = rewrite(FitUnifiedBuffer, AUTOTUNED)

    assert fitted_sizes(source) == [8]


def test_fit_unified_buffer_names_the_smallest_footprint_when_nothing_fits(
    monkeypatch,
):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8")

    with pytest.raises(RewriteError, match=r"\{'B': 1\}, needs 12 bytes"):
        rewrite(FitUnifiedBuffer, AUTOTUNED)


HEAD_DIM_SIZED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, D: triton.language.constexpr, B: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + (pid * B + triton.language.arange(0, B))[:, None] * D + triton.language.arange(0, D)[None, :])
    triton.language.store(q + (pid * B + triton.language.arange(0, B))[:, None] * D + triton.language.arange(0, D)[None, :], x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 16}, num_warps=8), triton.Config({'B': 32}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.size(0) + meta['B'] - 1) // meta['B'],)](p, q, p.size(0), p.size(1))
"""


def test_fit_unified_buffer_prunes_configs_at_the_launch_by_a_launch_size(
    monkeypatch,
):
    # 12 bytes per element; 12 KB fit B x D = 1024: both of NineToothed's
    # configs up to D = 32, only B = 16 at D = 64, halvings beyond.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 1024))
    source, count = rewrite(FitUnifiedBuffer, HEAD_DIM_SIZED, then=KEYED)
    tree = ast.parse(source)

    def tried(d):
        return [config["B"] for config in launch_configs(tree, {"D": d})]

    assert count == 1
    assert tried(8) == tried(16) == tried(32) == [16, 32]
    assert tried(64) == [16]
    assert tried(100) == tried(128) == [8]
    assert tried(1024) == [1]
    assert "key=['D', 'n']" in source

    (launch,) = [node for node in tree.body if getattr(node, "name", "") == "launch"]
    recorded = []

    class Tuned:
        def __getitem__(self, grid):
            return lambda *args: recorded.append(args)

    class Tensor:
        def __init__(self, d):
            self.d = d

        def size(self, axis):
            return (64, self.d)[axis]

    namespace = {"tuned": Tuned()}
    exec(compile(ast.Module([launch], []), "<test>", "exec"), namespace)
    namespace["launch"](Tensor(1024), Tensor(1024))
    assert len(recorded) == 1

    # 2048 lanes of D do not fit even with B = 1: refused before compiling.
    with pytest.raises(
        ValueError, match=r"kernel `kernel` cannot run sizes \(2048,\) of D"
    ):
        namespace["launch"](Tensor(2048), Tensor(2048))


STRIDED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, s, t, B: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + (pid * B + triton.language.arange(0, B)) * s)
    triton.language.store(q + (pid * B + triton.language.arange(0, B)) * t, x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.size(0) + meta['B'] - 1) // meta['B'],)](p, q, p.size(0), p.stride(0), q.stride(0))
"""


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
    # Strided: the load's 32-byte block per element, single-buffered, live
    # at the store with the result and the store's own 32-byte blocks.
    assert peak() == peak(s=2) == 1024 * (32 + 4 + 32)


def test_fit_unified_buffer_prunes_configs_at_the_launch_by_its_strides(monkeypatch):
    # 12 bytes per lane contiguous, 68 strided: 48 KB fit 4096 and 512 lanes
    # (NineToothed's 32 and 1024 are the strided candidates: only 32 fits).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, count = rewrite(FitUnifiedBuffer, STRIDED, then=KEYED)
    tree = ast.parse(source)

    def tried(s, t):
        return [config["B"] for config in launch_configs(tree, {"s": s, "t": t})]

    assert count == 1
    assert tried(1, 1) == [32, 1024, 2048, 4096]
    assert tried(2, 1) == tried(1, 3) == [32]
    assert "key=['s', 't', 'n']" in source


FLATTENED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, m, s0, s1, B: triton.language.constexpr, F: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + ((pid * B + triton.language.arange(0, B)) * s1 if F else (pid * B + triton.language.arange(0, B)) // m * s0 + (pid * B + triton.language.arange(0, B)) % m * s1))
    triton.language.store(q + pid * B + triton.language.arange(0, B), x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.numel() + meta['B'] - 1) // meta['B'],)](p, q, p.numel(), p.size(1), p.stride(0), p.stride(1), F=p.stride(0) == p.size(1) * p.stride(1))
"""


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
    flags = footprint(kernel, aliases, {"B": 1024}, contiguous=True).layout_flags
    assert flags == {"F"}


def test_fit_unified_buffer_prunes_configs_at_the_launch_by_its_layout_flags(
    monkeypatch,
):
    # 12 bytes per lane with the flag true, 48 with it false: 48 KB fit
    # 4096 lanes, or 1024 (NineToothed's 32 and 1024, not extended).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, count = rewrite(FitUnifiedBuffer, FLATTENED, then=KEYED)
    tree = ast.parse(source)

    def tried(flag, s1=1):
        named = {"s1": s1, "F": flag}

        return [config["B"] for config in launch_configs(tree, named)]

    assert count == 1
    assert tried(True) == [32, 1024, 2048, 4096]
    assert tried(False) == tried(True, s1=2) == [32, 1024]
    assert "key=['s1', 'F', 'n']" in source


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
    # The reduction adds its scratch (2 bytes per lane reduced).
    assert model(source, {"B": 256}).peak == 256 * 4 * (4 * 2 + 2) + 256 * 4


STRIDED_HEAD_DIM = (
    HEAD_DIM_SIZED.replace(
        "triton.language.arange(0, D)[None, :]",
        "triton.language.arange(0, D)[None, :] * s",
    )
    .replace("n, D:", "n, s, D:")
    .replace("p.size(0), p.size(1))", "p.size(0), p.stride(1), p.size(1))")
)


def test_fit_unified_buffer_refuses_a_strided_launch_that_cannot_fit(monkeypatch):
    # 12 KB: contiguous (12 bytes per element), B x D = 1024 as in the
    # head-dimension test; strided rows (68 bytes per element) fit B x D =
    # 180, so at most D = 128 (B = 1).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 1024))
    source, _ = rewrite(FitUnifiedBuffer, STRIDED_HEAD_DIM)
    tree = ast.parse(source)

    def tried(d, s):
        return [config["B"] for config in launch_configs(tree, {"D": d, "s": s})]

    assert tried(64, 1) == [16]
    assert tried(64, 2) == [2]
    assert tried(128, 2) == [1]

    (launch,) = [node for node in tree.body if getattr(node, "name", "") == "launch"]
    recorded = []

    class Tuned:
        def __getitem__(self, grid):
            return lambda *args: recorded.append(args)

    class Tensor:
        def __init__(self, d, stride):
            self.d, self.step = d, stride

        def size(self, axis):
            return (64, self.d)[axis]

        def stride(self, axis):
            return self.step

    namespace = {"tuned": Tuned()}
    exec(compile(ast.Module([launch], []), "<test>", "exec"), namespace)
    namespace["launch"](Tensor(256, 1), Tensor(256, 1))
    namespace["launch"](Tensor(128, 2), Tensor(128, 2))
    assert len(recorded) == 2

    with pytest.raises(
        ValueError,
        match=r"kernel `kernel` cannot run on Ascend with an innermost stride other "
        r"than 1 \(s\) with D above 128: .* needs 17408 bytes .* "
        r"Pass contiguous tensors",
    ):
        namespace["launch"](Tensor(256, 2), Tensor(256, 2))

    assert len(recorded) == 2


def test_persistent_grid_loops_over_tasks_and_caps_the_grid():
    source, count = rewrite(PersistentGrid, AUTOTUNED)

    assert count == 1
    assert "ninetoothed_first_task = triton.language.program_id(0)" in source
    assert (
        "ninetoothed_num_tasks = (n + B - 1) // B\n"
        "    for pid in range(ninetoothed_first_task, ninetoothed_num_tasks, "
        "triton.language.num_programs(0)):\n        x = " in source
    )
    assert (
        "lambda meta: (min((p.size(0) + meta['B'] - 1) // meta['B'], "
        "ninetoothed_num_cores(False)),)" in source
    )


def test_persistent_grid_uses_ai_cores_for_dot_kernels():
    source, _ = rewrite(
        PersistentGrid,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(a, b, c, n):
            pid = tl.program_id(0)
            tl.store(c, tl.dot(tl.load(a), tl.load(b)))
        def launch(a, b, c):
            kernel[lambda meta: (a.size(0),)](a, b, c, a.size(0))
        """,
    )

    assert "ninetoothed_num_cores(True)" in source


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("(a.size(0), 2)", "not a one-element tuple"),
        ("(a.size(1),)", "uses `a.size\\(1\\)`"),
    ],
)
def test_persistent_grid_refuses_what_it_cannot_rewrite(grid, message):
    with pytest.raises(RewriteError, match=message):
        rewrite(
            PersistentGrid,
            f"""
            import triton
            import triton.language as tl
            @triton.jit
            def kernel(a, n):
                pid = tl.program_id(0)
            def launch(a):
                kernel[lambda meta: {grid}](a, a.size(0))
            """,
        )


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


@pytest.mark.parametrize(("name", "dtype", "case"), example_cases("ub_fit"))
def test_every_npu_config_of_every_example_fits_the_ub(name, dtype, case):
    module = shared_example(name)
    tree = ast.parse(module.kernel.source("npu"))
    aliases = import_aliases(tree)
    function = next(
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == module.kernel.kernel_name
    )
    # The launch's constexprs (caller-given block sizes, shapes made
    # constexpr, the layout flags it computes), with each autotune config
    # on top. Recorded through the NPU variant; where it cannot be imported
    # here (triton-ascend's libdevice), through the CPU variant: the same
    # kernel parameters, less the layout flags.
    inputs = module.inputs("cpu", dtype, **case)

    try:
        _, args, kwargs = record_launch(module, inputs)
    except VariantUnavailableError:
        _, args, kwargs = record_launch(module, inputs, variant="cpu")
    names = [argument.arg for argument in function.args.args]
    named = dict(zip(names, args)) | kwargs
    constants = {
        argument.arg: named[argument.arg]
        for argument in function.args.args
        if argument.annotation is not None
        and resolve(argument.annotation, aliases) == "triton.language.constexpr"
        and argument.arg in named
    }
    # And the integers a launch specializes (equal to 1: unit strides).
    constants |= {
        name: value
        for name, value in named.items()
        if type(value) is int and value == 1
    }
    configs = launch_configs(tree, named)

    for config in configs or [{}]:
        assert footprint(function, aliases, constants | config).peak <= soc().ub_bytes


def record_launch(module, inputs, variant="npu"):
    """Call a variant's launch function with the kernel replaced; return ``(grid, args, kwargs)``."""

    npu = module.kernel.module(variant)
    name = module.kernel.kernel_name
    launched = (
        f"{name}_with_auto_tuning" if f"{name}_with_auto_tuning" in vars(npu) else name
    )
    saved = vars(npu)[launched]
    calls = []

    class Recorder:
        def __call__(self):
            return self

        def __getitem__(self, grid):
            return lambda *args, **kwargs: calls.append((grid, args, kwargs))

    vars(npu)[launched] = Recorder()

    try:
        module.launch(getattr(npu, module.kernel.launch_name), *inputs)
    finally:
        vars(npu)[launched] = saved

    return calls[0]


def test_npu_grid_never_exceeds_the_cores_even_for_two_billion_elements():
    module = shared_example("add")
    size = 2**31 - 1
    inputs = tuple(torch.empty(size, device="meta") for _ in range(2))
    grid, _, _ = record_launch(module, inputs)
    configs = kernel_configs(ast.parse(module.kernel.source("npu")))[0][1]

    for config in configs:
        tasks = -(-size // next(iter(config.values())))

        assert tasks > 65535
        assert grid(config) == (soc().num_vectorcore,)


def test_npu_grid_is_the_task_count_when_it_is_smaller_than_the_cores():
    module = shared_example("add")
    inputs = tuple(torch.empty(100, device="meta") for _ in range(2))
    grid, _, _ = record_launch(module, inputs)
    (name,) = kernel_configs(ast.parse(module.kernel.source("npu")))[0][1][0]

    assert grid({name: 64}) == (2,)


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


def test_persistent_grid_gives_each_task_its_own_copy_of_reassigned_parameters():
    source, _ = rewrite(
        PersistentGrid,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(offsets, n, seq_len):
            pid = tl.program_id(0)
            x = seq_len + 1
            seq_len = tl.load(offsets + pid + 1) - tl.load(offsets + pid)
            tl.store(offsets, seq_len + x)
        def launch(a):
            kernel[lambda meta: (a.size(0),)](a, a.size(0), 3)
        """,
    )

    assert "x = seq_len + 1" in source
    assert "seq_len_in_task = tl.load(offsets + pid + 1)" in source
    assert "tl.store(offsets, seq_len_in_task + x)" in source


@pytest.mark.parametrize(
    "name", ["matmul", "bmm", "flash_attention", "conv2d", "paged_attention"]
)
def test_fit_unified_buffer_chooses_what_measuring_every_combination_chooses(
    name, monkeypatch
):
    # FitUnifiedBuffer skips combinations that dominate one that overflowed
    # (all block sizes at least 2); the NPU variant must be what measuring
    # every combination gives.
    source = shared_example(name).kernel.source("cuda")
    target = Target.from_environment("npu")
    pruned = run_pipeline(source, NPU, target).source

    def every_combination(names, values, measure, budget):
        combinations = itertools.product(*(values[name] for name in names))
        measured = ((measure(dict(zip(names, sizes))), sizes) for sizes in combinations)

        return [
            (bytes_, dict(zip(names, sizes)))
            for bytes_, sizes in measured
            if bytes_ <= budget
        ]

    monkeypatch.setattr(ub_configs, "_fitting", every_combination)

    assert run_pipeline(source, NPU, target).source == pruned


class _MeasuringEachLaunchSizeAfresh(FitUnifiedBuffer):
    # Forgets, at each launch size, the block sizes that overflowed at a smaller one.
    def choose(self, *args, overflowed=None, **kwargs):
        return super().choose(*args, **kwargs)


@pytest.mark.parametrize("ub_bytes", [196608, 65536])
@pytest.mark.parametrize("name", ["flash_attention", "attention_optional_mask"])
def test_fit_unified_buffer_chooses_what_measuring_each_launch_size_afresh_chooses(
    name, ub_bytes
):
    # Block sizes that overflowed at a smaller launch size are not measured
    # at a larger one; the NPU variant (its configs, pruner table and launch
    # refusals) must be what measuring them gives. The smaller UB makes
    # more of them overflow, and the launch sizes refused sooner.
    source = shared_example(name).kernel.source("cuda")
    target = Target(variant="npu", soc=Soc(ub_bytes=ub_bytes))
    afresh = tuple(
        _MeasuringEachLaunchSizeAfresh if pass_ is FitUnifiedBuffer else pass_
        for pass_ in NPU
    )
    remembered = run_pipeline(source, NPU, target).source

    assert "ninetoothed_fit_unified_buffer_" in remembered
    assert run_pipeline(source, afresh, target).source == remembered


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
