"""What generated NPU variants call at launch time."""

import ast
import functools

from ninetoothed_ascend.compiler.facts import LayoutFacts
from ninetoothed_ascend.compiler.npu.ub.model import footprint
from ninetoothed_ascend.compiler.syntax import constexpr_parameters


class UnifiedBufferOverflowError(ValueError):
    """A launch whose tiles the UB model says do not fit the Unified Buffer, refused before any compile."""


def refuse_overflow(kernel_source, aliases, arguments, budget, transposed=()):
    """Refuse a launch of a kernel sized by its caller whose tiles do not fit the Unified Buffer.

    Called by the NPU variant's launch function (``SplitSubBlocks`` inserts
    the call where it cannot split a kernel whose tiles several caller-given
    block sizes size): the UB model is evaluated for this launch's
    constexprs and the integers triton-ascend's JIT specializes (equal to 1),
    once per distinct set of them, so that the launch fails here, with the
    numbers, rather than in ``bishengir-compile`` with "ub overflow"
    (measured with ascendnpu-ir 1.2.0: flat_sum_dim over the last dim of a
    ``(64, 4096)`` tensor, a 16 x 4096 tile: 524,288 B needed in fp16).

    :param kernel_source: ``str``, the kernel's ``def`` as the NPU variant has it.
    :param aliases: ``dict``, the module's import aliases
        (:func:`~ninetoothed_ascend.compiler.syntax.import_aliases`).
    :param arguments: ``dict`` parameter name -> the launch's value; only
        the ``int`` and ``bool`` values count (block sizes, layout flags,
        sizes and strides).
    :param budget: ``int``, bytes of Unified Buffer of the SoC the variant
        was generated for.
    :param transposed: ``tuple`` of ``str``, the kernel's constexpr
        parameters that choose ``TransposeStridedTiles``' transposed accesses
        (:attr:`~ninetoothed_ascend.compiler.facts.LayoutFacts.transposed`).
    :raises UnifiedBufferOverflowError: the model's peak exceeds ``budget``;
        names the kernel, the bytes, the block sizes and what to do.
    """

    kernel = _kernel(kernel_source)
    aliases = tuple(sorted(aliases.items()))
    constexprs = _constexprs(kernel, aliases)
    known = tuple(
        sorted(
            (name, value)
            for name, value in arguments.items()
            if isinstance(value, int)
            and (name in constexprs or (type(value) is int and value == 1))
        )
    )
    peak = _peak(kernel_source, aliases, known, tuple(transposed))

    if peak > budget:
        # NineToothed passes a block size as given and rounded up to a power
        # of two, both under prefixed names: the given one, as the caller named it.
        sizes = ", ".join(
            f"{name.rsplit('prefix_', 1)[-1]} = {value}"
            for name, value in known
            if name in constexprs
            and type(value) is int
            and "next_power_of_2" not in name
        )

        raise UnifiedBufferOverflowError(
            f"kernel `{kernel.name}` (NPU variant) cannot run this launch on Ascend: "
            f"its tiles need {peak} bytes of Unified Buffer by the UB model, "
            f"{budget} available (docs/ub.md); {sizes}. The kernel's block sizes "
            "come from its caller, and it cannot be split into sub-blocks: pass "
            "smaller block sizes, or split the input."
        )


@functools.cache
def _kernel(source):
    return ast.parse(source).body[0]


@functools.cache
def _constexprs(kernel, aliases):
    return frozenset(constexpr_parameters(kernel, dict(aliases)))


@functools.cache
def _peak(kernel_source, aliases, known, transposed):
    return footprint(
        _kernel(kernel_source),
        dict(aliases),
        dict(known),
        layout=LayoutFacts(transposed=frozenset(transposed)),
    ).peak
