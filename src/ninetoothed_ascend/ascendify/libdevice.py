"""Map every CUDA libdevice call to triton-ascend, by table."""

import ast
import dataclasses
import textwrap

from ninetoothed_ascend.ascendify.base import Pass, RewriteError, insert_after_imports
from ninetoothed_ascend.compiler.target import (
    LIBDEVICE_AFTER_3_2,
    LIBDEVICE_UP_TO_3_2,
)

#: Where triton-ascend keeps its libdevice, newest first: ``cann`` after 3.2,
#: ``ascend`` up to it (the target chooses among them by version:
#: :attr:`~ninetoothed_ascend.compiler.target.Target.libdevice_modules`).
ASCEND_LIBDEVICE_MODULES = (LIBDEVICE_AFTER_3_2, LIBDEVICE_UP_TO_3_2)

#: The modules NineToothed (``from triton.language.extra import libdevice``)
#: and hand-written CUDA kernels import libdevice from.
CUDA_LIBDEVICE_MODULES = (
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice",
)

#: Where calls reach libdevice: the modules above, and
#: ``triton.language.libdevice``, which NineToothed 0.26 writes for
#: ``ninetoothed.language.libdevice.f(...)`` (it maps ``ninetoothed.language``
#: to ``triton.language``) and which no Triton since 3.0 has.
CUDA_LIBDEVICE_CALLS = (*CUDA_LIBDEVICE_MODULES, "triton.language.libdevice")

#: The name the NPU variant binds triton-ascend's libdevice to.
ASCEND_LIBDEVICE_ALIAS = "ninetoothed_ascend_libdevice"

#: Prefix of the module-level ``triton.jit`` functions that hold composites.
COMPOSITE_PREFIX = "ninetoothed_ascend_libdevice_"


@dataclasses.dataclass(frozen=True)
class Ascend:
    """The function ``name`` of triton-ascend's libdevice, same meaning."""

    name: str


@dataclasses.dataclass(frozen=True)
class Core:
    """The function ``name`` of ``triton.language``, same meaning.

    Used where triton-ascend 3.2's libdevice only re-exports the core
    function (``exp``, ``sqrt``, ...: the same objects), so the NPU variant
    does not depend on what a later libdevice module keeps.
    """

    name: str


@dataclasses.dataclass(frozen=True)
class Composite:
    """A ``triton.jit`` function of core ``tl`` and Ascend ``libdevice`` calls.

    :param source: ``str``, one function definition whose parameters are the
        call's arguments, in order; ``tl`` is ``triton.language`` and
        ``libdevice`` is triton-ascend's libdevice.
    :param note: ``str``, where the composite differs from CUDA's function
        (precision, range), or ``""``.
    """

    source: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class NoEquivalent:
    """No function of triton-ascend means the same; a call is refused at generation.

    :param reason: ``str``, why, for the error message.
    """

    reason: str


_DIRECTED = NoEquivalent(
    "directed rounding modes (rd, ru, rz) are not exposed by triton-ascend"
)
_BITS = NoEquivalent("integer bit intrinsics have no triton-ascend counterpart")
_BESSEL = NoEquivalent("triton-ascend's libdevice has no Bessel function but i0")
_FP64_BITS = NoEquivalent(
    "Ascend vector units have no fp64; fp64 bit fiddling has no meaning"
)


def _composite(body, note=""):
    return Composite(textwrap.dedent(body).strip() + "\n", note)


def _cast(to, rounding):
    """Float-to-integer conversion ``x`` rounded ``rounding`` (``rn``, ``rz``, ``rd``, ``ru``)."""

    rounded = {
        "rn": "libdevice.nearbyint(x)",
        "rz": "x",  # Triton's float-to-integer cast truncates (fptosi/fptoui).
        "rd": "tl.floor(x)",
        "ru": "tl.ceil(x)",
    }[rounding]

    return _composite(f"def f(x):\n    return tl.cast({rounded}, tl.{to})")


