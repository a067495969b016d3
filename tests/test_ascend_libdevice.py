"""Level 2: each function of triton-ascend 3.2.0's libdevice through its ttir and ttadapter stages.

What the libdevice table (ninetoothed_ascend.libdevice_table.ASCEND_FUNCTIONS)
says about triton-ascend: that the functions with a portable meaning
compile, but those it marks ``refused``, which are strict xfails (the
NPU variant never calls them: RemapLibdevice maps around them). Runs in
the triton-ascend environment; no NPU is involved.
"""

import importlib.util

import pytest

from ninetoothed_ascend.compile_check import StageError, compile_stages
from ninetoothed_ascend.libdevice_table import ASCEND_FUNCTIONS

pytestmark = pytest.mark.ascend

ELEMENTWISE = sorted(
    name
    for name, function in ASCEND_FUNCTIONS.items()
    if function.portable is not None and name != "umulhi"
)

KERNEL = """
import triton
import triton.language as tl
from triton.language.extra.ascend import libdevice


@triton.jit
def kernel({pointers}, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    {loads}
    tl.store(out_ptr + offsets, libdevice.{name}({arguments}))
"""


def _kernel(tmp_path, name, arguments):
    arity = len(arguments)
    source = KERNEL.format(
        name=name,
        pointers=", ".join(f"p{index}" for index in range(arity)),
        loads="\n    ".join(
            f"a{index} = tl.load(p{index} + offsets)" for index in range(arity)
        ),
        arguments=", ".join(arguments),
    )
    path = tmp_path / f"libdevice_{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return module.kernel, {f"p{index}": "*fp32" for index in range(arity)} | {
        "out_ptr": "*fp32"
    }


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=[
                pytest.mark.xfail(reason=ASCEND_FUNCTIONS[name].refused, strict=True)
            ]
            if ASCEND_FUNCTIONS[name].refused
            else [],
        )
        for name in ELEMENTWISE
    ],
)
def test_ascend_libdevice_function_passes_ttir_and_ttadapter(tmp_path, name):
    arity = ASCEND_FUNCTIONS[name].portable.arity
    kernel, signature = _kernel(tmp_path, name, [f"a{index}" for index in range(arity)])

    linalg, _ = compile_stages(kernel, signature, {"BLOCK": 16})

    assert "func.func" in linalg


def test_flip_needs_a_dimension(tmp_path):
    kernel, signature = _kernel(tmp_path, "flip", ["a0"])

    with pytest.raises(StageError, match="dim must be an integer"):
        compile_stages(kernel, signature, {"BLOCK": 16})

    kernel, signature = _kernel(tmp_path, "flip", ["a0", "0"])

    assert "func.func" in compile_stages(kernel, signature, {"BLOCK": 16})[0]
