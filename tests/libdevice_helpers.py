"""Shared by the libdevice tests: the Ascend functions, kernels calling them, and importing and compiling them."""

import pytest
import triton.language

from ninetoothed_ascend.cache import Variant
from ninetoothed_ascend.compiler.libdevice_table import (
    ASCEND_FUNCTIONS,
)
from ninetoothed_ascend.jit.handle import import_variant

NINETOOTHED_IMPORTS = """
import triton
import triton.language
from triton.language.extra import libdevice as ninetoothed_libdevice
"""


#: The portable meaning of each function of triton-ascend 3.2.0's libdevice.
PORTABLE = {name: function.portable for name, function in ASCEND_FUNCTIONS.items()}


INTRINSICS = ("gather_out_to_ub", "index_put", "index_select_simd", "set_element")


MAPPED = sorted(
    name
    for name, function in PORTABLE.items()
    if function is not None and name != "umulhi"
)


NPU_CALL = """
try:
    from triton.language.extra.cann import libdevice as ld
except ImportError:
    try:
        from triton.language.extra.ascend import libdevice as ld
    except ImportError:
        raise ImportError('no libdevice')
import triton
import triton.language

@triton.jit
def kernel(x, y):
    return ld.{name}({arguments})
"""


def npu_call(name, arity=None):
    arity = arity or PORTABLE[name].arity
    arguments = ", ".join("xy"[index % 2] for index in range(arity))

    return NPU_CALL.format(name=name, arguments=arguments)


KERNEL = """
import triton
import triton.language as tl
from triton.language.extra.ascend import libdevice

@triton.jit
def kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=1.0)
    z = tl.load(z_ptr + offsets, mask=mask, other=1.0)
    tl.store(out_ptr + offsets, libdevice.{name}({arguments}), mask=mask)
"""


def kernel_source(name):
    arguments = {1: "x", 2: "x, y", 3: "x, y, z"}[PORTABLE[name].arity]

    return KERNEL.format(name=name, arguments=arguments)


def import_source(source, name):
    return import_variant(Variant(source), f"test_{name}")


#: What Triton's interpreter patches (``_patch_lang``): ``triton.language``,
#: ``triton.language.core``, ``triton.language.math`` and the classes whose
#: methods it replaces. Captured when this module is imported, at collection,
#: before any kernel has been interpreted.
LANGUAGE_OBJECTS = tuple(
    obj
    for obj in (
        triton.language,
        triton.language.core,
        triton.language.math,
        triton.language.tensor,
        triton.language.dtype,
        # Triton 3.9; absent from triton-ascend's Triton 3.2.
        getattr(triton.language.core, "tensor_descriptor_base", None),
    )
    if obj is not None
)


LANGUAGE_ATTRIBUTES = [dict(vars(obj)) for obj in LANGUAGE_OBJECTS]


def restore_triton_language():
    """Put ``triton.language`` back as it was when this module was imported (interpreted kernels patch it)."""

    for obj, original in zip(LANGUAGE_OBJECTS, LANGUAGE_ATTRIBUTES):
        for name, value in list(vars(obj).items()):
            if name not in original:
                delattr(obj, name)
            elif value is not original[name]:
                setattr(obj, name, original[name])


def cuda_make_ir(source, name, pointer):
    triton = pytest.importorskip("triton")
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    module = import_source(source, f"cuda_{name}")
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({})
    signature = {
        argument: (pointer if argument.endswith("ptr") else "i32")
        for argument in module.kernel.arg_names
        if argument != "BLOCK"
    } | {"BLOCK": "constexpr"}
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)

    assert triton.__version__
    return str(
        ASTSource(module.kernel, signature, {"BLOCK": 64}).make_ir(
            target,
            options,
            backend.get_codegen_implementation(options),
            backend.get_module_map(),
            context,
        )
    )


DOT_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    columns = tl.arange(0, BLOCK)[None, :]
    a = tl.load(a_ptr + rows * BLOCK + columns)
    b = tl.load(b_ptr + rows * BLOCK + columns)
    tl.store(c_ptr + rows * BLOCK + columns, tl.dot(a, b, input_precision="hf32"))
"""
