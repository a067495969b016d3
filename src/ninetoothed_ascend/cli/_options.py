"""Options shared by the cache commands."""

import os
import pathlib

import click

from ninetoothed_ascend import cache as cache_module


def resolve_cache_dir(path):
    """Return the cache directory a command works on, or fail in one line.

    An explicit directory (``--cache-dir`` or ``$NINETOOTHED_ASCEND_CACHE_DIR``)
    must be writable and trusted: a command told where to write does not fall
    back elsewhere. Without one, :func:`~ninetoothed_ascend.cache.default_directory`.

    :raises click.ClickException: the directory cannot be created or written,
        or is not trusted.
    """

    if path is None:
        return cache_module.default_directory()

    path = pathlib.Path(path).expanduser()

    if not cache_module._writable(path):
        raise click.ClickException(f"cache directory {path} is not writable")

    problem = cache_module.trust_problem(path, parents=True)

    if problem is not None:
        raise click.ClickException(f"refusing cache directory: {problem}")

    return path


cache_dir_option = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=pathlib.Path),
    default=lambda: os.environ.get("NINETOOTHED_ASCEND_CACHE_DIR"),
    help="Cache directory (default: $NINETOOTHED_ASCEND_CACHE_DIR, then the user cache directory).",
)
