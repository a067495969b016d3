"""The environment a cache key holds: what generated code depends on besides the kernel.

The versions of Python, NineToothed and the distribution that owns ``import
triton``, a digest of this package's sources, and the device properties
NineToothed's generator reads; each read once per process and, across
processes, kept in the cache's memos under a stamp of the files it is read
from (:class:`Memos`). :mod:`ninetoothed_ascend.jit.fingerprint` combines
them with a kernel's definition into its key.
"""

import functools
import hashlib
import importlib.metadata
import json
import os
import pathlib
import sys

import ninetoothed
import torch
import triton

from ninetoothed_ascend import host
from ninetoothed_ascend.jit import ninetoothed_adapter


def installation():
    """Return what tells installations of this package apart: the Python prefix and where its sources are (``str``).

    An installation moves from one :func:`environment_digest` to the next
    when the package is edited or upgraded; two virtual environments, or two
    checkouts of the package, are two installations.
    """

    return f"{sys.prefix}{os.pathsep}{_PACKAGE_ROOT}"


class Memos:
    """What this module derives from files, read from a cache, and kept to be stored in it by :meth:`store`.

    The caller stores them when the kernel was found in the cache: a
    ``make`` that generates its kernel pays no writes for them (each is a
    file, about 0.2 ms, measured with ``Cache.remember`` here), and the next
    process, which finds it, stores them for those after it.

    :param cache: :class:`~ninetoothed_ascend.cache.Cache`.
    """

    def __init__(self, cache):
        self.cache = cache
        self._kept = {}

    def read(self, kind, stamp):
        """Return the text stored for ``kind`` under ``stamp`` (``Cache.memo``), or ``None``."""

        return self.cache.memo(kind, stamp)

    def keep(self, kind, stamp, text):
        """Keep ``text`` for ``kind`` under ``stamp`` until :meth:`store`."""

        self._kept[(kind, stamp)] = text

    def store(self):
        """Store what was kept (``Cache.remember``; a file that cannot be written is skipped)."""

        for (kind, stamp), text in self._kept.items():
            self.cache.remember(kind, stamp, text)

        self._kept.clear()


#: :func:`device_properties` in this process: device stamp -> properties.
_device_properties = {}


def device_properties(memos=None):
    """Return the device properties NineToothed's generator sees for the current device, remembered per CUDA device.

    The values are those of
    :func:`~ninetoothed_ascend.jit.ninetoothed_adapter.device_properties`
    (Triton's driver). On a CUDA device they are also kept in ``memos``,
    under a stamp of the device as torch describes it (name, compute
    capability, UUID, memory) and the Triton version, and read from there
    by later processes: a query of Triton's driver costs several times
    torch's description of the device, which is read once per process
    (measured on an H100 with ``bench/device_properties.py`` as of commit
    9910840). Without a CUDA device
    (a CPU machine, an Ascend host) the driver is asked once per process.

    :param memos: :class:`Memos` of the cache, or ``None``.
    :return: ``dict`` with the keys of
        :data:`~ninetoothed_ascend.jit.ninetoothed_adapter.DEFAULT_DEVICE_PROPERTIES`
        and ``int`` values.
    """

    stamp = _cuda_device_stamp()

    if stamp is None:
        return ninetoothed_adapter.device_properties()

    properties = _device_properties.get(stamp)

    if properties is None:
        stored = memos.read("device", stamp) if memos is not None else None
        properties = _stored_json(
            stored, ninetoothed_adapter.DEFAULT_DEVICE_PROPERTIES, int
        )

        if properties is None:
            properties = ninetoothed_adapter.device_properties()

            if memos is not None:
                memos.keep("device", stamp, json.dumps(properties))

        _device_properties[stamp] = properties

    return dict(properties)


def _cuda_device_stamp():
    # ``None`` without a CUDA device. torch keeps each device's properties
    # after the first request, so this is cheap after it.
    if not torch.cuda.is_available():
        return None

    device = torch.cuda.get_device_properties(torch.cuda.current_device())
    identity = (
        triton.__version__,
        device.name,
        device.major,
        device.minor,
        str(getattr(device, "uuid", "")),
        device.total_memory,
    )

    return hashlib.sha256(repr(identity).encode("utf-8")).hexdigest()


