"""Emulation: the NPU variant with its Ascend-only symbols mapped, on the CPU interpreter (and CUDA Triton's frontend)."""

import ast
import math
import sys
import textwrap
import types

import pytest
import torch
import triton.language
from helpers import example_cases, load_example, rewrite, shared_example

import ninetoothed_ascend
from ninetoothed_ascend import ascendify, examples
from ninetoothed_ascend.cache import Variant
from ninetoothed_ascend.compiler import emulation, pipelines
from ninetoothed_ascend.compiler.cpu import interpreter
from ninetoothed_ascend.compiler.passes import PipelineError, run_pipeline
from ninetoothed_ascend.libdevice_table import ASCEND_FUNCTIONS
from ninetoothed_ascend.runtime.handle import import_variant

#: The portable meaning of each function of triton-ascend 3.2.0's libdevice.
PORTABLE = {name: function.portable for name, function in ASCEND_FUNCTIONS.items()}

INTRINSICS = ("gather_out_to_ub", "index_put", "index_select_simd", "set_element")

MAPPED = sorted(
    name
    for name, function in PORTABLE.items()
    if function is not None and name != "umulhi"
)


def test_every_function_of_the_ascend_libdevice_has_an_entry():
    # The names themselves are checked against triton-ascend 3.2.0's module
    # in test_ascendify_libdevice.py::test_table_covers_ascend_libdevice.
    assert len(PORTABLE) == 56
    assert {name for name, f in PORTABLE.items() if f is None} == {
        *INTRINSICS,
        "flip",
    }


def test_every_function_the_cpu_computes_with_numpy_has_a_numpy_meaning():
    for name, function in PORTABLE.items():
        if function is not None:
            assert (function.cpu is None) == callable(function.numpy), name


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


@pytest.mark.parametrize("name", MAPPED)
def test_cuda_mapping_calls_a_helper_over_cuda_libdevice_or_core_triton(name):
    source, count = rewrite(emulation.EmulateLibdeviceOnCuda, npu_call(name))

    assert count >= 1
    assert "extra.ascend" not in source and "extra.cann" not in source
    assert f"return ninetoothed_emulated_{name}(" in source
    helper = ast.parse(source).body
    definitions = {
        node.name: ast.unparse(node)
        for node in helper
        if isinstance(node, ast.FunctionDef)
    }
    body = definitions[f"ninetoothed_emulated_{name}"]
    assert "@triton.jit" in body
    expected = (
        PORTABLE[name]
        .cuda.replace("L.", "ninetoothed_portable_libdevice.")
        .replace("tl.", "triton.language.")
    )
    assert ast.unparse(ast.parse(expected)) in body

    if "L." in PORTABLE[name].cuda:
        assert (
            "from triton.language.extra import libdevice as ninetoothed_portable_libdevice"
            in source
        )


@pytest.mark.parametrize("name", MAPPED)
def test_cpu_mapping_calls_core_triton_or_numpy(name):
    source, _ = rewrite(emulation.EmulateLibdeviceOnCpu, npu_call(name))
    function = PORTABLE[name]

    assert "extra.ascend" not in source and "extra.cann" not in source
    assert "ld." not in source
    if function.cpu is None:
        assert f"ninetoothed_numpy_elementwise({name!r}" in source
    else:
        assert "@triton.jit" in source


CUDA_CALL = """
import triton
from triton.language.extra import libdevice

@triton.jit
def kernel(x, y):
    return libdevice.{name}(x)
"""


def test_cpu_variant_maps_cuda_libdevice_functions_of_the_same_meaning():
    source, count = rewrite(
        interpreter.InterpretLibdevice, CUDA_CALL.format(name="tanh")
    )

    assert count == 2  # the call and the import
    assert "from triton.language.extra import libdevice" not in source
    assert "return ninetoothed_emulated_tanh(x)" in source
    assert "numpy_elementwise('tanh', a0)" in source


