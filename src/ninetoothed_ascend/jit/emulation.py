"""Emulation: the NPU variant, with its Ascend-only symbols mapped to portable ones, run on a CUDA GPU or the CPU.

The NPU variant is NineToothed's source after every Ascend rewrite
(:data:`ninetoothed_ascend.ascendify.PIPELINE`). It cannot run without an
NPU, so what those rewrites do to a kernel's *numbers* is checked by
running the same source elsewhere: :func:`emulate` takes the NPU variant's
text unchanged and maps only the symbols that exist on Ascend alone,

* triton-ascend's libdevice (``triton.language.extra.cann`` or
  ``.ascend``, imported by :class:`~ninetoothed_ascend.ascendify.RemapLibdevice`):
  each function becomes a module-level helper ``ninetoothed_emulated_NAME``
  with the same meaning, built from CUDA Triton's libdevice
  (``triton.language.extra.libdevice``) or core ``triton.language`` on a
  CUDA GPU, and from core ``triton.language`` or NumPy on the CPU, where
  Triton's interpreter cannot call libdevice at all;
* ``input_precision="hf32"`` in ``dot`` (from
  :class:`~ninetoothed_ascend.ascendify.UseHf32InDot`): ``"tf32"`` on a CUDA
  GPU, ``"ieee"`` on the CPU;

and, for the CPU, runs the interpreter pipeline
(:data:`ninetoothed_ascend.jit.interpreter.PIPELINE`) on top. Every other
line, the masks, fills, lower bounds and clamps the Ascend passes wrote,
runs as the NPU variant has it. A symbol that is still Ascend-only
afterwards fails the emulation with an error naming it
(:class:`RejectAscendOnly`), so a new Ascend pass cannot slip past it.

Emulated sources are cheap to derive and are kept in memory only
(:meth:`ninetoothed_ascend.Handle.emulated`).
"""

import ast
import dataclasses
import functools
import math
import operator
import os

import numpy as np

from ninetoothed_ascend.ascendify.base import (
    MaskPass,
    Pass,
    RewriteError,
    autotune_assignments,
    insert_after_imports,
    keyword,
    run_pipeline,
)
from ninetoothed_ascend.ascendify.libdevice import ASCEND_LIBDEVICE_MODULES
from ninetoothed_ascend.jit import interpreter

#: Set to ``1`` to make CUDA and CPU tensors run the emulated NPU variant
#: instead of the CUDA and CPU variants. Read when a handle first dispatches
#: to a device type.
ENVIRONMENT_VARIABLE = "NINETOOTHED_ASCEND_EMULATE_NPU"

#: Device types an NPU variant can be emulated on.
DEVICE_TYPES = ("cuda", "cpu")

#: Module prefixes that exist only in triton-ascend.
ASCEND_ONLY_MODULES = (*ASCEND_LIBDEVICE_MODULES, "triton.triton_patch")

_HELPER_PREFIX = "ninetoothed_emulated_"

_PORTABLE_LIBDEVICE = "ninetoothed_portable_libdevice"

_NUMPY_RUNTIME = "ninetoothed_numpy_elementwise"

_NUMPY_RUNTIME_FLIP = "ninetoothed_numpy_flip"


def emulation_requested():
    """Whether ``$NINETOOTHED_ASCEND_EMULATE_NPU`` asks for emulation (``1``, ``true``, ``yes``, ``on``)."""

    return os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )


@dataclasses.dataclass(frozen=True)
class LibdeviceFunction:
    """How one function of triton-ascend's libdevice is emulated.

    :param arity: ``int``, the number of arguments.
    :param cuda: ``str``, the helper's body on a CUDA GPU: an expression over
        ``x0, x1, x2`` (the arguments, in fp32 when ``upcast``) and ``a0, a1,
        a2`` (the arguments as passed), where ``L.`` is CUDA Triton's
        libdevice and ``tl.`` is ``triton.language``.
    :param cpu: ``str``, the same for the CPU, or ``None``: computed with
        NumPy in fp64 by :func:`numpy_elementwise` (:data:`NUMPY_FUNCTIONS`).
    :param upcast: ``bool``, compute in fp32 and cast the result back to the
        arguments' dtype, as triton-ascend's fp16 and bf16 variants return
        the input dtype and CUDA's libdevice takes fp32 and fp64 only.
    :param boolean: ``bool``, the result is a predicate (``int1``).
    """

    arity: int
    cuda: str
    cpu: str | None = None
    upcast: bool = True
    boolean: bool = False


