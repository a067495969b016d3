"""Generated variants on disk: content-addressed, atomic, shared between processes.

Layout of a cache directory::

    sources/<sha256 of the text>.py   one file per generated variant
    kernels/<kernel key>.json         which source each variant of a kernel is
    locks/<kernel key>.lock           held while one process generates a kernel

A source file is trusted only if the sha256 of its bytes equals its name; an
entry whose JSON does not parse, or whose sources are missing or do not match,
is treated as absent, so the kernel is generated again and the entry rewritten.
Every file is written to a temporary name in the same directory and renamed
into place, so a reader sees a whole file or none.
"""

import dataclasses
import hashlib
import json
import logging
import os
import pathlib
import tempfile
import warnings

import filelock
import platformdirs

logger = logging.getLogger(__name__)

#: Bump when the layout or the entry format changes.
FORMAT = 1

_ENVIRONMENT_VARIABLES = ("NINETOOTHED_ASCEND_CACHE_DIR", "NINETOOTHED_CACHE_DIR")


def default_directory():
    """Choose the cache directory.

    The first that can be created and written: ``$NINETOOTHED_ASCEND_CACHE_DIR``,
    ``$NINETOOTHED_CACHE_DIR``, the platform's user cache directory
    (``platformdirs.user_cache_dir("ninetoothed-ascend")``), and last a
    directory under the system's temporary directory, with a warning.

    :return: ``pathlib.Path``.
    """

    candidates = [os.environ.get(name) for name in _ENVIRONMENT_VARIABLES]
    candidates.append(platformdirs.user_cache_dir("ninetoothed-ascend"))

    for candidate in filter(None, candidates):
        path = pathlib.Path(candidate).expanduser()

        if _writable(path):
            return path

    fallback = pathlib.Path(tempfile.gettempdir()) / f"ninetoothed-ascend-{os.getuid()}"
    warnings.warn(
        f"ninetoothed-ascend: no writable cache directory among {candidates}; "
        f"using {fallback}. Set NINETOOTHED_ASCEND_CACHE_DIR to a writable directory.",
        stacklevel=2,
    )
    fallback.mkdir(mode=0o700, parents=True, exist_ok=True)

    return fallback


def _writable(path):
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False

    return os.access(path, os.W_OK | os.X_OK)


@dataclasses.dataclass
class Variant:
    """One generated variant of a kernel.

    :param source: the module's text, or ``None`` if it could not be built.
    :param rewrites: ``(pass name, number of rewrites)`` for each pass that
        changed the code, in pipeline order.
    :param error: why the variant could not be built, or ``None``.
    :param path: where ``source`` is stored, once stored.
    """

    source: str | None
    rewrites: tuple[tuple[str, int], ...] = ()
    error: str | None = None
    path: pathlib.Path | None = None

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
    """

    kernel_name: str
    launch_name: str
    variants: dict[str, Variant]
    counters_delta: tuple[int, int] = (0, 0)


class Cache:
    """A directory of generated variants.

    :param directory: ``pathlib.Path`` or ``str``; :func:`default_directory`
        when ``None``.
    """

    def __init__(self, directory=None):
        self.directory = pathlib.Path(
            directory if directory is not None else default_directory()
        )
        self._sources = self.directory / "sources"
        self._kernels = self.directory / "kernels"
        self._locks = self.directory / "locks"

    def lock(self, key):
        """Return a ``filelock.FileLock`` that serializes generation of ``key`` across processes."""

        self._locks.mkdir(parents=True, exist_ok=True)

        return filelock.FileLock(self._locks / f"{key}.lock")

    def load(self, key):
        """Return the :class:`Entry` stored for ``key``, or ``None``.

        ``None`` also when the entry or any of its sources is missing,
        unreadable, or fails its hash check; the reason is logged.
        """

        entry_path = self._kernels / f"{key}.json"

        try:
            stored = json.loads(entry_path.read_text(encoding="utf-8"))

            if stored["format"] != FORMAT:
                return None

            variants = {
                name: self._load_variant(record)
                for name, record in stored["variants"].items()
            }

            return Entry(
                kernel_name=stored["kernel_name"],
                launch_name=stored["launch_name"],
                variants=variants,
                counters_delta=tuple(stored["counters_delta"]),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            logger.warning(
                "ninetoothed-ascend: ignoring cache entry %s: %s", entry_path, error
            )

            return None

    def _load_variant(self, record):
        rewrites = tuple((name, count) for name, count in record["rewrites"])

        if record["digest"] is None:
            return Variant(None, rewrites, record["error"])

        path = self._sources / f"{record['digest']}.py"
        data = path.read_bytes()

        if hashlib.sha256(data).hexdigest() != record["digest"]:
            raise ValueError(f"{path} does not match its sha256")

        return Variant(data.decode("utf-8"), rewrites, record["error"], path)

    def store(self, key, entry):
        """Write ``entry`` under ``key``: each source first, then the entry that names them.

        Sets each stored variant's ``path``.

        :raises OSError: when the directory cannot be written.
        """

        self._sources.mkdir(parents=True, exist_ok=True)
        self._kernels.mkdir(parents=True, exist_ok=True)

        records = {}

        for name, variant in entry.variants.items():
            digest = None

            if variant.source is not None:
                digest = variant.digest
                variant.path = self._sources / f"{digest}.py"
                _write_atomically(variant.path, variant.source.encode("utf-8"))

            records[name] = {
                "digest": digest,
                "rewrites": list(variant.rewrites),
                "error": variant.error,
            }

        stored = {
            "format": FORMAT,
            "kernel_name": entry.kernel_name,
            "launch_name": entry.launch_name,
            "counters_delta": list(entry.counters_delta),
            "variants": records,
        }
        _write_atomically(
            self._kernels / f"{key}.json",
            json.dumps(stored, indent=1).encode("utf-8"),
        )


def _digest(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_atomically(path, data):
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")

    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())

        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
