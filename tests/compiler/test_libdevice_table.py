"""The libdevice table: every CUDA and Ascend function has an entry, composites compute what torch does, targets exist in triton-ascend."""

import ast
import importlib
import importlib.util
import inspect

import pytest
import torch
from libdevice_helpers import INTRINSICS, NINETOOTHED_IMPORTS, PORTABLE

from ninetoothed_ascend.check.compile_check import StageError, compile_stages
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.libdevice_table import (
    ASCEND_FUNCTIONS,
    LIBDEVICE,
    Ascend,
    Composite,
    Core,
    NoEquivalent,
)
from ninetoothed_ascend.compiler.npu.remap_libdevice import (
    composite_function,
)
from ninetoothed_ascend.compiler.passes import (
    run_pipeline,
)


def _cuda_libdevice_functions():
    module = importlib.import_module("triton.language.extra.cuda.libdevice")

    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and value.__module__ == module.__name__
    }


def test_table_covers_cuda_libdevice():
    """Every function of the installed CUDA Triton's libdevice (3.9: 197) has an entry."""

    pytest.importorskip("triton.language.extra.cuda.libdevice")
    functions = _cuda_libdevice_functions()

    assert len(functions) > 150
    assert functions - set(LIBDEVICE) == set()


def test_every_cuda_namesake_is_in_cuda_libdevice():
    """The CPU variant computes these CUDA functions; each must exist in CUDA Triton's libdevice."""

    pytest.importorskip("triton.language.extra.cuda.libdevice")
    namesakes = {
        name
        for name, function in ASCEND_FUNCTIONS.items()
        if function.portable is not None and function.cuda_namesake
    }

    assert len(namesakes) > 30
    assert namesakes - _cuda_libdevice_functions() == set()


#: Composites of core ``tl`` only, with what torch computes for them.
#: (Composites that call triton-ascend's libdevice are compile-checked below.)
COMPOSITE_REFERENCES = {
    "add_rn": lambda x, y: x + y,
    "sub_rn": lambda x, y: x - y,
    "mul_rn": lambda x, y: x * y,
    "exp10": lambda x: torch.pow(10.0, x),
    "fast_exp10f": lambda x: torch.pow(10.0, x),
    "cbrt": lambda x: torch.sign(x) * x.abs().pow(1 / 3),
    # rcbrt(-0.0) is +inf here, -inf in CUDA (the composite's note says so).
    "rcbrt": lambda x: torch.where(
        x == 0, torch.inf, torch.sign(x) / x.abs().pow(1 / 3)
    ),
    "cospi": lambda x: torch.cos(torch.pi * x.double()).float(),
    "sinpi": lambda x: torch.sin(torch.pi * x.double()).float(),
    "erfc": torch.special.erfc,
    "normcdf": torch.special.ndtr,
    "fdim": lambda x, y: torch.where(
        x > y, x - y, torch.where(x.isnan() | y.isnan(), torch.nan, 0.0)
    ),
    "finitef": torch.isfinite,
    "isfinited": torch.isfinite,
    "logb": lambda x: torch.floor(torch.log2(x.abs())),
    "saturatef": lambda x: torch.nan_to_num(x.clamp(0, 1), nan=0.0),
    "rhypot": lambda x, y: 1 / torch.hypot(x, y),
    "norm3d": lambda x, y, z: torch.stack([x, y, z]).norm(dim=0),
    "rnorm3d": lambda x, y, z: 1 / torch.stack([x, y, z]).norm(dim=0),
    "norm4d": lambda x, y, z, w: torch.stack([x, y, z, w]).norm(dim=0),
    "rnorm4d": lambda x, y, z, w: 1 / torch.stack([x, y, z, w]).norm(dim=0),
    "float2int_rz": lambda x: x.to(torch.int32),
    "float2int_rd": lambda x: torch.floor(x).to(torch.int32),
    "float2int_ru": lambda x: torch.ceil(x).to(torch.int32),
    "float2ll_rz": lambda x: x.to(torch.int64),
    "double2float_rn": lambda x: x.float(),
    "float_as_int": lambda x: x.view(torch.int32),
    "int_as_float": lambda x: x.view(torch.float32),
    "int2float_rn": lambda x: x.float(),
    "ll2float_rn": lambda x: x.float(),
}