@pytest.mark.parametrize("name", ["fast_expf", "isinf", "ilogb"])
def test_cpu_variant_refuses_cuda_libdevice_functions_it_cannot_compute(name):
    with pytest.raises(
        PipelineError,
        match=f"pass InterpretLibdevice: `triton.language.extra.libdevice.{name}` "
        "is not a function of CUDA Triton's libdevice that ninetoothed-ascend can run on cpu",
    ):
        run_pipeline(CUDA_CALL.format(name=name), pipelines.CPU)


@pytest.mark.parametrize("name", INTRINSICS)
def test_ascend_intrinsics_are_refused_by_name(name):
    with pytest.raises(PipelineError, match=f"libdevice.{name}`.*no portable"):
        run_pipeline(npu_call(name, 2), pipelines.EMULATIONS["cpu"])


def test_unknown_libdevice_function_is_refused_by_name():
    with pytest.raises(PipelineError, match="`.*libdevice.sinpi` is not a function"):
        run_pipeline(npu_call("sinpi", 1), pipelines.EMULATIONS["cuda"])


def test_libdevice_function_used_as_a_value_is_refused():
    source = npu_call("tanh").replace("return ld.tanh(x)", "return ld.tanh")

    with pytest.raises(PipelineError, match="used other than by calling it"):
        run_pipeline(source, pipelines.EMULATIONS["cuda"])


def test_flip_becomes_core_flip():
    source, _ = rewrite(emulation.EmulateLibdeviceOnCuda, npu_call("flip", 2))

    assert "return triton.language.flip(x, y)" in source


@pytest.mark.parametrize(
    ("pass_class", "precision"),
    [(emulation.EmulateHf32OnCuda, "tf32"), (emulation.EmulateHf32OnCpu, "ieee")],
)
def test_hf32_becomes_the_target_precision(pass_class, precision):
    source, count = rewrite(
        pass_class,
        """
        import triton.language as tl
        a = tl.dot(x, y, input_precision="hf32")
        b = tl.dot(x, y, None, "hf32")
        c = tl.dot(x, y, input_precision="ieee")
        """,
    )

    assert count == 2
    assert f"tl.dot(x, y, input_precision='{precision}')" in source
    assert f"tl.dot(x, y, None, '{precision}')" in source
    assert "tl.dot(x, y, input_precision='ieee')" in source


def test_the_cpu_emulation_fixes_the_autotuner_where_defer_autotune_makes_it():
    # No pass turns DeferAutotune's factory back: FixAutotuneConfig replaces
    # the autotuner in the factory, and the launch through it passes the
    # config the module-level form gets.
    source = textwrap.dedent(
        """
        import triton

        @triton.jit
        def kernel(x, BLOCK: triton.language.constexpr):
            pass
        tuned = triton.autotune(configs=[triton.Config({'BLOCK': 32}), triton.Config({'BLOCK': 64})], key=[])(kernel)

        def launch(x):
            tuned[1,](x)
        """
    )
    deferred = run_pipeline(source, (ascendify.DeferAutotune,)).source
    fixed = {
        form: run_pipeline(text, (interpreter.FixAutotuneConfig,))
        for form, text in (("module", source), ("deferred", deferred))
    }
    launched = {form: [] for form in fixed}

    class Kernel:
        def __init__(self, calls):
            self.calls = calls

        def __getitem__(self, grid):
            return lambda *args, **kwargs: self.calls.append((grid, args, kwargs))

    for form, rewritten in fixed.items():
        recording = types.SimpleNamespace(
            jit=lambda function, calls=launched[form]: Kernel(calls),
            language=triton.language,
        )
        namespace = {"triton": recording}
        exec(rewritten.source.replace("import triton\n", ""), namespace)
        namespace["launch"]("x")

    assert "functools.cache" in deferred
    assert all("autotune" not in rewritten.source for rewritten in fixed.values())
    assert fixed["deferred"].rewrites == (("FixAutotuneConfig", 1),)
    assert launched["deferred"] == launched["module"] == [((1,), ("x",), {"BLOCK": 64})]


