"""Options shared by the commands."""

import os
import pathlib

import click
import torch

from ninetoothed_ascend import cache as cache_module
from ninetoothed_ascend import examples


def resolve_cache_dir(path, create=True):
    """Return the cache directory a command works on, or fail in one line.

    An explicit directory (``--cache-dir`` or ``$NINETOOTHED_ASCEND_CACHE_DIR``)
    must be trusted, and writable when the command writes: a command told
    where to work does not fall back elsewhere. The empty path (which would
    be the working directory) and system directories (``/``, ``/usr``, ...:
    :func:`~ninetoothed_ascend.cache.system_directory`) are refused before
    anything is created. Without one,
    :func:`~ninetoothed_ascend.cache.default_directory`.

    :param path: ``str`` or ``None``.
    :param create: ``False`` for commands that only read the cache: an
        explicit directory that does not exist is an error, and nothing is
        created.
    :raises click.BadParameter: the empty path.
    :raises click.ClickException: the directory is a system directory, cannot
        be created or written, does not exist (``create=False``), is not a
        directory, or is not trusted.
    """

    if path is None:
        return cache_module.default_directory()

    if not str(path):
        raise click.BadParameter(
            "an empty path is no cache directory; give a directory, or leave "
            "--cache-dir out for the default",
            param_hint="'--cache-dir'",
        )

    path = pathlib.Path(path).expanduser()

    if cache_module.system_directory(path):
        raise click.ClickException(
            f"refusing cache directory {path}: a system directory; choose a "
            "directory of your own with --cache-dir or $NINETOOTHED_ASCEND_CACHE_DIR"
        )

    if not create:
        if not path.is_dir():
            raise click.ClickException(
                f"cache directory {path} does not exist; check --cache-dir "
                "or $NINETOOTHED_ASCEND_CACHE_DIR"
            )
    elif not cache_module.writable_directory(path):
        raise click.ClickException(
            f"cache directory {path} is not writable; choose another with "
            "--cache-dir or $NINETOOTHED_ASCEND_CACHE_DIR"
        )

    problem = cache_module.trust_problem(path, parents=True)

    if problem is not None:
        raise click.ClickException(f"refusing cache directory: {problem}")

    return path


cache_dir_option = click.option(
    "--cache-dir",
    # ``str``: ``pathlib.Path("")`` would be the working directory.
    type=click.Path(file_okay=False),
    # Empty counts as unset, as for the library.
    default=lambda: os.environ.get("NINETOOTHED_ASCEND_CACHE_DIR") or None,
    help="Cache directory (default: $NINETOOTHED_ASCEND_CACHE_DIR, then the user cache directory).",
)


#: ``--dtype`` names -> the torch dtypes they stand for.
DTYPES = {
    "float16": torch.float16,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
}


dtype_option = click.option(
    "--dtype",
    "dtype_names",
    type=click.Choice(sorted(DTYPES)),
    multiple=True,
    help="Input dtypes to run (repeatable); default: each example's DTYPES.",
)


def selected_dtypes(module, dtype_names):
    """The dtypes to run ``module`` (an example module) in: those named by ``--dtype``, else the example's own (``tuple`` of ``torch.dtype``)."""

    if not dtype_names:
        return examples.dtypes(module)

    return tuple(DTYPES[name] for name in dtype_names)
