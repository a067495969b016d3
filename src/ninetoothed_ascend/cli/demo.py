"""``ninetoothed-ascend demo``: the main job, every example's variants generated, run and checked against torch."""

import sys

import click
import torch

from ninetoothed_ascend import examples
from ninetoothed_ascend.cache import default_directory
from ninetoothed_ascend.cli._options import dtype_option, selected_dtypes
from ninetoothed_ascend.compiler import emulation
from ninetoothed_ascend.jit.variants import VARIANTS

#: What a call with tensors on each device type runs.
_RUNS = {
    "cuda": "the CUDA variant (NineToothed's own source, CUDA Triton)",
    "npu": "the NPU variant (triton-ascend)",
    "cpu": "the CPU variant (Triton's interpreter)",
}


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--device",
    type=click.Choice(["auto", "cuda", "npu", "cpu"]),
    default="auto",
    show_default=True,
    help="Where to run the kernels; auto picks cuda, then npu, then cpu.",
)
@dtype_option
def demo(paths, device, dtype_names):
    """Generate the variants of example kernels, run them, and check them against torch.

    PATHS are example modules or directories of them (default: ./examples).
    For each kernel this prints the variants generated, the rewrites each
    pipeline applied and where the variants are cached, then runs the kernel
    through its handle on the chosen device. Exits with 1 if any result
    differs from torch's or any run fails, except the runs an example lists
    in its ``KNOWN_FAILURES`` for that device type (README, "Examples").
    """

    device = examples.best_device() if device == "auto" else device
    _require_device(device)
    files = examples.find_modules(paths or ("examples",))
    failures = known = 0
    ran = set()

    click.echo(f"cache: {default_directory()}")
    click.echo(f"device: {device} (the handle dispatches to the {device} variant)")

    for path in files:
        try:
            module = examples.load_module(path)
        except (examples.NotAnExampleError, examples.ExampleImportError) as error:
            raise click.UsageError(str(error)) from None

        kernel = module.kernel
        click.echo(f"\n{kernel.kernel_name} ({path})")

        for name in VARIANTS:
            _describe_variant(kernel, name)

        known_failure = getattr(module, "KNOWN_FAILURES", {}).get(device)

        for dtype in selected_dtypes(module, dtype_names):
            ran.add(dtype)

            for case in examples.cases(module):
                shape = "".join(f", {key}={value}" for key, value in case.items())
                click.echo(
                    f"  run on {device}, {str(dtype).removeprefix('torch.')}{shape}: ",
                    nl=False,
                )

                try:
                    result = examples.compare(module, kernel, device, dtype, case)
                except Exception as error:  # reported per run; the others go on
                    matches, verdict = False, f"FAILED: {type(error).__name__}: {error}"
                else:
                    matches = result.matches
                    verdict = _verdict(result)

                if known_failure and not matches:
                    known += 1
                    verdict = f"known failure: {known_failure}"
                elif known_failure:
                    verdict += " (listed in KNOWN_FAILURES: remove it)"

                failures += not matches and not known_failure
                click.echo(verdict.splitlines()[0] if verdict else verdict)

    click.echo(
        f"\n{len(files)} kernels, {failures} mismatches, "
        f"{known} known failures (KNOWN_FAILURES: runs an example declares it "
        "cannot pass yet, with the reason)"
    )

    for line in _closing(device, ran):
        click.echo(line)

    sys.exit(1 if failures else 0)


def _require_device(device):
    # Without the device, every run would fail with torch's own error.
    if device == "cuda" and not torch.cuda.is_available():
        raise click.UsageError(
            "--device cuda: torch sees no CUDA GPU here; choose --device cpu (or auto)"
        )

    npu = getattr(torch, "npu", None)

    if device == "npu" and (npu is None or not npu.is_available()):
        raise click.UsageError(
            "--device npu: "
            + ("torch_npu is not imported" if npu is None else "torch_npu sees no NPU")
            + " here; choose --device cpu (or auto), and check the NPU variant "
            "with `ninetoothed-ascend check` where triton-ascend is installed"
        )


def _verdict(result):
    if result.matches:
        return (
            f"matches torch (max abs error {result.max_abs_error:.3g}, "
            f"{result.seconds:.3f} s)"
        )

    nonfinite = (
        f"{result.nonfinite} NaN or infinite elements where torch's differ, "
        if result.nonfinite
        else ""
    )

    return (
        f"DIFFERS from torch ({nonfinite}max abs error "
        f"{result.max_abs_error:.3g}{' elsewhere' if nonfinite else ''}, "
        f"{result.seconds:.3f} s)"
    )


def _closing(device, dtypes):
    """The demo's last lines: what ran, against what, and what to run next."""

    variant = (
        f"the NPU variant emulated on {device} (NINETOOTHED_ASCEND_EMULATE_NPU=1)"
        if device in ("cuda", "cpu") and emulation.emulation_requested()
        else _RUNS[device]
    )
    tolerances = "; ".join(
        f"{str(dtype).removeprefix('torch.')} {atol:g}/{rtol:g}"
        for dtype in examples.DTYPES
        if dtype in dtypes
        for atol, rtol in [examples.TOLERANCES[dtype]]
    )
    lines = [
        f"ran: {variant}, on {device}",
        f"compared with torch within atol/rtol {tolerances or 'none'} (an example's "
        "TOLERANCES may set its own)",
    ]

    if device != "npu":
        lines.append(
            "next: the NPU variant did not run here; check it with "
            "`ninetoothed-ascend check` in the Ascend environment (triton-ascend "
            "installed as triton: .venv-ascend of .ci/run), or run it emulated "
            "with NINETOOTHED_ASCEND_EMULATE_NPU=1"
        )

    return lines


def _describe_variant(kernel, name):
    try:
        path = kernel.path(name)
    except RuntimeError as error:
        click.echo(f"  {name}: not built: {error}")
        return

    rewrites = ", ".join(
        f"{pass_name} x{count}" for pass_name, count in kernel.rewrites(name)
    )
    click.echo(f"  {name}: {path}")

    if name != "cuda":
        click.echo(f"    rewrites: {rewrites or 'none'}")
