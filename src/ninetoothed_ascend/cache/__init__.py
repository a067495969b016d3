"""Generated variants on disk: content-addressed, atomic, shared between processes.

Layout of a cache directory::

    sources/<sha256 of the text>.py   one file per generated variant
    kernels/<kernel key>.json         which source each variant of a kernel is
    locks/<kernel key>.lock           held while one process generates a kernel
    quarantine/<kernel key>.json      an entry that failed at load or at its
                                      first call, moved aside (:meth:`Cache.quarantine`)
    environments/<digest>.json        each environment that used the cache, and
                                      the installation it belongs to; its
                                      modification time is its last use
                                      (:meth:`Cache.note_environment`)
    usage.json, usage.ledger          the size the last eviction measured, and
                                      what was stored since
                                      (:mod:`~ninetoothed_ascend.cache.eviction`)
    memos/<kind>/<stamp>              what ``jit.fingerprint`` derives from
                                      files or the driver (:data:`MEMO_KINDS`),
                                      by a stamp of what it was read from

A source file is trusted only if the sha256 of its bytes equals its name; an
entry whose JSON does not parse, or whose sources read with it are missing or
do not match, is treated as absent, so the kernel is generated again and the
entry rewritten; a variant read later (``Handle.build``) that is missing or
does not match is built again from NineToothed's source.
Every file is written to a temporary name in the same directory and renamed
into place, so a reader sees a whole file or none.

Trust: source files are Python that is executed. A directory is used only if
it and its subdirectories are owned by the current user and writable by no one
else, and no directory above it lets another user rename it (writable by
others without the sticky bit); otherwise the refusal is explained in a
warning and a private directory is used instead. Each file is checked the
same way (and must not be a symbolic link) before it is read. Threat model:
docs/cache.md.

Bounded: at most ``$NINETOOTHED_ASCEND_CACHE_SIZE`` bytes (1 GiB by
default), the least recently used entries evicted first
(:mod:`~ninetoothed_ascend.cache.eviction`); :meth:`Cache.stale_keys` names
the entries that no installation using the cache can reach any more.
"""

import contextlib
import hashlib
import json
import logging
import os
import pathlib
import stat
import time
import warnings

import filelock

from ninetoothed_ascend.cache import environments, eviction
from ninetoothed_ascend.cache.directory import (
    ENVIRONMENT_VARIABLES,
    UntrustedFileError,
    default_directory,
    directory_problem,
    make_directory,
    private_directory,
    system_directory,
    trust_problem,
    writable_directory,
    write_atomically,
)
from ninetoothed_ascend.cache.entry import (
    DIGEST,
    FORMAT,
    ORIGINS,
    VARIANT_NAMES,
    Entry,
    EntryError,
    Variant,
    check_entry,
)
from ninetoothed_ascend.cache.eviction import SIZE_VARIABLE

logger = logging.getLogger(__name__)

__all__ = [
    "ENVIRONMENT_VARIABLES",
    "FORMAT",
    "MEMO_KINDS",
    "ORIGINS",
    "VARIANT_NAMES",
    "Cache",
    "Entry",
    "EntryError",
    "SIZE_VARIABLE",
    "UntrustedFileError",
    "Variant",
    "check_entry",
    "default_directory",
    "directory_problem",
    "make_directory",
    "private_directory",
    "system_directory",
    "trust_problem",
    "writable_directory",
    "write_atomically",
]


#: What :meth:`Cache.remember` stores, each by a stamp (sha256 hex) of what
#: it was read from (``jit.fingerprint``): ``environment``, the installed
#: versions and the package digest (JSON), by file metadata; ``function``, a
#: function's ``inspect.getsource`` text, by file metadata; ``device``, the
#: device properties Triton's driver reports (JSON), by the CUDA device's
#: identity; ``refusal``, a config of an NPU variant BiShengIR refused for
#: the Unified Buffer (JSON: the bytes required and available), by what
#: decides its compile (:mod:`ninetoothed_ascend.runtime.refused_configs`);
#: ``stages``, the Linalg text triton-ascend's ``ttir`` and ``ttadapter``
#: stages made of a kernel and the seconds they took (JSON), by Triton's own
#: compile key (:func:`ninetoothed_ascend.check.compile_check.compile_stages`);
#: ``bishengir``, the outcome of a ``bishengir-compile`` (JSON), by the
#: Linalg text, the flags, the SoC and the compiler's version
#: (:class:`ninetoothed_ascend.check.compile_check.BiShengIRStage`).
MEMO_KINDS = ("environment", "function", "device", "refusal", "stages", "bishengir")