_INTEGER_ARGUMENT = {
    "int_as_float": torch.int32,
    "int2float_rn": torch.int32,
    "ll2float_rn": torch.int64,
}


def _composite_inputs(name, arity):
    generator = torch.Generator().manual_seed(0)
    dtype = _INTEGER_ARGUMENT.get(name)

    if dtype is not None:
        return [torch.randint(-(2**20), 2**20, (64,), generator=generator, dtype=dtype)]

    inputs = [torch.randn(64, generator=generator) * 3 for _ in range(arity)]
    special = torch.tensor(
        [0.0, -0.0, 1.0, -1.0, 0.5, float("inf"), float("-inf"), float("nan")]
    )
    inputs[0][: len(special)] = special
    if name in {"cospi", "sinpi"}:
        inputs[0] = inputs[0].nan_to_num(0.0, 0.0, 0.0)

    return inputs


@pytest.mark.parametrize("name", sorted(COMPOSITE_REFERENCES))
def test_composite_computes_what_torch_does(name):
    """Level 3: each core-only composite, run by Triton's interpreter, against torch."""

    composite = LIBDEVICE[name]
    assert isinstance(composite, Composite)
    assert "libdevice." not in composite.source
    helper = composite_function("helper", composite)
    parameters = [argument.arg for argument in helper.args.args]
    loads = ", ".join(
        f"triton.language.load({parameter}_pointer + offsets)"
        for parameter in parameters
    )
    source = f"""
import triton
import triton.language
{ast.unparse(helper)}

@triton.jit
def kernel({"".join(f"{parameter}_pointer, " for parameter in parameters)}output_pointer, N: triton.language.constexpr):
    offsets = triton.language.arange(0, N)
    triton.language.store(output_pointer + offsets, helper({loads}))
"""
    namespace = {}
    exec(
        compile(run_pipeline(source, pipelines.CPU).source, name, "exec"),
        namespace,
    )
    inputs = _composite_inputs(name, len(parameters))
    expected = COMPOSITE_REFERENCES[name](*inputs)
    output = torch.empty_like(expected)
    namespace["kernel"][(1,)](*inputs, output, N=64)

    if expected.dtype.is_floating_point:
        torch.testing.assert_close(
            output, expected, rtol=2e-6, atol=1e-6, equal_nan=True
        )
    else:
        assert torch.equal(output, expected)


def _ascend_libdevice():
    return importlib.import_module("triton.language.extra.ascend.libdevice")


@pytest.mark.ascend
def test_table_covers_ascend_libdevice():
    module = _ascend_libdevice()
    functions = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and callable(value)
    } - {"core", "math", "semantic", "ir"}

    assert len(functions) == 56
    assert functions == set(ASCEND_FUNCTIONS)
    assert functions - set(LIBDEVICE) == set()
    # The re-exports are the very functions of triton.language, and the
    # table prefers the core function for them: the choice changes nothing
    # in 3.2.
    core = importlib.import_module("triton.language")
    reexports = {
        name for name in functions if getattr(module, name) is getattr(core, name, None)
    }
    assert reexports == {
        name for name, function in ASCEND_FUNCTIONS.items() if function.reexport
    }
    for name, target in LIBDEVICE.items():
        if isinstance(target, Core) and target.name in functions:
            assert getattr(module, target.name) is getattr(core, target.name), name


@pytest.mark.ascend
def test_every_target_exists_in_triton_ascend():
    module = _ascend_libdevice()
    core = importlib.import_module("triton.language")
    missing = [
        name
        for name, target in LIBDEVICE.items()
        if (isinstance(target, Ascend) and not hasattr(module, target.name))
        or (isinstance(target, Core) and not hasattr(core, target.name))
    ]

    assert missing == []


