"""From NineToothed's source to the three variants of a kernel."""

from ninetoothed_ascend.ascendify.base import PipelineError, run_pipeline
from ninetoothed_ascend.cache import VARIANT_NAMES, Variant
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.target import Target

#: Variant names, and the torch device type each one serves.
VARIANTS = VARIANT_NAMES


def build_variants(generated):
    """Build every variant of one kernel.

    :param generated: :class:`~ninetoothed_ascend.jit.ninetoothed_adapter.GeneratedSource`.
    :return: ``dict`` from each name in :data:`VARIANTS` to a
        :class:`~ninetoothed_ascend.cache.Variant`. The CUDA variant is
        NineToothed's source unchanged; the others are it run through their
        pipelines (:data:`ninetoothed_ascend.compiler.pipelines.VARIANTS`),
        for their targets here (``Target.from_environment``). A variant whose
        pipeline fails has ``source=None`` and an ``error`` that names the
        kernel, the variant, the pass and what to do; the other variants are
        unaffected.
    """

    variants = {"cuda": Variant(generated.source)}

    for name, pipeline in pipelines.VARIANTS.items():
        try:
            rewritten = run_pipeline(
                generated.source, pipeline, Target.from_environment(name)
            )
        except PipelineError as error:
            variants[name] = Variant(
                None,
                error=(
                    f"the {name} variant of kernel `{generated.kernel_name}` cannot be "
                    f"built for {pipelines.RUNS_ON[name]}: pass {error.pass_name}: "
                    f"{error.message} {error.hint}"
                ),
            )
        else:
            variants[name] = Variant(rewritten.source, rewritten.rewrites)

    return variants
