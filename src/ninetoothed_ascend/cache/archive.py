"""One archive to ship a warmed cache to machines without network or compilers.

An archive is a gzip'd tar of a cache's own layout (``kernels/<key>.json`` and
``sources/<sha256>.py``), nothing else. :func:`import_archive` reads the whole
archive into memory and checks every member before writing anything: only
regular files with those names, every source matching its sha256, every entry
a valid entry whose sources are in the archive or already in the cache.
Then it writes each file atomically, sources before the entries that name
them, so a reader never sees a partial entry.
"""

import hashlib
import io
import json
import os
import re
import tarfile

from ninetoothed_ascend.cache import FORMAT, _make_directory, _write_atomically

_MEMBER = re.compile(r"(kernels/[0-9a-f]{64}\.json|sources/[0-9a-f]{64}\.py)")

#: Refuse members larger than this (bytes): generated modules are tens of KiB.
MAX_MEMBER_SIZE = 16 * 2**20


class ArchiveError(ValueError):
    """An archive cannot be imported; the message says which member and why, in one line."""


def export_archive(cache, path, keys=None):
    """Write the entries of ``keys`` (all valid ones when ``None``) and their sources to ``path``.

    Entries that fail to load (damaged, untrusted) are skipped.

    :param cache: :class:`~ninetoothed_ascend.cache.Cache`.
    :param path: ``pathlib.Path`` of the ``.tar.gz`` to write (atomically).
    :return: ``(entries, sources)`` written.
    :raises KeyError: a key in ``keys`` has no valid entry.
    :raises OSError: ``path`` cannot be written.
    """

    members = {}

    for key in cache.keys() if keys is None else keys:
        entry = cache.load(key)

        if entry is None:
            if keys is not None:
                raise KeyError(f"kernel {key} has no valid cache entry")
            continue

        for variant in entry.variants.values():
            if variant.source is not None:
                members[f"sources/{variant.digest}.py"] = variant.source.encode("utf-8")

        members[f"kernels/{key}.json"] = cache.entry_path(key).read_bytes()

    buffer = io.BytesIO()

    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        # Sources first: an archive read in order never names a missing file.
        for name in sorted(members, key=lambda n: (n.startswith("kernels/"), n)):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            info.mode = 0o600
            archive.addfile(info, io.BytesIO(members[name]))

    _write_atomically(path, buffer.getvalue())
    entries = sum(name.startswith("kernels/") for name in members)

    return entries, len(members) - entries


def import_archive(cache, path):
    """Check every member of the archive at ``path``, then add them to ``cache``.

    :return: ``(entries, sources)`` added.
    :raises ArchiveError: the archive or a member is invalid; nothing was written.
    :raises OSError: the cache cannot be written.
    """

    members = {}

    try:
        with tarfile.open(path, mode="r:*") as archive:
            for info in archive:
                if not info.isfile() or not _MEMBER.fullmatch(info.name):
                    raise ArchiveError(
                        f"{path}: unexpected member {info.name!r}; an archive holds "
                        "only kernels/<key>.json and sources/<sha256>.py files"
                    )

                if info.size > MAX_MEMBER_SIZE:
                    raise ArchiveError(f"{path}: member {info.name} is too large")

                members[info.name] = archive.extractfile(info).read()
    except (tarfile.TarError, EOFError, OSError) as error:
        raise ArchiveError(f"{path} is not a readable archive: {error}") from None

    for name, data in members.items():
        if name.startswith("sources/"):
            if hashlib.sha256(data).hexdigest() != name[8:-3]:
                raise ArchiveError(f"{path}: {name} does not match its sha256")

    for name, data in members.items():
        if name.startswith("kernels/"):
            _check_entry(path, name, data, members, cache)

    sources = {n: d for n, d in members.items() if n.startswith("sources/")}
    entries = {n: d for n, d in members.items() if n.startswith("kernels/")}

    for group in (sources, entries):
        for name, data in group.items():
            target = cache.directory / name
            _make_directory(target.parent)
            _write_atomically(target, data)

    return len(entries), len(sources)


def _check_entry(path, name, data, members, cache):
    try:
        stored = json.loads(data)

        if stored["format"] != FORMAT:
            raise ValueError(
                f"format {stored['format']!r}, this version reads {FORMAT}"
            )

        for key in ("kernel_name", "launch_name"):
            if not isinstance(stored[key], str):
                raise ValueError(f"{key} is not a string")

        digests = [record["digest"] for record in stored["variants"].values()]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ArchiveError(
            f"{path}: {name} is not a valid cache entry: {error}"
        ) from None

    for digest in filter(None, digests):
        if (
            f"sources/{digest}.py" not in members
            and not cache.source_path(digest).exists()
        ):
            raise ArchiveError(
                f"{path}: {name} names source {digest}, which is missing"
            )


def default_archive_name():
    """``ninetoothed-ascend-cache.tar.gz`` in the current directory."""

    return os.path.join(os.getcwd(), "ninetoothed-ascend-cache.tar.gz")


__all__ = ["ArchiveError", "export_archive", "import_archive"]