def _conversions():
    integer_types = {"int": "int32", "uint": "uint32", "ll": "int64", "ull": "uint64"}
    table = {}

    for source in ("float", "double"):
        for prefix, to in integer_types.items():
            for rounding in ("rn", "rz", "rd", "ru"):
                table[f"{source}2{prefix}_{rounding}"] = _cast(to, rounding)

    for prefix in integer_types:
        table[f"{prefix}2float_rn"] = _composite(
            "def f(x):\n    return tl.cast(x, tl.float32)"
        )
        # LowerFloat64 (after this pass) makes the float64 a float32.
        table[f"{prefix}2double_rn"] = _composite(
            "def f(x):\n    return tl.cast(x, tl.float64)",
            "fp64 becomes fp32 on Ascend (LowerFloat64)",
        )

        for rounding in ("rz", "rd", "ru"):
            table[f"{prefix}2float_{rounding}"] = _DIRECTED
            table[f"{prefix}2double_{rounding}"] = _DIRECTED

    table["double2float_rn"] = _composite(
        "def f(x):\n    return tl.cast(x, tl.float32)"
    )

    for rounding in ("rz", "rd", "ru"):
        table[f"double2float_{rounding}"] = _DIRECTED

    for name, to in (
        ("float_as_int", "int32"),
        ("float_as_uint", "uint32"),
        ("int_as_float", "float32"),
        ("uint_as_float", "float32"),
    ):
        table[name] = _composite(
            f"def f(x):\n    return tl.cast(x, tl.{to}, bitcast=True)"
        )

    return table