def test_ascend_only_symbols_left_by_other_passes_are_refused():
    source = """
import triton.triton_patch.language.core as ascend_core
import triton

@triton.jit
def kernel(x):
    return ascend_core.sort(x)
"""
    with pytest.raises(
        PipelineError,
        match="pass RejectAscendOnly: `triton.triton_patch.language.core.sort` exists only",
    ):
        run_pipeline(source, pipelines.EMULATIONS["cuda"])

    with pytest.raises(
        PipelineError, match="pass RejectAscendOnly: `triton.triton_patch"
    ):
        run_pipeline(
            "import triton\nx = triton.triton_patch.language.core.sort\n",
            pipelines.EMULATIONS["cuda"],
        )


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


def _kernel_source(name):
    arguments = {1: "x", 2: "x, y", 3: "x, y, z"}[PORTABLE[name].arity]

    return KERNEL.format(name=name, arguments=arguments)


def _round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def _uniform(low, high):
    return lambda generator: torch.rand(64, generator=generator) * (high - low) + low


_NORMAL = lambda generator: torch.randn(64, generator=generator) * 2  # noqa: E731
_POSITIVE = _uniform(0.1, 5.0)
_UNIT = _uniform(-0.9, 0.9)


def _special_values(generator):
    x = torch.randn(64, generator=generator)
    x[::5] = math.inf
    x[1::5] = -math.inf
    x[2::5] = math.nan
    x[3::7] = -0.0

    return x


def _exponents(generator):
    return torch.randint(-4, 5, (64,), generator=generator).float()


#: name -> (torch reference, domain of each argument). Each Ascend function's
#: meaning: its C/libdevice namesake's, with triton-ascend's result dtype
#: (ilogb and ldexp in the input's float dtype, predicates as booleans).
REFERENCES = {
    "abs": (torch.abs, [_NORMAL]),
    "acos": (torch.acos, [_UNIT]),
    "acosh": (torch.acosh, [_uniform(1.1, 5.0)]),
    "asin": (torch.asin, [_UNIT]),
    "asinh": (torch.asinh, [_NORMAL]),
    "atan": (torch.atan, [_NORMAL]),
    "atan2": (torch.atan2, [_NORMAL, _NORMAL]),
    "atanh": (torch.atanh, [_UNIT]),
    "ceil": (torch.ceil, [_NORMAL]),
    "copysign": (torch.copysign, [_NORMAL, _NORMAL]),
    "cos": (torch.cos, [_NORMAL]),
    "cosh": (torch.cosh, [_NORMAL]),
    "cyl_bessel_i0": (torch.special.i0, [_NORMAL]),
    "div_rn": (torch.div, [_NORMAL, _POSITIVE]),
    "div_rz": (torch.div, [_NORMAL, _POSITIVE]),
    "erf": (torch.erf, [_NORMAL]),
    "erfinv": (torch.erfinv, [_UNIT]),
    "exp": (torch.exp, [_NORMAL]),
    "exp2": (torch.exp2, [_NORMAL]),
    "expm1": (torch.expm1, [_NORMAL]),
    "fdiv": (torch.div, [_NORMAL, _POSITIVE]),
    "floor": (torch.floor, [_NORMAL]),
    "fma": (lambda x, y, z: x * y + z, [_NORMAL, _NORMAL, _NORMAL]),
    "fmod": (torch.fmod, [_NORMAL, _POSITIVE]),
    "gamma": (lambda x: torch.exp(torch.lgamma(x)), [_POSITIVE]),
    "hypot": (torch.hypot, [_NORMAL, _NORMAL]),
    "ilogb": (lambda x: (torch.frexp(x).exponent - 1).float(), [_POSITIVE]),
    "isinf": (torch.isinf, [_special_values]),
    "isnan": (torch.isnan, [_special_values]),
    "ldexp": (torch.ldexp, [_NORMAL, _exponents]),
    "lgamma": (torch.lgamma, [_POSITIVE]),
    "log": (torch.log, [_POSITIVE]),
    "log10": (torch.log10, [_POSITIVE]),
    "log1p": (torch.log1p, [_POSITIVE]),
    "log2": (torch.log2, [_POSITIVE]),
    "nearbyint": (torch.round, [_NORMAL]),
    "nextafter": (torch.nextafter, [_NORMAL, _NORMAL]),
    "pow": (torch.pow, [_POSITIVE, _NORMAL]),
    "reciprocal": (torch.reciprocal, [_POSITIVE]),
    "relu": (torch.relu, [_NORMAL]),
    "round": (_round_half_away, [_NORMAL]),
    "rsqrt": (torch.rsqrt, [_POSITIVE]),
    "signbit": (torch.signbit, [_special_values]),
    "sin": (torch.sin, [_NORMAL]),
    "sinh": (torch.sinh, [_NORMAL]),
    "sqrt": (torch.sqrt, [_POSITIVE]),
    "sqrt_rn": (torch.sqrt, [_POSITIVE]),
    "tan": (torch.tan, [_UNIT]),
    "tanh": (torch.tanh, [_NORMAL]),
    "trunc": (torch.trunc, [_NORMAL]),
}


