"""UseHf32InDot: on small modules (level 1) and through the Ascend compile check (level 2)."""

import ast
import importlib.util
import types

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.use_hf32_in_dot import UseHf32InDot
from ninetoothed_ascend.compiler.passes import (
    run_pipeline,
)

KERNEL = """
import triton
import triton.language

@triton.jit
def kernel(a_pointer, b_pointer, output_pointer):
    rows = triton.language.arange(0, 16)[:, None] * 16
    columns = triton.language.arange(0, 16)[None, :]
    accumulator = triton.language.zeros((16, 16), dtype=triton.language.float32)
    accumulator += triton.language.dot(triton.language.load(a_pointer + rows + columns), triton.language.load(b_pointer + rows + columns), input_precision="PRECISION")
    triton.language.store(output_pointer + rows + columns, accumulator)
"""


def _compile(source, tmp_path, pointer):
    from ninetoothed_ascend.check.compile_check import compile_stages

    path = tmp_path / f"dot_{pointer[1:]}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"a_pointer": pointer, "b_pointer": pointer, "output_pointer": "*fp32"}

    return compile_stages(module.kernel, signature, {})[0]


@pytest.mark.ascend
@pytest.mark.parametrize("pointer", ["*fp16", "*fp32"])
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_tf32_fails_without_the_pass_and_passes_with_it(precision, pointer, tmp_path):
    from ninetoothed_ascend.check.compile_check import StageError

    source = KERNEL.replace("PRECISION", precision)

    with pytest.raises(StageError, match="please use input_precision='hf32' on Ascend"):
        _compile(source, tmp_path, pointer)

    rewritten = run_pipeline(source, (UseHf32InDot,))
    assert rewritten.rewrites == (("UseHf32InDot", 1),)
    assert "func.func" in _compile(rewritten.source, tmp_path, pointer)


@pytest.mark.ascend
@pytest.mark.parametrize("pointer", ["*fp16"])
def test_unconditional_hf32_fails_for_fp16(pointer, tmp_path):
    """Why the pass decides by dtype: hf32 is refused for anything but fp32 x fp32."""

    from ninetoothed_ascend.check.compile_check import StageError

    with pytest.raises(StageError, match="'hf32' must be used with f32 \\* f32 = f32"):
        _compile(KERNEL.replace("PRECISION", "hf32"), tmp_path, pointer)


FP32 = (
    "('hf32' if b.dtype == triton.language.float32 else 'ieee') "
    "if a.dtype == triton.language.float32 else 'ieee'"
)


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            'tl.dot(a, b, input_precision="tf32")',
            f"tl.dot(a, b, input_precision={FP32})",
        ),
        (
            'tl.dot(a, b, input_precision="tf32x3")',
            "tl.dot(a, b, input_precision='ieee')",
        ),
        ('tl.dot(a, b, acc, "tf32")', f"tl.dot(a, b, acc, {FP32})"),
        ("tl.dot(a, b, allow_tf32=True)", f"tl.dot(a, b, input_precision={FP32})"),
        ("tl.dot(a, b, allow_tf32=False)", "tl.dot(a, b)"),
        (
            'tl.dot(a, b, input_precision="tf32", out_dtype=tl.float16)',
            "tl.dot(a, b, input_precision=(('hf32' if tl.float16 == triton.language.float32 "
            "else 'ieee') if b.dtype == triton.language.float32 else 'ieee') "
            "if a.dtype == triton.language.float32 else 'ieee', out_dtype=tl.float16)",
        ),
    ],
)
def test_use_hf32_in_dot(call, expected):
    source, count = rewrite(UseHf32InDot, f"import triton.language as tl\ny = {call}")

    assert source.splitlines()[-1] == f"y = {expected}"
    assert count == 1


def test_use_hf32_binds_operands_once_before_the_statement():
    source, count = rewrite(
        UseHf32InDot,
        """
        import triton.language as tl
        def kernel(p, q):
            acc = 0
            for k in range(4):
                acc += tl.dot(tl.load(p + k), tl.load(q + k), input_precision="tf32")
            return acc
        """,
    )

    assert count == 1
    assert source.count("tl.load(") == 2
    assert (
        "        ninetoothed_ascend_dot_operand_0 = tl.load(p + k)\n"
        "        ninetoothed_ascend_dot_operand_1 = tl.load(q + k)\n"
        "        acc += tl.dot(ninetoothed_ascend_dot_operand_0, ninetoothed_ascend_dot_operand_1, "
        "input_precision=('hf32' if ninetoothed_ascend_dot_operand_1.dtype == triton.language.float32 "
        "else 'ieee') if ninetoothed_ascend_dot_operand_0.dtype == triton.language.float32 else 'ieee')\n"
        "    return acc" in source
    )