#: Every libdevice function: CUDA Triton 3.9's
#: ``triton.language.extra.cuda.libdevice`` and triton-ascend 3.2's
#: ``triton.language.extra.ascend.libdevice``, by name. Sources: the two
#: modules themselves (tests/test_ascendify_libdevice.py checks that the table
#: covers both and that every target exists and compiles in triton-ascend 3.2).
LIBDEVICE = {
    # Same meaning in triton-ascend's libdevice.
    **{
        name: Ascend(name)
        for name in (
            "acos",
            "acosh",
            "asin",
            "asinh",
            "atan",
            "atanh",
            "copysign",
            "cosh",
            "cyl_bessel_i0",
            "erfinv",
            "expm1",
            "hypot",
            "ilogb",
            "isinf",
            "isnan",
            "ldexp",
            "lgamma",
            "log10",
            "log1p",
            "nearbyint",
            "nextafter",
            "pow",
            "round",
            "signbit",
            "sinh",
            "tan",
            "tanh",
            "trunc",
            # Ascend only: reached by kernels written against triton-ascend.
            "flip",
            "gamma",
            "reciprocal",
            "relu",
            "set_element",
            "gather_out_to_ub",
            "index_put",
            "index_select_simd",
        )
    },  # fmt: skip
    "rint": Ascend("nearbyint"),  # both round half to even
    "scalbn": Ascend("ldexp"),
    "tgamma": Ascend("gamma"),
    "rcp_rn": Ascend("reciprocal"),
    "fast_log10f": Ascend("log10"),
    "fast_powf": Ascend("pow"),
    "fast_tanf": Ascend("tan"),
    # Same meaning in triton.language (triton-ascend's libdevice re-exports these).
    **{
        name: Core(name)
        for name in (
            "abs",
            "ceil",
            "cos",
            "div_rn",
            "erf",
            "exp",
            "exp2",
            "fdiv",
            "floor",
            "fma",
            "log",
            "log2",
            "rsqrt",
            "sin",
            "sqrt",
            "sqrt_rn",
            "umulhi",
        )
    },  # fmt: skip
    "fma_rn": Core("fma"),
    "rsqrt_rn": Core("rsqrt"),
    "fast_cosf": Core("cos"),
    "fast_sinf": Core("sin"),
    "fast_expf": Core("exp"),
    "fast_logf": Core("log"),
    "fast_log2f": Core("log2"),
    "fast_dividef": Core("fdiv"),
    # Composites of the above.
    "add_rn": _composite("def f(x, y):\n    return x + y"),
    "sub_rn": _composite("def f(x, y):\n    return x - y"),
    "mul_rn": _composite("def f(x, y):\n    return x * y"),
    "exp10": _composite("def f(x):\n    return tl.exp2(x * 3.321928094887362)"),
    "fast_exp10f": _composite("def f(x):\n    return tl.exp2(x * 3.321928094887362)"),
    "atan2": _composite(
        """
        def f(y, x):
            # triton-ascend 3.2's libdevice.atan2(a, b) computes atan2(b, a).
            base = tl.where(x == 0, 0.0, libdevice.atan(y / x))
            base = tl.where((x == 0) & (y > 0), 1.5707963267948966, base)
            base = tl.where((x == 0) & (y < 0), -1.5707963267948966, base)
            base += tl.where((x < 0) & (y >= 0), 3.141592653589793, 0.0)
            base += tl.where((x < 0) & (y < 0), -3.141592653589793, 0.0)
            return base
        """
    ),
    "cbrt": _composite(
        """
        def f(x):
            root = tl.exp2(tl.log2(tl.abs(x)) * 0.3333333333333333)
            return tl.where(x < 0, -root, root)
        """,
        "through exp2/log2: a few ulp",
    ),
    "rcbrt": _composite(
        """
        def f(x):
            root = tl.exp2(tl.log2(tl.abs(x)) * -0.3333333333333333)
            return tl.where(x < 0, -root, root)
        """,
        "through exp2/log2: a few ulp; rcbrt(-0.0) is +inf (CUDA: -inf)",
    ),
    "cospi": _composite(
        "def f(x):\n    return tl.cos(x * 3.141592653589793)",
        "x * pi is rounded first: large x lose accuracy",
    ),
    "sinpi": _composite(
        "def f(x):\n    return tl.sin(x * 3.141592653589793)",
        "x * pi is rounded first: large x lose accuracy",
    ),
    "erfc": _composite(
        "def f(x):\n    return 1.0 - tl.erf(x)",
        "cancels for large x: absolute, not relative, accuracy",
    ),
    "erfcinv": _composite("def f(x):\n    return libdevice.erfinv(1.0 - x)"),
    "normcdf": _composite(
        "def f(x):\n    return 0.5 + 0.5 * tl.erf(x * 0.7071067811865476)",
        "absolute, not relative, accuracy in the lower tail",
    ),
    "normcdfinv": _composite(
        "def f(x):\n    return 1.4142135623730951 * libdevice.erfinv(2.0 * x - 1.0)"
    ),
    "fdim": _composite("def f(x, y):\n    return tl.where(x <= y, 0.0, x - y)"),
    "finitef": _composite("def f(x):\n    return tl.abs(x) < float('inf')"),
    "isfinited": _composite("def f(x):\n    return tl.abs(x) < float('inf')"),
    "logb": _composite("def f(x):\n    return tl.floor(tl.log2(tl.abs(x)))"),
    "saturatef": _composite(
        "def f(x):\n    return tl.where(x > 0.0, tl.where(x < 1.0, x, 1.0), 0.0)"
    ),
    "fmod": _composite(
        # triton-ascend 3.2's libdevice.fmod is a static_assert(False).
        "def f(x, y):\n    return x - libdevice.trunc(x / y) * y",
        "x / y is rounded first: exact only while the quotient fits the mantissa",
    ),
    "remainder": _composite(
        "def f(x, y):\n    return x - libdevice.nearbyint(x / y) * y",
        "x / y is rounded first: exact only while the quotient fits the mantissa",
    ),
    "llrint": _composite(
        "def f(x):\n    return tl.cast(libdevice.nearbyint(x), tl.int64)"
    ),
    "llround": _composite(
        "def f(x):\n    return tl.cast(libdevice.round(x), tl.int64)"
    ),
    "rhypot": _composite(
        "def f(x, y):\n    return tl.rsqrt(x * x + y * y)", "overflows where x * x does"
    ),
    "norm3d": _composite(
        "def f(x, y, z):\n    return tl.sqrt(x * x + y * y + z * z)",
        "overflows where x * x does",
    ),
    "rnorm3d": _composite(
        "def f(x, y, z):\n    return tl.rsqrt(x * x + y * y + z * z)",
        "overflows where x * x does",
    ),
    "norm4d": _composite(
        "def f(x, y, z, w):\n    return tl.sqrt(x * x + y * y + z * z + w * w)",
        "overflows where x * x does",
    ),
    "rnorm4d": _composite(
        "def f(x, y, z, w):\n    return tl.rsqrt(x * x + y * y + z * z + w * w)",
        "overflows where x * x does",
    ),
    **_conversions(),
    # No Ascend equivalent.
    "div_rz": NoEquivalent(
        "triton-ascend 3.2's libdevice.div_rz is a static_assert(False)"
    ),
    **dict.fromkeys(
        (
            "add_rd",
            "add_ru",
            "add_rz",
            "sub_rd",
            "sub_ru",
            "sub_rz",
            "mul_rd",
            "mul_ru",
            "mul_rz",
            "div_rd",
            "div_ru",
            "fma_rd",
            "fma_ru",
            "fma_rz",
            "rcp_rd",
            "rcp_ru",
            "rcp_rz",
            "sqrt_rd",
            "sqrt_ru",
            "sqrt_rz",
        ),
        _DIRECTED,
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "brev",
            "byte_perm",
            "clz",
            "ffs",
            "hadd",
            "mul24",
            "mulhi",
            "popc",
            "rhadd",
            "sad",
        ),
        _BITS,
    ),  # fmt: skip
    **dict.fromkeys(("cyl_bessel_i1", "j0", "j1", "jn", "y0", "y1", "yn"), _BESSEL),
    **dict.fromkeys(
        (
            "double2hiint",
            "double2loint",
            "hiloint2double",
            "double_as_longlong",
            "longlong_as_double",
            "rcp64h",
        ),
        _FP64_BITS,
    ),  # fmt: skip
    "erfcx": NoEquivalent("exp(x * x) * erfc(x) overflows where erfcx matters"),
}