def _libdevice(name, arity=1, portable=None, **kwargs):
    arguments = ", ".join(f"x{index}" for index in range(arity))

    return LibdeviceFunction(
        arity, f"L.{portable or name}({arguments})", None, **kwargs
    )


def _core(expression, arity=1, **kwargs):
    return LibdeviceFunction(arity, expression, expression, **kwargs)


#: The 56 functions of triton-ascend 3.2.0's libdevice module (its own 40
#: and the 16 ``triton.language.math`` functions that
#: ``triton/triton_patch/testing.py`` attaches to it), by name.
#: ``None``: an Ascend data-movement intrinsic without a portable meaning;
#: emulation refuses a kernel that calls one.
LIBDEVICE = {
    "abs": _core("tl.abs(a0)", upcast=False),
    "acos": _libdevice("acos"),
    "acosh": _libdevice("acosh"),
    "asin": _libdevice("asin"),
    "asinh": _libdevice("asinh"),
    "atan": _libdevice("atan"),
    # triton-ascend 3.2.0's own atan2 cannot be compiled (see docs); CUDA's
    # meaning, atan2(y=arg0, x=arg1), is the one kernels are written for.
    "atan2": _libdevice("atan2", 2),
    "atanh": _libdevice("atanh"),
    "ceil": _core("tl.math.ceil(x0)"),
    "copysign": _libdevice("copysign", 2),
    "cos": _core("tl.math.cos(x0)"),
    "cosh": _libdevice("cosh"),
    "cyl_bessel_i0": _libdevice("cyl_bessel_i0"),
    "div_rn": _core("tl.math.div_rn(x0, x1)", 2),
    # Rounding toward zero is a property of the result's format: no upcast.
    "div_rz": _libdevice("div_rz", 2, upcast=False),
    "erf": _core("tl.math.erf(x0)"),
    "erfinv": _libdevice("erfinv"),
    "exp": _core("tl.math.exp(x0)"),
    "exp2": _core("tl.math.exp2(x0)"),
    "expm1": _libdevice("expm1"),
    "fdiv": _core("tl.math.fdiv(x0, x1)", 2),
    "flip": None,  # rewritten inline into ``triton.language.flip``
    "floor": _core("tl.math.floor(x0)"),
    "fma": _core("tl.math.fma(x0, x1, x2)", 3),
    "fmod": _core("x0 % x1", 2),
    "gamma": _libdevice("gamma", portable="tgamma"),
    "gather_out_to_ub": None,
    "hypot": _libdevice("hypot", 2),
    # triton-ascend returns the exponent in the input's float dtype.
    "ilogb": _libdevice("ilogb"),
    "index_put": None,
    "index_select_simd": None,
    "isinf": LibdeviceFunction(1, "L.isinf(x0) != 0", boolean=True),
    "isnan": LibdeviceFunction(1, "L.isnan(x0) != 0", boolean=True),
    # triton-ascend's ldexp takes the exponent as a float of the same dtype.
    "ldexp": LibdeviceFunction(2, "L.ldexp(x0, tl.cast(a1, tl.int32))"),
    "lgamma": _libdevice("lgamma"),
    "log": _core("tl.math.log(x0)"),
    "log10": _libdevice("log10"),
    "log1p": _libdevice("log1p"),
    "log2": _core("tl.math.log2(x0)"),
    "nearbyint": _libdevice("nearbyint"),
    # The next float in the argument's own format: no upcast.
    "nextafter": _libdevice("nextafter", 2, upcast=False),
    "pow": _libdevice("pow", 2),
    "reciprocal": _core("1.0 / x0"),
    "relu": _core("tl.maximum(a0, 0.0)", upcast=False),
    "round": _libdevice("round"),
    "rsqrt": _core("tl.math.rsqrt(x0)"),
    "set_element": None,
    "signbit": LibdeviceFunction(1, "L.signbit(x0) != 0", boolean=True),
    "sin": _core("tl.math.sin(x0)"),
    "sinh": _libdevice("sinh"),
    "sqrt": _core("tl.math.sqrt(x0)"),
    "sqrt_rn": _core("tl.math.sqrt_rn(x0)"),
    "tan": _libdevice("tan"),
    "tanh": _libdevice("tanh"),
    "trunc": _libdevice("trunc"),
    "umulhi": _core("tl.math.umulhi(a0, a1)", 2, upcast=False),
}

