"""Generated variants on disk: content-addressed, atomic, shared between processes.

Layout of a cache directory::

    sources/<sha256 of the text>.py   one file per generated variant
    kernels/<kernel key>.json         which source each variant of a kernel is
    locks/<kernel key>.lock           held while one process generates a kernel
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
"""

import dataclasses
import hashlib
import json
import keyword
import logging
import os
import pathlib
import re
import stat
import tempfile
import warnings

import filelock
import platformdirs

logger = logging.getLogger(__name__)

#: Bump when the layout or the entry format changes. 2: entries record their
#: key and definition. 3: an entry holds the CUDA variant and those of the
#: others built so far, and the launch facts (:class:`Entry`). 4: each
#: variant holds the facts its readers need (:attr:`Variant.facts`). An
#: entry of another format is ignored and the kernel generated again.
FORMAT = 4

#: The variants an entry can hold; ``jit.variants.VARIANTS``. The first,
#: NineToothed's own source, is in every entry: the others are built from it.
VARIANT_NAMES = ("cuda", "npu", "cpu")

_DIGEST = re.compile(r"[0-9a-f]{64}")

#: What :meth:`Cache.remember` stores, each by a stamp (sha256 hex) of what
#: it was read from (``jit.fingerprint``): ``environment``, the installed
#: versions and the package digest (JSON), by file metadata; ``function``, a
#: function's ``inspect.getsource`` text, by file metadata; ``device``, the
#: device properties Triton's driver reports (JSON), by the CUDA device's
#: identity.
MEMO_KINDS = ("environment", "function", "device")

#: The variables that name the cache directory, in order of precedence
#: (:func:`default_directory`).
ENVIRONMENT_VARIABLES = ("NINETOOTHED_ASCEND_CACHE_DIR", "NINETOOTHED_CACHE_DIR")


def default_directory():
    """Choose the cache directory.

    The first that can be created and written and is trusted (see
    :func:`trust_problem`): ``$NINETOOTHED_ASCEND_CACHE_DIR``,
    ``$NINETOOTHED_CACHE_DIR``, the platform's user cache directory
    (``platformdirs.user_cache_dir("ninetoothed-ascend")``), and last
    :func:`private_directory`, with a warning that says why each was refused.

    :return: ``pathlib.Path``.
    """

    refusals = []

    for candidate in filter(None, _candidate_directories()):
        path = pathlib.Path(candidate).expanduser()

        if not writable_directory(path):
            refusals.append(f"{path} is not writable")
            continue

        problem = trust_problem(path, parents=True)

        if problem is None:
            break

        refusals.append(problem)
    else:
        path = private_directory()

    if refusals:
        warnings.warn(
            f"ninetoothed-ascend: no usable cache directory ({'; '.join(refusals)}); "
            f"using {path}. Set NINETOOTHED_ASCEND_CACHE_DIR to a directory that "
            "only you can write.",
            stacklevel=2,
        )

    return path


def _candidate_directories():
    # Lazily: platformdirs, asked only when no variable names a usable
    # directory; the cache directory took 0.18 ms of a warm make, now 0.12
    # (docs/benchmarks.md, "Session 14").
    for name in ENVIRONMENT_VARIABLES:
        yield os.environ.get(name)

    yield platformdirs.user_cache_dir("ninetoothed-ascend")


def private_directory():
    """Return a cache directory only the current user can write, under the system's temporary directory.

    ``<tmp>/ninetoothed-ascend-<uid>`` (mode 0700), or, if someone else made
    that or it is not private, a fresh ``tempfile.mkdtemp`` directory.

    :return: ``pathlib.Path``.
    """

    path = pathlib.Path(tempfile.gettempdir()) / f"ninetoothed-ascend-{os.getuid()}"

    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        pass
    else:
        if trust_problem(path, parents=True) is None:
            return path

    return pathlib.Path(tempfile.mkdtemp(prefix="ninetoothed-ascend-"))


def writable_directory(path):
    """Create directory ``path`` if it is missing (:func:`make_directory`) and say whether we can write it.

    :param path: ``pathlib.Path``.
    :return: ``bool``; ``False`` also when it cannot be created.
    """

    try:
        make_directory(path)
    except OSError:
        return False

    return os.access(path, os.W_OK | os.X_OK)


def make_directory(path):
    """Create directory ``path`` and its missing parents, each with mode 0700 whatever the umask.

    A group-writable umask would otherwise make our own directory one that
    :func:`trust_problem` refuses.

    :param path: ``pathlib.Path``.
    :raises OSError: a directory cannot be created.
    """

    missing = []

    while not path.exists():
        missing.append(path)
        path = path.parent

    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass


def trust_problem(path, parents=False):
    """Say why ``path`` must not be trusted to hold code, or return ``None``.

    Untrusted: a symbolic link; not owned by the current user; writable by
    group or others. With ``parents``, also any directory above ``path`` that
    others can write without the sticky bit (they could rename ``path``
    away and put their own in its place).

    :param path: ``pathlib.Path`` of a file or directory that exists.
    :return: ``str`` (one sentence naming the path and the reason) or ``None``.
    :raises OSError: ``path`` cannot be examined.
    """

    info = os.lstat(path)

    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link"

    if info.st_uid != os.getuid():
        return f"{path} is owned by uid {info.st_uid}, not by you (uid {os.getuid()})"

    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{path} is writable by other users (mode {stat.filemode(info.st_mode)}); "
            f"run `chmod go-w {path}` to trust it"
        )

    if parents:
        for parent in pathlib.Path(os.path.abspath(path)).parents:
            mode = os.stat(parent).st_mode

            if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
                return (
                    f"{path} is inside {parent}, which other users can write "
                    f"(mode {stat.filemode(mode)}, no sticky bit)"
                )

    return None


class UntrustedFileError(ValueError):
    """A cache file or directory fails :func:`trust_problem`; it is not read."""


@dataclasses.dataclass
class Variant:
    """One generated variant of a kernel.

    :param source: the module's text, or ``None`` if it could not be built.
    :param rewrites: ``(pass name, number of rewrites)`` for each pass that
        changed the code, in pipeline order.
    :param error: why the variant could not be built, or ``None``.
    :param path: where ``source`` is stored, once stored.
    :param facts: what the variant's readers need of the facts its passes
        published (``compiler.facts.stored``: kernel name -> ``dict`` with
        ``layout_flags`` and ``transposed``, ``list`` of parameter names,
        for the UB model on the variant's source); ``{}`` for none.
    """

    source: str | None
    rewrites: tuple[tuple[str, int], ...] = ()
    error: str | None = None
    path: pathlib.Path | None = None
    facts: dict = dataclasses.field(default_factory=dict)

    @property
    def digest(self):
        return _digest(self.source)


@dataclasses.dataclass
class Entry:
    """Everything a handle needs, as stored for one kernel key.

    :param kernel_name: name of the ``triton.jit`` kernel in each source.
    :param launch_name: name of the launch function in each source.
    :param variants: ``dict`` from variant name (``"cuda"``, ``"npu"``,
        ``"cpu"``) to :class:`Variant`.
    :param counters_delta: how far generation advanced NineToothed's naming
        counters, replayed on a hit.
    :param definition: the kernel's definition digest (sha256 hex), or
        ``None`` where the entry is only looked up by key.
    :param launch: facts about the launch function, read from NineToothed's
        source once, when the kernel was generated, so that a handle made
        from the entry reads no source: ``dict`` with ``parameters`` (its
        parameter names, ``list`` of ``str``, or ``None`` where it takes
        ``*args``/``**kwargs``), ``tensors`` (those that are tensors) and
        ``requirements`` (what it requires of its arguments, the fields of
        ``compiler.launch.Requirements`` as lists, or ``None``), the
        compiler's analysis (``compiler.launch.launch_facts``); ``None``
        when unknown (then the handle dispatches generically and checks
        nothing).
    """

    kernel_name: str
    launch_name: str
    variants: dict[str, Variant]
    counters_delta: tuple[int, int] = (0, 0)
    definition: str | None = None
    launch: dict | None = None

    def digests(self):
        """Return the sha256 of each variant built so far (``None`` for one that failed to build).

        :return: ``dict`` from variant name to ``str`` or ``None``.
        """

        return {
            name: variant.digest if variant.source is not None else None
            for name, variant in self.variants.items()
        }


class EntryError(ValueError):
    """A stored entry is malformed or belongs to another key; the message says which field and why."""


