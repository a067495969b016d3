"""FilterAutotuneKey: on small modules, and on a 4-D kernel of four tensors made by NineToothed."""

import ast
import re

import ninetoothed
import pytest
from helpers import rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.generated import GeneratedModule
from ninetoothed_ascend.compiler.npu.defer_autotune import DeferAutotune
from ninetoothed_ascend.compiler.npu.filter_autotune_key import FilterAutotuneKey
from ninetoothed_ascend.compiler.pipelines import NPU as PIPELINE
from ninetoothed_ascend.compiler.target import AUTOTUNE_KEYS_UP_TO_3_2 as MAX_KEYS
from ninetoothed_ascend.compiler.target import Target

MODULE = """
import triton
import triton.language

@triton.jit
def kernel(p, n0, n1, s0, s1, q, m0, m1, t0, t1, B: triton.language.constexpr):
    i = triton.language.program_id(0) % ((n1 + B - 1) // B)
    j = (m0 + B - 1) // B

kernel_tuned = triton.autotune(configs=[], key=['n0', 'n1', 's0', 's1', 'm0', 'm1', 't0', 't1'])(kernel)

def launch(x, y):
    kernel_tuned[lambda meta: (x.size(1) // meta['B'],)](x, x.size(0), x.size(1), x.stride(0), x.stride(1), y, y.size(0), y.size(1), y.stride(0), y.stride(1))
"""


def _key(source):
    (autotuner,) = GeneratedModule(ast.parse(source)).autotuners()

    return ast.literal_eval(autotuner.keyword("key").value)


def test_filter_autotune_key_keeps_sizes_grid_first_then_tiles():
    source, count = rewrite(FilterAutotuneKey, MODULE)

    assert count == 1
    # n1 decides the grid, m0 (then n1) the number of tiles; strides are gone.
    assert _key(source) == ["n1", "m0", "n0", "m1"]


def test_filter_autotune_key_classifies_by_the_launch_not_by_names():
    renamed = MODULE.replace("x.size(0)", "x.stride(0)", 1)
    source, _ = rewrite(FilterAutotuneKey, renamed)

    assert "n0" not in _key(source)


def test_filter_autotune_key_leaves_an_autotuner_without_a_launch():
    source, count = rewrite(FilterAutotuneKey, MODULE.split("def launch")[0])

    assert count == 0
    assert len(_key(source)) == 8


# The limit follows the target's triton-ascend: 12 axes up to 3.2, 6 after.
@pytest.mark.parametrize("version, limit", [("3.2.0", MAX_KEYS), ("3.5.0", 6)])
def test_filter_autotune_key_caps_the_key(version, limit):
    parameters = ", ".join(f"n{index}" for index in range(20))
    arguments = ", ".join(f"x.size({index})" for index in range(20))
    source, count = rewrite(
        FilterAutotuneKey,
        f"""
import triton
@triton.jit
def kernel(p, {parameters}):
    pass
tuned = triton.autotune(configs=[], key={[f"n{index}" for index in range(20)]})(kernel)
def launch(x):
    tuned[lambda meta: (x.size(19),)](x, {arguments})
""",
        Target("npu", triton_ascend_version=version),
    )

    assert count == 1
    assert _key(source) == ["n19"] + [f"n{index}" for index in range(limit - 1)]


def test_filter_autotune_key_runs_before_defer_autotune():
    assert PIPELINE.index(FilterAutotuneKey) < PIPELINE.index(DeferAutotune)


def _attention_like():
    def arrangement(
        q,
        k,
        v,
        o,
        BLOCK_SIZE_M=ninetoothed.block_size(),
        BLOCK_SIZE_N=ninetoothed.block_size(),
    ):
        tile = (1, 1, BLOCK_SIZE_M, BLOCK_SIZE_N)

        return q.tile(tile), k.tile(tile), v.tile(tile), o.tile(tile)

    def application(q, k, v, o):
        o = q * k + v  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement,
        application,
        tuple(Tensor(4) for _ in range(4)),
        kernel_name="attention_like",
    )


def test_filter_autotune_key_on_four_4d_tensors():
    kernel = _attention_like()
    cuda_key = _key(kernel.source("cuda"))
    source, count = rewrite(FilterAutotuneKey, kernel.source("cuda"))
    key = _key(source)

    assert len(cuda_key) == 32  # every size and stride of four 4-D tensors
    assert count == 1
    assert len(key) == MAX_KEYS
    assert all("size" in name for name in key)
    # Every size the grid reads is kept, and comes first.
    module = ast.parse(kernel.source("cuda"))
    (launch,) = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
    ]
    (definition,) = [
        node
        for node in module.body
        if isinstance(node, ast.FunctionDef) and node.decorator_list
    ]
    passed = {
        parameter.arg: ast.dump(argument)
        for parameter, argument in zip(definition.args.args, launch.args)
    }
    grid_sizes = {
        ast.dump(node)
        for node in ast.walk(launch.func.slice)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size"
    }
    assert len(grid_sizes) == 4
    assert {passed[name] for name in key[: len(grid_sizes)]} == grid_sizes
    # In the NPU variant (inside DeferAutotune's factory) the innermost
    # strides that decide FitUnifiedBuffer's configs come first (docs/ub.md, "Fit
    # decided by the launch"); the rest is the filtered key, in order.
    (npu_key,) = re.findall(r"key=(\[[^\]]*\])", kernel.source("npu"))
    npu_key = ast.literal_eval(npu_key)
    front = npu_key[: len(npu_key) - len(set(npu_key) & set(key))]
    assert len(npu_key) == MAX_KEYS
    assert front and all("stride" in name for name in front)
    assert npu_key[len(front) :] == key[: MAX_KEYS - len(front)]
    assert ("FilterAutotuneKey", 1) in kernel.rewrites("npu")
