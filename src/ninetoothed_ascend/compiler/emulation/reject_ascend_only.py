"""The emulation pass :class:`RejectAscendOnly`."""

from ninetoothed_ascend.compiler.emulation import ASCEND_ONLY_MODULES
from ninetoothed_ascend.compiler.passes import Pass, RewriteError


def _is_ascend_only(name):
    return name is not None and any(
        name == module or name.startswith(f"{module}.")
        for module in ASCEND_ONLY_MODULES
    )


class RejectAscendOnly(Pass):
    """Fail on any Ascend-only symbol the emulation passes before it left in place.

    Constraint: emulation claims that the emulated source means what the NPU
    variant means, with only the mapped symbols changed. A reference to a
    module that exists only in triton-ascend (:data:`ASCEND_ONLY_MODULES`)
    or an ``hf32`` precision still present means an NPU pass emits something
    this module does not know how to emulate: the emulation stops and names
    it instead of running something else.

    :Rewrites: fails on any Ascend-only symbol left
    """

    def visit_Attribute(self, node):
        name = self.resolve(node)

        if _is_ascend_only(name):
            raise RewriteError(
                f"`{name}` exists only in triton-ascend and has no emulation.",
                "Add its portable meaning to ninetoothed_ascend.compiler.emulation.",
            )

        self.generic_visit(node)

        return node

    def visit_Constant(self, node):
        if node.value == "hf32":
            raise RewriteError(
                "`hf32` is left outside a `dot` input precision.",
                "Add its portable meaning to ninetoothed_ascend.compiler.emulation.",
            )

        return node