def test_every_mapped_function_has_a_reference():
    assert sorted(REFERENCES) == MAPPED


def _import(source, name):
    return import_variant(Variant(source), f"test_{name}")


@pytest.mark.parametrize("name", MAPPED)
def test_each_mapped_function_means_on_the_cpu_what_torch_computes(name):
    """Level 3 (CPU interpreter): a triton-ascend kernel calling libdevice.NAME, emulated, against torch."""

    reference, domains = REFERENCES[name]
    generator = torch.Generator().manual_seed(0)
    arguments = [domain(generator) for domain in domains]
    padded = arguments + [torch.ones(64)] * (3 - len(arguments))
    output = torch.empty(64)
    module = _import(pipelines.emulate(_kernel_source(name), "cpu").source, name)

    module.kernel[(1,)](*padded, output, 60, BLOCK=64)

    expected = reference(*arguments).float()
    torch.testing.assert_close(
        output[:60], expected[:60], rtol=2e-6, atol=1e-6, equal_nan=True
    )


def test_flip_means_on_the_cpu_what_torch_flip_computes():
    source = KERNEL.format(name="flip", arguments="x, 0")
    module = _import(pipelines.emulate(source, "cpu").source, "flip")
    x = torch.randn(64, generator=torch.Generator().manual_seed(0))
    output = torch.empty(64)

    module.kernel[(1,)](x, x, x, output, 64, BLOCK=64)

    torch.testing.assert_close(output, torch.flip(x, (0,)))


def test_div_rz_rounds_toward_zero():
    # 1/3 and -1/3 in fp32: round-to-nearest rounds up in magnitude for one
    # of them; toward zero never does.
    module = _import(pipelines.emulate(_kernel_source("div_rz"), "cpu").source, "rz")
    x = torch.tensor([1.0, -1.0, 2.0, -2.0] * 16)
    y = torch.full((64,), 3.0)
    output = torch.empty(64)

    module.kernel[(1,)](x, y, y, output, 64, BLOCK=64)

    exact = x.double() / y.double()
    assert torch.all(output.double().abs() <= exact.abs())
    assert torch.all((exact - output.double()).abs() < 2**-22)


