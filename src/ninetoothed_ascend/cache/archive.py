"""One archive to ship a warmed cache to machines without network or compilers.

An archive is a gzip'd tar of a cache's own layout (``kernels/<key>.json`` and
``sources/<sha256>.py``), nothing else, written with plain ustar headers.
:func:`import_archive` reads the headers itself, 512 bytes at a time, before
it trusts any of them: only regular files with those names and sizes within
the limits, no extended header (a GNU long name or a pax header, which a
reader must buffer whole: a 1 MB archive declaring a 1 GiB long name took
``tarfile`` 5.59 GB and 41.8 s). Then it reads every member into memory and
checks it before writing anything: every source matching its sha256, every
entry a valid entry of the key it is named after whose NineToothed source is
in the archive or already in the cache, and none replacing a different entry.
Each entry is then admitted as everything from outside is
(``admit``, :func:`ninetoothed_ascend.jit.admit_entry`): its variants are
built here from NineToothed's source and must equal the archive's, and it is
stored as not yet bound to its definition, which the first ``make`` of the
kernel checks. Files are written atomically, sources before the entries that
name them, so a reader never sees a partial entry.
"""

import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import zlib

from ninetoothed_ascend.cache import check_entry, write_atomically

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

_BLOCK = 512

#: Type flags of a regular file: ustar's ``0`` and old tar's NUL.
_REGULAR = (b"0", b"\0")

#: What the other type flags stand for, for the refusal.
_KINDS = {
    b"L": "GNU long-name",
    b"K": "GNU long-link-name",
    b"x": "pax extended",
    b"g": "pax global",
    b"1": "hard-link",
    b"2": "symbolic-link",
    b"5": "directory",
}

#: Bytes skipped per read of a member's content when only headers are read.
_SKIP = 2**20


class ArchiveError(ValueError):
    """An archive cannot be imported; the message says which member and why, in one line."""