def test_use_hf32_binds_operands_before_their_statement_in_every_statement_list():
    # Each ``dot`` is in another kind of statement list; its operands are
    # bound just before the statement holding it, in that list.
    source, count = rewrite(
        UseHf32InDot,
        """
        import triton.language as tl
        def kernel(p, flag):
            if flag:
                a = tl.dot(tl.load(p), b, input_precision="tf32")
            else:
                a = tl.dot(tl.load(p + 1), b, input_precision="tf32")
            while flag:
                a = tl.dot(tl.load(p + 2), b, input_precision="tf32")
            with context:
                a = tl.dot(tl.load(p + 3), b, input_precision="tf32")
            try:
                a = tl.dot(tl.load(p + 4), b, input_precision="tf32")
            except ValueError:
                a = tl.dot(tl.load(p + 5), b, input_precision="tf32")
            finally:
                a = tl.dot(tl.load(p + 6), b, input_precision="tf32")
            return a
        """,
    )

    assert count == 7
    lines = source.splitlines()

    for offset in ("p", "p + 1", "p + 2", "p + 3", "p + 4", "p + 5", "p + 6"):
        (position,) = [
            index
            for index, line in enumerate(lines)
            if line.endswith(f" = tl.load({offset})")
        ]
        binding, statement = lines[position], lines[position + 1]
        indent = binding[: len(binding) - len(binding.lstrip())]
        operand = binding.strip().split(" = ")[0]

        assert operand.startswith("ninetoothed_ascend_dot_operand_")
        assert statement.startswith(f"{indent}a = tl.dot({operand}, b, ")


def test_use_hf32_keeps_ieee():
    assert_no_rewrite(
        UseHf32InDot,
        'import triton.language as tl\ny = tl.dot(a, b, input_precision="ieee")',
    )


PRECISION_IN_BRANCHES = """
import triton.language as tl
def kernel(a, b, flag: tl.constexpr, mode: tl.constexpr):
    if flag == 0:
        precision: tl.constexpr = "tf32"
    else:
        precision: tl.constexpr = "ieee"
    y = tl.dot(a, b, input_precision=precision)
"""


def test_use_hf32_follows_a_precision_bound_in_branches():
    source, count = rewrite(UseHf32InDot, PRECISION_IN_BRANCHES)

    assert count == 1
    assert source.splitlines()[-1] == (
        f"    y = tl.dot(a, b, input_precision=({FP32}) if precision == 'tf32' "
        "else 'ieee' if precision == 'tf32x3' else precision)"
    )


@pytest.mark.parametrize(
    ("precision", "dtype", "expected"),
    [
        ("tf32", "float32", "hf32"),
        ("tf32", "float16", "ieee"),
        ("tf32x3", "float32", "ieee"),
        # The downstream library's matmul: "ieee" chosen in the kernel stays
        # "ieee" for fp32 operands (it read hf32, emulated on a GPU as tf32,
        # 1e-3 off: test_library.py::test_matmul[1] on the H100).
        ("ieee", "float32", "ieee"),
        ("ieee", "float16", "ieee"),
    ],
)
def test_use_hf32_precision_bound_in_branches_means_what_it_says(
    precision, dtype, expected
):
    source, _ = rewrite(UseHf32InDot, PRECISION_IN_BRANCHES)
    (call,) = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.dot"
    ]
    mode = call.keywords[0].value
    tensor = types.SimpleNamespace(dtype=dtype)
    language = types.SimpleNamespace(float32="float32")
    namespace = {
        "a": tensor,
        "b": tensor,
        "precision": precision,
        "triton": types.SimpleNamespace(language=language),
    }

    assert eval(compile(ast.Expression(mode), "<mode>", "eval"), namespace) == expected


@pytest.mark.parametrize(
    "binding",
    [
        "precision = mode",  # not a literal: unknown here
        "precision = 'ieee'",  # no tf32 mode among the literals
    ],
)
def test_use_hf32_leaves_a_precision_it_cannot_follow(binding):
    source = PRECISION_IN_BRANCHES.replace(
        'precision: tl.constexpr = "ieee"', binding
    ).replace('precision: tl.constexpr = "tf32"', binding)

    assert_no_rewrite(UseHf32InDot, source)


def test_use_hf32_leaves_a_precision_parameter():
    assert_no_rewrite(
        UseHf32InDot,
        "import triton.language as tl\n"
        "def kernel(a, b, mode: tl.constexpr):\n"
        "    y = tl.dot(a, b, input_precision=mode)",
    )
