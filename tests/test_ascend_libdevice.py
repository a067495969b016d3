"""Level 2: each function of triton-ascend 3.2.0's libdevice through its ttir and ttadapter stages.

What the emulation's table (ninetoothed_ascend.jit.libdevice.LIBDEVICE)
assumes about triton-ascend: that the functions exist and compile. The
three that do not are strict xfails: a kernel that calls them through
NineToothed's libdevice gets an NPU variant that triton-ascend 3.2.0
refuses. Runs in the triton-ascend environment; no NPU is involved.
"""

import importlib.util

import pytest

from ninetoothed_ascend.compile_check import StageError, compile_stages
from ninetoothed_ascend.jit.libdevice import LIBDEVICE

pytestmark = pytest.mark.ascend

#: Functions whose triton-ascend 3.2.0 body calls ``core.static_print`` without
#: the builder (triton/language/extra/ascend/libdevice.py), so the frontend
#: fails with "Did you forget to add @triton.jit ?".
_BROKEN = {
    "atan2": "triton-ascend 3.2.0's libdevice.atan2 fails in the frontend "
    "(static_print without a builder); its message says to use math.atan2",
    "div_rz": "triton-ascend 3.2.0's libdevice.div_rz is a static_assert(False) "
    "stub whose static_print fails first",
    "fmod": "triton-ascend 3.2.0's libdevice.fmod is a static_assert(False) stub "
    "whose static_print fails first",
}

ELEMENTWISE = sorted(
    name
    for name, function in LIBDEVICE.items()
    if function is not None and name != "umulhi"
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
            marks=[pytest.mark.xfail(reason=_BROKEN[name], strict=True)]
            if name in _BROKEN
            else [],
        )
        for name in ELEMENTWISE
    ],
)
def test_ascend_libdevice_function_passes_ttir_and_ttadapter(tmp_path, name):
    arity = LIBDEVICE[name].arity
    kernel, signature = _kernel(tmp_path, name, [f"a{index}" for index in range(arity)])

    linalg, _ = compile_stages(kernel, signature, {"BLOCK": 16})

    assert "func.func" in linalg


def test_flip_needs_a_dimension(tmp_path):
    kernel, signature = _kernel(tmp_path, "flip", ["a0"])

    with pytest.raises(StageError, match="dim must be an integer"):
        compile_stages(kernel, signature, {"BLOCK": 16})

    kernel, signature = _kernel(tmp_path, "flip", ["a0", "0"])

    assert "func.func" in compile_stages(kernel, signature, {"BLOCK": 16})[0]
