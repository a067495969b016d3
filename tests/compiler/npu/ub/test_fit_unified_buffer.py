"""FitUnifiedBuffer: configs chosen by the UB model, at generation and at the launch (level 1)."""

import ast
import itertools

import pytest
from helpers import example_cases, rewrite, shared_example
from ub_helpers import AUTOTUNED, FLATTENED, FLATTENED_FACTS, STRIDED, record_launch

from ninetoothed_ascend.compiler.npu.filter_autotune_key import FilterAutotuneKey
from ninetoothed_ascend.compiler.npu.ub import fit_unified_buffer as ub_configs
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import (
    FitUnifiedBuffer,
    kernel_configs,
    launch_configs,
)
from ninetoothed_ascend.compiler.npu.ub.model import footprint
from ninetoothed_ascend.compiler.passes import RewriteError, run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU
from ninetoothed_ascend.compiler.syntax import import_aliases, resolve
from ninetoothed_ascend.compiler.target import Soc, Target, soc
from ninetoothed_ascend.jit.handle import VariantUnavailableError
from ninetoothed_ascend.runtime import UnifiedBufferOverflowError

#: FitUnifiedBuffer names the parameters its configs depend on;
#: FilterAutotuneKey puts them first in the key.
KEYED = (FilterAutotuneKey,)


def fitted_sizes(source):
    tree = ast.parse(source)

    return [config["B"] for _, configs in kernel_configs(tree) for config in configs]


def tried_block_sizes(tree, **arguments):
    """The ``B`` of each config the autotuner of ``tree``'s module tries for a launch with ``arguments``."""

    return [config["B"] for config in launch_configs(tree, arguments)]


def recording_launch(tree):
    """``(launch, recorded)``: the module's ``launch`` with its imports from the plugin, its autotuner recording each call's arguments into ``recorded``."""

    recorded = []

    class Tuned:
        def __getitem__(self, grid):
            return lambda *args: recorded.append(args)

    plugin_imports = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and node.module.startswith("ninetoothed_ascend")
    ]
    (launch,) = [node for node in tree.body if getattr(node, "name", "") == "launch"]
    namespace = {"tuned": Tuned()}
    exec(
        compile(ast.Module([*plugin_imports, launch], []), "<test>", "exec"), namespace
    )

    return namespace["launch"], recorded


class Rows:
    """A stand-in for a ``(64, d)`` tensor whose innermost stride is ``stride``."""

    def __init__(self, d, stride=1):
        self.d, self.step = d, stride

    def size(self, axis):
        return (64, self.d)[axis]

    def stride(self, axis):
        return self.step


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

    # Three buffers of one element: one 32-byte UB block each.
    with pytest.raises(RewriteError, match=r"\{'B': 1\}, needs 96 bytes"):
        rewrite(FitUnifiedBuffer, AUTOTUNED)


HEAD_DIM_SIZED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, D: triton.language.constexpr, B: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + (pid * B + triton.language.arange(0, B))[:, None] * D + triton.language.arange(0, D)[None, :])
    triton.language.store(q + (pid * B + triton.language.arange(0, B))[:, None] * D + triton.language.arange(0, D)[None, :], x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.size(0) + meta['B'] - 1) // meta['B'],)](p, q, p.size(0), p.size(1))
