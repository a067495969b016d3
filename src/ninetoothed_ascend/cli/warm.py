"""``record`` and ``warm``: make a program's kernels ahead of time."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import click
import tqdm

from ninetoothed_ascend import manifest as manifest_module
from ninetoothed_ascend import warm as warm_module
from ninetoothed_ascend.cache import remote as remote_module
from ninetoothed_ascend.cli._options import cache_dir_option, resolve_cache_dir

# Put first on the recorded program's PYTHONPATH: activates the recorder at
# interpreter start even where the wheel's .pth file is not installed (an
# editable install), then hands over to any sitecustomize it shadows.
_SITECUSTOMIZE = """\
import importlib.machinery, importlib.util, os, sys
sys.path[:] = [p for p in sys.path if p != os.path.dirname(__file__)]
import _ninetoothed_ascend_startup
_ninetoothed_ascend_startup.install()
spec = importlib.machinery.PathFinder.find_spec("sitecustomize")
if spec is not None:
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
"""


@click.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=pathlib.Path),
    default="ninetoothed-ascend-manifest.json",
    show_default=True,
    help="Manifest to write.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(output, command):
    """Run COMMAND and write a manifest of every kernel its Python processes made.

    Write it as `ninetoothed-ascend record -- python train.py ...`. The
    program runs with ninetoothed-ascend active (NINETOOTHED_ASCEND=1), its
    kernels go to the cache as usual, and the manifest (JSON, versioned) holds
    what `warm` needs to make them again elsewhere. Exits with the program's
    exit status; the manifest is written (whole, or not at all) either way.
    """

    output_dir = output.resolve().parent

    if not os.access(output_dir, os.W_OK):
        raise click.ClickException(f"cannot write the manifest in {output_dir}")

    source_root = pathlib.Path(manifest_module.__file__).resolve().parent.parent

    with tempfile.TemporaryDirectory(prefix="ninetoothed-ascend-record-") as workdir:
        workdir = pathlib.Path(workdir)
        hook = workdir / "hook"
        records = workdir / "records"
        hook.mkdir()
        records.mkdir()
        (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        path = [str(hook), str(source_root), os.environ.get("PYTHONPATH", "")]
        env = os.environ | {
            "NINETOOTHED_ASCEND": "1",
            manifest_module.RECORD_VARIABLE: str(records),
            "PYTHONPATH": os.pathsep.join(filter(None, path)),
        }

        try:
            status = subprocess.run(list(command), env=env, check=False).returncode
        except OSError as error:
            raise click.ClickException(
                f"cannot run {command[0]}: {error.strerror}"
            ) from None

        try:
            document = manifest_module.merge(records, command)
        except manifest_module.ManifestError as error:
            raise click.ClickException(str(error)) from None

    try:
        manifest_module.write(output, document)
    except OSError as error:
        raise click.ClickException(f"cannot write {output}: {error.strerror}") from None

    click.echo(
        f"recorded {len(document['kernels'])} kernels in {output}"
        + (f" (the program exited with {status})" if status else ""),
        err=True,
    )
    sys.exit(status)


@click.command()
@click.argument("targets", nargs=-1, required=True)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes (at most one per CPU and per task).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--remote",
    metavar="URL",
    is_flag=False,
    flag_value="",
    default=None,
    help="Also put every kernel on the remote cache at URL (redis://host:port/db; "
    f"--remote alone: ${remote_module.REMOTE_VARIABLE}). Needs "
    f"${remote_module.SECRET_VARIABLE} or ${remote_module.SECRET_FILE_VARIABLE}.",
)
@cache_dir_option
def warm(targets, jobs, as_json, remote, cache_dir):
    """Build and cache kernels ahead of time, from manifests or modules.

    Each TARGET is a manifest written by `record` (a .json file), a Python
    module file, a directory of modules, or a dotted module or package name.
    A manifest's kernels are made again from NineToothed's recorded source; a
    module's are made by importing it in a fresh process. With --remote,
    each kernel warmed, whether built now or already cached, is then put on
    the remote cache with its sources, for a fleet's machines to read. Prints
    a progress bar, then a table (or JSON with --json). Exits with 1 if any
    kernel failed.
    """

    cache_dir = resolve_cache_dir(cache_dir)
    store = _remote_store(remote)
    tasks = []

    for target in targets:
        try:
            if target.endswith(".json"):
                document = manifest_module.read(target)
                tasks += warm_module.manifest_tasks(document, target)
            else:
                tasks += warm_module.module_tasks(target)
        except ValueError as error:  # ManifestError too
            raise click.ClickException(str(error)) from None

    start = time.perf_counter()
    jobs = warm_module.workers(jobs, tasks)

    with tqdm.tqdm(
        total=len(tasks),
        unit="task",
        desc="warming",
        file=sys.stderr,
        disable=True if as_json else None,  # None: only on a terminal
        leave=False,
    ) as bar:
        try:
            results = warm_module.run(
                tasks, jobs, cache_dir, on_result=lambda done: bar.update(1)
            )
        except warm_module.Interrupted as interrupted:
            bar.close()
            click.echo(
                f"warm interrupted after {interrupted.done} of {interrupted.total} "
                "tasks (their kernels are cached); run it again to warm the rest",
                err=True,
            )
            sys.exit(130)

    if store is not None:
        _publish(store, cache_dir, results)

    seconds = time.perf_counter() - start
    counts = {
        status: sum(result.status == status for result in results)
        for status in (warm_module.BUILT, warm_module.CACHED, warm_module.FAILED)
    }

    if as_json:
        click.echo(
            json.dumps(
                {
                    "cache_dir": str(cache_dir),
                    "jobs": jobs,
                    "seconds": seconds,
                    "counts": counts,
                    "kernels": [vars(result) for result in results],
                },
                indent=1,
            )
        )
    else:
        _table(results)
        click.echo(
            f"{len(results)} kernels in {seconds:.2f} s with -j {jobs}: "
            + ", ".join(f"{count} {status}" for status, count in counts.items())
            + f"; cache: {cache_dir}"
            + (
                f"; put {sum(r.published > 0 for r in results)} kernels "
                f"({sum(r.published for r in results)} B) on {store.name}"
                if store is not None
                else ""
            )
        )

    sys.exit(1 if counts[warm_module.FAILED] else 0)


def _remote_store(remote):
    # The store ``--remote`` names (``None`` without it), checked before any
    # work: its secret set, its server answering.
    if remote is None:
        return None

    url = remote or os.environ.get(remote_module.REMOTE_VARIABLE, "")

    if not url:
        raise click.UsageError(
            f"--remote needs a URL, or ${remote_module.REMOTE_VARIABLE} set"
        )

    try:
        return remote_module.writer(url)
    except remote_module.RemoteError as error:
        raise click.ClickException(f"warm --remote: {error}") from None


def _publish(store, cache_dir, results):
    # Every kernel warmed, built now or found cached, as its cache entry
    # holds it; a kernel that cannot be put on the store is failed.
    from ninetoothed_ascend.cache import Cache

    cache = Cache(cache_dir)

    for result in results:
        if result.status == warm_module.FAILED:
            continue

        entry = cache.load(result.key)

        try:
            if entry is None:
                raise remote_module.RemoteError(
                    "its cache entry is gone or fails its checks"
                )

            result.published = store.publish(
                cache, result.key, entry, raise_errors=True
            )
        except remote_module.RemoteError as error:
            result.status, result.detail = warm_module.FAILED, f"not published: {error}"


def _table(results):
    rows = [("kernel", "key", "status", "seconds", "from")] + [
        (
            result.kernel_name,
            (result.key or "-")[:12],
            result.status + (f": {result.detail}" if result.detail else ""),
            f"{result.seconds:.2f}",
            result.origin,
        )
        for result in results
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]

    for row in rows:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths))
            + "  "
            + row[4]
        )
