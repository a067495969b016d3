"""One archive to ship a warmed cache to machines without network or compilers.

An archive is a gzip'd tar of a cache's own layout (``kernels/<key>.json`` and
``sources/<sha256>.py``), nothing else. :func:`import_archive` checks the
declared sizes and names of all members first, then reads them into memory and
checks every member before writing anything: only regular files with those
names, every source matching its sha256, every entry a valid entry of the key
it is named after whose sources are in the archive or already in the cache,
and none replacing a different entry.
Then it writes each file atomically, sources before the entries that name
them, so a reader never sees a partial entry.
"""

import hashlib
import io
import json
import os
import re
import tarfile
import zlib

from ninetoothed_ascend.cache import check_entry, make_directory, write_atomically

_MEMBER = re.compile(r"(kernels/[0-9a-f]{64}\.json|sources/[0-9a-f]{64}\.py)")

# Limits (bytes, members), checked against the tar headers before any content
# is read. Generated modules are tens of KiB and entries under 1 KiB; the
# total bounds the memory an import takes (everything is checked before
# anything is written).

#: Largest source member.
MAX_SOURCE_SIZE = 4 * 2**20
#: Largest entry member.
MAX_ENTRY_SIZE = 64 * 2**10
#: Most members (an entry and three sources per kernel).
MAX_MEMBERS = 20_000
#: Largest sum of the members' sizes.
MAX_TOTAL_SIZE = 256 * 2**20


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

    write_atomically(path, buffer.getvalue())
    entries = sum(name.startswith("kernels/") for name in members)

    return entries, len(members) - entries


def import_archive(cache, path):
    """Check every member of the archive at ``path``, then add them to ``cache``.

    Limits are enforced from the tar headers' declared sizes before any
    content is read (:data:`MAX_MEMBERS`, :data:`MAX_ENTRY_SIZE`,
    :data:`MAX_SOURCE_SIZE`, :data:`MAX_TOTAL_SIZE`), so a hostile archive
    costs at most :data:`MAX_TOTAL_SIZE` bytes of memory. Then every source's
    sha256 and every entry (:func:`~ninetoothed_ascend.cache.check_entry`,
    including that it records the key it is named after) is checked. An
    entry already in the cache with other content is never overwritten.

    :return: ``(entries, sources)`` added (those already present with the
        same content included).
    :raises ArchiveError: the archive or a member is invalid, or would
        replace a different entry; nothing was written.
    :raises OSError: the cache cannot be written.
    """

    members = {}

    try:
        with tarfile.open(path, mode="r:gz") as archive:
            infos = _checked_headers(path, archive)

            for info in infos:
                data = archive.extractfile(info).read()

                if info.name.startswith("sources/"):
                    if hashlib.sha256(data).hexdigest() != info.name[8:-3]:
                        raise ArchiveError(
                            f"{path}: {info.name} does not match its sha256; the "
                            "archive was altered or damaged: export it again"
                        )

                members[info.name] = data
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise ArchiveError(
            f"{path} is not a readable archive ({_one_line(error)}); give a "
            ".tar.gz written by `ninetoothed-ascend export`"
        ) from None

    for name, data in members.items():
        if name.startswith("kernels/"):
            _check_entry(path, name, data, members, cache)

    sources = {n: d for n, d in members.items() if n.startswith("sources/")}
    entries = {n: d for n, d in members.items() if n.startswith("kernels/")}

    for group in (sources, entries):
        for name, data in group.items():
            target = cache.directory / name

            if not target.exists():
                make_directory(target.parent)
                write_atomically(target, data)

    return len(entries), len(sources)


def _checked_headers(path, archive):
    # Reads the headers only (the gzip stream is decompressed and skipped,
    # never kept), so every limit holds before any content is read.
    infos = []
    total = 0

    for info in archive:
        if not info.isfile() or not _MEMBER.fullmatch(info.name):
            raise ArchiveError(
                f"{path}: unexpected member {info.name!r}; an archive holds "
                "only kernels/<key>.json and sources/<sha256>.py files"
            )

        limit = MAX_ENTRY_SIZE if info.name.startswith("kernels/") else MAX_SOURCE_SIZE

        if info.size > limit:
            raise ArchiveError(
                f"{path}: member {info.name} declares {info.size} bytes, more than "
                f"the limit of {limit}; it is not an exported cache"
            )

        total += info.size
        infos.append(info)

        if len(infos) > MAX_MEMBERS or total > MAX_TOTAL_SIZE:
            raise ArchiveError(
                f"{path}: more than {MAX_MEMBERS} members or {MAX_TOTAL_SIZE} bytes; "
                "export fewer kernels per archive (--key)"
            )

    return infos


def _check_entry(path, name, data, members, cache):
    key = name[len("kernels/") : -len(".json")]

    try:
        stored = json.loads(data)
        check_entry(stored, key)
    except (ValueError, RecursionError) as error:
        raise ArchiveError(
            f"{path}: {name} is not a valid cache entry: {_one_line(error)}"
        ) from None

    for record in stored["variants"].values():
        digest = record["digest"]

        if (
            digest is not None
            and f"sources/{digest}.py" not in members
            and not cache.source_path(digest).exists()
        ):
            raise ArchiveError(
                f"{path}: {name} names source {digest}, which is missing"
            )

    existing = cache.entry_path(key)

    try:
        different = existing.read_bytes() != data
    except FileNotFoundError:
        return
    except OSError as error:
        different = error

    if different:
        raise ArchiveError(
            f"{path}: {name} would replace a different entry already in "
            f"{cache.directory}; run `ninetoothed-ascend clear {key[:12]}` first "
            "if you mean to replace it"
        )


def _one_line(error):
    lines = str(error).strip().splitlines()

    return lines[0] if lines else type(error).__name__


def default_archive_name():
    """``ninetoothed-ascend-cache.tar.gz`` in the current directory."""

    return os.path.join(os.getcwd(), "ninetoothed-ascend-cache.tar.gz")


__all__ = ["ArchiveError", "export_archive", "import_archive"]
