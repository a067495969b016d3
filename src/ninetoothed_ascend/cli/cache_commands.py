"""Cache inspection and transport: ``ls``, ``info``, ``clear``, ``export``, ``import``, ``doctor``."""

import datetime
import json
import os
import pathlib
import platform
import site
import stat
import sys
import warnings

import click

from ninetoothed_ascend import cache as cache_module
from ninetoothed_ascend import host
from ninetoothed_ascend.cache import VARIANT_NAMES, archive
from ninetoothed_ascend.cli._options import cache_dir_option, resolve_cache_dir
from ninetoothed_ascend.compiler.pipelines import precision_notes


def _cache(cache_dir, create=True):
    return cache_module.Cache(resolve_cache_dir(cache_dir, create=create))


def _find(cache, prefix):
    try:
        return cache.find(prefix)
    except KeyError as error:
        raise click.ClickException(error.args[0]) from None


@click.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@cache_dir_option
def list_entries(as_json, cache_dir):
    """List the cached kernels: key, name, which variants were built, size, origin, age.

    An entry that fails its checks (damaged, untrusted) is listed as such;
    it is regenerated the next time its kernel is made. A variant not built
    yet (built at its first use, or by `warm`) is listed as `later`. The
    origin says where the entry came from: `generated` here, a `manifest`
    (`warm`, `check`), an `archive` (`import`) or a `remote` store; `info`
    names which.
    """

    cache = _cache(cache_dir, create=False)
    rows = []

    for key in cache.keys():
        # An untrusted entry (a symbolic link, another owner) is listed as
        # such, not warned about.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entry = cache.load(key)

        try:
            # lstat: a dangling symbolic link is listed, not followed.
            modified = cache.entry_path(key).lstat().st_mtime
        except FileNotFoundError:
            continue  # removed meanwhile

        modified = datetime.datetime.fromtimestamp(modified)
        row = {"key": key, "modified": modified.isoformat(timespec="seconds")}

        if entry is None:
            row |= {
                "kernel_name": None,
                "status": "untrusted" if caught else "invalid",
                "variants": {},
                "bytes": 0,
                "origin": None,
            }
        else:
            row |= {
                "kernel_name": entry.kernel_name,
                "status": "ok",
                "variants": {
                    name: "later"
                    if variant is None
                    else "built"
                    if variant.source is not None
                    else "failed"
                    for name in VARIANT_NAMES
                    for variant in [entry.variants.get(name)]
                },
                "bytes": sum(
                    len(v.source.encode()) for v in entry.variants.values() if v.source
                ),
                "origin": entry.origin,
            }

        rows.append(row)

    if as_json:
        click.echo(json.dumps({"cache_dir": str(cache.directory), "kernels": rows}))
        return

    click.echo(f"cache: {cache.directory}")

    for row in rows:
        variants = " ".join(
            f"{name}{'' if state == 'built' else f'({state})'}"
            for name, state in row["variants"].items()
        )
        click.echo(
            f"{row['key'][:12]}  {row['kernel_name'] or '-':<24} "
            f"{row['status']:<10}{variants:<22}{row['bytes']:>8} B  "
            f"{(row['origin'] or {}).get('kind', '-'):<10}{row['modified']}"
        )

    click.echo(f"{len(rows)} kernels")


@click.command()
@click.argument("key")
@cache_dir_option
def info(key, cache_dir):
    """Describe one cached kernel: KEY is its cache key or a unique prefix of it."""

    cache = _cache(cache_dir, create=False)
    key = _find(cache, key)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        entry = cache.load(key)

    if entry is None:
        reason = f" ({caught[0].message})" if caught else " (see the log)"
        raise click.ClickException(
            f"the entry of {key} fails its checks{reason}; it is "
            "regenerated the next time its kernel is made"
        )

    click.echo(f"key: {key}")
    click.echo(f"kernel: {entry.kernel_name} (launch: {entry.launch_name})")
    click.echo(f"entry: {cache.entry_path(key)}")
    click.echo(f"origin: {describe_origin(entry.origin)}")
    click.echo(
        "verified: "
        + (
            "yes (NineToothed's source is what its definition generates)"
            if entry.verified
            else "not yet (the first make compares it with its definition)"
        )
    )
    click.echo(f"naming counters advanced by: {list(entry.counters_delta)}")

    for name in VARIANT_NAMES:
        variant = entry.variants.get(name)

        if variant is None:
            click.echo(f"{name}: not built yet (built at its first use, or by `warm`)")
            continue

        if variant.source is None:
            click.echo(f"{name}: not built: {variant.error}")
            continue

        rewrites = ", ".join(f"{p} x{c}" for p, c in variant.rewrites) or "none"
        click.echo(
            f"{name}: {variant.path} ({len(variant.source.encode())} B, "
            f"sha256 verified); rewrites: {rewrites}"
        )

        for pass_name, note in precision_notes(variant.rewrites):
            click.echo(f"{name}: precision ({pass_name}): {note}")


def describe_origin(origin):
    """Say where an entry came from, in words (``str``), from :attr:`~ninetoothed_ascend.cache.Entry.origin`."""

    where = origin["from"]

    return {
        "generated": "generated here from its definition",
        "manifest": f"built from the manifest {where}",
        "archive": f"imported from the archive {where}",
        "remote": f"read from the remote cache {where}",
    }[origin["kind"]]


