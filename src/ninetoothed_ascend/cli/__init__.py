"""The ``ninetoothed-ascend`` command."""

import sys

import click
import torch

from ninetoothed_ascend import examples
from ninetoothed_ascend.cache import default_directory
from ninetoothed_ascend.jit.variants import VARIANTS

_DTYPES = {
    "float16": torch.float16,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
}


_dtype_option = click.option(
    "--dtype",
    "dtype_names",
    type=click.Choice(sorted(_DTYPES)),
    multiple=True,
    help="Input dtypes to run (repeatable); default: each example's DTYPES.",
)


def _dtypes(module, dtype_names):
    if not dtype_names:
        return examples.dtypes(module)

    return tuple(_DTYPES[name] for name in dtype_names)


@click.group()
def main():
    """ninetoothed-ascend: NineToothed kernels for NVIDIA GPUs, Ascend NPUs and the CPU."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--device",
    type=click.Choice(["auto", "cuda", "npu", "cpu"]),
    default="auto",
    show_default=True,
    help="Where to run the kernels; auto picks cuda, then npu, then cpu.",
)
@_dtype_option
def demo(paths, device, dtype_names):
    """Generate the variants of example kernels, run them, and check them against torch.

    PATHS are example modules or directories of them (default: ./examples).
    For each kernel this prints the variants generated, the rewrites each
    pipeline applied and where the variants are cached, then runs the kernel
    through its handle on the chosen device. Exits with 1 if any result
    differs from torch's.
    """

    device = examples.best_device() if device == "auto" else device
    files = examples.find_modules(paths or ("examples",))
    failures = 0

    click.echo(f"cache: {default_directory()}")
    click.echo(f"device: {device} (the handle dispatches to the {device} variant)")

    for path in files:
        module = examples.load_module(path)
        kernel = module.kernel
        click.echo(f"\n{kernel.kernel_name} ({path})")

        for name in VARIANTS:
            _describe_variant(kernel, name)

        for dtype in _dtypes(module, dtype_names):
            for case in examples.cases(module):
                result = examples.compare(module, kernel, device, dtype, case)
                verdict = "matches torch" if result.matches else "DIFFERS from torch"
                failures += not result.matches
                shape = "".join(f", {key}={value}" for key, value in case.items())
                click.echo(
                    f"  run on {device}, {str(dtype).removeprefix('torch.')}{shape}: "
                    f"{verdict} (max abs error {result.max_abs_error:.3g}, "
                    f"{result.seconds:.3f} s)"
                )

    click.echo(f"\n{len(files)} kernels, {failures} mismatches")
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


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@_dtype_option
def check(paths, dtype_names):
    """Run the Ascend compile check (ttir and ttadapter) on the NPU variant of example kernels.

    Needs triton-ascend installed as `triton`; needs no NPU. Every autotune
    config is compiled for each dtype. Exits with 1 if any config fails.
    """

    from ninetoothed_ascend.compile_check import StageError, check_variant

    files = examples.find_modules(paths or ("examples",))
    failures = 0

    for path in files:
        module = examples.load_module(path)

        for dtype in _dtypes(module, dtype_names):
            dtype_name = str(dtype).removeprefix("torch.")
            inputs = module.inputs("cpu", dtype)

            try:
                results = check_variant(module.kernel, module.launch, *inputs)
            except StageError as error:
                failures += 1
                click.echo(f"{module.kernel.kernel_name} {dtype_name}: FAILED {error}")
                continue

            seconds = sum(sum(result.seconds.values()) for result in results)
            click.echo(
                f"{module.kernel.kernel_name} {dtype_name}: {len(results)} configs "
                f"passed ttir and ttadapter ({seconds:.2f} s)"
            )

    click.echo(f"{len(files)} kernels, {failures} failures")
    sys.exit(1 if failures else 0)


# Command modules register themselves on ``main`` when imported.
from ninetoothed_ascend.cli import cache_commands, warm  # noqa: E402, F401
