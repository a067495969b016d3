"""``ninetoothed-ascend show``: what the pipelines did to one kernel, as a diff, with the passes that fired and why."""

import difflib
import inspect
import pathlib
import shutil
import textwrap

import click

from ninetoothed_ascend.compiler.npu import flat_index_digits
from ninetoothed_ascend.compiler.pipelines import (
    EMULATIONS,
    PASSES,
    VARIANTS,
    precision_notes,
)
from ninetoothed_ascend.jit.handle import Handle, VariantUnavailableError
from ninetoothed_ascend.warm import (
    ShadowedModuleError,
    import_file,
    import_name,
    one_line,
)


def load_handle(kernel):
    """Import ``kernel`` (``path.py`` or ``path.py:attribute``, default attribute ``kernel``) and return its handle and the import it stands for.

    The file is imported as a program imports it
    (:func:`ninetoothed_ascend.warm.import_file`), so the handle has the key
    that program's kernel has.

    :return: ``(handle, name)``: the :class:`~ninetoothed_ascend.Handle` and
        ``str``, the module name it was imported by.
    :raises click.BadParameter: the file does not exist, or the attribute is
        missing or not a :class:`~ninetoothed_ascend.Handle`.
    :raises click.ClickException: importing the file fails, or its module
        name finds another module.
    """

    path, _, attribute = kernel.partition(":")
    attribute = attribute or "kernel"
    path = pathlib.Path(path)

    if not path.is_file() or path.suffix != ".py":
        raise click.BadParameter(
            f"no Python file at {path}; give a .py module such as "
            "examples/elementwise/add.py",
            param_hint="KERNEL",
        )

    name, _ = import_name(path)

    try:
        module = import_file(path)
    except ShadowedModuleError as error:
        raise click.ClickException(str(error)) from None
    except Exception as error:
        raise click.ClickException(
            f"importing {path} failed: {one_line(error)}; fix the module, or run it with python "
            "to see the traceback"
        ) from None

    handle = getattr(module, attribute, None)

    if not isinstance(handle, Handle):
        raise click.BadParameter(
            f"{path} has no ninetoothed_ascend handle named `{attribute}` "
            f"(found {type(handle).__name__}); write PATH:ATTRIBUTE to name it.",
            param_hint="KERNEL",
        )

    return handle, name


def reason(pass_name):
    """Why pass ``pass_name`` exists: its docstring's first line and the first sentence of its ``Constraint:`` paragraph."""

    pass_class = PASSES.get(pass_name)

    if pass_class is None:
        return "(not a pass of this version's pipelines)"

    docstring = inspect.getdoc(pass_class) or ""
    paragraphs = [" ".join(part.split()) for part in docstring.split("\n\n")]
    summary = paragraphs[0] if paragraphs else ""
    constraint = next(
        (part for part in paragraphs if part.startswith("Constraint:")), None
    )

    if constraint is None:
        return summary

    sentence = constraint.removeprefix("Constraint:").strip()
    end = sentence.find(". ")
    sentence = sentence if end < 0 else sentence[: end + 1]

    return f"{summary} Constraint: {sentence}"


def _side_by_side(old, new, old_title, new_title, width):
    column = max(20, (width - 3) // 2)
    old_lines, new_lines = old.splitlines(), new.splitlines()
    rows = [(old_title, " ", new_title), ("=" * column, " ", "=" * column)]

    for tag, old_start, old_end, new_start, new_end in difflib.SequenceMatcher(
        None, old_lines, new_lines, autojunk=False
    ).get_opcodes():
        left = old_lines[old_start:old_end]
        right = new_lines[new_start:new_end]
        marker = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}[tag]

        for index in range(max(len(left), len(right))):
            rows.extend(
                _wrapped_row(
                    left[index] if index < len(left) else "",
                    right[index] if index < len(right) else "",
                    marker,
                    column,
                )
            )

    return "\n".join(
        f"{left.ljust(column)} {marker} {right}".rstrip()
        for left, marker, right in rows
    )


