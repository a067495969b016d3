"""The pass protocol and the pipeline runner: what fired, and the failing pass named."""

import ast

import pytest

from ninetoothed_ascend.compiler.npu.fold_true_mask import FoldTrueMask
from ninetoothed_ascend.compiler.passes import (
    Pass,
    PipelineError,
    RewriteError,
    run_pipeline,
    tile_names,
)
from ninetoothed_ascend.compiler.pipelines import NPU as PIPELINE


def test_pipeline_reports_the_failing_pass():
    class Refuses(Pass):
        def visit_Module(self, node):
            raise RewriteError("cannot do X.", "Do Y instead.")

    with pytest.raises(PipelineError, match="pass Refuses: cannot do X. Do Y instead."):
        run_pipeline("x = 1\n", (FoldTrueMask, Refuses))


def test_pipeline_names_a_pass_that_crashes():
    class Crashes(Pass):
        def visit_Module(self, node):
            raise ZeroDivisionError("boom")

    with pytest.raises(
        PipelineError, match="pass Crashes: crashed with ZeroDivisionError"
    ):
        run_pipeline("x = 1\n", (Crashes,))


def test_pipeline_reports_what_fired():
    rewritten = run_pipeline(
        "import triton\nimport triton.language\n"
        "y = triton.language.load(p, mask=True & m, other=None)\n",
        PIPELINE,
    )

    assert rewritten.rewrites == (("FoldTrueMask", 1), ("FillMaskedLoads", 1))
    names = [step.__name__ for step in PIPELINE]
    # Orders the passes rely on: masks are folded before their terms are
    # rewritten; composites of RemapLibdevice may cast to fp64, which
    # LowerFloat64 then lowers; the key is filtered while the autotuner is
    # still a module-level assignment.
    for before, after in (
        ("FoldTrueMask", "ScalarizeTileLowerBounds"),
        ("RemapLibdevice", "LowerFloat64"),
        ("FilterAutotuneKey", "DeferAutotune"),
    ):
        assert names.index(before) < names.index(after)
    assert "load(p, mask=m, other=0)" in rewritten.source


def test_tile_names_are_those_bound_to_an_arange_or_a_load_through_the_imports():
    tree = ast.parse(
        "import triton.language as tl\n"
        "def kernel(p, n):\n"
        "    pid = tl.program_id(0)\n"
        "    offsets = pid * 4 + tl.arange(0, 4)\n"
        "    x, y = tl.load(p + offsets), n\n"
        "    total = 0\n"
        "    total += tl.load(p)\n"
        "    for arange in range(n):\n"
        "        pass\n"
    )
    owner = Pass(target=None)
    owner.aliases = {"tl": "triton.language"}

    assert tile_names(owner, tree.body[1]) == {"offsets", "x", "y", "total"}