#: Seconds within which a use of an entry does not move its modification
#: time again: least-recently-used eviction needs no finer order.
TOUCH_INTERVAL = 600.0


class Cache:
    """A directory of generated variants.

    :param directory: ``pathlib.Path`` or ``str``; :func:`default_directory`
        when ``None``.
    """

    def __init__(self, directory=None):
        if directory is None:
            directory = default_directory()
        else:
            problem = None

            # The empty path would be the working directory; a system
            # directory is never a cache (root could write there).
            if not str(directory) or system_directory(directory):
                problem = directory_problem(directory, create=False)
            elif writable_directory(pathlib.Path(directory)):
                problem = trust_problem(pathlib.Path(directory), parents=True)

            if problem is not None:
                fallback = private_directory()
                warnings.warn(
                    f"ninetoothed-ascend: not using cache directory {problem}; "
                    f"using {fallback}.",
                    stacklevel=2,
                )
                directory = fallback

            directory = pathlib.Path(directory)

        self.directory = directory
        self._sources = self.directory / "sources"
        self._kernels = self.directory / "kernels"
        self._locks = self.directory / "locks"
        self._memos = self.directory / "memos"
        self._quarantine = self.directory / "quarantine"
        self._environments = self.directory / "environments"
        self._layout = eviction.Layout(self.directory, MEMO_KINDS)
        # When each entry loaded was last used (its modification time).
        self._modified = {}

    def lock(self, key):
        """Return a ``filelock.FileLock`` that serializes generation of ``key`` across processes."""

        make_directory(self._locks)

        return filelock.FileLock(self._locks / f"{key}.lock")

    @contextlib.contextmanager
    def locked(self, key, raise_errors=False):
        """Hold :meth:`lock` of ``key`` for a ``with`` block, which gets whether it is held.

        A lock that cannot be taken (its file is a directory or a symbolic
        link loop, its path too long, its directory not a directory) is
        one warning, and the block runs without it: the caller then keeps
        what it builds in memory and stores nothing.

        :param key: ``str``, the cache key.
        :param raise_errors: ``True`` to raise instead of warning.
        :return: context manager yielding ``bool``.
        :raises OSError: with ``raise_errors``, the lock cannot be taken.
        """

        path = self._locks / f"{key}.lock"

        try:
            lock = self.lock(key)
            lock.acquire()
        except OSError as error:
            if raise_errors:
                raise

            warnings.warn(
                f"ninetoothed-ascend: cannot take the lock {path} "
                f"({error.strerror or error}); kernel {key[:12]} runs from "
                "memory and is built again in the next process.",
                stacklevel=4,
            )

            yield False

            return

        try:
            yield True
        finally:
            lock.release()

    def load(self, key, definition=None, read=VARIANT_NAMES, quarantine=False):
        """Return the :class:`Entry` stored for ``key``, or ``None``.

        ``None`` also when the entry or any source it reads is missing,
        unreadable, malformed (:func:`check_entry`), records another key (or
        another ``definition``, when given), fails its hash check, or holds a
        source that defines no launch function of the entry's name; the
        reason is logged, or with ``quarantine`` the entry is moved to
        ``quarantine/`` with a warning (:meth:`quarantine`), so that it is
        built again once. An entry of another :data:`FORMAT` is only logged.

        :param key: ``str``, the cache key.
        :param definition: ``str``, the definition digest the entry must
            record, or ``None`` not to check it.
        :param read: the names of the variants whose sources are read and
            checked (default: all); the entry holds those of them it stores.
        :param quarantine: ``True`` to move a faulty entry aside (``make``
            and the handle do); the commands that only read do not.
            A ``make`` that finds its kernel reads what a cold one builds,
            NineToothed's source and the variant the first call most likely
            needs, and the handle reads another where it is first needed
            (``Handle.build``): a variant's source can be over 100 KB.
        """

        entry_path = self._kernels / f"{key}.json"
        stored = None

        try:
            self._check_trusted(entry_path)

            with open(entry_path, "rb") as file:
                self._modified[key] = os.fstat(file.fileno()).st_mtime
                stored = json.loads(file.read())

            check_entry(stored, key)

            if definition is not None and stored["definition"] != definition:
                raise EntryError("it records another definition digest")

            variants = {
                name: self._load_variant(record, stored["launch_name"])
                for name, record in stored["variants"].items()
                if name in read
            }

            return Entry.from_stored(stored, variants)
        except FileNotFoundError:
            return None
        except UntrustedFileError as error:
            warnings.warn(
                f"ninetoothed-ascend: not executing cached code: {error}; "
                "what it holds is built again and stored anew.",
                stacklevel=3,
            )

            return None
        except (OSError, ValueError, RecursionError) as error:
            stale = isinstance(stored, dict) and stored.get("format") != FORMAT

            if quarantine and not stale and not isinstance(error, OSError):
                self.quarantine(key, error)
            else:
                logger.warning(
                    "ninetoothed-ascend: ignoring cache entry %s (generating it again): %s",
                    entry_path,
                    error,
                )

            return None

    def quarantine(self, key, reason):
        """Move the entry of ``key`` to ``quarantine/<key>.json``, with a warning naming ``reason``.

        The entry failed at load or at its first call for a reason of its
        own (malformed requirements, a source that defines no launch
        function, a source that fails when executed): it is kept for
        inspection, and the kernel is built again once, in its place.
        ``clear`` removes quarantined entries with the others. A move that
        fails is logged; the caller builds the kernel again either way.

        :param key: ``str``, the cache key.
        :param reason: the exception (or ``str``) that says what failed.
        """

        entry_path = self._kernels / f"{key}.json"
        target = self._quarantine / f"{key}.json"

        try:
            make_directory(self._quarantine)
            os.replace(entry_path, target)
        except FileNotFoundError:
            return  # another process moved it first, or it was removed
        except OSError as error:
            logger.warning(
                "ninetoothed-ascend: could not quarantine %s: %s", entry_path, error
            )

        warnings.warn(
            f"ninetoothed-ascend: quarantined the cache entry of kernel {key[:12]} "
            f"to {target} ({_one_line(reason)}); it is built again.",
            stacklevel=4,
        )

    def _check_trusted(self, path):
        for checked in (self.directory, path.parent, path):
            problem = trust_problem(checked)

            if problem is not None:
                raise UntrustedFileError(problem)

    def _load_variant(self, record, launch_name):
        rewrites = tuple((name, count) for name, count in record["rewrites"])

        if record["digest"] is None:
            return Variant(None, rewrites, record["error"], facts=record["facts"])

        path = self._sources / f"{record['digest']}.py"
        self._check_trusted(path)
        data = path.read_bytes()

        if hashlib.sha256(data).hexdigest() != record["digest"]:
            raise ValueError(f"{path} does not match its sha256")

        source = data.decode("utf-8")

        # A handle takes the launch function by this name from every variant.
        if f"\ndef {launch_name}(" not in source:
            raise EntryError(f"{path} defines no launch function {launch_name}")

        return Variant(source, rewrites, record["error"], path, record["facts"])

    def store(self, key, entry):
        """Write ``entry`` under ``key``: each source first, then the entry that names them.

        A source already stored in this cache (its ``path`` is here) is not
        written again: an entry is stored again each time a variant is added
        to it. Sets each stored variant's ``path``.

        :param entry: :class:`Entry` with its ``definition``.
        :raises OSError: when the directory cannot be written.
        """

        make_directory(self._sources)
        make_directory(self._kernels)

        records = {}
        written = 0

        for name in VARIANT_NAMES:
            variant = entry.variants.get(name)

            if variant is None:
                continue

            digest = None

            if variant.source is not None:
                digest = variant.digest
                path = self.source_path(digest)

                # Written again where it is gone (evicted meanwhile).
                if variant.path != path or not path.exists():
                    data = variant.source.encode("utf-8")
                    write_atomically(path, data, durable=False)
                    variant.path = path
                    written += len(data)

            records[name] = {
                "digest": digest,
                "rewrites": list(variant.rewrites),
                "error": variant.error,
                "facts": variant.facts,
            }

        stored = {
            "format": FORMAT,
            "key": key,
            "definition": entry.definition,
            "kernel_name": entry.kernel_name,
            "launch_name": entry.launch_name,
            "counters_delta": list(entry.counters_delta),
            "variants": records,
            "launch": entry.launch,
            "verified": entry.verified,
            "environment": entry.environment,
            "origin": entry.origin,
        }
        data = json.dumps(stored, indent=1).encode("utf-8")
        write_atomically(self._kernels / f"{key}.json", data, durable=False)
        self._account(written + len(data))

    def _account(self, written):
        # Evict when the estimate of the cache's size passes the limit.
        limit = eviction.size_limit()

        if limit is None:
            return

        try:
            over = eviction.account(self._layout, written, limit)
        except OSError as error:
            logger.info(
                "ninetoothed-ascend: could not account %s: %s", self.directory, error
            )
            over = False

        if over:
            self.evict(limit)

    def evict(self, limit=None):
        """Bring the cache under ``limit`` bytes, least recently used entries first (:func:`~ninetoothed_ascend.cache.eviction.evict`).

        :param limit: ``int``, or ``None`` for :func:`~ninetoothed_ascend.cache.eviction.size_limit`.
        :return: ``(bytes now, entries removed)``, or ``None`` when there is
            no limit or another process is evicting.
        """

        limit = eviction.size_limit() if limit is None else limit

        if limit is None:
            return None

        try:
            return eviction.evict(self._layout, limit)
        except OSError as error:
            logger.warning(
                "ninetoothed-ascend: could not evict from %s: %s", self.directory, error
            )

            return None

    def size(self):
        """The bytes the cache's files take (``int``), measured as eviction measures them."""

        return eviction.usage(self._layout)[0]

    def touch(self, key):
        """Record that the entry of ``key`` was used now (its modification time), for least-recently-used eviction.

        A ``make`` that finds its kernel calls it after :meth:`load`; the
        ``utime`` (15 us on this project's loaded machine, ext4) is skipped
        where the entry was used less than :data:`TOUCH_INTERVAL` seconds
        ago. A failure is ignored.
        """

        if time.time() - self._modified.get(key, 0.0) < TOUCH_INTERVAL:
            return

        try:
            os.utime(self._kernels / f"{key}.json")
        except OSError:
            pass

    def note_environment(self, digest, installation):
        """Record that ``installation`` uses the cache with the environment of ``digest`` now (:func:`~ninetoothed_ascend.cache.environments.note`)."""

        environments.note(self._environments, digest, installation)

    def current_environments(self):
        """The digests of the environments each installation that used the cache used last (:func:`~ninetoothed_ascend.cache.environments.current`)."""

        return environments.current(self._environments)

    def stale_keys(self):
        """The keys of the entries no installation using the cache can reach any more.

        An entry is reached only in the environment it was made in (the
        key covers the versions of Python, NineToothed, Triton, this
        package's sources and the NPU target); an installation reaches only
        the environment it used last (:meth:`note_environment`). So stale:
        an entry whose environment no installation used last (made before a
        package edit or an upgrade), and one that fails its checks. An entry
        of an installation that has not used the cache since stays until
        that installation moves on.

        :return: ``list`` of ``str``.
        """

        current = self.current_environments()
        stale = []

        for key in self.keys():
            try:
                stored = json.loads(self.entry_path(key).read_text(encoding="utf-8"))
                check_entry(stored, key)
            except (OSError, ValueError, RecursionError):
                stale.append(key)
                continue

            if stored["environment"] not in current:
                stale.append(key)

        return stale

    def mark_verified(self, key, digest):
        """Record in the entry of ``key`` that its NineToothed source, of sha256 ``digest``, is what its definition generates.

        Called under the kernel's lock by the ``make`` that compared them. An
        entry that no longer records that source (replaced meanwhile) is left
        as it is.

        :raises OSError: the entry cannot be read or written.
        """

        path = self._kernels / f"{key}.json"
        self._check_trusted(path)
        stored = json.loads(path.read_text(encoding="utf-8"))

        if stored.get("variants", {}).get(VARIANT_NAMES[0], {}).get("digest") == digest:
            stored["verified"] = True
            write_atomically(
                path, json.dumps(stored, indent=1).encode("utf-8"), durable=False
            )

    def memo(self, kind, stamp):
        """Return the text :meth:`remember` stored for ``kind`` under ``stamp``, or ``None``.

        ``None`` also when the file is missing, untrusted or not UTF-8 (the
        caller computes the text again then; the reason is logged).

        :param kind: ``str``, one of :data:`MEMO_KINDS`.
        :param stamp: ``str``, sha256 hex of what the text is derived from.
        :return: ``str`` or ``None``.
        """

        path = self._memo_path(kind, stamp)

        try:
            self._check_trusted(path.parent)  # and ``memos/`` above it
            self._check_trusted(path)

            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            logger.warning(
                "ninetoothed-ascend: ignoring %s (computing it again): %s", path, error
            )

            return None

    def remember(self, kind, stamp, text):
        """Store ``text`` for ``kind`` under ``stamp``, for :meth:`memo` in later processes.

        A file that cannot be written is skipped (logged): a later process
        computes the text again.

        :param kind: ``str``, one of :data:`MEMO_KINDS`.
        :param stamp: ``str``, sha256 hex.
        :param text: ``str``.
        """

        path = self._memo_path(kind, stamp)

        try:
            make_directory(path.parent)
            write_atomically(path, text.encode("utf-8"), durable=False)
        except OSError as error:
            logger.warning("ninetoothed-ascend: could not store %s: %s", path, error)

    def _memo_path(self, kind, stamp):
        if kind not in MEMO_KINDS or not DIGEST.fullmatch(stamp):
            raise ValueError(f"no memo {kind!r} {stamp!r}")

        return self._memos / kind / stamp

    def keys(self):
        """Return the keys of the stored entries (``list`` of ``str``, sorted), valid or not.

        Only files (or symbolic links, which :meth:`load` refuses) count: a
        directory named like an entry is not ours and is left alone.
        """

        return sorted(path.stem for path in _files(self._kernels, "*.json"))

    def find(self, prefix):
        """Return the one stored key that starts with ``prefix``.

        :raises KeyError: no key or several keys start with it (the message says which).
        """

        matches = [key for key in self.keys() if key.startswith(prefix.lower())]

        if len(matches) != 1:
            raise KeyError(
                f"no cached kernel has a key starting with {prefix!r} in {self.directory}"
                if not matches
                else f"{len(matches)} cached kernels have keys starting with {prefix!r}; "
                "give more digits"
            )

        return matches[0]

    def entry_path(self, key):
        """Return where the entry of ``key`` is stored (``pathlib.Path``)."""

        return self._kernels / f"{key}.json"

    def source_path(self, digest):
        """Return where the source whose sha256 is ``digest`` is stored (``pathlib.Path``)."""

        return self._sources / f"{digest}.py"

    def remove(self, keys=None):
        """Remove the entries of ``keys`` (all when ``None``) and the sources no remaining entry names.

        Only this cache's own layout is touched, never other files in the
        directory; removing all also removes the locks and the memos.

        :return: ``(entries removed, sources removed)``.
        """

        removed = 0

        for key in self.keys() if keys is None else keys:
            self.entry_path(key).unlink(missing_ok=True)
            removed += 1

        kept = set()

        for key in self.keys():
            try:
                stored = json.loads(self.entry_path(key).read_text(encoding="utf-8"))
                kept |= {r["digest"] for r in stored["variants"].values()}
            except (
                OSError,
                ValueError,
                KeyError,
                TypeError,
                AttributeError,
                RecursionError,
            ):
                continue  # a damaged entry keeps no source alive

        sources = 0

        for path in _files(self._sources, "*.py"):
            if path.stem not in kept:
                path.unlink(missing_ok=True)
                sources += 1

        if keys is None:
            for path in (
                *_files(self._locks, "*.lock"),
                *(
                    path
                    for kind in MEMO_KINDS
                    for path in _files(self._memos / kind, "*")
                ),
                *_files(self._quarantine, "*.json"),
                *_files(self._environments, "*.json"),
                *_files(self.directory, "usage.json"),
                *_files(self.directory, "usage.ledger"),
            ):
                path.unlink(missing_ok=True)
        else:
            environments.forget_others(self._environments)

        return removed, sources


def _one_line(reason):
    lines = str(reason).strip().splitlines()

    return lines[0] if lines else type(reason).__name__


def _files(directory, pattern):
    # A name that vanished meanwhile, or a directory, is not one of our files.
    for path in directory.glob(pattern):
        try:
            if not stat.S_ISDIR(path.lstat().st_mode):
                yield path
        except FileNotFoundError:
            continue