def _wrapped_row(left, right, marker, column):
    # Generated lines run to thousands of characters; wrapping keeps all of them.
    left_parts = textwrap.wrap(
        left, column, drop_whitespace=False, break_on_hyphens=False
    ) or [""]
    right_parts = textwrap.wrap(
        right, column, drop_whitespace=False, break_on_hyphens=False
    ) or [""]
    count = max(len(left_parts), len(right_parts))
    left_parts += [""] * (count - len(left_parts))
    right_parts += [""] * (count - len(right_parts))

    return [
        (left_part, marker if index == 0 else ".", right_part)
        for index, (left_part, right_part) in enumerate(zip(left_parts, right_parts))
    ]


@click.command()
@click.argument("kernel")
@click.option(
    "--diff/--side-by-side",
    "unified",
    default=True,
    show_default=True,
    help="A unified diff, or the two sources side by side (`|` changed, `<` removed, `>` added, `.` continued).",
)
@click.option(
    "--variant",
    type=click.Choice(list(VARIANTS)),
    default="npu",
    show_default=True,
    help="The variant to compare with the CUDA variant (NineToothed's source).",
)
@click.option(
    "--emulated",
    type=click.Choice(list(EMULATIONS)),
    default=None,
    help="Instead, compare the NPU variant with its emulation on this device type.",
)
@click.option(
    "--width",
    type=int,
    default=None,
    help="Columns for --side-by-side (default: the terminal's).",
)
def show(kernel, unified, variant, emulated, width):
    """Show how a kernel's variant differs from NineToothed's source, and which passes made it so.

    KERNEL is an example module (`examples/elementwise/add.py`, its handle
    at `kernel`) or `PATH.py:ATTRIBUTE` for a handle at another name. Prints
    each pass that fired, how often, and the constraint it answers, the
    loads and stores that stay a gather on the NPU (an index tensor, a
    permutation), then the
    diff from the CUDA variant to the NPU (or CPU) variant, or from the NPU
    variant to its emulation (--emulated).
    """

    handle, module_name = load_handle(kernel)

    try:
        if emulated is None:
            old_name, new_name = "cuda", variant
            old, new = handle.source("cuda"), handle.source(variant)
            rewrites = handle.rewrites(variant)
        else:
            old_name, new_name = "npu", f"npu emulated on {emulated}"
            old = handle.source("npu")
            rewritten = handle.emulated_source(emulated)
            new, rewrites = rewritten.source, rewritten.rewrites
    except VariantUnavailableError as error:
        raise click.ClickException(str(error)) from error

    click.echo(
        f"kernel {handle.kernel_name}: {old_name} -> {new_name} (key "
        f"{handle.key[:12]}, as a program that runs `import {module_name}` first "
        "makes it)"
    )
    click.echo(f"passes that fired ({len(rewrites)}):")

    for pass_name, count in rewrites:
        click.echo(f"  {pass_name} x{count}: {reason(pass_name)}")

    if not rewrites:
        click.echo("  none")

    for pass_name, note in precision_notes(rewrites):
        click.echo(f"precision ({pass_name}): {note}")

    if emulated is None and variant == "npu":
        gathers = flat_index_digits.scalar_accesses(handle.source("cuda"))
        click.echo(
            f"accesses that stay a gather on the NPU ({len(gathers)}; "
            "scalar loops, DiscreteMemAccess in the ttadapter output):"
        )

        for kernel_name, access, why in gathers:
            click.echo(f"  {kernel_name} {access}: {why}")

        if not gathers:
            click.echo("  none")

    old_title = f"{handle.kernel_name} ({old_name})"
    new_title = f"{handle.kernel_name} ({new_name})"
    click.echo("")

    if unified:
        click.echo(
            "".join(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=old_title,
                    tofile=new_title,
                )
            ),
            nl=False,
        )
    else:
        width = width or shutil.get_terminal_size((160, 24)).columns
        click.echo(_side_by_side(old, new, old_title, new_title, width))