#: What Triton's interpreter patches (``_patch_lang``): ``triton.language``,
#: ``triton.language.core``, ``triton.language.math`` and the classes whose
#: methods it replaces. Captured when this module is imported, at collection,
#: before any kernel has been interpreted.
_LANGUAGE_OBJECTS = tuple(
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
_LANGUAGE_ATTRIBUTES = [dict(vars(obj)) for obj in _LANGUAGE_OBJECTS]


def _restore_triton_language():
    for obj, original in zip(_LANGUAGE_OBJECTS, _LANGUAGE_ATTRIBUTES):
        for name, value in list(vars(obj).items()):
            if name not in original:
                delattr(obj, name)
            elif value is not original[name]:
                setattr(obj, name, original[name])


@pytest.fixture
def pristine_triton_language():
    """Start and end from ``triton.language`` as imported, whatever interpreted kernels did."""

    _restore_triton_language()
    yield
    _restore_triton_language()


def _cuda_make_ir(source, name, pointer):
    triton = pytest.importorskip("triton")
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    module = _import(source, f"cuda_{name}")
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


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("name", MAPPED)
def test_each_cuda_mapping_passes_cuda_tritons_frontend(
    name, dtype, pristine_triton_language
):
    """CUDA Triton 3.9's frontend (make_ir for sm_90, no GPU needed) accepts each CUDA helper."""

    if dtype == "fp16" and not PORTABLE[name].upcast:
        pytest.skip("computed in the argument's own format; CUDA has no fp16 libdevice")

    ir_text = _cuda_make_ir(
        pipelines.emulate(_kernel_source(name), "cuda").source, name, f"*{dtype}"
    )

    if "L." in PORTABLE[name].cuda:
        assert "__nv_" in ir_text


@pytest.mark.parametrize(("name", "dtype", "case"), example_cases("emulation"))
def test_emulated_npu_variant_matches_torch_on_the_cpu(name, dtype, case):
    """Level 3 (CPU interpreter): every example's NPU variant, emulated, against torch."""

    module = shared_example(name)
    result = examples.compare(module, module.kernel.emulated("cpu"), "cpu", dtype, case)

    assert result.matches, f"max abs error {result.max_abs_error}"


def test_libdevice_example_npu_variant_uses_the_ascend_module_and_runs_emulated():
    module = shared_example("libdevice_math")
    npu = module.kernel.source("npu")
    emulated = module.kernel.emulated_source("cpu")

    assert "triton.language.extra.ascend import libdevice" in npu
    assert dict(emulated.rewrites)["EmulateLibdeviceOnCpu"] >= 3
    assert "numpy_elementwise('tanh'" in emulated.source

    result = examples.compare(
        module, module.kernel.emulated("cpu"), "cpu", torch.float32
    )

    assert result.matches, f"max abs error {result.max_abs_error}"


def _spy(monkeypatch, handle, method):
    calls = []
    original = getattr(handle, method)

    def spy(name):
        calls.append(name)

        return original(name)

    monkeypatch.setattr(handle, method, spy)

    return calls


@pytest.mark.parametrize("value", ["1", None])
def test_the_environment_variable_switches_cpu_dispatch_to_the_emulated_npu_variant(
    monkeypatch, value
):
    if value is None:
        monkeypatch.delenv(emulation.ENVIRONMENT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(emulation.ENVIRONMENT_VARIABLE, value)

    module = load_example("add")
    emulated = _spy(monkeypatch, module.kernel, "emulated")
    variants = _spy(monkeypatch, module.kernel, "variant")
    input, other = module.inputs("cpu", torch.float32)

    torch.testing.assert_close(
        module.launch(module.kernel, input, other), input + other
    )
    torch.testing.assert_close(
        module.launch(module.kernel, input, other), input + other
    )

    # Chosen once, at the first call with CPU tensors.
    assert (emulated, variants) == ((["cpu"], []) if value else ([], ["cpu"]))


def test_emulation_failure_names_kernel_variant_pass_and_remedy(monkeypatch):
    class Refuses(ascendify.Pass):
        def visit_Module(self, node):
            raise ascendify.RewriteError("cannot map this.", "Do something else.")

    monkeypatch.setitem(pipelines.EMULATIONS, "cpu", (Refuses,))
    module = load_example("add")

    with pytest.raises(
        ninetoothed_ascend.VariantUnavailableError,
        match=r"the npu variant of kernel `add` cannot be emulated on cpu: "
        r"pass Refuses: cannot map this. Do something else.",
    ):
        module.kernel.emulated("cpu")


def test_unknown_device_type_cannot_emulate():
    with pytest.raises(KeyError, match="'npu' cannot emulate"):
        load_example("add").kernel.emulated("npu")


def test_without_boolean_mask_data_the_interpreter_refuses_the_npu_mask():
    """Reproducer for the Triton 3.9 interpreter behaviour :class:`BooleanMaskData` avoids."""

    triton = pytest.importorskip("triton")
    module = load_example("add")
    pipeline = tuple(
        pass_class
        for pass_class in pipelines.EMULATIONS["cpu"]
        if pass_class is not emulation.BooleanMaskData
    )
    source = run_pipeline(module.kernel.source("npu"), pipeline).source
    launch = getattr(_import(source, "no_boolean_masks"), module.kernel.launch_name)
    input, other = module.inputs("cpu", torch.float32)

    with pytest.raises(
        triton.runtime.errors.InterpreterError, match="mask has unsupported dtype"
    ):
        module.launch(launch, input, other)

    assert pipelines.CPU == pipelines.EMULATIONS["cpu"][-len(pipelines.CPU) :]


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


def test_hf32_dot_runs_emulated_on_the_cpu_and_matches_torch():
    module = _import(pipelines.emulate(DOT_KERNEL, "cpu").source, "hf32_cpu")
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(16, 16, generator=generator) for _ in range(2))
    c = torch.empty(16, 16)

    module.kernel[(1,)](a, b, c, BLOCK=16)

    torch.testing.assert_close(c, a @ b, rtol=1e-5, atol=1e-5)


def test_hf32_dot_emulated_on_cuda_passes_cuda_tritons_frontend_as_tf32(
    pristine_triton_language,
):
    source = pipelines.emulate(DOT_KERNEL, "cuda").source

    assert "input_precision='tf32'" in source
    assert "tt.dot" in _cuda_make_ir(source, "hf32", "*fp32")


def test_without_the_hf32_mapping_cuda_tritons_frontend_refuses_hf32(
    pristine_triton_language,
):
    """Why EmulateHf32OnCuda exists: CUDA Triton 3.9 knows no hf32."""

    with pytest.raises(Exception, match="input_precision must be one of .* Got hf32"):
        _cuda_make_ir(DOT_KERNEL, "hf32_raw", "*fp32")


def _cuda_make_ir_for_signature(kernel, signature, constants):
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)

    return str(
        ASTSource(
            kernel, signature | dict.fromkeys(constants, "constexpr"), constants
        ).make_ir(
            target,
            options,
            backend.get_codegen_implementation(options),
            backend.get_module_map(),
            context,
        )
    )


