"""What generated NPU variants call to refuse a launch whose tiles do not fit the Unified Buffer."""

import ast

from ninetoothed_ascend.compiler.facts import LayoutFacts
from ninetoothed_ascend.compiler.npu.ub.model import footprint
from ninetoothed_ascend.compiler.syntax import constexpr_parameters


class UnifiedBufferOverflowError(ValueError):
    """A launch whose tiles do not fit the Unified Buffer: by the UB model, refused before any compile (:class:`OverflowCheck`), or by BiShengIR, every config its compile tried refused (:mod:`ninetoothed_ascend.runtime.refused_configs`)."""


class OverflowCheck:
    """The UB model of one kernel sized by its caller, evaluated at each launch: refuse a launch whose tiles do not fit.

    Made once, when the NPU variant's module is imported (``SplitSubBlocks``
    adds it where it cannot split a kernel whose tiles several caller-given
    block sizes size, or a block the kernel states as a literal that
    overflows): the kernel's ``def`` is parsed here, never at a
    launch. A launch evaluates the model for its constexprs and the integers
    triton-ascend's JIT specializes (equal to 1), once per distinct set of
    them, so that it fails here, with the numbers, rather than in
    ``bishengir-compile`` with "ub overflow" (measured with ascendnpu-ir
    1.2.0: flat_sum_dim over the last dim of a ``(64, 4096)`` tensor, a
    16 x 4096 tile: 524,288 B needed in fp16).

    :param kernel_source: ``str``, the kernel's ``def`` as the NPU variant has it.
    :param aliases: ``dict``, the module's import aliases
        (:func:`~ninetoothed_ascend.compiler.syntax.import_aliases`).
    :param budget: ``int``, bytes of Unified Buffer of the SoC the variant
        was generated for.
    :param transposed: ``tuple`` of ``str``, the kernel's constexpr
        parameters that choose ``TransposeStridedTiles``' transposed accesses
        (:attr:`~ninetoothed_ascend.compiler.facts.LayoutFacts.transposed`).
    """

    def __init__(self, kernel_source, aliases, budget, transposed=()):
        self._kernel = ast.parse(kernel_source).body[0]
        self._aliases = dict(aliases)
        self._constexprs = frozenset(constexpr_parameters(self._kernel, self._aliases))
        self._budget = budget
        self._layout = LayoutFacts(transposed=frozenset(transposed))
        # Known integers -> the model's peak, in bytes.
        self._peaks = {}

    def __call__(self, arguments):
        """Refuse this launch if the model's peak exceeds the budget.

        :param arguments: ``dict`` parameter name -> the launch's value; only
            the ``int`` and ``bool`` values count (block sizes, layout flags,
            sizes and strides).
        :raises UnifiedBufferOverflowError: the model's peak exceeds the
            budget; names the kernel, the bytes, the block sizes and what to do.
        """

        known = tuple(
            sorted(
                (name, value)
                for name, value in arguments.items()
                if isinstance(value, int)
                and (name in self._constexprs or (type(value) is int and value == 1))
            )
        )
        peak = self._peak(known)

        if peak > self._budget:
            # NineToothed passes a block size as given and rounded up to a
            # power of two, both under prefixed names: the given one, as the
            # caller named it.
            sizes = ", ".join(
                f"{name.rsplit('prefix_', 1)[-1]} = {value}"
                for name, value in known
                if name in self._constexprs
                and type(value) is int
                and "next_power_of_2" not in name
            )

            raise UnifiedBufferOverflowError(
                f"kernel `{self._kernel.name}` (NPU variant) cannot run this launch "
                f"on Ascend: its tiles need {peak} bytes of Unified Buffer by the UB "
                f"model, {self._budget} available (docs/ub.md); {sizes}. The "
                "kernel's block sizes come from its caller, and it cannot be split "
                "into sub-blocks: pass smaller block sizes, or split the input."
            )

    def _peak(self, known):
        if known not in self._peaks:
            self._peaks[known] = footprint(
                self._kernel, self._aliases, dict(known), layout=self._layout
            ).peak

        return self._peaks[known]
