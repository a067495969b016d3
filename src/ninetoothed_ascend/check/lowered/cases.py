"""The lowered level for example modules: each dtype, shape case and layout run lowered and compared with torch.

An example module (:mod:`ninetoothed_ascend.examples`) is run through its own
``launch`` with a :class:`~.launch.LoweredLaunch` in place of its kernel and
compared with its ``reference`` (or checked by its ``verify``) by
:func:`ninetoothed_ascend.examples.compare`, with the tolerances of the
example; non-contiguous inputs are :func:`ninetoothed_ascend.examples.noncontiguous`
of the example's.
"""

import dataclasses
import time

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import compile_check
from ninetoothed_ascend.check.lowered import execution, faults, launch, lowering

#: The outcomes of one case: ``"match"`` (equal to torch within the
#: example's tolerances, both fenced placements byte for byte equal),
#: ``"mismatch"`` (differs from torch), ``"differ"`` (the placements'
#: results differ: the kernel reads bytes that are not its tensors'),
#: ``"fault"`` (a fenced access or another fatal signal), ``"error"``
#: (``ttir``, ``ttadapter`` or the lowering failed, or the run could not start).
OUTCOMES = ("match", "mismatch", "differ", "fault", "error")

#: The memory layouts of the inputs.
LAYOUTS = ("contiguous", "non-contiguous")


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """One example, dtype, shape case, layout and config, run lowered.

    :param kernel: ``str``, the kernel's name.
    :param dtype: ``torch.dtype``.
    :param case: ``dict``, keyword arguments to the example's ``inputs``.
    :param layout: one of :data:`LAYOUTS`.
    :param config: ``int``, the index of the config among those the autotuner tries for the launch.
    :param configs: ``int``, how many configs it tries (``0`` when unknown: the case failed first).
    :param outcome: one of :data:`OUTCOMES`.
    :param detail: ``str``, the error's or fault's message, the tensors that
        differ, or the largest absolute error.
    :param max_abs_error: ``float`` or ``None``.
    :param seconds: ``dict`` step -> seconds, summed over the launch's kernel
        launches (:attr:`~.launch.Record.seconds`), and ``"total"``.
    :param cached: ``bool``, whether every shared object came from the cache.
    """

    kernel: str
    dtype: object
    case: dict
    layout: str
    config: int
    configs: int
    outcome: str
    detail: str
    max_abs_error: float | None
    seconds: dict
    cached: bool


class _NonContiguous:
    # The example module, with non-contiguous inputs.

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)

    def inputs(self, *args, **kwargs):
        return examples.noncontiguous(self._module.inputs(*args, **kwargs))


def check_case(
    module,
    dtype,
    case=None,
    *,
    layout="contiguous",
    config=0,
    directory=None,
    timeout=None,
    cache=None,
):
    """Run one case of example ``module`` lowered and compare it with torch.

    :param module: an example module (:func:`ninetoothed_ascend.examples.load_module`).
    :param dtype: ``torch.dtype`` of the inputs.
    :param case: ``dict`` of keyword arguments to ``module.inputs`` (one of
        :func:`~ninetoothed_ascend.examples.cases`), or ``None``.
    :param layout: one of :data:`LAYOUTS`.
    :param config: ``int``, which of the configs the autotuner tries to run.
    :param directory: ``pathlib.Path`` of the shared-object cache, or ``None`` (:class:`~.launch.LoweredLaunch`).
    :param timeout: ``float`` seconds per lowering step and per run, or ``None``.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` that remembers the
        compile stages' output (:class:`~.launch.LoweredLaunch`), or ``None``.
    :return: :class:`CaseResult`.
    :raises ValueError: an unknown ``layout``.
    :raises ninetoothed_ascend.check.lowered.tools.ToolsMissing: a program is missing.
    """

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")

    runner = launch.LoweredLaunch(
        module.kernel,
        config=config,
        directory=directory,
        timeout=timeout,
        cache=cache,
    )
    subject = _NonContiguous(module) if layout == "non-contiguous" else module
    start = time.perf_counter()
    outcome, detail, error = "match", "", None

    try:
        comparison = examples.compare(subject, runner, "cpu", dtype, case)
    except faults.Fault as fault:
        outcome, detail = "fault", str(fault)
    except (
        compile_check.StageError,
        lowering.LoweringError,
        execution.ExecutionError,
        launch.ConfigOutOfRange,
    ) as failure:
        outcome, detail = "error", str(failure)
    else:
        error = comparison.max_abs_error
        differing = sorted(
            {label for record in runner.records for label in record.differing or ()}
        )

        if not comparison.matches:
            outcome, detail = "mismatch", f"max abs error {error:.3g}"
        elif differing:
            outcome = "differ"
            detail = (
                "the end- and start-fenced placements leave different bytes in "
                + "; ".join(differing)
            )
        else:
            detail = f"max abs error {error:.3g}"

    seconds = {}

    for record in runner.records:
        for step, value in record.seconds.items():
            seconds[step] = seconds.get(step, 0.0) + value

    seconds["total"] = time.perf_counter() - start

    return CaseResult(
        kernel=module.kernel.kernel_name,
        dtype=dtype,
        case=dict(case or {}),
        layout=layout,
        config=config,
        configs=max((record.configs for record in runner.records), default=0),
        outcome=outcome,
        detail=detail,
        max_abs_error=error,
        seconds=seconds,
        cached=all(record.cached for record in runner.records),
    )


def check_module(
    module,
    *,
    dtypes=None,
    layouts=LAYOUTS,
    configs="first",
    directory=None,
    timeout=None,
    cache=None,
):
    """Every dtype, shape case and layout of example ``module``, run lowered.

    :param module: an example module.
    :param dtypes: ``tuple`` of ``torch.dtype``, or ``None`` for the example's own (:func:`~ninetoothed_ascend.examples.dtypes`).
    :param layouts: ``tuple`` of :data:`LAYOUTS`.
    :param configs: ``"first"`` (the first config the autotuner tries) or
        ``"all"`` (each of them).
    :param directory: ``pathlib.Path`` of the shared-object cache, or ``None``.
    :param timeout: ``float`` seconds per lowering step and per run, or ``None``.
    :param cache: as :func:`check_case`'s.
    :return: ``list`` of :class:`CaseResult`.
    """

    if configs not in ("first", "all"):
        raise ValueError(f"configs must be 'first' or 'all', not {configs!r}")

    results = []

    for dtype in dtypes or examples.dtypes(module):
        for case in examples.cases(module):
            for layout in layouts:
                first = check_case(
                    module,
                    dtype,
                    case,
                    layout=layout,
                    directory=directory,
                    timeout=timeout,
                    cache=cache,
                )
                results.append(first)

                if configs == "all":
                    results.extend(
                        check_case(
                            module,
                            dtype,
                            case,
                            layout=layout,
                            config=index,
                            directory=directory,
                            timeout=timeout,
                            cache=cache,
                        )
                        for index in range(1, first.configs)
                    )

    return results