class RemapLibdevice(Pass):
    """Rewrite every CUDA libdevice call by :data:`LIBDEVICE`; import triton-ascend's libdevice where needed.

    Constraint: triton-ascend's libdevice is its own module with its own,
    smaller, set of functions (triton-ascend 3.2.0:
    ``triton.language.extra.ascend.libdevice``, 56 names; the current source
    tree: ``triton.language.extra.cann.libdevice``); CUDA Triton's
    ``triton.language.extra.libdevice`` dispatches to CUDA or HIP only, and
    triton-ascend's copy of it is stubs (../shared/ASCEND.md, "libdevice").
    Two functions of triton-ascend 3.2's libdevice do not do what their name
    says: ``atan2(a, b)`` computes ``atan2(b, a)``, and ``fmod`` and
    ``div_rz`` are ``static_assert(False)`` (read in its source); the table
    maps around them.

    Each call ``<libdevice>.name(args)`` becomes, by ``LIBDEVICE[name]``: a
    call of triton-ascend's function, of the core ``triton.language`` one, or
    of a module-level ``triton.jit`` composite added to the module (one per
    name, ``ninetoothed_ascend_libdevice_<name>``). A name with no
    equivalent, or not in the table, raises :class:`RewriteError` naming it.

    CUDA libdevice imports are removed. If anything uses triton-ascend's
    libdevice, it is imported once, as ``ninetoothed_ascend_libdevice``, from
    the target's triton-ascend's module
    (:attr:`~ninetoothed_ascend.compiler.target.Target.libdevice_modules`),
    or, generated where no triton-ascend is installed, from the first of
    :data:`ASCEND_LIBDEVICE_MODULES` that exists where the variant is
    imported; with none, the import raises an ``ImportError`` naming them.
    """

    def run(self, tree):
        self._composites = {}
        self._uses_ascend = False

        return super().run(tree)

    def visit_ImportFrom(self, node):
        node.names = [
            alias
            for alias in node.names
            if f"{node.module}.{alias.name}" not in CUDA_LIBDEVICE_MODULES
        ]

        return node if node.names else None

    def visit_Import(self, node):
        node.names = [
            alias for alias in node.names if alias.name not in CUDA_LIBDEVICE_MODULES
        ]

        return node if node.names else None

    def visit_Call(self, node):
        name = _libdevice_function(self.resolve(node.func))

        if name is None:
            self.generic_visit(node)

            return node

        node.args = [self.visit(argument) for argument in node.args]
        node.keywords = [self.visit(keyword) for keyword in node.keywords]

        target = LIBDEVICE.get(name)

        if target is None or isinstance(target, NoEquivalent):
            reason = "it is not in the table" if target is None else target.reason
            raise RewriteError(
                f"libdevice.{name} has no Ascend equivalent: {reason}.",
                "Write the kernel with triton.language functions, or with a "
                "libdevice function listed in ninetoothed_ascend.ascendify.libdevice.LIBDEVICE.",
            )

        if isinstance(target, Ascend):
            node.func = ast.Attribute(
                ast.Name(ASCEND_LIBDEVICE_ALIAS, ast.Load()), target.name, ast.Load()
            )
            self._uses_ascend = True
        elif isinstance(target, Core):
            node.func = ast.parse(f"triton.language.{target.name}", mode="eval").body
        else:
            helper = COMPOSITE_PREFIX + name
            self._composites[helper] = target
            self._uses_ascend |= "libdevice." in target.source
            node.func = ast.Name(helper, ast.Load())

        self.rewrote()

        return node

    def visit_Attribute(self, node):
        if _libdevice_function(self.resolve(node)) is not None:
            raise RewriteError(
                f"libdevice.{node.attr} is used other than by a call.",
                "Call libdevice functions directly in the kernel.",
            )

        self.generic_visit(node)

        return node

    def finish(self, tree):
        if self.aliases.get("triton") != "triton" and self._composites:
            # Composites name ``triton.language``; NineToothed always imports it.
            tree.body.insert(0, ast.parse("import triton.language").body[0])

        statements = (
            [_detecting_import(self.target.libdevice_modules)]
            if self._uses_ascend
            else []
        )
        statements += [
            composite_function(helper, target)
            for helper, target in sorted(self._composites.items())
        ]
        insert_after_imports(tree, statements)


