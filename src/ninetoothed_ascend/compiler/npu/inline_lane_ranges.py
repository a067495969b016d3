"""The NPU pass :class:`InlineLaneRanges`."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import Transformer, clone, single_assignments


class InlineLaneRanges(Pass):
    """Write a name bound once to ``tl.arange(...)`` as that ``arange`` where a load or store address or mask reads it.

    Constraint: triton-adapter lowers an access whose address is not an
    affine function of ``arange`` to a scalar loop (``DiscreteMemAccess``,
    one element at a time, 32 bytes of Unified Buffer each), and the passes
    that give flattened and strided accesses their affine form
    (``ContiguousFlatAccess``, ``TransposeStridedTiles``) find the lanes of
    an address by its ``arange`` calls. NineToothed writes them there;
    an application that binds them to a name first (ntops' ``maximum`` and
    ``fmax``: ``indices = ntl.arange(0, input.shape[0])``, then
    ``output[indices] = val``) hides them, and every such store stayed a
    scalar loop: ntops' ``maximum`` and ``fmax``, fp16 and fp32, contiguous
    ``(12, 25)``: 2 ``DiscreteMemAccess`` before, 0 after
    (``python scripts/ntops_corpus.py sweep REC --modules maximum,fmax``, the
    ``scalar`` column).

    ``arange``'s arguments are compile-time constants, so the name holds the
    same value wherever it is read after its one assignment: the rewrite
    keeps the kernel's meaning. Only addresses and masks are rewritten; the
    name stays bound for its other reads.

    :Constraint: an address affine in `arange` is one DMA; the passes that
        make flattened accesses affine read the `arange` in the address
    :Source: triton-adapter's `DiscreteMemAccess` (docs/ascend.md);
        measured on ntops' maximum and fmax
    :Rewrites: `x = tl.arange(...)` read in a `load`/`store` address or mask
        becomes the `tl.arange(...)` there
    """

    TRIGGERS = ("triton.language.arange",)

    def visit_Module(self, node):
        for kernel in self.module.kernels().values():
            ranges = {
                name: value
                for name, value in single_assignments(kernel).items()
                if self.is_range(value)
            }

            if ranges:
                _Accesses(self, ranges).visit(kernel)

        return node

    def is_range(self, node):
        """Whether ``node`` is ``tl.arange(...)``, indexed or not (``[:, None]``)."""

        if node.__class__ is ast.Subscript:
            node = node.value

        return self.is_call_to(node, "triton.language.arange")


class _Accesses(Transformer):
    """Inline ``ranges`` (name -> ``arange`` expression) in the address and mask of each load and store."""

    def __init__(self, owner, ranges):
        self.owner = owner
        self.inline = _Names(owner, ranges)

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.owner.is_call_to(
            node, "triton.language.load", "triton.language.store"
        ):
            return node

        # ``load(pointer, mask, ...)``, ``store(pointer, value, mask, ...)``.
        mask = 2 if self.owner.is_call_to(node, "triton.language.store") else 1

        for position in (0, mask):
            if position < len(node.args):
                node.args[position] = self.inline.visit(node.args[position])

        for keyword in node.keywords:
            if keyword.arg in ("pointer", "mask"):
                keyword.value = self.inline.visit(keyword.value)

        return node


class _Names(Transformer):
    def __init__(self, owner, ranges):
        self.owner = owner
        self.ranges = ranges

    def visit_Name(self, node):
        if node.id in self.ranges and node.ctx.__class__ is ast.Load:
            self.owner.rewrote()

            return ast.copy_location(clone(self.ranges[node.id]), node)

        return node
