"""From NineToothed's source to the variants of a kernel: every pipeline run a handle needs goes through here."""

from ninetoothed_ascend.cache import VARIANT_NAMES, Variant
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.launch import launch_facts
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import MAX_NUM_CONFIGS
from ninetoothed_ascend.compiler.passes import PipelineError, run_pipeline
from ninetoothed_ascend.compiler.target import Target

#: Variant names, and the torch device type each one serves.
VARIANTS = VARIANT_NAMES


def build_variant(generated, name, launch=None):
    """Build variant ``name`` of one kernel.

    :param generated: :class:`~ninetoothed_ascend.jit.ninetoothed_adapter.GeneratedSource`.
    :param name: ``str``, one of :data:`VARIANTS`.
    :param launch: ``None``, or the entry's launch facts
        (:attr:`~ninetoothed_ascend.cache.Entry.launch`, a ``dict``). Where
        they lack ``requirements``, the compiler's launch analysis
        (:func:`~ninetoothed_ascend.compiler.launch.launch_facts`) of the
        tree the pipeline parses anyway, before any pass, fills them in
        (a second parse of the source cost 0.55 ms for add, 0.86 ms for
        softmax).
    :return: :class:`~ninetoothed_ascend.cache.Variant`. The CUDA variant is
        NineToothed's source unchanged; the others are it run through their
        pipelines (:data:`ninetoothed_ascend.compiler.pipelines.VARIANTS`),
        for their targets here (``Target.from_environment``), within the
        user's ``max_num_configs`` (``generated.max_num_configs``). A variant whose
        pipeline fails has ``source=None`` and an ``error`` that names the
        kernel, the variant, the pass and what to do.
    """

    if name == "cuda":
        return Variant(generated.source)

    analyse = None

    if launch is not None and "requirements" not in launch:

        def analyse(module):
            return launch_facts(module, generated.kernel_name, generated.launch_name)

    try:
        rewritten = run_pipeline(
            generated.source,
            pipelines.VARIANTS[name],
            Target.from_environment(name),
            analyse,
            {MAX_NUM_CONFIGS: generated.max_num_configs},
        )
    except PipelineError as error:
        return Variant(
            None,
            error=(
                f"the {name} variant of kernel `{generated.kernel_name}` cannot be "
                f"built for {pipelines.RUNS_ON[name]}: pass {error.pass_name}: "
                f"{error.message} {error.hint}"
            ),
        )

    if analyse is not None:
        launch.update(rewritten.analysis)

    return Variant(rewritten.source, rewritten.rewrites, facts=rewritten.facts)


def emulated_variant(npu_source, kernel_name, device_type):
    """Derive the NPU variant emulated on ``device_type`` (:func:`ninetoothed_ascend.compiler.pipelines.emulate`).

    :param npu_source: ``str``, the NPU variant.
    :param kernel_name: ``str``, for the error.
    :param device_type: ``"cuda"`` or ``"cpu"``.
    :return: :class:`~ninetoothed_ascend.compiler.passes.Rewritten`.
    :raises ValueError: an emulation pass cannot map the kernel; the message
        names the kernel, the pass and what to do.
    :raises KeyError: ``device_type`` cannot emulate.
    """

    try:
        return pipelines.emulate(npu_source, device_type)
    except PipelineError as error:
        raise ValueError(
            f"the npu variant of kernel `{kernel_name}` cannot be emulated "
            f"on {device_type}: pass {error.pass_name}: {error.message} {error.hint}"
        ) from error
