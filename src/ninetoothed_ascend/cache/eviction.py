"""A bounded cache: its size limit, and least-recently-used eviction that is safe while other processes use the cache.

What counts: the entries, sources, memos and quarantined entries; the locks
are empty and the notes of environments (``environments/``) a few dozen
bytes each, kept for ``clear --stale``. An entry's modification time is when
it was last used: a ``make`` that finds it touches it (``Cache.touch``, at
most once per ``TOUCH_INTERVAL``). When a store takes the estimate of the
cache's size past its limit, the storing process evicts: under a lock that
one process holds at a time (another that finds it held skips), it removes
the least recently used entries, and each source no remaining entry names,
until the cache is at :data:`EVICT_TO` of its limit. The estimate is the size
the last eviction measured (``usage.json``) plus what every process stored
since, which each store appends to ``usage.ledger`` as one byte per KiB
(``O_APPEND``: the appends of concurrent processes are not lost), so that
one ``fstat`` of the ledger reads it.

Safe while others use the cache: every file is replaced whole; a process that
loads an entry whose source was just evicted finds it missing and builds the
kernel again (``Cache.load`` returns ``None``); a handle keeps the sources it
read in memory; a source that no entry names yet, written less than
:data:`GRACE` seconds ago, is kept (its entry may be on its way).
"""

import collections
import json
import logging
import os
import re
import time
import warnings

import filelock

from ninetoothed_ascend.cache.directory import write_atomically

logger = logging.getLogger(__name__)

#: The variable that sets the cache's size limit: bytes, or with a binary
#: suffix ``K``, ``M``, ``G`` or ``T`` (``512M``); ``0`` for no limit.
SIZE_VARIABLE = "NINETOOTHED_ASCEND_CACHE_SIZE"

#: The limit without :data:`SIZE_VARIABLE`: 1 GiB, about 40,000 kernels of
#: the size of add (its entry and CUDA and CPU sources, 22 KB) or 3,000 of
#: flash attention's (three sources of 115 KB).
DEFAULT_SIZE = 2**30

#: Eviction brings the cache down to this fraction of its limit, so that it
#: does not run again at the next store.
EVICT_TO = 0.8

#: Seconds during which a source that no entry names is kept.
GRACE = 60.0

