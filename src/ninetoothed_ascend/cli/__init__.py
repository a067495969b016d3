"""The ``ninetoothed-ascend`` command."""

import os
import sys

import click

from ninetoothed_ascend.cli import cache_commands, check, demo, show, warm
from ninetoothed_ascend.warm import one_line


class _Group(click.Group):
    """A group whose commands fail in one line, whatever they raise.

    Expected errors are ``click.ClickException`` (exit 1) and usage errors
    (exit 2), raised by the commands themselves; anything else is a bug or a
    case no command foresaw, and still gets one line (exit 1) naming it and
    what to do. ``NINETOOTHED_ASCEND_TRACEBACK=1`` shows the traceback instead.
    """

    def main(self, args=None, prog_name=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **extra)

        try:
            super().main(args, prog_name, standalone_mode=False, **extra)
        except click.UsageError as error:
            # Click's own report is three lines (usage, a hint, the error).
            command = error.ctx.command_path if error.ctx else "ninetoothed-ascend"
            click.echo(
                f"Error: {error.format_message()} (see `{command} --help`)", err=True
            )
            sys.exit(error.exit_code)
        except click.ClickException as error:
            error.show()
            sys.exit(error.exit_code)
        except click.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(1)

        sys.exit(0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as error:
            if os.environ.get("NINETOOTHED_ASCEND_TRACEBACK") == "1":
                raise

            raise click.ClickException(
                f"{ctx.invoked_subcommand} failed unexpectedly: "
                f"{one_line(error)}; run it again "
                "with NINETOOTHED_ASCEND_TRACEBACK=1 and report the traceback"
            ) from None


@click.group(cls=_Group)
def main():
    """ninetoothed-ascend: NineToothed kernels for NVIDIA GPUs, Ascend NPUs and the CPU."""


for _command in (
    demo.demo,
    check.check,
    show.show,
    warm.record,
    warm.warm,
    cache_commands.list_entries,
    cache_commands.info,
    cache_commands.clear,
    cache_commands.export_command,
    cache_commands.import_command,
    cache_commands.doctor,
):
    main.add_command(_command)