#: :func:`environment`'s result in this process, once computed.
_environment = None


def environment(memos=None):
    """Describe the toolchain that generated code depends on.

    Computed once per process. Its installed versions and the digest of
    this package's sources are most of a process's first cache hit
    (``bench/warm_make.py --clock cpu``); with ``memos``,
    they are read from what an earlier process stored under
    :func:`environment_stamp`, which changes with any file they are read
    from.

    :param memos: :class:`Memos` to read and keep the installed versions and
        :func:`package_digest` in, or ``None`` to compute them.
    :return: ``tuple`` of ``(name, version)`` pairs: Python, ninetoothed,
        the distribution that owns ``import triton`` (``triton-ascend``
        where its files are the ones imported,
        :func:`~ninetoothed_ascend.host.triton_package_is_ascend`, else
        ``triton``) and its version, and a digest of this package's
        source files (which covers the pass pipeline).
    """

    global _environment

    if _environment is None:
        _environment = _describe_environment(memos)

    return _environment


def _describe_environment(memos):
    # One walk of the package's sources serves the stamp and, on a miss,
    # the digest.
    files = _source_files(_PACKAGE_ROOT)
    stamp = _stamp(_PACKAGE_ROOT, files) if memos is not None else None
    stored = (
        _stored_json(
            memos.read("environment", stamp),
            ("ninetoothed", "triton", "package"),
            str,
            optional=("ninetoothed",),
        )
        if stamp
        else None
    )

    if stored is None:
        stored = {
            # ``None`` where the listing beside the package does not tell:
            # then importlib.metadata, which reads every ``sys.path`` entry,
            # is asked in each process (the stamp covers only the listing).
            "ninetoothed": _listed_version(ninetoothed, "ninetoothed"),
            "triton": (
                host.TRITON_ASCEND if host.triton_package_is_ascend() else "triton"
            ),
            "package": _package_digest(files),
        }

        if memos is not None:
            memos.keep("environment", stamp, json.dumps(stored))

    listed = stored["ninetoothed"]

    return (
        # What ``platform.python_version()`` reads from ``sys.version``
        # (its first word), without the regular expression Python 3.12 and
        # 3.13 compile at its first call.
        ("python", sys.version.split()[0]),
        (
            "ninetoothed",
            listed if listed else _installed_version(ninetoothed, "ninetoothed"),
        ),
        (stored["triton"], triton.__version__),
        ("ninetoothed-ascend", stored["package"]),
    )


def _stored_json(text, keys, value_type, optional=()):
    # A memo's JSON object with exactly ``keys``, each a ``value_type`` (or
    # null, for the ``optional`` ones), or None where the text is not that.
    try:
        stored = json.loads(text) if text is not None else None
    except ValueError:
        return None

    if (
        isinstance(stored, dict)
        and set(stored) == set(keys)
        and all(
            type(value) is value_type or (value is None and key in optional)
            for key, value in stored.items()
        )
    ):
        return stored

    return None


def _installed_version(package, distribution):
    """The version of ``distribution``, whose import package is ``package``: :func:`_listed_version`, else importlib.metadata's."""

    return _listed_version(package, distribution) or importlib.metadata.version(
        distribution
    )


def _listed_version(package, distribution):
    # The version in the name of the metadata directory an installer writes
    # beside the package (``ninetoothed-0.26.0.dist-info``): one directory
    # listing, where importlib.metadata's first lookup in a process scans
    # every sys.path entry and parses the metadata file (with triton's
    # distribution decided from its files, the environment of a cold
    # ``make`` went from 2.3-2.9 to 1.5 ms: docs/benchmarks.md, "Session
    # 14"). ``None`` where the listing does not tell (an editable install,
    # two such directories).
    prefix = distribution.replace("-", "_") + "-"
    suffix = ".dist-info"

    try:
        names = os.listdir(_metadata_directory(package))
    except OSError:
        names = ()

    found = [
        name[len(prefix) : -len(suffix)]
        for name in names
        if name.startswith(prefix) and name.endswith(suffix)
    ]

    return found[0] if len(found) == 1 else None


