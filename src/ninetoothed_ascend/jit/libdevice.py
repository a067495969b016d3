"""Libdevice functions, with their meaning on a CUDA GPU and in Triton's interpreter.

triton-ascend 3.2.0's libdevice module has 56 functions (:data:`LIBDEVICE`).
:class:`MapLibdevice` replaces calls to a libdevice module by module-level
helpers ``ninetoothed_emulated_NAME`` that compute the same function with
what the target has: CUDA Triton's libdevice and core ``triton.language``
on a CUDA GPU; core ``triton.language`` and NumPy in Triton's interpreter,
which runs no libdevice function at all (every one is an
``extern_elementwise``, which its builder refuses: "extern_elementwise not
supported in interpreter mode", Triton 3.9 triton/runtime/interpreter.py).
The emulation of the NPU variant (:mod:`ninetoothed_ascend.jit.emulation`)
maps triton-ascend's module with it; the CPU variant
(:class:`ninetoothed_ascend.jit.interpreter.InterpretLibdevice`) CUDA
Triton's.
"""

import ast
import dataclasses
import functools
import math
import operator

import numpy as np

from ninetoothed_ascend.ascendify.base import Pass, RewriteError, insert_after_imports

_HELPER_PREFIX = "ninetoothed_emulated_"

_PORTABLE_LIBDEVICE = "ninetoothed_portable_libdevice"

_NUMPY_RUNTIME = "ninetoothed_numpy_elementwise"

_NUMPY_RUNTIME_FLIP = "ninetoothed_numpy_flip"


@dataclasses.dataclass(frozen=True)
class LibdeviceFunction:
    """How one libdevice function is computed where triton-ascend's libdevice does not exist.

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
#: ``None``: an Ascend data-movement intrinsic without a portable meaning,
#: which no helper stands for (a kernel that calls one cannot be emulated),
#: or ``flip``, rewritten inline.
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
    "flip": None,  # inline: ``triton.language.flip`` on CUDA, :func:`numpy_flip` on the CPU
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


class MapLibdevice(Pass):
    """Replace calls to a libdevice module with helpers of the same meaning.

    The base of the passes that map libdevice for a device: subclasses set
    :attr:`MODULES` (the packages whose ``libdevice`` module is matched),
    :attr:`DEVICE_TYPE` (``"cuda"``: ``triton.jit`` helpers over CUDA
    Triton's libdevice and core ``triton.language``; ``"cpu"``: helpers
    over core ``triton.language`` and NumPy for Triton's interpreter) and
    :attr:`FUNCTIONS` (the names of :data:`LIBDEVICE` they map; any other
    call fails, naming the function).
    """

    MODULES = ()
    DEVICE_TYPE = None
    FUNCTIONS = frozenset(LIBDEVICE)
    DESCRIPTION = "libdevice"

    def run(self, tree):
        self.used = {}
        self.flipped = False

        return super().run(tree)

    def visit_Call(self, node):
        name = self.resolve(node.func)

        if not self.matches(name):
            self.generic_visit(node)
            return node

        node.args = [self.visit(argument) for argument in node.args]
        function_name = name.rsplit(".", 1)[1]

        if function_name not in self.FUNCTIONS:
            raise RewriteError(
                f"`{name}` is not a function of {self.DESCRIPTION} that "
                f"ninetoothed-ascend can run on {self.DEVICE_TYPE}.",
                f"Use one of {', '.join(sorted(self.FUNCTIONS))}, or add its "
                "meaning to ninetoothed_ascend.jit.libdevice.LIBDEVICE.",
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
        if isinstance(getattr(node, "ctx", None), ast.Load) and self.matches(
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
        kept = [
            alias for alias in node.names if not self.is_libdevice_module(alias.name)
        ]

        if len(kept) != len(node.names):
            self.rewrote()

        if not kept:
            return None

        node.names = kept

        return node

    def visit_ImportFrom(self, node):
        if self.is_libdevice_module(node.module) or (
            node.module in self.MODULES
            and [alias.name for alias in node.names] == ["libdevice"]
        ):
            self.rewrote()
            return None

        return node

    def visit_Try(self, node):
        # RemapLibdevice's detecting import: try cann, except try ascend,
        # except raise. Without its imports, nothing of it is left to run.
        imports_ascend = any(
            isinstance(item, ast.ImportFrom) and item.module in self.MODULES
            for item in ast.walk(node)
        )
        self.generic_visit(node)

        if imports_ascend and _only_raises(node):
            return None

        return node

    def finish(self, tree):
        for try_node in [node for node in ast.walk(tree) if isinstance(node, ast.Try)]:
            _drop_empty_blocks(try_node)

        if self.used or self.flipped:
            insert_after_imports(tree, self.helpers())

    def matches(self, name):
        """Whether dotted ``name`` is a function of a matched libdevice module."""

        return name is not None and any(
            name.startswith(f"{module}.libdevice.") for module in self.MODULES
        )

    def is_libdevice_module(self, name):
        return name in {f"{module}.libdevice" for module in self.MODULES}

    def flip(self, arguments):
        if self.DEVICE_TYPE == "cuda":
            return ast.Call(_attribute("triton.language.flip"), arguments, [])

        # ``triton.language.flip`` calls further ``triton.jit`` functions
        # (``xor_sum``), which an interpreted copy cannot call.
        self.flipped = True

        return ast.Call(ast.Name(_NUMPY_RUNTIME_FLIP, ast.Load()), arguments, [])

    def helpers(self):
        return (
            _cuda_helpers(self.used)
            if self.DEVICE_TYPE == "cuda"
            else _cpu_helpers(self.used, self.flipped)
        )


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


def _cuda_helpers(used):
    statements = [
        ast.parse(
            f"from triton.language.extra import libdevice as {_PORTABLE_LIBDEVICE}"
        ).body[0]
    ]

    for name, function in sorted(used.items()):
        statements.extend(_jit_helper(name, function, function.cuda))

    return statements


def _cpu_helpers(used, flipped):
    statements = []

    if flipped:
        statements.append(
            ast.parse(
                "from ninetoothed_ascend.jit.libdevice import "
                f"numpy_flip as {_NUMPY_RUNTIME_FLIP}"
            ).body[0]
        )

    if any(function.cpu is None for function in used.values()):
        statements.append(
            ast.parse(
                # ``import ninetoothed_ascend.jit.libdevice as ...`` would
                # reach the ``jit`` function the package exports.
                "from ninetoothed_ascend.jit.libdevice import "
                f"numpy_elementwise as {_NUMPY_RUNTIME}"
            ).body[0]
        )

    for name, function in sorted(used.items()):
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