_SIZE = re.compile(r"\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size_limit():
    """The cache's size limit in bytes from :data:`SIZE_VARIABLE` (``int``), or ``None`` for no limit.

    A value that is not a size is one warning, and :data:`DEFAULT_SIZE` applies.
    """

    text = os.environ.get(SIZE_VARIABLE)

    if not text:
        return DEFAULT_SIZE

    match = _SIZE.fullmatch(text)

    if match is None:
        warnings.warn(
            f"ninetoothed-ascend: ${SIZE_VARIABLE}={text!r} is not a size (bytes, "
            f"or with K, M, G or T: 512M); the cache is limited to {DEFAULT_SIZE} bytes.",
            stacklevel=3,
        )

        return DEFAULT_SIZE

    size = int(match[1]) * _UNITS[match[2].upper()]

    return size if size > 0 else None


def usage(layout):
    """Measure the cache: ``(total bytes, entries, sources, others)``.

    :param layout: the cache's :class:`Layout`.
    :return: ``entries``: ``list`` of ``(mtime, path, size, digests)``;
        ``sources``: ``dict`` digest -> ``(path, size, mtime)``; ``others``:
        ``list`` of ``(mtime, path, size)`` (memos, quarantined entries).
    """

    entries = []

    for path in _files(layout.kernels, ".json"):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue

        entries.append((info.st_mtime, path, info.st_size, _digests(path)))

    sources = {}

    for path in _files(layout.sources, ".py"):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue

        sources[path.stem] = (path, info.st_size, info.st_mtime)

    others = []

    for directory in layout.others():
        for path in _files(directory, ""):
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue

            others.append((info.st_mtime, path, info.st_size))

    total = (
        sum(size for _, _, size, _ in entries)
        + sum(size for _, size, _ in sources.values())
        + sum(size for _, _, size in others)
    )

    return total, entries, sources, others


def evict(layout, limit):
    """Bring the cache under ``limit``: least recently used first, down to :data:`EVICT_TO` of it.

    Runs in one process at a time (a lock taken without waiting; ``None``
    when another process holds it). Sources that no entry names, older than
    :data:`GRACE`, are removed first, whatever the size.

    :param layout: the cache's :class:`Layout`.
    :param limit: ``int``, bytes.
    :return: ``(bytes now, entries removed)``, or ``None`` when another
        process is evicting.
    """

    lock = filelock.FileLock(layout.locks / "evict.lock", timeout=0)

    try:
        lock.acquire()
    except (filelock.Timeout, OSError):
        return None

    try:
        # First: what others store while this runs is counted next time
        # (and maybe in this measurement too, which only evicts earlier).
        try:
            os.close(os.open(layout.ledger, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW))
        except FileNotFoundError:
            pass

        total, entries, sources, others = usage(layout)
        references = collections.Counter(
            digest for _, _, _, digests in entries for digest in digests
        )
        now = time.time()

        for digest, (path, size, mtime) in sources.items():
            if not references[digest] and now - mtime > GRACE:
                total -= _remove(path, size)

        removed = 0
        units = sorted(
            [(mtime, path, size, digests) for mtime, path, size, digests in entries]
            + [(mtime, path, size, None) for mtime, path, size in others],
            key=lambda unit: unit[0],
        )

        if total > limit:
            for _, path, size, digests in units:
                if total <= limit * EVICT_TO:
                    break

                total -= _remove(path, size)
                removed += digests is not None

                for digest in digests or ():
                    references[digest] -= 1

                    if not references[digest] and digest in sources:
                        source, source_size, _ = sources.pop(digest)
                        total -= _remove(source, source_size)

        try:
            write_atomically(
                layout.usage, json.dumps({"bytes": total}).encode(), durable=False
            )
        except OSError as error:
            logger.info(
                "ninetoothed-ascend: could not write %s: %s", layout.usage, error
            )

        return total, removed
    finally:
        lock.release()


def account(layout, written, limit):
    """Add ``written`` bytes to the cache's ledger; return whether the estimate of its size passes ``limit``.

    :param layout: the cache's :class:`Layout`.
    :param written: ``int``, bytes just stored.
    :param limit: ``int``, bytes.
    :return: ``bool``; ``True`` also where no eviction has measured the cache yet.
    :raises OSError: the ledger cannot be written.
    """

    descriptor = os.open(
        layout.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
    )

    try:
        os.write(descriptor, b"\0" * -(-written // 1024))
        since = os.fstat(descriptor).st_size * 1024
    finally:
        os.close(descriptor)

    measured = recorded_usage(layout)

    return measured is None or measured + since > limit


def recorded_usage(layout):
    """The size the last eviction measured (``int``), or ``None`` where none did or it cannot be read."""

    try:
        recorded = json.loads(layout.usage.read_text())["bytes"]
    except (OSError, ValueError, KeyError, TypeError):
        return None

    return recorded if type(recorded) is int and recorded >= 0 else None


class Layout:
    """Where a cache keeps what :func:`usage` measures.

    :param directory: ``pathlib.Path``, the cache directory.
    :param memo_kinds: the names of the directories under ``memos/``.
    """

    def __init__(self, directory, memo_kinds):
        self.directory = directory
        self.kernels = directory / "kernels"
        self.sources = directory / "sources"
        self.locks = directory / "locks"
        self.usage = directory / "usage.json"
        self.ledger = directory / "usage.ledger"
        self.memo_kinds = memo_kinds

    def others(self):
        """The directories whose every file counts as one unit of eviction."""

        return [
            *(self.directory / "memos" / kind for kind in self.memo_kinds),
            self.directory / "quarantine",
        ]


def _digests(path):
    # A damaged entry keeps no source alive.
    try:
        stored = json.loads(path.read_bytes())

        return {
            record["digest"]
            for record in stored["variants"].values()
            if isinstance(record.get("digest"), str)
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return set()


def _remove(path, size):
    try:
        path.unlink()
    except FileNotFoundError:
        return 0  # another process removed or replaced it

    return size


def _files(directory, suffix):
    try:
        with os.scandir(directory) as scanned:
            for item in scanned:
                if item.name.endswith(suffix) and not item.name.startswith("."):
                    if not item.is_dir(follow_symlinks=False):
                        yield directory / item.name
    except (FileNotFoundError, NotADirectoryError):
        return
