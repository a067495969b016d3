"""Libdevice functions computed on a CUDA GPU and in Triton's interpreter.

:class:`MapLibdevice` replaces calls to a libdevice module by module-level
helpers ``ninetoothed_emulated_NAME`` that compute the portable meaning of
triton-ascend 3.2.0's function of that name
(:attr:`ninetoothed_ascend.compiler.libdevice_table.AscendFunction.portable`) with
what the target has: CUDA Triton's libdevice and core ``triton.language``
on a CUDA GPU; core ``triton.language`` and NumPy in Triton's interpreter,
which runs no libdevice function at all (every one is an
``extern_elementwise``, which its builder refuses: "extern_elementwise not
supported in interpreter mode", Triton 3.9 triton/runtime/interpreter.py).
The emulation of the NPU variant (:mod:`ninetoothed_ascend.compiler.emulation`)
maps triton-ascend's module with it; the CPU variant
(:class:`ninetoothed_ascend.compiler.cpu.interpret_libdevice.InterpretLibdevice`) CUDA
Triton's.
"""

import ast

from ninetoothed_ascend.compiler.libdevice_table import ASCEND_FUNCTIONS
from ninetoothed_ascend.compiler.passes import Pass, RewriteError
from ninetoothed_ascend.compiler.syntax import insert_after_imports, statements, walk

_HELPER_PREFIX = "ninetoothed_emulated_"

_PORTABLE_LIBDEVICE = "ninetoothed_portable_libdevice"

_NUMPY_RUNTIME = "ninetoothed_numpy_elementwise"

_NUMPY_RUNTIME_FLIP = "ninetoothed_numpy_flip"


_INTRINSIC_HINT = (
    "It is an Ascend data-movement intrinsic (Unified Buffer or indexed "
    "memory access) with no portable counterpart, so this kernel's NPU "
    "variant cannot be emulated; check it with `ninetoothed-ascend check` "
    "(the Ascend compile check) instead."
)


class MapLibdevice(Pass):
    """Replace calls to a libdevice module with helpers of the same meaning.

    The base of the passes that map libdevice for a device: subclasses set
    :attr:`MODULES` (the packages whose ``libdevice`` module is matched),
    :attr:`DEVICE_TYPE` (``"cuda"``: ``triton.jit`` helpers over CUDA
    Triton's libdevice and core ``triton.language``; ``"cpu"``: helpers
    over core ``triton.language`` and NumPy for Triton's interpreter) and
    :attr:`FUNCTIONS` (the names of
    :data:`~ninetoothed_ascend.compiler.libdevice_table.ASCEND_FUNCTIONS` they map;
    any other call fails, naming the function).
    """

    MODULES = ()
    DEVICE_TYPE = None
    FUNCTIONS = frozenset(ASCEND_FUNCTIONS)
    DESCRIPTION = "libdevice"

    @classmethod
    def applies_to(cls, module):
        return module.refers_to(f"{package}.libdevice" for package in cls.MODULES)

    def run(self, tree, module=None):
        self.used = {}
        self.flipped = False

        return super().run(tree, module)

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
                "meaning to ninetoothed_ascend.compiler.libdevice_table.ASCEND_FUNCTIONS.",
            )

        if node.keywords:
            raise RewriteError(
                f"`{name}` is called with keyword arguments.",
                "Pass libdevice arguments by position.",
            )

        self.rewrote()

        if function_name == "flip":
            return ast.copy_location(self.flip(node.args), node)

        function = ASCEND_FUNCTIONS[function_name].portable

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
            for item in walk(node)
        )
        self.generic_visit(node)

        if imports_ascend and _only_raises(node):
            return None

        return node

    def finish(self, tree):
        for try_node in [
            node for node in statements(tree) if isinstance(node, ast.Try)
        ]:
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
        for statement in walk(node)
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
                "from ninetoothed_ascend.runtime import "
                f"numpy_flip as {_NUMPY_RUNTIME_FLIP}"
            ).body[0]
        )

    if any(function.cpu is None for function in used.values()):
        statements.append(
            ast.parse(
                "from ninetoothed_ascend.runtime import "
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
