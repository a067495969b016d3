"""Shared by the tests: loading examples and running code in fresh processes."""

import ast
import functools
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import ninetoothed.language as ntl
import pytest
from conftest import EXAMPLE_NAMES, EXAMPLE_PATHS

from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler.target import Target

#: The repository's root directory.
ROOT = pathlib.Path(__file__).resolve().parent.parent


def rewrite(pass_class, source, target=None, then=(), facts=None):
    """Run one pass on ``source`` for ``target`` (default: the NPU variant's here); return the new source and the number of rewrites.

    ``then``: passes run after it, with the facts it left (``Pass.facts``),
    as the pipeline runs them; their rewrites are not counted. ``facts``:
    what the pipeline's caller passes (``run_pipeline``'s ``facts``), or
    what earlier passes would have published about ``source`` (``dict``,
    copied), for a source written by hand as their output.
    """

    tree = ast.parse(textwrap.dedent(source))
    target = target or Target.from_environment("npu")
    facts = dict(facts or {})
    count = pass_class(target, facts).run(tree)

    for later in then:
        later(target, facts).run(tree)

    return ast.unparse(tree), count


def npu_without(monkeypatch, *left_out):
    """Build NPU variants with the NPU pipeline less the passes ``left_out``, for this test only (what a pass exists for)."""

    from ninetoothed_ascend.compiler import pipelines

    monkeypatch.setitem(
        pipelines.VARIANTS,
        "npu",
        tuple(step for step in pipelines.NPU if step not in left_out),
    )


def assert_no_rewrite(pass_class, source):
    """Run one pass on ``source``, assert that it rewrote nothing, and return the source it left."""

    source, count = rewrite(pass_class, source)

    assert count == 0

    return source


def load_example(name):
    """Import example ``name`` afresh (its kernel is built, or loaded from the current cache)."""

    return examples.load_module(EXAMPLE_PATHS[name])


@functools.cache
def shared_example(name):
    """Import example ``name`` once per test process, for tests that only run its kernel."""

    return load_example(name)


def example_cases(check, dtypes=None, all_cases=True):
    """``pytest.param(name, dtype, case)`` for every example, each of its dtypes (or those of ``dtypes`` it has) and cases.

    :param check: ``str``, the kind of test (``"cpu"``, ``"emulation"``,
        ``"compile_check"``, ...). An example that cannot pass it yet says so
        in its ``KNOWN_FAILURES`` dict (``{check: reason}``); its cases are
        then marked strict ``xfail`` with that reason.
    :param dtypes: ``tuple`` of ``torch.dtype`` or ``None`` (all of each example's).
    :param all_cases: ``bool``; ``False`` takes each example's first case only.
    """

    def marks(module):
        reason = getattr(module, "KNOWN_FAILURES", {}).get(check)

        return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []

    return [
        pytest.param(
            name,
            dtype,
            case,
            id=f"{name}-{str(dtype).removeprefix('torch.')}"
            + "".join(f"-{key}={value}" for key, value in case.items()),
            marks=marks(shared_example(name)),
        )
        for name in EXAMPLE_NAMES
        for dtype in examples.dtypes(shared_example(name))
        if dtypes is None or dtype in dtypes
        for case in examples.cases(shared_example(name))[: None if all_cases else 1]
    ]