@click.command()
@click.argument("keys", nargs=-1)
@click.option(
    "--stale",
    is_flag=True,
    help="Remove only the kernels that no installation using this cache can "
    "reach any more (made before a package edit or upgrade), and damaged ones.",
)
@cache_dir_option
def clear(keys, stale, cache_dir):
    """Remove cached kernels: those of KEYS (keys or unique prefixes), the --stale ones, or all.

    Removes only the cache's own files (kernels/, sources/, and with no KEYS
    locks/, memos/ and quarantine/), never other files in the directory.
    Sources still named by a remaining entry stay. A kernel is stale when
    the environment it was made in (Python, NineToothed, Triton, this
    package's sources, the NPU target) is not the one any installation that
    uses the cache used last.
    """

    if stale and keys:
        raise click.UsageError("give KEYS or --stale, not both")

    cache = _cache(cache_dir, create=False)

    if stale:
        chosen = cache.stale_keys()
    else:
        chosen = [_find(cache, key) for key in keys] if keys else None

    entries, sources = cache.remove(chosen)
    click.echo(
        f"removed {entries} kernels and {sources} sources from {cache.directory}"
    )


@click.command("export")
@click.argument(
    "output",
    type=click.Path(dir_okay=False, path_type=pathlib.Path),
    default="ninetoothed-ascend-cache.tar.gz",
)
@click.option(
    "--key", "keys", multiple=True, help="Export only this kernel (repeatable)."
)
@cache_dir_option
def export_command(output, keys, cache_dir):
    """Write the cache (or --key kernels) to one archive, OUTPUT (.tar.gz)."""

    cache = _cache(cache_dir, create=False)
    chosen = [_find(cache, key) for key in keys] or None

    try:
        entries, sources = archive.export_archive(cache, output, chosen)
    except KeyError as error:
        raise click.ClickException(error.args[0]) from None
    except OSError as error:
        raise click.ClickException(f"cannot write {output}: {error.strerror}") from None

    click.echo(f"exported {entries} kernels ({sources} sources) to {output}")


@click.command("import")
@click.argument("archive_path", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@cache_dir_option
def import_command(archive_path, cache_dir):
    """Add the kernels of an archive written by `export` to the cache.

    Every member is checked (names, sha256 of sources, entry format, sources
    present) before anything is written; a bad archive changes nothing.
    """

    from ninetoothed_ascend.jit import admit_entry

    cache = _cache(cache_dir)
    origin = {"kind": "archive", "from": str(archive_path.resolve())}

    def admit(key, stored, texts):
        entry = admit_entry(key, stored, texts)
        entry.origin = origin

        return entry

    try:
        entries, sources = archive.import_archive(cache, archive_path, admit)
    except archive.ArchiveError as error:
        raise click.ClickException(str(error)) from None
    except OSError as error:
        raise click.ClickException(
            f"cannot write to {cache.directory}: {error.strerror}"
        ) from None

    click.echo(f"imported {entries} kernels ({sources} sources) into {cache.directory}")


@click.command()
def doctor():
    """Report the toolchain, devices and cache that ninetoothed-ascend would use here.

    Each problem comes with the command that repairs it. Exits with 1 if the
    cache directory cannot be used as configured, or ``import triton`` does not
    find the installed triton-ascend (CUDA Triton replaced it).
    """

    problems = 0

    def line(name, value):
        click.echo(f"{name + ':':<22}{value}")

    line("python", f"{platform.python_version()} ({sys.executable})")
    line("ninetoothed", host.version("ninetoothed"))

    line("torch", host.version("torch"))

    import torch

    cuda = torch.cuda.is_available()
    line(
        "cuda devices",
        ", ".join(
            torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())
        )
        if cuda
        else "none",
    )

    for finding in host.diagnose():
        line(finding.name, finding.detail)

        if finding.fix:
            line("  fix", finding.fix)

        problems += finding.fatal

    explicit = [
        (name, os.environ[name])
        for name in cache_module.ENVIRONMENT_VARIABLES
        if os.environ.get(name)
    ]
    line("cache dir set by", ", ".join(f"${n}={v}" for n, v in explicit) or "default")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        directory = cache_module.default_directory()

    line("cache dir", directory)

    for warning in caught:
        problems += 1
        line("cache dir problem", str(warning.message))

    info = directory.stat()
    line(
        "cache dir permissions",
        f"{stat.filemode(info.st_mode)} uid {info.st_uid} "
        f"({'yours' if info.st_uid == os.getuid() else 'NOT yours'})",
    )
    cache = cache_module.Cache(directory)
    line("cached kernels", len(cache.keys()))
    limit = cache_module.eviction.size_limit()
    line(
        "cache size",
        f"{cache.size()} bytes of "
        + (f"{limit} (${cache_module.SIZE_VARIABLE})" if limit else "no limit"),
    )

    hook = [
        pathlib.Path(d) / "ninetoothed_ascend.pth"
        for d in site.getsitepackages() + [site.getusersitepackages()]
        if (pathlib.Path(d) / "ninetoothed_ascend.pth").exists()
    ]
    line(
        "NINETOOTHED_ASCEND",
        f"{os.environ.get('NINETOOTHED_ASCEND', '(unset)')}; startup hook: "
        + (str(hook[0]) if hook else "not installed (editable install?)"),
    )

    sys.exit(1 if problems else 0)
