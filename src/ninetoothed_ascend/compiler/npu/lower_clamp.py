"""Lower ``clamp`` to ``maximum`` and ``minimum``."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import dotted_name, keyword


class LowerClamp(Pass):
    """Rewrite ``clamp(x, lo, hi, propagate_nan=p)`` into ``minimum(maximum(x, lo, propagate_nan=p), hi, propagate_nan=p)``.

    Constraint: triton-ascend's API support table (docs/Python_API.md,
    "triton op支持度总表") lists ``minimum`` and ``maximum`` for every floating
    dtype but gives ``clamp`` no lowering in its Linalg adapter, so the two-op
    form is the portable one.

    Semantics are kept: ``clamp`` is defined as ``min(max(x, lo), hi)`` with
    ``propagate_nan`` applying to ``x`` (Triton's ``tl.clamp`` docstring). With
    ``propagate_nan=ALL`` a NaN in ``x`` survives both steps; with the default
    ``NONE`` both steps ignore it exactly as ``clamp`` does. ``x`` is evaluated
    once, as before.

    :Constraint: `clamp` as `minimum(maximum(...))`, NaN semantics kept
    :Source: triton-ascend docs/Python_API.md
    :Rewrites: `clamp(x, lo, hi)`
    """

    TRIGGERS = ("triton.language.clamp",)

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.clamp"):
            return node

        arguments = list(node.args)

        for name in ("x", "min", "max", "propagate_nan")[len(arguments) :]:
            argument = keyword(node, name)
            arguments.append(argument.value if argument is not None else None)

        x, low, high, propagate_nan = arguments
        nan_keywords = (
            [ast.keyword("propagate_nan", propagate_nan)]
            if propagate_nan is not None
            else []
        )

        def call(name, *args):
            return ast.Call(
                func=dotted_name(f"triton.language.{name}"),
                args=list(args),
                keywords=list(nan_keywords),
            )

        self.rewrote()

        return ast.copy_location(call("minimum", call("maximum", x, low), high), node)