def run_python(code, cache_dir, **extra_env):
    """Run ``code`` in a new interpreter with ``cache_dir`` as the cache; return its last stdout line as JSON."""

    env = os.environ | {"NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir)} | extra_env
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr

    return json.loads(completed.stdout.strip().splitlines()[-1])


def assert_adapter_crashes_then_cured(
    function, rewritten_source, signature, constants, tmp_path
):
    """A reproducer ``function`` crashes triton-adapter-opt in one of three compiles; ``rewritten_source`` compiles three times.

    The crash is heap corruption, not certain on every run, hence the tries.
    Needs triton-ascend (the ``ascend`` tests).
    """

    from ninetoothed_ascend.check.compile_check import StageError, compile_stages

    outcomes = []

    for _ in range(3):
        try:
            compile_stages(function, signature, constants)
            outcomes.append("passed")
        except StageError as error:
            outcomes.append(error.stage)

    assert "ttadapter" in outcomes

    path = tmp_path / "rewritten.py"
    path.write_text(rewritten_source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    for _ in range(3):
        linalg, _ = compile_stages(
            getattr(module, function.fn.__name__), signature, constants
        )
        assert "func.func" in linalg


def launch_keywords(source, kernel="kernel"):
    """The keywords of a generated module's launch of ``kernel``: ``dict`` name -> unparsed expression."""

    (call,) = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and kernel in ast.unparse(node.func.value)
    ]

    return {keyword.arg: ast.unparse(keyword.value) for keyword in call.keywords}


def launch_flag(source, expression):
    """A function of a tensor: the value ``expression`` (a launch keyword of ``source`` reading one tensor's sizes and strides) takes for it."""

    from ninetoothed_ascend.compiler.npu.contiguous_flat_access import COLLAPSES

    names = {}
    exec(
        ast.unparse(
            [
                node
                for node in ast.parse(source).body
                if isinstance(node, ast.FunctionDef) and node.name == COLLAPSES
            ]
        ),
        names,
    )
    (tensor,) = set(re.findall(r"(ninetoothed_tensor_\d+)\.stride", expression))

    return lambda value: eval(expression, names | {tensor: value})


#: A flattened store whose tile is ``(BLOCK, N)``: rows through the flattened
#: dimensions of ``y``, columns along another dimension with its own stride
#: (conv2d's NCHW output as an ``(N * P * Q, K)`` tile), and a load of the same shape.
TRANSPOSED = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, x_size_0, x_size_1, x_size_2, x_stride_0, x_stride_1, x_stride_2, y_pointer, y_size_0, y_size_1, y_size_2, y_stride_0, y_stride_1, y_stride_2, BLOCK: tl.constexpr, N: tl.constexpr):
    i = tl.program_id(0)
    tile = tl.load(x_pointer + ((i * BLOCK + tl.arange(0, BLOCK)[:, None]) // x_size_2 * x_stride_0 + (i * BLOCK + tl.arange(0, BLOCK)[:, None]) % x_size_2 * x_stride_2) + tl.arange(0, N)[None, :] * x_stride_1)
    tl.store(y_pointer + ((i * BLOCK + tl.arange(0, BLOCK)[:, None]) // y_size_2 * y_stride_0 + (i * BLOCK + tl.arange(0, BLOCK)[:, None]) % y_size_2 * y_stride_2) + tl.arange(0, N)[None, :] * y_stride_1, tile)

def launch_kernel(x, y):
    kernel[(1,)](x, x.size(0), x.size(1), x.size(2), x.stride(0), x.stride(1), x.stride(2), y, y.size(0), y.size(1), y.size(2), y.stride(0), y.stride(1), y.stride(2))
"""


#: A flattened 2-D load, as NineToothed writes it, and its launch.
FLATTENED = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, x_size_0, x_size_1, x_stride_0, x_stride_1, y_pointer, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    flat = i * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_pointer + flat, tl.load(x_pointer + ((i * BLOCK + tl.arange(0, BLOCK)) // x_size_1 * x_stride_0 + (i * BLOCK + tl.arange(0, BLOCK)) % x_size_1 * x_stride_1), mask=(i * BLOCK + tl.arange(0, BLOCK) < x_size_0 * x_size_1) & (i >= 0) & ((i * BLOCK + tl.arange(0, BLOCK)) // x_size_1 < x_size_0) & ((i * BLOCK + tl.arange(0, BLOCK)) % x_size_1 < x_size_1)))

def launch_kernel(x, y):
    kernel[(1,)](x, x.size(0), x.size(1), x.stride(0), x.stride(1), y)
"""


def canary_payload(canary):
    """A Python expression that reads no name but ``x_size_0`` and, executed, runs ``touch canary`` (``object.__subclasses__()`` down to ``os.system``): what a pass must never execute."""

    subclasses = object.__subclasses__()
    index = next(
        i
        for i, cls in enumerate(subclasses)
        if cls.__name__ == "_wrap_close" and cls.__module__ == "os"
    )

    return (
        f"x_size_0.__class__.__mro__[1].__subclasses__()[{index}]"
        f".__init__.__globals__['system']('touch {canary}')"
    )


def sort_rows():
    """A kernel that sorts each row in one tile, as ``examples/sampling/sort.py``; rows of a power-of-two length, no padding."""

    from ninetoothed import Symbol, Tensor

    import ninetoothed_ascend

    block_size = Symbol("BLOCK_SIZE", constexpr=True)

    def arrangement(input, output, BLOCK_SIZE=block_size):
        return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))

    def application(input, output):
        output = ntl.sort(input, 1)  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement, application, (Tensor(2), Tensor(2)), kernel_name="sort_rows"
    )


def launch_sort_rows(kernel, input):
    """Launch :func:`sort_rows` on ``input`` (2-D tensor); return the sorted rows."""

    import torch
    import triton

    output = torch.empty_like(input)
    kernel(input, output, BLOCK_SIZE=triton.next_power_of_2(input.shape[-1]))

    return output


def rows_to_sort(dtype):
    """A 5 x 64 tensor of ``dtype`` (``torch.dtype``), the same on every call."""

    import torch

    generator = torch.Generator().manual_seed(0)

    return (torch.randn((5, 64), generator=generator) * 1000).to(dtype)