def composite_function(name, composite):
    """Return the ``ast.FunctionDef`` of ``@triton.jit def name(...)`` for a :class:`Composite`.

    ``tl`` in the composite's source becomes ``triton.language`` and
    ``libdevice`` becomes :data:`ASCEND_LIBDEVICE_ALIAS`.
    """

    function = ast.parse(composite.source).body[0]
    function.name = name
    function.decorator_list = [ast.parse("triton.jit", mode="eval").body]

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id == "tl":
                return ast.copy_location(
                    ast.parse("triton.language", mode="eval").body, node
                )

            if node.id == "libdevice":
                return ast.copy_location(
                    ast.Name(ASCEND_LIBDEVICE_ALIAS, ast.Load()), node
                )

            return node

    return ast.fix_missing_locations(Rename().visit(function))


def _libdevice_function(dotted):
    if dotted is None:
        return None

    module, _, name = dotted.rpartition(".")

    return name if module in CUDA_LIBDEVICE_CALLS else None


def _detecting_import(modules):
    alias = ast.alias("libdevice", ASCEND_LIBDEVICE_ALIAS)
    statement = ast.Raise(
        exc=ast.Call(
            func=ast.Name("ImportError", ast.Load()),
            args=[
                ast.Constant(
                    "The NPU variant needs triton-ascend's libdevice; found none of "
                    + ", ".join(f"{module}.libdevice" for module in modules)
                    + ". Install triton-ascend."
                )
            ],
            keywords=[],
        )
    )

    for module in reversed(modules):
        statement = ast.Try(
            body=[ast.ImportFrom(module=module, names=[alias], level=0)],
            handlers=[
                ast.ExceptHandler(
                    type=ast.Name("ImportError", ast.Load()),
                    name=None,
                    body=[statement],
                )
            ],
            orelse=[],
            finalbody=[],
        )

    return statement