@pytest.mark.parametrize(("name", "dtype", "case"), example_cases("emulation"))
def test_emulated_cuda_variant_of_every_example_passes_cuda_tritons_frontend(
    name, dtype, case, pristine_triton_language
):
    """Without a GPU: the module ``handle.emulated("cuda")`` imports, and its kernel, called as the example calls it, passes CUDA Triton's frontend for sm_90 with each autotune config."""

    import sys

    from ninetoothed_ascend import compile_check

    module = shared_example(name)
    handle = module.kernel
    emulated = sys.modules[handle.emulated("cuda").__module__]
    kernel, arguments = compile_check.compile_arguments(
        emulated, handle, module.launch, module.inputs("cpu", dtype, **case), "cuda"
    )

    for signature, constants in arguments:
        assert "tt.func" in _cuda_make_ir_for_signature(kernel, signature, constants)


def test_running_a_cpu_variant_leaves_triton_usable_for_compilation(
    pristine_triton_language,
):
    """Why InterpretLanguageFunctions restores ``triton.language.core``: without it, Triton 3.9 leaves 64 builtins patched."""

    module = shared_example("softmax")
    source = DOT_KERNEL.replace('"hf32"', '"tf32"')
    assert "tt.dot" in _cuda_make_ir(source, "before_interpreting", "*fp32")

    examples.compare(module, module.kernel.variant("cpu"), "cpu", torch.float32)

    assert "tt.dot" in _cuda_make_ir(source, "after_interpreting", "*fp32")


def test_without_restoring_language_core_interpreting_breaks_compilation(
    monkeypatch, pristine_triton_language
):
    # The interpreted copies without the wrapper that restores the module,
    # where the CPU variant imports them from.
    monkeypatch.setattr(
        ninetoothed_ascend.runtime,
        "interpreted",
        ninetoothed_ascend.runtime.interpreter._interpreted_copy,
    )

    for name in [name for name in sys.modules if ".variants." in name]:
        monkeypatch.delitem(sys.modules, name)

    module = load_example("softmax")
    source = DOT_KERNEL.replace('"hf32"', '"tf32"')

    examples.compare(module, module.kernel.variant("cpu"), "cpu", torch.float32)

    with pytest.raises(Exception, match="has no attribute 'dtype'"):
        _cuda_make_ir(source, "unrestored", "*fp32")