def check_entry(stored, key):
    """Check that ``stored`` (a parsed entry file) is a well-formed entry of ``key``.

    Every field is checked for its type, so that a malformed entry is refused
    here rather than failing later inside a handle: ``format`` is
    :data:`FORMAT`, ``key`` equals ``key`` (an entry moved or copied under
    another key's name is refused), ``definition`` is a sha256 hex digest,
    ``kernel_name`` and ``launch_name`` are identifiers, ``counters_delta``
    two non-negative ``int``, ``variants`` the first of
    :data:`VARIANT_NAMES` and any of the others, each with a ``digest``
    (sha256 hex, or ``None`` with an ``error`` string), ``rewrites``
    (``[pass name, count]`` pairs) and ``facts`` as :class:`Variant`
    describes them (names that are identifiers), and ``launch`` as :class:`Entry`
    describes it, its parameter names identifiers and no keywords (a handle
    compiles a ``__call__`` with them).

    :param stored: what ``json.loads`` returned for the entry file.
    :param key: ``str``, the key the entry is stored under.
    :raises EntryError: the first field that is wrong.
    """

    def require(condition, message):
        if not condition:
            raise EntryError(message)

    require(isinstance(stored, dict), "not a JSON object")
    require(
        stored.get("format") == FORMAT,
        f"format {stored.get('format')!r}, this version reads {FORMAT}",
    )
    require(
        stored.get("key") == key,
        f"it records key {str(stored.get('key'))[:64]!r}: it belongs to another kernel",
    )
    require(
        isinstance(stored.get("definition"), str)
        and _DIGEST.fullmatch(stored["definition"]),
        "definition is not a sha256 digest",
    )

    for field in ("kernel_name", "launch_name"):
        require(
            isinstance(stored.get(field), str) and stored[field].isidentifier(),
            f"{field} is not an identifier",
        )

    delta = stored.get("counters_delta")
    require(
        isinstance(delta, list)
        and len(delta) == 2
        and all(type(n) is int and n >= 0 for n in delta),
        "counters_delta is not two non-negative integers",
    )
    variants = stored.get("variants")
    require(
        isinstance(variants, dict)
        and VARIANT_NAMES[0] in variants
        and set(variants) <= set(VARIANT_NAMES),
        f"variants are not exactly {VARIANT_NAMES[0]} and any of "
        f"{', '.join(VARIANT_NAMES[1:])}",
    )
    require(
        isinstance(variants[VARIANT_NAMES[0]], dict)
        and variants[VARIANT_NAMES[0]].get("digest") is not None,
        f"variant {VARIANT_NAMES[0]}, which the others are built from, has no source",
    )

    for name, record in variants.items():
        require(isinstance(record, dict), f"variant {name} is not a JSON object")
        digest, error = record.get("digest"), record.get("error")
        require(
            (isinstance(digest, str) and _DIGEST.fullmatch(digest) and error is None)
            or (digest is None and isinstance(error, str)),
            f"variant {name} has neither a sha256 digest nor an error",
        )
        rewrites = record.get("rewrites")
        require(
            isinstance(rewrites, list)
            and all(
                isinstance(r, list)
                and len(r) == 2
                and isinstance(r[0], str)
                and type(r[1]) is int
                for r in rewrites
            ),
            f"variant {name} has malformed rewrites",
        )
        require(
            _facts_are_names(record.get("facts")), f"variant {name} has malformed facts"
        )

    require("launch" in stored, "launch is missing")
    problem = _launch_problem(stored["launch"])
    require(problem is None, f"launch {problem}")


def _launch_problem(launch):
    if launch is None:
        return None

    if not isinstance(launch, dict):
        return "is not a JSON object"

    parameters, tensors = launch.get("parameters"), launch.get("tensors")

    if parameters is not None and not (
        isinstance(parameters, list) and all(map(_is_name, parameters))
    ):
        return "parameters are not identifiers"

    if not isinstance(tensors, list) or not set(map(str, tensors)) <= set(
        parameters or ()
    ):
        return "tensors are not among its parameters"

    requirements = launch.get("requirements")

    if requirements is None:
        return None

    if not (
        isinstance(requirements, dict)
        and isinstance(requirements.get("parameters"), list)
        and all(map(_is_name, requirements["parameters"]))
        and _int_pairs(requirements.get("ndims"))
        and isinstance(requirements.get("equal_sizes"), list)
        and all(map(_int_pairs, requirements["equal_sizes"]))
    ):
        return "requirements are malformed"

    return None


def _facts_are_names(facts):
    # ``Variant.facts``: kernel name -> ``{"layout_flags": [...], "transposed": [...]}``.
    return isinstance(facts, dict) and all(
        _is_name(kernel)
        and isinstance(kept, dict)
        and set(kept) == {"layout_flags", "transposed"}
        and all(
            isinstance(names, list) and all(map(_is_name, names))
            for names in kept.values()
        )
        for kernel, kept in facts.items()
    )


def _is_name(name):
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _int_pairs(pairs):
    return isinstance(pairs, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair)
        for pair in pairs
    )