def _metadata_directory(package):
    # Where an installer puts the metadata of the distribution that holds
    # ``package``: the directory holding the package's directory.
    return os.path.dirname(os.path.dirname(os.path.abspath(package.__file__)))


def environment_stamp(root=None):
    """Return a sha256 hex digest of what :func:`environment` reads from the disk, from file metadata alone.

    It covers the files :func:`package_digest` hashes (each one's relative
    path, inode, size, and modification and change times in nanoseconds: a
    file's change time moves with every write, also when its modification
    time is set back), the directories whose listings say NineToothed's
    version and the distribution of ``import triton`` (the directory holding
    the ``ninetoothed`` package, where installing or removing a distribution
    adds or removes its metadata directory; ``triton/backends``, which holds
    ``ascend`` in triton-ascend's files: :func:`_listed_directories`), with
    their paths, the Python version and ``root``. Not the other ``sys.path``
    entries: the memo of a program that writes files in its own directory
    (``sys.path[0]``) was never read again while they were stamped.

    :param root: ``pathlib.Path`` of the package directory; this package's
        when ``None``.
    :return: ``str``, 64 hexadecimal digits.
    """

    root = _PACKAGE_ROOT if root is None else root

    return _stamp(root, _source_files(root))


def _listed_directories():
    """The directories whose listings :func:`environment` reads: ``tuple`` of ``str``."""

    return (
        _metadata_directory(ninetoothed),
        str(host.triton_backends_directory()),
    )


def _stamp(root, files):
    entries = []

    for directory in _listed_directories():
        try:
            entries.append((directory, os.stat(directory).st_mtime_ns))
        except OSError:
            entries.append((directory, None))

    described = tuple(
        (parts, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        for parts, _, info in files
    )
    description = repr((sys.version, str(root), tuple(entries), described))

    return hashlib.sha256(description.encode("utf-8")).hexdigest()


_PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent


@functools.cache
def package_digest(root=None):
    """Return the sha256 of this package's Python sources, in path order.

    Each ``*.py`` file under the package directory, as ``pathlib``'s
    ``rglob`` finds them (symbolic links to directories not followed) outside
    ``__pycache__`` directories, and ``sorted`` orders them: its path
    relative to the directory, then its bytes.

    :param root: ``pathlib.Path`` of the package directory; this package's
        when ``None``.
    :return: ``str``, 64 hexadecimal digits.
    """

    return _package_digest(_source_files(_PACKAGE_ROOT if root is None else root))


def _package_digest(files):
    digest = hashlib.sha256()

    for parts, path, _ in files:
        digest.update("/".join(parts).encode())
        # os.read rather than a file object, which costs more per file.
        descriptor = os.open(path, os.O_RDONLY)

        try:
            while chunk := os.read(descriptor, 1 << 20):
                digest.update(chunk)
        finally:
            os.close(descriptor)

    return digest.hexdigest()


def _source_files(root):
    """``(relative parts, path, os.stat_result)`` of each ``*.py`` under ``root``, sorted as ``sorted(root.rglob("*.py"))`` sorts its paths.

    ``os.scandir`` instead of ``rglob``, which took a third of
    :func:`package_digest`'s time: it visits what ``rglob`` visits
    (directories that are not symbolic links) and, like it, any entry whose
    name ends with ``.py``, except in ``__pycache__`` directories: Python
    imports no source from them, and listing the bytecode an installed
    package keeps there is a large part of a process's first scan.
    """

    found = []

    def scan(directory, parts):
        with os.scandir(directory) as entries:
            for entry in entries:
                name = entry.name

                if name.endswith(".py"):
                    found.append(((*parts, name), entry.path, entry.stat()))

                if name != "__pycache__" and entry.is_dir() and not entry.is_symlink():
                    scan(entry.path, (*parts, name))

    scan(root, ())
    found.sort(key=lambda item: item[0])

    return found