#: Ascend-only functions that are not elementwise (indexing, flipping).
_NOT_ELEMENTWISE = {
    "flip",
    "set_element",
    "gather_out_to_ub",
    "index_put",
    "index_select_simd",
}


#: Argument dtype of the conversions and integer functions (fp32 otherwise).
_ARGUMENT_TYPES = {
    "umulhi": "*u32",
    **{
        f"{prefix}2{to}_rn": pointer
        for prefix, pointer in (
            ("int", "*i32"),
            ("uint", "*u32"),
            ("ll", "*i64"),
            ("ull", "*u64"),
        )
        for to in ("float", "double")
    },
    "int_as_float": "*i32",
    "uint_as_float": "*u32",
}


def _compiled_entries():
    return sorted(
        name
        for name, target in LIBDEVICE.items()
        if not isinstance(target, NoEquivalent) and name not in _NOT_ELEMENTWISE
    )


@pytest.mark.ascend
def test_every_mapped_function_compiles_for_ascend(tmp_path):
    """Level 2: a kernel calling each mapped libdevice function the way NineToothed does passes ttir and ttadapter."""

    from ninetoothed_ascend.check.compile_check import StageError, compile_stages
    from ninetoothed_ascend.compiler.pipelines import NPU as PIPELINE

    failures = {}

    for name in _compiled_entries():
        arity = _arity(name)
        parameters = ["x", "y", "z", "w"][:arity]
        arguments = ", ".join(
            f"triton.language.load({parameter}_pointer + offsets)"
            for parameter in parameters
        )
        source = (
            NINETOOTHED_IMPORTS
            + f"""
@triton.jit
def kernel({"".join(f"{parameter}_pointer, " for parameter in parameters)}output_pointer):
    offsets = triton.language.arange(0, 16)
    triton.language.store(output_pointer + offsets, ninetoothed_libdevice.{name}({arguments}))
"""
        )
        path = tmp_path / f"libdevice_{name}.py"
        path.write_text(run_pipeline(source, PIPELINE).source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        pointer = _ARGUMENT_TYPES.get(name, "*fp32")
        signature = {f"{parameter}_pointer": pointer for parameter in parameters}
        signature["output_pointer"] = "*fp32"

        try:
            compile_stages(module.kernel, signature, {})
        except StageError as error:
            failures[name] = str(error)[:300]

    assert failures == {}


def _arity(name):
    target = LIBDEVICE[name]

    if isinstance(target, Composite):
        return len(ast.parse(target.source).body[0].args.args)

    module = (
        _ascend_libdevice()
        if isinstance(target, Ascend)
        else importlib.import_module("triton.language")
    )
    parameters = inspect.signature(getattr(module, target.name)).parameters

    return sum(
        1
        for parameter in parameters.values()
        if parameter.name != "_builder" and parameter.default is inspect.Parameter.empty
    )


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


@pytest.mark.ascend
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


@pytest.mark.ascend
def test_flip_needs_a_dimension(tmp_path):
    kernel, signature = _kernel(tmp_path, "flip", ["a0"])

    with pytest.raises(StageError, match="dim must be an integer"):
        compile_stages(kernel, signature, {"BLOCK": 16})

    kernel, signature = _kernel(tmp_path, "flip", ["a0", "0"])

    assert "func.func" in compile_stages(kernel, signature, {"BLOCK": 16})[0]


def test_every_function_of_the_ascend_libdevice_has_an_entry():
    # The names themselves are checked against triton-ascend 3.2.0's module
    # in test_ascendify_libdevice.py::test_table_covers_ascend_libdevice.
    assert len(PORTABLE) == 56
    assert {name for name, f in PORTABLE.items() if f is None} == {
        *INTRINSICS,
        "flip",
    }
