"""Import libdevice from triton-ascend instead of CUDA Triton."""

import ast

from ninetoothed_ascend.ascendify.base import Pass

#: Where triton-ascend keeps its libdevice, newest first: ``cann`` in the
#: current source tree, ``ascend`` in triton-ascend 3.2.0 (../shared/ASCEND.md,
#: "libdevice"; FlagGems' Ascend backend makes the same choice by version).
ASCEND_LIBDEVICE_MODULES = (
    "triton.language.extra.cann",
    "triton.language.extra.ascend",
)

_CUDA_LIBDEVICE_MODULES = ("triton.language.extra", "triton.language.extra.cuda")


class RemapLibdevice(Pass):
    """Rewrite ``from triton.language.extra import libdevice as name`` into an import from triton-ascend.

    Constraint: triton-ascend's libdevice is its own module, which moved from
    ``triton.language.extra.ascend`` (3.2.0) to ``triton.language.extra.cann``
    (current source tree); CUDA Triton's ``triton.language.extra.libdevice``
    dispatches to CUDA or HIP only (../shared/ASCEND.md, "libdevice").

    The module is detected where the variant is imported, not assumed where it
    is generated: the rewritten import tries each of
    :data:`ASCEND_LIBDEVICE_MODULES` in turn, so one NPU variant serves every
    triton-ascend version, and a machine without triton-ascend gets an
    ``ImportError`` naming the modules it tried.
    """

    def visit_ImportFrom(self, node):
        if node.module not in _CUDA_LIBDEVICE_MODULES or [
            alias.name for alias in node.names
        ] != ["libdevice"]:
            return node

        self.rewrote()

        return ast.copy_location(_detecting_import(node.names[0]), node)


def _detecting_import(alias):
    statement = ast.Raise(
        exc=ast.Call(
            func=ast.Name("ImportError", ast.Load()),
            args=[
                ast.Constant(
                    "The NPU variant needs triton-ascend's libdevice; found none of "
                    + ", ".join(
                        f"{module}.libdevice" for module in ASCEND_LIBDEVICE_MODULES
                    )
                    + ". Install triton-ascend."
                )
            ],
            keywords=[],
        )
    )

    for module in reversed(ASCEND_LIBDEVICE_MODULES):
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