class Cache:
    """A directory of generated variants.

    :param directory: ``pathlib.Path`` or ``str``; :func:`default_directory`
        when ``None``.
    """

    def __init__(self, directory=None):
        if directory is None:
            directory = default_directory()
        else:
            directory = pathlib.Path(directory)

            if writable_directory(directory):
                problem = trust_problem(directory, parents=True)

                if problem is not None:
                    fallback = private_directory()
                    warnings.warn(
                        f"ninetoothed-ascend: not using cache directory {problem}; "
                        f"using {fallback}.",
                        stacklevel=2,
                    )
                    directory = fallback

        self.directory = directory
        self._sources = self.directory / "sources"
        self._kernels = self.directory / "kernels"
        self._locks = self.directory / "locks"
        self._memos = self.directory / "memos"

    def lock(self, key):
        """Return a ``filelock.FileLock`` that serializes generation of ``key`` across processes."""

        make_directory(self._locks)

        return filelock.FileLock(self._locks / f"{key}.lock")

    def load(self, key, definition=None, read=VARIANT_NAMES):
        """Return the :class:`Entry` stored for ``key``, or ``None``.

        ``None`` also when the entry or any source it reads is missing,
        unreadable, malformed (:func:`check_entry`), records another key (or
        another ``definition``, when given), or fails its hash check; the
        reason is logged.

        :param key: ``str``, the cache key.
        :param definition: ``str``, the definition digest the entry must
            record, or ``None`` not to check it.
        :param read: the names of the variants whose sources are read and
            checked (default: all); the entry holds those of them it stores.
            A ``make`` that finds its kernel reads what a cold one builds,
            NineToothed's source and the variant the first call most likely
            needs, and the handle reads another where it is first needed
            (``Handle.build``): flash attention's three sources are 115 KB
            each, and its warm cache load took 0.73 and 0.87 ms, now 0.55 and
            0.57 (docs/benchmarks.md, "Session 18").
        """

        entry_path = self._kernels / f"{key}.json"

        try:
            self._check_trusted(entry_path)
            stored = json.loads(entry_path.read_text(encoding="utf-8"))
            check_entry(stored, key)

            if definition is not None and stored["definition"] != definition:
                raise EntryError("it records another definition digest")

            variants = {
                name: self._load_variant(record)
                for name, record in stored["variants"].items()
                if name in read
            }

            return Entry(
                kernel_name=stored["kernel_name"],
                launch_name=stored["launch_name"],
                variants=variants,
                counters_delta=tuple(stored["counters_delta"]),
                definition=stored["definition"],
                launch=stored["launch"],
            )
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
            logger.warning(
                "ninetoothed-ascend: ignoring cache entry %s (generating it again): %s",
                entry_path,
                error,
            )

            return None

    def _check_trusted(self, path):
        for checked in (self.directory, path.parent, path):
            problem = trust_problem(checked)

            if problem is not None:
                raise UntrustedFileError(problem)

    def _load_variant(self, record):
        rewrites = tuple((name, count) for name, count in record["rewrites"])

        if record["digest"] is None:
            return Variant(None, rewrites, record["error"], facts=record["facts"])

        path = self._sources / f"{record['digest']}.py"
        self._check_trusted(path)
        data = path.read_bytes()

        if hashlib.sha256(data).hexdigest() != record["digest"]:
            raise ValueError(f"{path} does not match its sha256")

        return Variant(
            data.decode("utf-8"), rewrites, record["error"], path, record["facts"]
        )

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

        for name in VARIANT_NAMES:
            variant = entry.variants.get(name)

            if variant is None:
                continue

            digest = None

            if variant.source is not None:
                digest = variant.digest
                path = self.source_path(digest)

                if variant.path != path:
                    write_atomically(
                        path, variant.source.encode("utf-8"), durable=False
                    )
                    variant.path = path

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
        }
        write_atomically(
            self._kernels / f"{key}.json",
            json.dumps(stored, indent=1).encode("utf-8"),
            durable=False,
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
        if kind not in MEMO_KINDS or not _DIGEST.fullmatch(stamp):
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
            ):
                path.unlink(missing_ok=True)

        return removed, sources


def _files(directory, pattern):
    # A name that vanished meanwhile, or a directory, is not one of our files.
    for path in directory.glob(pattern):
        try:
            if not stat.S_ISDIR(path.lstat().st_mode):
                yield path
        except FileNotFoundError:
            continue


def _digest(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_atomically(path, data, durable=True):
    """Write ``data`` to ``path`` whole or not at all: a temporary file in the same directory, renamed into place.

    :param path: ``pathlib.Path``; its directory must exist.
    :param data: ``bytes``.
    :param durable: ``True`` to ``fsync`` the file before the rename, so that
        a crash cannot leave ``path`` empty. The cache's own files pass
        ``False``: every load checks them (hash, entry format), and a file
        damaged by a crash is regenerated. Measured on the loaded, shared
        2-core machine: the four ``fsync`` of a cold ``make`` of add with its
        CPU variant took 0.12 s of its 1.7 s (cProfile).
    :raises OSError: the file cannot be written; no temporary file is left.
    """

    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")

    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)

            if durable:
                file.flush()
                os.fsync(file.fileno())

        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