"""


def fitted_by_head_dim(monkeypatch, ub_bytes, source=HEAD_DIM_SIZED):
    """``(source, tree, tried)``: ``source`` fitted to ``ub_bytes`` of UB (its one autotuner rewritten), keyed, and the ``B`` its launch tries by ``D``."""

    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(ub_bytes))
    source, count = rewrite(FitUnifiedBuffer, source, then=KEYED)
    tree = ast.parse(source)

    assert count == 1

    return source, tree, lambda d: tried_block_sizes(tree, D=d)


def test_fit_unified_buffer_prunes_configs_at_the_launch_by_a_launch_size(
    monkeypatch,
):
    # 12 bytes per element; 12 KB fit B x D = 1024: NineToothed's 32 up to
    # D = 32 (its 1024 never), halvings of it beyond (B spans NineToothed's
    # default range, so it is not bounded).
    source, tree, tried = fitted_by_head_dim(monkeypatch, 12 * 1024)

    assert tried(8) == tried(16) == tried(32) == [32]
    assert tried(64) == [16]
    assert tried(100) == tried(128) == [8]
    assert tried(1024) == [1]
    assert "key=['D', 'n']" in source

    launch, recorded = recording_launch(tree)
    launch(Rows(1024), Rows(1024))
    assert len(recorded) == 1

    # 2048 lanes of D do not fit even with B = 1: refused before compiling.
    with pytest.raises(
        UnifiedBufferOverflowError,
        match=r"kernel `kernel` cannot run sizes \(2048,\) of D",
    ):
        launch(Rows(2048), Rows(2048))


def test_fit_unified_buffer_sizes_launch_sizes_below_16_where_16_fits_nowhere(
    monkeypatch,
):
    # A pooling window's sides are launch sizes of a few lanes: ntops'
    # max_pool2d states kernel sizes up to 16, and 16 x 16 windows fit no
    # block size of its bounds. Here 96 bytes hold one row of each of the
    # three buffers (the load twice, the sum) at D <= 8, one 32-byte UB
    # block each: D = 16 fits no B, so smaller D are sized (B = 1) and a
    # launch of D above 8 is refused before compiling.
    _, tree, tried = fitted_by_head_dim(monkeypatch, 3 * 32)

    assert tried(1) == tried(3) == tried(4) == tried(8) == [1]
    assert tried(16) == []

    launch, recorded = recording_launch(tree)
    launch(Rows(8), Rows(8))
    assert len(recorded) == 1

    with pytest.raises(
        UnifiedBufferOverflowError,
        match=r"kernel `kernel` cannot run sizes \(16,\) of D on Ascend: at most 8 "
        r"fits .* at 16, .* needs 192 bytes",
    ):
        launch(Rows(16), Rows(16))


def test_fit_unified_buffer_prunes_configs_at_the_launch_by_its_strides(monkeypatch):
    # 12 bytes per lane contiguous, 32 strided: 48 KB fit 4096 and 1536 lanes
    # (NineToothed's 32 and 1024 are the strided candidates: both fit).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, count = rewrite(FitUnifiedBuffer, STRIDED, then=KEYED)
    tree = ast.parse(source)

    def tried(s, t):
        return [config["B"] for config in launch_configs(tree, {"s": s, "t": t})]

    assert count == 1
    assert tried(1, 1) == [32, 1024, 2048, 4096]
    assert tried(2, 1) == tried(1, 3) == [32, 1024]
    assert "key=['s', 't', 'n']" in source


def test_fit_unified_buffer_prunes_configs_at_the_launch_by_its_layout_flags(
    monkeypatch,
):
    # 12 bytes per lane with the flag true, 48 with it false: 48 KB fit
    # 4096 lanes, or 1024 (NineToothed's 32 and 1024, not extended).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, count = rewrite(
        FitUnifiedBuffer, FLATTENED, then=KEYED, facts=FLATTENED_FACTS
    )
    tree = ast.parse(source)

    def tried(flag, s1=1):
        named = {"s1": s1, "F": flag}

        return [config["B"] for config in launch_configs(tree, named)]

    assert count == 1
    assert tried(True) == [32, 1024, 2048, 4096]
    assert tried(False) == tried(True, s1=2) == [32, 1024]
    assert "key=['s1', 'F', 'n']" in source


def _with_configs(source, *sizes):
    configs = ", ".join(
        f"triton.Config({{'B': {size}}}, num_warps=8)" for size in sizes
    )

    return source.replace(
        "triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)",
        configs,
    )


def test_fit_unified_buffer_keeps_the_user_s_block_size_bounds(monkeypatch):
    # ``block_size(lower_bound=32, upper_bound=128)``: NineToothed's configs
    # 32, 64 and 128. A 48 KB UB would hold 4096 (the test above), but the
    # kernel means blocks of 32 to 128 only.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, _ = rewrite(FitUnifiedBuffer, _with_configs(AUTOTUNED, 32, 64, 128))

    assert fitted_sizes(source) == [32, 64, 128]

    # Bounded above only: still not extended past 128.
    source, _ = rewrite(FitUnifiedBuffer, _with_configs(AUTOTUNED, 32, 128))

    assert fitted_sizes(source) == [32, 128]


def test_fit_unified_buffer_refuses_rather_than_go_below_a_stated_lower_bound(
    monkeypatch,
):
    # 12 * 16 bytes hold B = 16, below the kernel's lower bound 64: the NPU
    # variant is refused, naming the bound, where it used to halve to 16.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 16))

    with pytest.raises(
        RewriteError,
        match=r"the smallest within the bounds the kernel states \(B 64\.\.256\), "
        r"\{'B': 64\}, needs 768 bytes",
    ) as caught:
        rewrite(FitUnifiedBuffer, _with_configs(AUTOTUNED, 64, 128, 256))

    assert "Lower the lower_bound of ninetoothed.block_size()" in caught.value.hint


def test_fit_unified_buffer_halves_a_sampled_default_block_size(monkeypatch):
    # ``block_size()`` under ``max_num_configs=3`` (ntops' pooling kernels):
    # NineToothed's sample shows 32 to 128, its lower bound but not its
    # upper one. 12 * 16 bytes hold B = 16: it is halved to fit, as a block
    # size spanning the default range is, but not doubled past 128.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 16))
    sampled = _with_configs(AUTOTUNED, 32, 64, 128)
    source, _ = rewrite(
        FitUnifiedBuffer, sampled, facts={ub_configs.MAX_NUM_CONFIGS: 3}
    )

    assert max(fitted_sizes(source)) == 16

    with pytest.raises(RewriteError, match=r"bounds the kernel states \(B 32\.\.128\)"):
        rewrite(FitUnifiedBuffer, sampled)

    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, _ = rewrite(
        FitUnifiedBuffer, sampled, facts={ub_configs.MAX_NUM_CONFIGS: 3}
    )

    assert fitted_sizes(source) == [32, 64, 128]


def test_fit_unified_buffer_refuses_a_launch_size_below_a_stated_lower_bound(
    monkeypatch,
):
    # Bounds 16..32 (attention's BLOCK_SIZE_M): 12 KB hold B x D = 1024, so
    # B = 16 fits up to D = 64; beyond, the launch is refused rather than
    # run with B = 8.
    source, _, tried = fitted_by_head_dim(
        monkeypatch, 12 * 1024, _with_configs(HEAD_DIM_SIZED, 16, 32)
    )

    assert tried(32) == [16, 32]
    assert tried(64) == [16]
    assert tried(128) == []
    assert "at most 64 fits" in source


def test_fit_unified_buffer_tries_at_most_the_user_s_max_num_configs(monkeypatch):
    # ``make(..., max_num_configs=2)``: the two largest that fit, of the
    # eight it would choose.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 4096))
    source, _ = rewrite(
        FitUnifiedBuffer, AUTOTUNED, facts={ub_configs.MAX_NUM_CONFIGS: 2}
    )

    assert fitted_sizes(source) == [2048, 4096]

    # Per launch, where configs are chosen per launch size and layout.
    source, _ = rewrite(
        FitUnifiedBuffer, STRIDED, facts={ub_configs.MAX_NUM_CONFIGS: 1}, then=KEYED
    )
    tree = ast.parse(source)

    for strides in ({"s": 1, "t": 1}, {"s": 2, "t": 1}):
        assert len(launch_configs(tree, strides)) == 1


def test_fit_unified_buffer_keeps_one_of_the_user_s_num_warps_and_num_stages():
    # ``make(..., num_warps=(4, 2), num_stages=(2, 3))``: every NPU config
    # takes a pair the user gave (NineToothed's first).
    source = AUTOTUNED.replace(
        "triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)",
        ", ".join(
            f"triton.Config({{'B': {size}}}, num_warps={warps}, num_stages={stages})"
            for size in (32, 1024)
            for warps, stages in ((4, 2), (2, 3))
        ),
    )
    source, _ = rewrite(FitUnifiedBuffer, source)
    compiler_options = {
        tuple(ast.literal_eval(keyword.value) for keyword in node.keywords)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Config"
    }

    assert compiler_options == {(4, 2)}


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
    # head-dimension test; strided rows (32 bytes per element) fit B x D =
    # 384, so at most D = 256 (B = 1).
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 1024))
    source, _ = rewrite(FitUnifiedBuffer, STRIDED_HEAD_DIM)
    tree = ast.parse(source)

    def tried(d, s):
        return [config["B"] for config in launch_configs(tree, {"D": d, "s": s})]

    assert tried(64, 1) == [16]
    assert tried(64, 2) == [4]
    assert tried(256, 2) == [1]

    launch, recorded = recording_launch(tree)
    launch(Rows(256, 1), Rows(256, 1))
    launch(Rows(256, 2), Rows(256, 2))
    assert len(recorded) == 2

    with pytest.raises(
        UnifiedBufferOverflowError,
        match=r"kernel `kernel` cannot run on Ascend with an innermost stride other "
        r"than 1 \(s\) with D above 256: .* needs 16384 bytes .* "
        r"Pass contiguous tensors",
    ):
        launch(Rows(512, 2), Rows(512, 2))

    assert len(recorded) == 2


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
