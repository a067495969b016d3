"""Where the cache lives, and whether a directory or file may be trusted: the cache's directories and atomic writes."""

import os
import pathlib
import stat
import tempfile
import warnings

import platformdirs

#: The variables that name the cache directory, in order of precedence
#: (:func:`default_directory`).
ENVIRONMENT_VARIABLES = ("NINETOOTHED_ASCEND_CACHE_DIR", "NINETOOTHED_CACHE_DIR")


def default_directory():
    """Choose the cache directory.

    The first that can be created and written and is trusted (see
    :func:`directory_problem`): ``$NINETOOTHED_ASCEND_CACHE_DIR``,
    ``$NINETOOTHED_CACHE_DIR``, the platform's user cache directory
    (``platformdirs.user_cache_dir("ninetoothed-ascend")``), and last
    :func:`private_directory`, with one warning that says why each was
    refused. A variable set to the empty string counts as unset.

    :return: ``pathlib.Path``.
    """

    refusals = []

    for candidate in filter(None, _candidate_directories()):
        path = pathlib.Path(candidate).expanduser()
        problem = directory_problem(path)

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


#: Directories that belong to the system, never a cache: the root and the
#: top-level directories of the Filesystem Hierarchy Standard (FHS 3.0).
SYSTEM_DIRECTORIES = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)

#: Of those, the ones whose every subdirectory belongs to the system too.
SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
)


def system_directory(path):
    """Whether ``path`` is a system directory (:data:`SYSTEM_DIRECTORIES`) or inside one of :data:`SYSTEM_TREES`, symbolic links resolved.

    A cache writes and removes files in its directory: root may write
    anywhere, so the directory must not be one the system owns.

    :param path: ``pathlib.Path``, which need not exist.
    :return: ``bool``.
    """

    resolved = pathlib.PurePosixPath(os.path.realpath(path))

    return str(resolved) in SYSTEM_DIRECTORIES or any(
        resolved.is_relative_to(tree) for tree in SYSTEM_TREES
    )


def directory_problem(path, create=True):
    """Say why ``path`` cannot be a cache directory, or return ``None``.

    In order: the empty path, a system directory (:func:`system_directory`),
    one that cannot be created (``create``) or does not exist, not a
    directory, not writable, not trusted (:func:`trust_problem` with its
    parents).

    :param path: ``pathlib.Path`` or ``str``.
    :param create: ``True`` to create it (and its parents, mode 0700) if missing.
    :return: ``str`` (one sentence naming the path and the reason) or ``None``.
    """

    if not str(path):
        return "an empty path is no cache directory"

    path = pathlib.Path(path)

    if system_directory(path):
        return f"{path} is a system directory"

    try:
        if create:
            make_directory(path)

        info = os.stat(path)
    except OSError as error:
        verb = "cannot be created" if create else "does not exist"

        return f"{path} {verb} ({error.strerror or error})"

    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"

    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable"

    try:
        return trust_problem(path, parents=True)
    except OSError as error:
        return f"{path} cannot be examined ({error.strerror or error})"


def _candidate_directories():
    # Lazily: platformdirs is asked only when no variable names a usable
    # directory.
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

    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


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
