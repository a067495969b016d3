"""``ninetoothed-ascend check``: the Ascend compile check (ttir, ttadapter, BiShengIR) of NPU variants."""

import dataclasses
import json
import os
import sys

import click

from ninetoothed_ascend import examples
from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.cli._options import (
    cache_dir_option,
    dtype_option,
    resolve_cache_dir,
    selected_dtypes,
)
from ninetoothed_ascend.jit.handle import VariantUnavailableError
from ninetoothed_ascend.runtime import UnifiedBufferOverflowError
from ninetoothed_ascend.warm import one_line


@click.command()
@click.argument("targets", nargs=-1)
@dtype_option
@click.option(
    "--manifest",
    type=click.Path(exists=True, dir_okay=False),
    help="A manifest from `record`: check its kernels (or those of the KEYS "
    "given), with the argument types of their recorded calls.",
)
@click.option(
    "--arch",
    default="Ascend910B1",
    show_default=True,
    help="The Ascend SoC to compile for (A2/A3: Ascend910B1-B4, Ascend910_93xx; "
    "A5: Ascend910_95xx, which needs CANN's hivmc-a5 and so fails here).",
)
@click.option(
    "--all-configs",
    is_flag=True,
    help="Compile every config in the variant's source, not only those the "
    "autotuner tries for the recorded launch.",
)
@click.option(
    "--extremes",
    type=click.Choice(["bytes", "block"]),
    help="Keep only the smallest and the largest config, ordered by the UB "
    "model's bytes or by the product of the block sizes.",
)
@click.option(
    "--non-contiguous",
    is_flag=True,
    help="Check with a non-contiguous variant of each example's inputs "
    "(ninetoothed_ascend.examples.noncontiguous).",
)
@click.option(
    "--bishengir/--no-bishengir",
    default=True,
    show_default=True,
    help="Run the third stage, BiShengIR (bishengir-compile of ascendnpu-ir), "
    "up to the external hivmc step.",
)
@click.option(
    "--memory-report",
    is_flag=True,
    help="Ask BiShengIR for its Unified Buffer plan (--enable-memory-display) "
    "and report the bytes it plans beside the UB model's.",
)
@click.option(
    "--single-buffered",
    is_flag=True,
    help="Compile with multi-buffering off (multibuffer=False), the plan "
    "BiShengIR falls back to on an overflow and the one the UB model "
    "estimates: a measurement of the model, not what a launch compiles.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="BiShengIR compiles run at once.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds a BiShengIR compile (with --run: a lowering step or a run) "
    "may take (default: no limit).",
)
@click.option(
    "--run",
    is_flag=True,
    help="Run the lowered level instead (docs/lowered.md): the NPU variant as "
    "triton-ascend lowers it, run on the CPU over the whole grid, every tensor "
    "fenced; examples: every shape case, compared with torch; recorded kernels: "
    "faults only. Needs LLVM 19's MLIR tools (apt-get install mlir-19-tools llvm-19).",
)
@click.option(
    "--config",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="With --run: which of the configs the autotuner tries to run.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@cache_dir_option
def check(
    targets,
    dtype_names,
    manifest,
    arch,
    all_configs,
    extremes,
    non_contiguous,
    bishengir,
    memory_report,
    single_buffered,
    jobs,
    timeout,
    run,
    config,
    as_json,
    cache_dir,
):
    """Run the Ascend compile check (ttir, ttadapter, BiShengIR) on NPU variants.

    Each TARGET is an example module or a directory of them (default:
    ./examples), or the cache key (or a unique prefix) of a cached kernel;
    a cached kernel needs --manifest for the argument types of a call. With
    --manifest and no key, every kernel of the manifest is checked (and
    built first if it is not cached). Needs triton-ascend installed as
    `triton`; needs no NPU. The kernel compiled is the one a launch of the
    recorded call compiles (its specialization included). Each config is
    reported as reaching BiShengIR's external hivmc step (the highest level
    a machine without CANN reaches), as a UB overflow with the bytes needed
    and available, or with the compiler's error. Without ascendnpu-ir the
    BiShengIR stage is skipped, with one line saying how to install it.
    A launch the NPU variant itself refuses (its tiles overflow the Unified
    Buffer by the UB model and cannot be split) is reported as refused, with
    the error a launch raises, and compiles nothing. Exits with 1 if any
    config fails a stage or any launch is refused. With --run, one line per case
    (outcome, detail, seconds) and exit 1 on any case that is not a match
    (a recorded kernel: that ran without a fault).
    """

    from ninetoothed_ascend.check import bishengir as bishengir_module
    from ninetoothed_ascend.check.compile_check import (
        BiShengIRStage,
        StageError,
        check_variant,
    )

    paths = [target for target in targets if not _is_key(target)]
    keys = [target for target in targets if _is_key(target)]

    for path in paths:
        if not os.path.exists(path):
            raise click.ClickException(
                f"{path}: no such file or directory, and not a cache key"
            )

    if not targets and manifest is None:
        paths = ["examples"]

    try:
        modules = [examples.load_module(path) for path in examples.find_modules(paths)]
    except (examples.NotAnExampleError, examples.ExampleImportError) as error:
        raise click.UsageError(
            f"{error}; a kernel that is not an example is checked from a manifest "
            "(`record`, then --manifest)"
            if isinstance(error, examples.NotAnExampleError)
            else str(error)
        ) from None

    checks = [
        (
            f"{module.kernel.kernel_name} {str(dtype).removeprefix('torch.')}",
            module.kernel,
            module.launch,
            lambda m=module, d=dtype: m.inputs("cpu", d),
        )
        for module in modules
        for dtype in selected_dtypes(module, dtype_names)
    ]

    # Manifest kernels that cannot be checked: ``(label, "skipped" or
    # "failed", why)``, reported with the others' results.
    unchecked = []
    cached = []

    if keys or manifest is not None:
        cached, unchecked = _cached_checks(keys, manifest, cache_dir)
        checks += cached

    if run:
        _run_lowered(
            paths,
            cached,
            dtype_names,
            non_contiguous,
            config,
            timeout,
            as_json,
            cache_dir,
        )

    stage = None
    cache = Cache(resolve_cache_dir(cache_dir))

    if bishengir:
        try:
            stage = BiShengIRStage(
                arch,
                jobs=jobs,
                timeout=timeout,
                memory_report=memory_report,
                single_buffered=single_buffered,
                cache=cache,
            )
        except bishengir_module.BiShengIRNotInstalled as error:
            click.echo(str(error), err=as_json)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--arch") from error

    failures = sum(status == "failed" for _, status, _ in unchecked)
    records = []
    inputs_kind = "non-contiguous" if non_contiguous else "contiguous"

    for label, status, why in unchecked:
        records.append({"kernel": label, status: why})

        if not as_json:
            click.echo(f"{label}: {status.upper()} {why}")

    try:
        for label, handle, launch, make_inputs in checks:
            # One kernel's failure, whatever it is, is its own result: the
            # others are still checked and reported.
            try:
                inputs = make_inputs()

                if non_contiguous:
                    inputs = examples.noncontiguous(inputs)

                results = check_variant(
                    handle,
                    launch,
                    *inputs,
                    arch=arch,
                    configs="all" if all_configs else "launch",
                    extremes=extremes,
                    bishengir=stage,
                    cache=cache,
                )
            except UnifiedBufferOverflowError as error:
                # The launch itself refuses, before anything compiles: what
                # an NPU launch raises, not a compiler's failure.
                failures += 1
                records.append(
                    {"kernel": label, "inputs": inputs_kind, "refused": str(error)}
                )

                if not as_json:
                    click.echo(f"{label}: REFUSED at the launch: {error}")

                continue
            except Exception as error:
                message = (
                    str(error)
                    if isinstance(error, (StageError, VariantUnavailableError))
                    else error.format_message()
                    if isinstance(error, click.ClickException)
                    else one_line(error)
                )
                failures += 1
                records.append(
                    {"kernel": label, "inputs": inputs_kind, "error": message}
                )

                if not as_json:
                    click.echo(f"{label}: FAILED {message}")

                continue

            failed = [
                result
                for result in results
                if result.bishengir is not None and result.bishengir.outcome != "hivmc"
            ]
            failures += len(failed)
            records.extend(
                {
                    "kernel": label,
                    "inputs": inputs_kind,
                    "config": result.config,
                    "seconds": result.seconds,
                    # Operations triton-adapter lowered to a scalar loop
                    # (each loop's yield and the accesses in it).
                    "discrete_mem_access": result.linalg.count("DiscreteMemAccess"),
                    "ub_model_bytes": result.ub_model_bytes,
                    "bishengir": dataclasses.asdict(result.bishengir)
                    if result.bishengir is not None
                    else None,
                }
                for result in results
            )

            if as_json:
                continue

            seconds = sum(
                result.seconds[stage_name]
                for result in results
                for stage_name in ("ttir", "ttadapter")
            )
            click.echo(
                f"{label}: {len(results)} configs passed ttir and ttadapter ({seconds:.2f} s)"
            )

            for result in results if stage is not None else ():
                click.echo(
                    f"  {_config_label(result.config)}: {_bishengir_line(result)}"
                )
    finally:
        if stage is not None:
            stage.close()

    kernels = len({id(handle) for _, handle, _, _ in checks}) + len(unchecked)
    skipped = sum(status == "skipped" for _, status, _ in unchecked)

    if as_json:
        click.echo(
            json.dumps(
                {
                    "arch": arch,
                    "ascendnpu_ir": bishengir_module.version() if stage else None,
                    "kernels": kernels,
                    "failures": failures,
                    "skipped": skipped,
                    "results": records,
                },
                indent=1,
                default=str,
            )
        )
    else:
        click.echo(
            f"{kernels} kernels, {failures} failures"
            + (f", {skipped} skipped (no recorded call)" if skipped else "")
        )

    # Nothing checked at all (every kernel skipped) is no success either.
    sys.exit(1 if failures or not checks else 0)


def _run_lowered(
    paths, cached, dtype_names, non_contiguous, config, timeout, as_json, cache_dir
):
    # ``check --run``: the lowered level, then exit.
    from ninetoothed_ascend.check.lowered import tools
    from ninetoothed_ascend.cli import _lowered

    if reason := tools.missing():
        raise click.ClickException(reason)

    layout = "non-contiguous" if non_contiguous else "contiguous"
    cache = Cache(resolve_cache_dir(cache_dir))
    records, failures = _lowered.run_examples(
        list(map(examples.load_module, examples.find_modules(paths))),
        lambda module: selected_dtypes(module, dtype_names),
        layout,
        config,
        cache,
        timeout,
        as_json,
    )
    more, failed = _lowered.run_recorded(
        cached, layout, config, cache, timeout, as_json
    )
    records, failures = records + more, failures + failed

    if as_json:
        click.echo(
            json.dumps(
                {"cases": len(records), "failures": failures, "results": records},
                indent=1,
            )
        )
    else:
        click.echo(f"{len(records)} cases, {failures} failures")

    sys.exit(1 if failures else 0)


def _config_label(config):
    # NineToothed's constexpr names carry generated prefixes; the last part is the user's name.
    return (
        ", ".join(
            f"{name.rsplit('prefix_', 1)[-1]}={value}" for name, value in config.items()
        )
        or "no config"
    )


def _bishengir_line(result):
    outcome = result.bishengir
    seconds = ", ".join(
        f"{stage} {value:.2f} s" for stage, value in result.seconds.items()
    )

    if outcome.crashes:
        seconds += f"; bishengir-compile crashed on {outcome.crashes} runs"

    if outcome.report_error:
        seconds += (
            "; its run with --enable-memory-display failed "
            f"({outcome.report_error}), the launch's command decided"
        )

    model = (
        f"; UB model {result.ub_model_bytes} B"
        if result.ub_model_bytes is not None
        else ""
    )

    if outcome.outcome == "hivmc":
        planned = (
            f"; planned {outcome.planned_ub_bytes} B"
            if outcome.planned_ub_bytes is not None
            else ""
        )

        return f"reached hivmc ({seconds}{planned}{model})"

    if outcome.outcome == "ub_overflow":
        return (
            f"UB overflow: needs {outcome.ub_required_bytes} B, "
            f"{outcome.ub_available_bytes} B available ({seconds}{model})"
        )

    first = outcome.message.splitlines()[0] if outcome.message else ""

    return f"BiShengIR {outcome.outcome}: {first} ({seconds})"


def _is_key(target):
    # A key or a prefix of one: hexadecimal digits, and not an existing path.
    return (
        all(c in "0123456789abcdefABCDEF" for c in target)
        and bool(target)
        and not os.path.exists(target)
    )


def _cached_checks(keys, manifest_path, cache_dir):
    """The checks of cached or recorded kernels, and those that cannot be checked.

    :param keys: ``list`` of ``str``, cache keys or their prefixes (none:
        every kernel of the manifest).
    :param manifest_path: ``str`` or ``None``.
    :param cache_dir: as ``--cache-dir``.
    :return: ``(checks, unchecked)``: ``list`` of ``(label, handle, launch,
        make_inputs)`` as ``check`` runs them, and ``list`` of ``(label,
        "skipped" or "failed", why)`` for kernels with no recorded call and
        kernels that could not be built.
    :raises click.ClickException: the manifest cannot be read, or a key
        matches no kernel (or several).
    """

    from ninetoothed_ascend import manifest as manifest_module
    from ninetoothed_ascend.jit import GeneratedSource, VariantMismatchError, rebuild
    from ninetoothed_ascend.jit.fingerprint import environment_key
    from ninetoothed_ascend.warm import compared_variants

    cache = Cache(resolve_cache_dir(cache_dir))

    try:
        document = manifest_module.read(manifest_path) if manifest_path else None
    except manifest_module.ManifestError as error:
        raise click.ClickException(str(error)) from None

    # Manifest kernels by the key they have in this environment.
    recorded = {
        environment_key(kernel["definition"]): kernel
        for kernel in (document["kernels"] if document else ())
    }
    chosen = []
    checks, unchecked = [], []

    for prefix in keys:
        try:
            chosen.append(cache.find(prefix))
        except KeyError as error:
            matches = [key for key in recorded if key.startswith(prefix)]

            if len(matches) != 1:
                raise click.ClickException(error.args[0]) from None

            chosen.append(matches[0])

    for key in chosen or recorded:
        kernel = recorded.get(key)
        calls = kernel["calls"] if kernel else []
        label = f"{kernel['kernel_name'] if kernel else 'kernel'} {key[:12]}"

        if not isinstance(calls, list) or not calls:
            unchecked.append(
                (
                    label,
                    "skipped",
                    "has no recorded call to take argument types from; pass "
                    "--manifest from `record` of a program that calls it",
                )
            )
            continue

        # Into the cache as every kernel from outside, verified first (a
        # cached entry is compared with the manifest too). A kernel that
        # cannot be rebuilt is its own failure; the others are still checked.
        generated = GeneratedSource(
            kernel["source"],
            kernel["kernel_name"],
            kernel["launch_name"],
            kernel.get("max_num_configs"),
        )

        try:
            handle, _ = rebuild(
                kernel["definition"],
                generated,
                kernel["counters_delta"],
                kernel["variants"],
                cache=cache,
                compare=compared_variants(document),
                origin=os.path.abspath(manifest_path),
            )
        except VariantMismatchError as error:
            unchecked.append((label, "failed", str(error)))
            continue
        except Exception as error:
            unchecked.append((label, "failed", one_line(error)))
            continue

        call = calls[0]

        if not isinstance(call, dict):
            unchecked.append((label, "failed", "its recorded call is not a record"))
            continue

        # The call's keyword arguments (a caller-given block size), made
        # with its positional ones.
        keywords = {}

        def make_inputs(call=call, keywords=keywords):
            args, keywords["kwargs"] = manifest_module.call_inputs(call)

            return args

        def launch(kernel, *inputs, keywords=keywords):
            return kernel(*inputs, **keywords["kwargs"])

        arguments = [
            *(call.get("args") if isinstance(call.get("args"), list) else ()),
            *(
                call.get("kwargs") if isinstance(call.get("kwargs"), dict) else {}
            ).values(),
        ]
        dtypes = sorted(
            {str(a["dtype"]) for a in arguments if isinstance(a, dict) and "dtype" in a}
        )
        checks.append(
            (
                f"{handle.kernel_name} {key[:12]} {'/'.join(dtypes)}",
                handle,
                launch,
                make_inputs,
            )
        )

    return checks, unchecked
