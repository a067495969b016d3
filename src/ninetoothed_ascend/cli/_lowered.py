"""``ninetoothed-ascend check --run``: the lowered level (docs/lowered.md) of example modules and recorded kernels."""

import time

import click
import torch

from ninetoothed_ascend import examples

#: What a recorded kernel's run reports where it neither faulted nor failed:
#: a manifest records argument types, not a reference to compare with.
RAN = "ran"


def run_examples(modules, dtypes, layout, config, cache, timeout, as_json):
    """Run every shape case of each example module lowered, fenced, and compare it with torch.

    One line per case: kernel, dtype, case, layout, outcome
    (:data:`ninetoothed_ascend.check.lowered.cases.OUTCOMES`), detail, seconds.

    :param modules: example modules.
    :param dtypes: ``callable(module)`` -> the ``torch.dtype`` values to run.
    :param layout: ``"contiguous"`` or ``"non-contiguous"``.
    :param config: ``int``, which config the autotuner would try.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache`: the compile
        stages' output is remembered there, shared objects under ``lowered/``.
    :param timeout: ``float`` seconds per step, or ``None``.
    :param as_json: ``bool``: print nothing per case.
    :return: ``(records, failures)``: ``list`` of ``dict``, and how many cases did not match.
    :raises ninetoothed_ascend.check.lowered.tools.ToolsMissing: a program is missing.
    """

    from ninetoothed_ascend.check.lowered import cases

    records, failures = [], 0

    for module in modules:
        for dtype in dtypes(module):
            for case in examples.cases(module):
                result = cases.check_case(
                    module,
                    dtype,
                    case,
                    layout=layout,
                    config=config,
                    directory=cache.directory / "lowered",
                    timeout=timeout,
                    cache=cache,
                )
                failures += result.outcome != "match"
                label = " ".join(
                    (
                        result.kernel,
                        str(dtype).removeprefix("torch."),
                        _case_label(case),
                        layout,
                    )
                )
                records.append(
                    {
                        "kernel": label,
                        "outcome": result.outcome,
                        "detail": result.detail,
                        "seconds": result.seconds["total"],
                    }
                )

                if not as_json:
                    click.echo(
                        f"{label}: {result.outcome} {result.detail} "
                        f"({result.seconds['total']:.2f} s)"
                    )

    return records, failures


def run_recorded(checks, layout, config, cache, timeout, as_json):
    """Run recorded kernels lowered, fenced, with the argument types of their recorded calls.

    Faults only: a manifest records argument types and no reference, so the
    results are not compared; a kernel that neither faults nor fails
    reports :data:`RAN`. Floating-point tensors hold normal samples, integer
    and boolean tensors zeros (indices read from a tensor then point at
    element 0 of what they index: a fault is the kernel's own).

    :param checks: ``list`` of ``(label, handle, launch, make_inputs)`` (``check``'s).
    :param layout: ``"contiguous"`` or ``"non-contiguous"`` (:func:`ninetoothed_ascend.examples.noncontiguous`).
    :param config: ``int``, which config the autotuner would try.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache`: the compile
        stages' output is remembered there, shared objects under ``lowered/``.
    :param timeout: ``float`` seconds per step, or ``None``.
    :param as_json: ``bool``: print nothing per kernel.
    :return: ``(records, failures)``, as :func:`run_examples`.
    :raises ninetoothed_ascend.check.lowered.tools.ToolsMissing: a program is missing.
    """

    from ninetoothed_ascend.check.compile_check import StageError
    from ninetoothed_ascend.check.lowered import execution, faults, launch, lowering
    from ninetoothed_ascend.jit.handle import VariantUnavailableError

    records, failures = [], 0

    for label, handle, launch_function, make_inputs in checks:
        inputs = filled(make_inputs())

        if layout == "non-contiguous":
            inputs = examples.noncontiguous(inputs)

        runner = handle.lowered(
            config,
            directory=cache.directory / "lowered",
            timeout=timeout,
            cache=cache,
        )
        start = time.perf_counter()
        outcome, detail = RAN, "not compared: a manifest records no reference"

        try:
            launch_function(runner, *inputs)
        except faults.Fault as fault:
            outcome, detail = "fault", str(fault)
        except (
            StageError,
            lowering.LoweringError,
            execution.ExecutionError,
            launch.ConfigOutOfRange,
            VariantUnavailableError,
        ) as error:
            outcome, detail = "error", str(error)
        except Exception as error:
            # Anything else a kernel's launch raises (a recorded call whose
            # arguments its launch function does not take, for one) is that
            # kernel's error, not the end of the run.
            outcome, detail = "error", f"{type(error).__name__}: {error}"
        else:
            differing = sorted(
                {name for record in runner.records for name in record.differing or ()}
            )

            if differing:
                outcome = "differ"
                detail = (
                    "the end- and start-fenced placements leave different bytes in "
                    + "; ".join(differing)
                )

        seconds = time.perf_counter() - start
        failures += outcome != RAN
        records.append(
            {
                "kernel": f"{label} {layout}",
                "outcome": outcome,
                "detail": detail,
                "seconds": seconds,
            }
        )

        if not as_json:
            click.echo(f"{label} {layout}: {outcome} {detail} ({seconds:.2f} s)")

    return records, failures


def filled(inputs, seed=0):
    """Set every element of each tensor in ``inputs`` (its whole storage, so views and expanded tensors too): normal samples for floating point, zeros otherwise; return ``inputs``."""

    generator = torch.Generator().manual_seed(seed)

    for value in inputs:
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            flat = torch.empty(0, dtype=value.dtype).set_(
                storage, 0, (storage.nbytes() // value.element_size(),), (1,)
            )

            if value.is_floating_point():
                flat.copy_(torch.randn(flat.shape, generator=generator))
            else:
                flat.zero_()

    return inputs


def _case_label(case):
    return ",".join(f"{key}={value}" for key, value in case.items()) or "default"