def export_archive(cache, path, keys=None):
    """Write the entries of ``keys`` (all valid ones when ``None``) and their sources to ``path``.

    Entries that fail to load (damaged, untrusted) are skipped. The headers
    are plain ustar (the names are short), which :func:`import_archive`
    reads itself.

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

    with tarfile.open(
        fileobj=buffer, mode="w:gz", format=tarfile.USTAR_FORMAT
    ) as archive:
        # Sources first: an archive read in order never names a missing file.
        for name in sorted(members, key=lambda n: (n.startswith("kernels/"), n)):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            info.mode = 0o600
            archive.addfile(info, io.BytesIO(members[name]))

    write_atomically(path, buffer.getvalue())
    entries = sum(name.startswith("kernels/") for name in members)

    return entries, len(members) - entries


def import_archive(cache, path, admit):
    """Check every member of the archive at ``path``, admit every entry, then add them to ``cache``.

    Limits are enforced from the headers, read with bounded memory, before
    any content is read (:data:`MAX_MEMBERS`, :data:`MAX_ENTRY_SIZE`,
    :data:`MAX_SOURCE_SIZE`, :data:`MAX_TOTAL_SIZE`), so a hostile archive
    costs at most :data:`MAX_TOTAL_SIZE` bytes of memory. Then every source's
    sha256 and every entry (:func:`~ninetoothed_ascend.cache.check_entry`,
    including that it records the key it is named after) is checked, and
    ``admit`` builds what the cache stores from it. An entry already in the
    cache with other content is never overwritten.

    :param cache: :class:`~ninetoothed_ascend.cache.Cache`.
    :param path: ``pathlib.Path`` of a ``.tar.gz``.
    :param admit: callable ``(key, stored, texts)`` returning the
        :class:`~ninetoothed_ascend.cache.Entry` to store for an archive
        entry: ``stored`` is the entry's parsed JSON, ``texts`` a ``dict``
        from sha256 hex to the text (``str``) of each source it names, each
        checked against its digest; raises ``ValueError`` to refuse it
        (:func:`ninetoothed_ascend.jit.admit_entry`).
    :return: ``(entries, sources)`` added (those already present with the
        same content included).
    :raises ArchiveError: the archive or a member is invalid, or would
        replace a different entry, or ``admit`` refused an entry; nothing
        was written.
    :raises OSError: the cache cannot be written.
    """

    members = _read_members(path)
    admitted = {}

    sources = {
        name[len("sources/") : -len(".py")]: data
        for name, data in members.items()
        if name.startswith("sources/")
    }

    for name, data in members.items():
        if name.startswith("kernels/"):
            key = name[len("kernels/") : -len(".json")]

            try:
                entry = admit_outside_entry(cache, key, data, sources, admit)
            except ValueError as error:
                raise ArchiveError(f"{path}: {name} {error}") from None

            if entry is not None:
                admitted[key] = entry

    for key, entry in admitted.items():
        cache.store(key, entry)

    entries = sum(name.startswith("kernels/") for name in members)

    return entries, len(members) - entries


def _read_members(path):
    # Two passes over the gzip stream of one open file: the headers first,
    # skipping the contents, so that every limit holds before any content is
    # read; then the contents, by the sizes the first pass checked.
    try:
        with open(path, "rb") as file:
            headers = _checked_headers(path, gzip.GzipFile(fileobj=file, mode="rb"))
            file.seek(0)
            stream = gzip.GzipFile(fileobj=file, mode="rb")
            members = {}

            for name, size in headers:
                if _header(path, _read_exactly(stream, _BLOCK)) != (name, size):
                    raise ArchiveError(
                        f"{path} changed while it was read; import it again"
                    )

                data = _read_exactly(stream, size)
                _read_exactly(stream, -size % _BLOCK)

                if name.startswith("sources/"):
                    if hashlib.sha256(data).hexdigest() != name[8:-3]:
                        raise ArchiveError(
                            f"{path}: {name} does not match its sha256; the "
                            "archive was altered or damaged: export it again"
                        )

                members[name] = data
    except (EOFError, OSError, zlib.error) as error:
        raise ArchiveError(
            f"{path} is not a readable archive ({_one_line(error)}); give a "
            ".tar.gz written by `ninetoothed-ascend export`"
        ) from None

    return members


def _checked_headers(path, stream):
    # Reads the headers only (each member's content is decompressed in
    # chunks of ``_SKIP`` bytes and dropped), so every limit holds before any
    # content is read.
    headers = []
    total = 0

    while True:
        header = _header(path, _read_exactly(stream, _BLOCK))

        if header is None:
            return headers

        name, size = header

        if not _MEMBER.fullmatch(name):
            raise ArchiveError(
                f"{path}: unexpected member {name!r}; an archive holds "
                "only kernels/<key>.json and sources/<sha256>.py files"
            )

        limit = MAX_ENTRY_SIZE if name.startswith("kernels/") else MAX_SOURCE_SIZE

        if size > limit:
            raise ArchiveError(
                f"{path}: member {name} declares {size} bytes, more than "
                f"the limit of {limit}; it is not an exported cache"
            )

        total += size
        headers.append((name, size))

        if len(headers) > MAX_MEMBERS or total > MAX_TOTAL_SIZE:
            raise ArchiveError(
                f"{path}: more than {MAX_MEMBERS} members or {MAX_TOTAL_SIZE} bytes; "
                "export fewer kernels per archive (--key)"
            )

        remaining = size + -size % _BLOCK

        while remaining:
            skipped = len(stream.read(min(remaining, _SKIP)))

            if not skipped:
                raise EOFError("the archive ends inside a member")

            remaining -= skipped


def _header(path, block):
    """``(name, size)`` of a regular file's ustar header, ``None`` at the end of the archive.

    :raises ArchiveError: a header that fails its checksum, or of any other
        type (an extended header, a link, a directory), or a size that is
        not octal.
    """

    if not block.strip(b"\0"):
        return None

    try:
        recorded = int(block[148:156].strip(b" \0") or b"0", 8)
        size = int(block[124:136].strip(b" \0") or b"0", 8)
    except ValueError:
        raise ArchiveError(
            f"{path}: a header has a field that is not octal; it is not an "
            "archive written by `export`"
        ) from None

    if recorded != sum(block[:148]) + 8 * ord(" ") + sum(block[156:]):
        raise ArchiveError(
            f"{path}: a header fails its checksum; it is not an archive written "
            "by `export`"
        )

    name = block[:100].split(b"\0", 1)[0]
    prefix = block[345:500].split(b"\0", 1)[0] if block[257:262] == b"ustar" else b""
    name = (prefix + b"/" + name if prefix else name).decode("utf-8", "replace")
    kind = block[156:157]

    if kind not in _REGULAR:
        raise ArchiveError(
            f"{path}: member {name[:100]!r} has a "
            f"{_KINDS.get(kind, f'type {kind!r}')} header, not a regular file's; "
            "it is not an archive written by `export`"
        )

    return name, size


def _read_exactly(stream, size):
    data = stream.read(size)

    if len(data) != size:
        raise EOFError("the archive ends inside a member")

    return data


def admit_outside_entry(cache, key, data, sources, admit):
    """Check an entry from outside the cache (an archive, a remote store) and return what ``cache`` stores for it.

    The one way an entry from outside enters a cache: ``data`` must parse
    and pass :func:`~ninetoothed_ascend.cache.check_entry` bound to ``key``
    (it records the key it is stored under), every source it names must be
    in ``sources`` or in ``cache`` and match its sha256, it must not replace
    a different entry already stored, and ``admit`` must accept it: for an
    archive or an unauthenticated store, the kernel's variants built here
    from NineToothed's source and compared with the entry's
    (:func:`ninetoothed_ascend.jit.admit_entry`), the entry returned not
    yet bound to its definition (``verified`` is ``False``), which the
    first ``make`` of the kernel checks; for a store entry whose HMAC
    verified, the entry as its writer stored it
    (:func:`ninetoothed_ascend.jit.admit_authenticated_entry`). Nothing of
    it is executed here.

    :param cache: :class:`~ninetoothed_ascend.cache.Cache`.
    :param key: ``str``, the key the entry is stored under (sha256 hex).
    :param data: ``bytes``, the entry's JSON.
    :param sources: ``dict`` from sha256 hex to ``bytes``, the sources that
        came with it.
    :param admit: as :func:`import_archive`.
    :return: :class:`~ninetoothed_ascend.cache.Entry`, or ``None`` when the
        same entry is already stored.
    :raises ValueError: one line that completes "<where> <the entry> ...":
        the entry is malformed, names a source that is missing or does not
        match its sha256, would replace a different entry, or ``admit``
        refused it.
    """

    try:
        stored = json.loads(data)
        check_entry(stored, key)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"is not a valid cache entry: {_one_line(error)}") from None

    texts = {}

    for record in stored["variants"].values():
        digest = record["digest"]

        if digest is None:
            continue

        text = sources.get(digest)

        if text is None:
            try:
                text = cache.source_path(digest).read_bytes()
            except FileNotFoundError:
                text = b""

        if hashlib.sha256(text).hexdigest() != digest:
            raise ValueError(
                f"names source {digest}, which is missing or does not match its sha256"
            )

        texts[digest] = text.decode("utf-8")

    if _differs(cache, key, stored):
        raise ValueError(
            f"would replace a different entry already in "
            f"{cache.directory}; run `ninetoothed-ascend clear {key[:12]}` first "
            "if you mean to replace it"
        )

    if cache.entry_path(key).exists():
        return None  # the same content: nothing to store

    try:
        return admit(key, stored, texts)
    except ValueError as error:
        raise ValueError(f"is refused: {_one_line(error)}") from None


def _differs(cache, key, stored):
    # An entry already stored differs from the archive's where they record
    # another kernel, or another source or error for a variant both hold
    # (the cache's may hold more variants, or fewer).
    try:
        existing = json.loads(cache.entry_path(key).read_bytes())
        check_entry(existing, key)
    except FileNotFoundError:
        return False
    except (OSError, ValueError, RecursionError):
        return True

    fields = ("definition", "kernel_name", "launch_name", "counters_delta")

    return any(existing[field] != stored[field] for field in fields) or any(
        existing["variants"][name]["digest"] != record["digest"]
        for name, record in stored["variants"].items()
        if name in existing["variants"]
    )


def _one_line(error):
    lines = str(error).strip().splitlines()

    return lines[0] if lines else type(error).__name__


def default_archive_name():
    """``ninetoothed-ascend-cache.tar.gz`` in the current directory."""

    return os.path.join(os.getcwd(), "ninetoothed-ascend-cache.tar.gz")


__all__ = ["ArchiveError", "admit_outside_entry", "export_archive", "import_archive"]