_INTRINSIC_HINT = (
    "It is an Ascend data-movement intrinsic (Unified Buffer or indexed "
    "memory access) with no portable counterpart, so this kernel's NPU "
    "variant cannot be emulated; check it with `ninetoothed-ascend check` "
    "(the Ascend compile check) instead."
)


def _gamma(x):
    def gamma(value):
        try:
            return math.gamma(value)
        except ValueError:  # a pole: 0 or a negative integer
            return math.nan
        except OverflowError:
            return math.inf

    return np.vectorize(gamma, otypes=[np.float64])(x)


def _torch(name):
    def function(x):
        import torch

        return getattr(torch.special, name)(torch.from_numpy(x)).numpy()

    return function


def _ilogb(x):
    # libdevice's conventions: FP_ILOGB0 and FP_ILOGBNAN are INT_MIN, inf gives INT_MAX.
    _, exponent = np.frexp(x)
    result = exponent.astype(np.float64) - 1
    result = np.where(x == 0, -(2.0**31), result)
    result = np.where(np.isinf(x), 2.0**31 - 1, result)

    return np.where(np.isnan(x), -(2.0**31), result)


def _round_half_away_from_zero(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _nextafter(x, y, dtype):
    return np.nextafter(x.astype(dtype), y.astype(dtype))


def _div_rz(x, y, dtype):
    # The fp64 quotient of two narrower floats is exact enough to tell which
    # way the nearest narrower float lies from the true quotient.
    quotient = x / y
    nearest = quotient.astype(dtype)

    with np.errstate(invalid="ignore"):
        too_far = np.abs(nearest.astype(np.float64)) > np.abs(quotient)

    return np.where(too_far, np.nextafter(nearest, np.zeros_like(nearest)), nearest)


#: NumPy meaning of each libdevice function that the CPU computes outside
#: Triton: ``name -> function of fp64 arrays``; those in
#: :data:`_IN_RESULT_DTYPE` also take the result's NumPy dtype.
NUMPY_FUNCTIONS = {
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atan2": np.arctan2,
    "atanh": np.arctanh,
    "copysign": np.copysign,
    "cosh": np.cosh,
    "cyl_bessel_i0": np.i0,
    "div_rz": _div_rz,
    "erfinv": _torch("erfinv"),
    "expm1": np.expm1,
    "gamma": _gamma,
    "hypot": np.hypot,
    "ilogb": _ilogb,
    "isinf": np.isinf,
    "isnan": np.isnan,
    "ldexp": lambda x, exponent: np.ldexp(x, exponent.astype(np.int32)),
    "lgamma": _torch("gammaln"),
    "log10": np.log10,
    "log1p": np.log1p,
    "nearbyint": np.rint,
    "nextafter": _nextafter,
    "pow": np.power,
    "round": _round_half_away_from_zero,
    "signbit": np.signbit,
    "sinh": np.sinh,
    "tan": np.tan,
    "tanh": np.tanh,
    "trunc": np.trunc,
}

_IN_RESULT_DTYPE = {"nextafter", "div_rz"}


def numpy_elementwise(name, *args):
    """Compute libdevice function ``name`` on interpreter tensors with NumPy.

    Called from emulated CPU variants, inside Triton's interpreter, where
    ``extern_elementwise`` (every libdevice call) raises
    ``NotImplementedError`` (Triton 3.9, ``interpreter_builder``). The
    arguments are promoted and broadcast as Triton's elementwise operators
    do; the function is computed in fp64 and the result cast to the promoted
    dtype (``int1`` for predicates).

    :param name: ``str``, a key of :data:`NUMPY_FUNCTIONS`.
    :param args: interpreter ``triton.language.tensor`` values or Python numbers.
    :return: ``triton.language.tensor`` of the broadcast shape.
    :raises NotImplementedError: ``nextafter`` or ``div_rz`` on a dtype NumPy lacks (bf16).
    """

    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    function = NUMPY_FUNCTIONS[name]
    like = functools.reduce(operator.add, args)

    if not isinstance(like, tl.tensor):
        return float(function(*(np.float64(arg) for arg in args)))

    arrays = np.broadcast_arrays(
        *(
            np.asarray(tl.cast(arg, tl.float64).handle.data, dtype=np.float64)
            for arg in args
        )
    )

    if name in _IN_RESULT_DTYPE:
        dtype = {tl.float16: np.float16, tl.float32: np.float32, tl.float64: np.float64}
        if like.dtype not in dtype:
            raise NotImplementedError(
                f"emulating libdevice.{name} on {like.dtype} needs a NumPy type for it; "
                "use fp16, fp32 or fp64."
            )
        result = function(*arrays, dtype[like.dtype])
    else:
        result = function(*arrays)

    boolean = LIBDEVICE[name].boolean
    element = tl.int1 if boolean else tl.float64
    data = np.ascontiguousarray(
        np.broadcast_to(result, like.handle.data.shape),
        dtype=np.bool_ if boolean else np.float64,
    )
    result_type = (
        tl.block_type(element, like.shape) if like.type.is_block() else element
    )
    output = tl.tensor(TensorHandle(data, element), result_type)

    return output if boolean else output.to(like.dtype)


def numpy_flip(input, dim=-1):
    """Reverse an interpreter tensor along ``dim``, as triton-ascend's ``libdevice.flip(input, dim)`` does.

    :param input: interpreter ``triton.language.tensor`` of any shape.
    :param dim: ``int`` (or ``constexpr``), the dimension; negative counts from the last.
    :return: ``triton.language.tensor`` of the same shape and dtype.
    """

    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    dim = getattr(dim, "value", dim)
    data = np.ascontiguousarray(
        np.flip(input.handle.data, axis=-1 if dim is None else dim)
    )

    return tl.tensor(TensorHandle(data, input.handle.dtype), input.type)


def _is_ascend_libdevice(name):
    return name is not None and any(
        name.startswith(f"{module}.libdevice.") for module in ASCEND_LIBDEVICE_MODULES
    )


def _is_libdevice_module(name):
    return name in {f"{module}.libdevice" for module in ASCEND_LIBDEVICE_MODULES}


def _is_ascend_only(name):
    return name is not None and any(
        name == module or name.startswith(f"{module}.")
        for module in ASCEND_ONLY_MODULES
    )


class _EmulateLibdevice(Pass):
    """Replace calls to triton-ascend's libdevice with helpers of the same meaning (base of the per-device passes)."""

    DEVICE_TYPE = None

    def run(self, tree):
        self.used = {}

        return super().run(tree)

    def visit_Call(self, node):
        name = self.resolve(node.func)

        if not _is_ascend_libdevice(name):
            self.generic_visit(node)
            return node

        node.args = [self.visit(argument) for argument in node.args]
        function_name = name.rsplit(".", 1)[1]

        if function_name not in LIBDEVICE:
            raise RewriteError(
                f"`{name}` is not a function of triton-ascend 3.2.0's libdevice, "
                "so its meaning is unknown.",
                "Use one of the 56 functions listed in ninetoothed_ascend.jit.emulation.LIBDEVICE.",
            )

        if node.keywords:
            raise RewriteError(
                f"`{name}` is called with keyword arguments.",
                "Pass libdevice arguments by position.",
            )

        self.rewrote()

        if function_name == "flip":
            return ast.copy_location(self.flip(node.args), node)

        function = LIBDEVICE[function_name]

        if function is None:
            raise RewriteError(
                f"the kernel calls `{name}`.",
                _INTRINSIC_HINT,
            )

        if len(node.args) != function.arity:
            raise RewriteError(
                f"`{name}` takes {function.arity} arguments, the kernel passes {len(node.args)}.",
                "Fix the call.",
            )

        self.used[function_name] = function

        return ast.copy_location(
            ast.Call(
                ast.Name(_HELPER_PREFIX + function_name, ast.Load()), node.args, []
            ),
            node,
        )

    def visit_Attribute(self, node):
        if isinstance(getattr(node, "ctx", None), ast.Load) and _is_ascend_libdevice(
            self.resolve(node)
        ):
            # Calls reach ``visit_Call`` first and never get here; any other
            # use (a function passed as a value) has no helper to stand for it.
            raise RewriteError(
                f"`{self.resolve(node)}` is used other than by calling it.",
                "Call libdevice functions directly in the kernel.",
            )

        self.generic_visit(node)

        return node

    def visit_Import(self, node):
        kept = [alias for alias in node.names if not _is_libdevice_module(alias.name)]

        if len(kept) != len(node.names):
            self.rewrote()

        if not kept:
            return None

        node.names = kept

        return node

    def visit_ImportFrom(self, node):
        if _is_libdevice_module(node.module) or (
            node.module in ASCEND_LIBDEVICE_MODULES
            and [alias.name for alias in node.names] == ["libdevice"]
        ):
            self.rewrote()
            return None

        return node

    def visit_Try(self, node):
        # RemapLibdevice's detecting import: try cann, except try ascend,
        # except raise. Without its imports, nothing of it is left to run.
        imports_ascend = any(
            isinstance(item, ast.ImportFrom) and item.module in ASCEND_LIBDEVICE_MODULES
            for item in ast.walk(node)
        )
        self.generic_visit(node)

        if imports_ascend and _only_raises(node):
            return None

        return node

    def finish(self, tree):
        for try_node in [node for node in ast.walk(tree) if isinstance(node, ast.Try)]:
            _drop_empty_blocks(try_node)

        if self.used:
            insert_after_imports(tree, self.helpers())

    def flip(self, arguments):
        return ast.Call(_attribute("triton.language.flip"), arguments, [])

    def helpers(self):
        raise NotImplementedError


def _only_raises(node):
    statements = [
        statement
        for statement in ast.walk(node)
        if isinstance(statement, ast.stmt) and not isinstance(statement, ast.Try)
    ]

    return all(isinstance(statement, ast.Raise) for statement in statements)


def _drop_empty_blocks(node):
    for handler in node.handlers:
        if not handler.body:
            handler.body = [ast.Pass()]

    if not node.body:
        node.body = [ast.Pass()]


def _attribute(dotted):
    return ast.parse(dotted, mode="eval").body


def _expression(template):
    return template.replace("L.", f"{_PORTABLE_LIBDEVICE}.").replace(
        "tl.", "triton.language."
    )


def _jit_helper(name, function, template):
    parameters = ", ".join(f"a{index}" for index in range(function.arity))
    lines = ["@triton.jit", f"def {_HELPER_PREFIX}{name}({parameters}):"]

    if not function.boolean:
        promoted = " + ".join(f"a{index}" for index in range(function.arity))
        lines.append(f"    ninetoothed_dtype = ({promoted}).dtype")

    for index in range(function.arity):
        value = (
            f"triton.language.cast(a{index}, triton.language.float32)"
            if function.upcast
            else f"a{index}"
        )
        lines.append(f"    x{index} = {value}")

    expression = _expression(template)

    if function.boolean:
        lines.append(f"    return {expression}")
    else:
        lines.append(f"    return ({expression}).to(ninetoothed_dtype)")

    return ast.parse("\n".join(lines)).body


class EmulateLibdeviceOnCuda(_EmulateLibdevice):
    """Map triton-ascend's libdevice to CUDA Triton's libdevice and core ``triton.language``.

    Constraint: the NPU variant imports ``triton.language.extra.cann`` or
    ``.ascend`` (:class:`~ninetoothed_ascend.ascendify.RemapLibdevice`),
    which exist only in triton-ascend. Each call ``libdevice.NAME(...)``
    becomes ``ninetoothed_emulated_NAME(...)``, a ``triton.jit`` helper that
    computes :data:`LIBDEVICE`'s CUDA expression, in fp32 when the function
    is ``upcast`` (triton-ascend has fp16 variants, CUDA's libdevice fp32
    and fp64 ones only), cast back to the arguments' dtype. The Ascend
    import is removed and ``from triton.language.extra import libdevice``
    added under a name of its own.
    """

    def helpers(self):
        statements = [
            ast.parse(
                f"from triton.language.extra import libdevice as {_PORTABLE_LIBDEVICE}"
            ).body[0]
        ]

        for name, function in sorted(self.used.items()):
            statements.extend(_jit_helper(name, function, function.cuda))

        return statements


class EmulateLibdeviceOnCpu(_EmulateLibdevice):
    """Map triton-ascend's libdevice to core ``triton.language`` and NumPy for Triton's interpreter.

    Constraint: Triton's interpreter runs no libdevice function: every one is
    an ``extern_elementwise``, which ``interpreter_builder`` refuses
    ("extern_elementwise not supported in interpreter mode", Triton 3.9
    triton/runtime/interpreter.py; ``_patch_lang`` patches
    ``triton.language`` and ``triton.language.math`` only). Each call
    becomes ``ninetoothed_emulated_NAME(...)``: a ``triton.jit`` helper over
    core ``triton.language`` where one has the meaning (``exp``, ``sqrt``,
    ``fma``, ...), else a Python function that computes it with NumPy in
    fp64 on the interpreter's arrays (:func:`numpy_elementwise`).
    """

    def flip(self, arguments):
        # ``triton.language.flip`` calls further ``triton.jit`` functions
        # (``xor_sum``), which an interpreted copy cannot call.
        self.used["flip"] = None

        return ast.Call(ast.Name(f"{_NUMPY_RUNTIME_FLIP}", ast.Load()), arguments, [])

    def helpers(self):
        statements = []

        if "flip" in self.used:
            self.used.pop("flip")
            statements.append(
                ast.parse(
                    "from ninetoothed_ascend.jit.emulation import "
                    f"numpy_flip as {_NUMPY_RUNTIME_FLIP}"
                ).body[0]
            )

        if any(function.cpu is None for function in self.used.values()):
            statements.append(
                ast.parse(
                    # ``import ninetoothed_ascend.jit.emulation as ...`` would
                    # reach the ``jit`` function the package exports instead.
                    "from ninetoothed_ascend.jit.emulation import "
                    f"numpy_elementwise as {_NUMPY_RUNTIME}"
                ).body[0]
            )

        for name, function in sorted(self.used.items()):
            if function.cpu is not None:
                statements.extend(_jit_helper(name, function, function.cpu))
            else:
                parameters = ", ".join(f"a{index}" for index in range(function.arity))
                statements.extend(
                    ast.parse(
                        f"def {_HELPER_PREFIX}{name}({parameters}):\n"
                        f"    return {_NUMPY_RUNTIME}({name!r}, {parameters})"
                    ).body
                )

        return statements


class _EmulateHf32(Pass):
    PRECISION = None

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.dot"):
            return node

        precision = keyword(node, "input_precision")

        if precision is not None and _is_hf32(precision.value):
            precision.value = ast.Constant(self.PRECISION)
            self.rewrote()
        elif len(node.args) > 3 and _is_hf32(node.args[3]):
            node.args[3] = ast.Constant(self.PRECISION)
            self.rewrote()

        return node


def _is_hf32(node):
    return isinstance(node, ast.Constant) and node.value == "hf32"


class EmulateHf32OnCuda(_EmulateHf32):
    """Use tf32 where the NPU variant asks ``dot`` for hf32.

    Constraint: hf32 exists only on Ascend (CUDA Triton 3.9 allows ``tf32``,
    ``tf32x3`` and ``ieee``). tf32, fp32 operands rounded to a 10-bit
    mantissa and accumulated in fp32, is the nearest CUDA mode to hf32 and
    the one :class:`~ninetoothed_ascend.ascendify.UseHf32InDot` replaced.
    """

    PRECISION = "tf32"


class EmulateHf32OnCpu(_EmulateHf32):
    """Use ieee where the NPU variant asks ``dot`` for hf32.

    Constraint: Triton's interpreter accepts ``tf32``, ``tf32x3`` and
    ``ieee`` and computes every one as an fp32 ``numpy.matmul``
    (``interpreter_builder.create_dot``); ``ieee`` says what it does.
    """

    PRECISION = "ieee"


class RestoreModuleAutotune(Pass):
    """Turn the NPU variant's deferred autotuner back into a module-level one for the interpreter pipeline.

    Constraint: :class:`~ninetoothed_ascend.ascendify.DeferAutotune` wraps
    ``name = triton.autotune(...)(kernel)`` in a cached factory ``name()``
    for triton-ascend 3.2 (which asks a driver for a benchmarker at import);
    the interpreter pipeline's
    :class:`~ninetoothed_ascend.jit.interpreter.FixAutotuneConfig` replaces a
    module-level autotuner, which it must find. Both forms create the same
    autotuner; this pass is DeferAutotune's inverse: a module-level function
    decorated with ``functools.cache`` whose body is ``return
    triton.autotune(...)(kernel)`` becomes the assignment again, and each
    ``name()`` becomes ``name``.
    """

    def visit_Module(self, node):
        factories = set()

        for index, statement in enumerate(node.body):
            assignment = self._assignment(statement)

            if assignment is not None:
                node.body[index] = ast.copy_location(assignment, statement)
                factories.add(statement.name)
                self.rewrote()

        if factories:
            _NameInsteadOfCall(factories).visit(node)

        return node

    def _assignment(self, statement):
        if not (
            isinstance(statement, ast.FunctionDef)
            and len(statement.decorator_list) == 1
            and self.resolve(statement.decorator_list[0]) == "functools.cache"
            and not statement.args.args
            and len(statement.body) == 1
            and isinstance(statement.body[0], ast.Return)
        ):
            return None

        assignment = ast.Assign(
            targets=[ast.Name(statement.name, ast.Store())],
            value=statement.body[0].value,
        )

        if not autotune_assignments(ast.Module(body=[assignment], type_ignores=[])):
            return None

        return assignment


class _NameInsteadOfCall(ast.NodeTransformer):
    def __init__(self, names):
        self._names = names

    def visit_Call(self, node):
        self.generic_visit(node)

        if (
            isinstance(node.func, ast.Name)
            and node.func.id in self._names
            and not node.args
            and not node.keywords
        ):
            return node.func

        return node


class RejectAscendOnly(Pass):
    """Fail on any Ascend-only symbol the emulation passes before it left in place.

    Constraint: emulation claims that the emulated source means what the NPU
    variant means, with only the mapped symbols changed. A reference to a
    module that exists only in triton-ascend (:data:`ASCEND_ONLY_MODULES`)
    or an ``hf32`` precision still present means an NPU pass emits something
    this module does not know how to emulate: the emulation stops and names
    it instead of running something else.
    """

    def visit_Attribute(self, node):
        name = self.resolve(node)

        if _is_ascend_only(name):
            raise RewriteError(
                f"`{name}` exists only in triton-ascend and has no emulation.",
                "Add its portable meaning to ninetoothed_ascend.jit.emulation.",
            )

        self.generic_visit(node)

        return node

    def visit_Constant(self, node):
        if node.value == "hf32":
            raise RewriteError(
                "`hf32` is left outside a `dot` input precision.",
                "Add its portable meaning to ninetoothed_ascend.jit.emulation.",
            )

        return node


class BooleanMaskData(MaskPass):
    """Make the interpreter hold every load and store mask as NumPy booleans.

    Constraint: Triton 3.9's interpreter gives the result of a comparison
    the dtype of its operands in its ``TensorHandle`` (``binary_op`` keeps
    ``lhs.dtype``), so broadcasting a scalar comparison such as ``index >=
    0`` against a block splats ``int32`` data, and ``&`` with it yields an
    ``int32`` array; a masked load then fails with "mask has unsupported
    dtype" (measured here, ``tests/test_emulation.py::
    test_without_boolean_mask_data_the_interpreter_refuses_the_npu_mask``).
    NineToothed's masks start with ``True &``, which hides this; the NPU
    variant's start with a scalar comparison once
    :class:`~ninetoothed_ascend.ascendify.FoldTrueMask` and
    :class:`~ninetoothed_ascend.ascendify.ScalarizeTileLowerBounds` have run.

    Each ``mask=m`` becomes ``mask=m != 0``: the same predicate, computed as
    booleans. Interpreter only; it is not part of the CUDA emulation.
    """

    def rewrite_mask(self, mask):
        self.rewrote()

        return ast.Compare(left=mask, ops=[ast.NotEq()], comparators=[ast.Constant(0)])


#: The passes that map an NPU variant for each device type, in order.
PIPELINES = {
    "cuda": (EmulateLibdeviceOnCuda, EmulateHf32OnCuda, RejectAscendOnly),
    "cpu": (
        EmulateLibdeviceOnCpu,
        EmulateHf32OnCpu,
        RestoreModuleAutotune,
        RejectAscendOnly,
        BooleanMaskData,
        *interpreter.PIPELINE,
    ),
}


def emulate(npu_source, device_type):
    """Derive the emulated NPU variant for ``device_type`` from the NPU variant's text.

    :param npu_source: ``str``, the NPU variant, as
        :meth:`ninetoothed_ascend.Handle.source` returns it.
    :param device_type: ``"cuda"`` or ``"cpu"``.
    :return: :class:`~ninetoothed_ascend.ascendify.Rewritten`: the emulated
        source and the emulation passes that fired.
    :raises PipelineError: naming the pass that cannot emulate the kernel.
    :raises KeyError: ``device_type`` is not one of :data:`DEVICE_TYPES`.
    """

    if device_type not in PIPELINES:
        raise KeyError(
            f"{device_type!r} cannot emulate the NPU variant; choose one of "
            f"{', '.join(DEVICE_TYPES)}"
        )

    return run_pipeline(npu_source, PIPELINES[device_type])
