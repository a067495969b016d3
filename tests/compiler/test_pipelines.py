"""The pipeline skips a pass only where it would rewrite nothing, and keeps what it knows of a module only while nothing rewrote it.

``run_pipeline`` finds what a module refers to once and keeps it across the
passes that report no rewrite; a pass whose ``TRIGGERS`` the module does
not refer to is not run, and after a rewrite it is asked from the references
before it and what the rewriting pass declares it introduces, without
looking again. These rest on facts of the passes, checked here
on every example, for every pipeline, pass by pass: a pass that reports no
rewrite leaves the tree as it was, and a pass that ``applies_to`` says
cannot apply rewrites nothing and records no fact when it is run anyway.
"""

import ast

import pytest
from conftest import EXAMPLE_NAMES
from helpers import shared_example

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.generated import GeneratedModule
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.syntax import clone
from ninetoothed_ascend.compiler.target import Target


def pipelines_of(name):
    """``(label, source, passes, target)`` of every pipeline example ``name`` goes through."""

    cuda = shared_example(name).kernel.source("cuda")
    runs = [
        (variant, cuda, passes, Target.from_environment(variant))
        for variant, passes in pipelines.VARIANTS.items()
    ]
    npu = run_pipeline(cuda, pipelines.NPU, Target.from_environment("npu")).source

    for device_type, passes in pipelines.EMULATIONS.items():
        runs.append(
            (
                f"npu emulated on {device_type}",
                npu,
                passes,
                Target.from_environment(device_type),
            )
        )

    return runs


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_a_pass_skipped_or_reporting_no_rewrite_leaves_the_module_as_it_was(name):
    checked = 0

    for label, source, passes, target in pipelines_of(name):
        tree = ast.parse(source)
        facts = {}

        for pass_class in passes:
            before = ast.dump(tree)

            if not pass_class.applies_to(GeneratedModule(tree)):
                skipped = clone(tree)
                recorded = _snapshot(facts)
                count = pass_class(target, facts).run(skipped)

                assert (count, ast.dump(skipped), _snapshot(facts)) == (
                    0,
                    before,
                    recorded,
                ), (
                    f"{label}: {pass_class.__name__} rewrote a module that refers to "
                    f"none of its triggers, or recorded a fact"
                )
                checked += 1

                continue

            try:
                count = pass_class(target, facts).run(tree)
            except Exception:  # the pipeline fails there as a whole: same below
                break

            if count == 0:
                assert ast.dump(tree) == before, (
                    f"{label}: {pass_class.__name__} changed the module but "
                    "reported no rewrite"
                )

    assert checked > 0


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_what_a_rewrite_introduces_is_declared_so_no_pass_that_applies_is_skipped(
    name,
):
    # ``run_pipeline`` asks whether a pass applies from the references before
    # the last rewrites and what those passes declare in ``INTRODUCES``;
    # wherever the rewritten tree itself refers to the triggers of a pass (of
    # any pipeline, so that the passes may be reordered), that answer must be
    # yes.
    for label, source, passes, target in pipelines_of(name):
        tree = ast.parse(source)
        module = GeneratedModule(tree)
        facts = {}

        for pass_class in passes:
            try:
                count = pass_class(target, facts).run(tree, module)
            except Exception:  # the pipeline fails there as a whole
                break

            if not count:
                continue

            module = module.rewritten(pass_class.INTRODUCES)
            exact = GeneratedModule(tree)
            missed = [
                other.__name__
                for other in pipelines.PASSES.values()
                if other.applies_to(exact) and not other.applies_to(module)
            ]

            assert not missed, (
                f"{label}: {pass_class.__name__} made the module refer to a "
                f"trigger of {missed} without declaring it in INTRODUCES"
            )


@pytest.mark.parametrize("name", ["add", "softmax", "matmul", "flash_attention"])
def test_the_pipeline_gives_what_running_every_pass_gives(name):
    for label, source, passes, target in pipelines_of(name):
        tree = ast.parse(source)
        fired = []
        facts = {}

        for pass_class in passes:
            count = pass_class(target, facts).run(tree)

            if count:
                fired.append((pass_class.__name__, count))

        rewritten = run_pipeline(source, passes, target)

        assert rewritten.source == ast.unparse(tree) + "\n", label
        assert rewritten.rewrites == tuple(fired), label


def test_references_resolve_imports_and_name_every_prefix():
    module = GeneratedModule(
        ast.parse(
            "import triton.language as tl\n"
            "from triton.language.extra import libdevice\n"
            "import math\n"
            "def f(x):\n"
            "    return tl.clamp(x, 0, 1) + libdevice.exp(x) + range(3)\n"
        )
    )

    assert {
        "triton",
        "triton.language",
        "triton.language.clamp",
        "triton.language.extra.libdevice",
        "triton.language.extra.libdevice.exp",
        "math",
        "range",
    } <= module.references
    assert module.refers_to(["triton.language.extra"])
    assert not module.refers_to(["triton.language.dot", "triton.autotune"])


def test_references_look_inside_attribute_chains_on_other_expressions():
    # ``tl.load(p).to(tl.float32).T``: the chain's base is a call, whose
    # names count; the attributes read off its result name nothing.
    module = GeneratedModule(
        ast.parse(
            "import triton.language as tl\n"
            "def g(p):\n"
            "    return tl.load(p).to(tl.float32).T + tl.arange(0, 4)[None, :].shape\n"
        )
    )

    assert {
        "triton.language.load",
        "triton.language.float32",
        "triton.language.arange",
        "p",
    } <= module.references
    assert not {"to", "T", "shape"} & module.references


def _snapshot(facts):
    """What the facts hold, to tell whether a pass recorded one: their dicts and lists copied, every other value by identity.

    A pass publishes a fact by adding it or replacing one (facts of
    ``ContiguousFlatAccess`` and ``TransposeStridedTiles`` are frozen and hold
    nodes of the tree, which a copy would not equal).
    """

    if isinstance(facts, dict):
        return {key: _snapshot(value) for key, value in facts.items()}

    if isinstance(facts, list):
        return [_snapshot(value) for value in facts]

    return id(facts)
