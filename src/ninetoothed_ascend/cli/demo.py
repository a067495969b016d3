"""``ninetoothed-ascend demo``: the main job, every example's variants generated, run and checked against torch."""

import sys

import click

from ninetoothed_ascend import examples
from ninetoothed_ascend.cache import default_directory
from ninetoothed_ascend.cli._options import dtype_option, selected_dtypes
from ninetoothed_ascend.jit.variants import VARIANTS


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
    in its ``KNOWN_FAILURES`` for that device type.
    """

    device = examples.best_device() if device == "auto" else device
    files = examples.find_modules(paths or ("examples",))
    failures = known = 0

    click.echo(f"cache: {default_directory()}")
    click.echo(f"device: {device} (the handle dispatches to the {device} variant)")

    for path in files:
        try:
            module = examples.load_module(path)
        except AttributeError as error:  # not an example module
            raise click.ClickException(
                f"{error}; see examples/elementwise/add.py for what an example defines"
            ) from None

        kernel = module.kernel
        click.echo(f"\n{kernel.kernel_name} ({path})")

        for name in VARIANTS:
            _describe_variant(kernel, name)

        known_failure = getattr(module, "KNOWN_FAILURES", {}).get(device)

        for dtype in selected_dtypes(module, dtype_names):
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
                    verdict = (
                        f"{'matches torch' if matches else 'DIFFERS from torch'} "
                        f"(max abs error {result.max_abs_error:.3g}, "
                        f"{result.seconds:.3f} s)"
                    )

                if known_failure and not matches:
                    known += 1
                    verdict = f"known failure: {known_failure}"
                elif known_failure:
                    verdict += " (listed in KNOWN_FAILURES: remove it)"

                failures += not matches and not known_failure
                click.echo(verdict.splitlines()[0] if verdict else verdict)

    click.echo(
        f"\n{len(files)} kernels, {failures} mismatches, "
        f"{known} known failures (KNOWN_FAILURES)"
    )
    sys.exit(1 if failures else 0)


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
