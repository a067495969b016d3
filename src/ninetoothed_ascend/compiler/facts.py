"""The facts of a pipeline run: what a pass decided that a later pass, or a reader of the variant, builds on.

Passes talk through :attr:`~ninetoothed_ascend.compiler.passes.Pass.facts`,
a ``dict`` shared by the passes of one
:func:`~ninetoothed_ascend.compiler.passes.run_pipeline`, and never through
the shape of each other's output. Each key is defined here, with the type
of its value, the pass that publishes it and the passes that read it:

* :data:`FLAT_ACCESS_FLAGS`: ``dict`` flag name ->
  :class:`~ninetoothed_ascend.compiler.npu.contiguous_flat_access.FlatAccessFlag`,
  published by ``ContiguousFlatAccess``, read by ``TransposeStridedTiles``
  and, through :func:`layout_facts`, by the UB model
  (``FitUnifiedBuffer``, ``SplitSubBlocks``);
* :data:`TRANSPOSED_ACCESSES`: ``dict`` flag name ->
  :class:`~ninetoothed_ascend.compiler.npu.transpose_strided_tiles.TransposedAccess`,
  published by ``TransposeStridedTiles``, read through :func:`layout_facts`
  by the UB model;
* :data:`LEADING_KEYS`: ``dict`` autotuner name -> ``list`` of ``str``,
  published by ``FitUnifiedBuffer``, read by ``FilterAutotuneKey``.

The UB model also runs outside a pipeline, on a variant's final source
(``check`` orders the configs it compiles by the model's bytes): what it
needs of these facts, each kernel's :class:`LayoutFacts`, is kept with the
variant in its cache entry (:func:`stored`, the ``facts`` of
:class:`~ninetoothed_ascend.cache.Variant`), as the launch facts are kept
with the entry. The variant's source alone does not say which constexpr
parameter chooses a transposed access, and running the pipeline again to
learn it would cost a reader what building the variant cost.
"""

import dataclasses

#: ``ContiguousFlatAccess``'s flags: ``dict`` flag name -> ``FlatAccessFlag``.
FLAT_ACCESS_FLAGS = "flat_access_flags"

#: ``TransposeStridedTiles``' choices: ``dict`` flag name -> ``TransposedAccess``.
TRANSPOSED_ACCESSES = "transposed_accesses"

#: The factories ``DeferAutotune`` made: ``dict`` factory name -> the name
#: of the kernel its autotuner wraps (``None`` where it wraps no kernel of
#: the module).
DEFERRED_AUTOTUNERS = "deferred_autotuners"

#: The parameters that must lead an autotuner's key: ``dict`` autotuner
#: name -> ``list`` of ``str`` (``FitUnifiedBuffer``: the launch sizes,
#: innermost strides and layout flags its configs depend on).
LEADING_KEYS = "autotune_key_leading"


@dataclasses.dataclass(frozen=True)
class LayoutFacts:
    """What the passes decided about one kernel's address forms, as the UB model reads it.

    :param layout_flags: ``frozenset`` of ``str``, the constexpr parameters
        that choose an access's address form (``ContiguousFlatAccess``'s
        flags: ``affine if FLAG else gather``); a footprint reports those
        its accesses read (``Footprint.layout_flags``).
    :param transposed: ``frozenset`` of ``str``, the constexpr parameters
        that choose ``TransposeStridedTiles``' transposed load or store (an
        ``a if T else b`` expression, or an ``if T:`` statement, whose other
        branch is the plain access): the model counts the plain access,
        which bounds the transposed one (``TransposeStridedTiles``).
    """

    layout_flags: frozenset = frozenset()
    transposed: frozenset = frozenset()


def layout_facts(facts, kernel_name):
    """The :class:`LayoutFacts` of kernel ``kernel_name`` (``str``) in a pipeline's ``facts`` (``dict``)."""

    return LayoutFacts(
        frozenset(
            name
            for name, flag in facts.get(FLAT_ACCESS_FLAGS, {}).items()
            if flag.kernel == kernel_name
        ),
        frozenset(
            name
            for name, access in facts.get(TRANSPOSED_ACCESSES, {}).items()
            if access.kernel == kernel_name
        ),
    )


def stored(facts):
    """What a variant keeps of a pipeline's ``facts`` (``dict``): JSON, kernel name -> its :class:`LayoutFacts` as sorted lists.

    Kernels with no layout facts are left out; a pipeline that publishes
    none gives ``{}``.
    """

    kernels = {
        fact.kernel
        for key in (FLAT_ACCESS_FLAGS, TRANSPOSED_ACCESSES)
        for fact in facts.get(key, {}).values()
    }
    kept = {}

    for kernel in sorted(kernels):
        layout = layout_facts(facts, kernel)
        kept[kernel] = {
            "layout_flags": sorted(layout.layout_flags),
            "transposed": sorted(layout.transposed),
        }

    return kept


def stored_layout(data, kernel_name):
    """The :class:`LayoutFacts` of kernel ``kernel_name`` in what :func:`stored` returned (``data``, or ``None`` for none)."""

    kept = (data or {}).get(kernel_name)

    if kept is None:
        return LayoutFacts()

    return LayoutFacts(frozenset(kept["layout_flags"]), frozenset(kept["transposed"]))
