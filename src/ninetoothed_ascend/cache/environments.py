"""The environments that use a cache, and the installations they belong to: what ``clear --stale`` keeps.

A kernel's key covers its environment (the versions of Python, NineToothed,
Triton, this package's sources and the NPU target), so an entry is reached
only in the environment it was made in. An installation (a Python prefix and
where this package's sources are) moves from one environment to the next when
the package is edited or upgraded, and never reaches the entries of the one
before. Each process that uses the cache notes its installation and
environment (``environments/<sha256 of both>.json``; its modification time
is the last use), and an installation's current environment is the one it
noted last. Two installations may share an environment (two virtual
environments with the same versions).
"""

import hashlib
import json
import logging
import os

from ninetoothed_ascend.cache.directory import make_directory, write_atomically
from ninetoothed_ascend.cache.entry import DIGEST

logger = logging.getLogger(__name__)


def note(directory, digest, installation):
    """Record in ``directory`` that ``installation`` uses the environment of ``digest`` now.

    A failure is logged: the note only serves ``clear --stale``.

    :param directory: ``pathlib.Path``, the cache's ``environments/``.
    :param digest: ``str``, sha256 hex (``jit.fingerprint.environment_digest``).
    :param installation: ``str`` (``jit.environment.installation``).
    :raises ValueError: ``digest`` is not a sha256 hex digest.
    """

    if not DIGEST.fullmatch(digest):
        raise ValueError(f"no environment digest {digest!r}")

    recorded = {"installation": installation, "environment": digest}
    name = hashlib.sha256(json.dumps(recorded).encode("utf-8")).hexdigest()
    path = directory / f"{name}.json"

    try:
        if _read(path) == recorded:
            os.utime(path)
        else:
            make_directory(directory)
            write_atomically(path, json.dumps(recorded).encode("utf-8"), durable=False)
    except OSError as error:
        logger.info("ninetoothed-ascend: could not note %s: %s", path, error)


def current(directory):
    """The digests of the environments each installation noted last (``set`` of ``str``)."""

    latest = {}

    for _, recorded, mtime in _notes(directory):
        installation = recorded["installation"]

        if mtime >= latest.get(installation, ("", -1))[1]:
            latest[installation] = (recorded["environment"], mtime)

    return {digest for digest, _ in latest.values()}


def forget_others(directory):
    """Remove the notes of environments that their installations no longer use."""

    latest = {}

    for path, recorded, mtime in _notes(directory):
        installation = recorded["installation"]

        if mtime >= latest.get(installation, (None, -1))[1]:
            latest[installation] = (path, mtime)

    kept = {path for path, _ in latest.values()}

    for path, _, _ in _notes(directory):
        if path not in kept:
            path.unlink(missing_ok=True)


def _notes(directory):
    try:
        paths = sorted(directory.glob("*.json"))
    except OSError:
        return

    for path in paths:
        recorded = _read(path)

        try:
            mtime = path.lstat().st_mtime_ns
        except OSError:
            continue

        if recorded is not None:
            yield path, recorded, mtime


def _read(path):
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

    if (
        isinstance(recorded, dict)
        and set(recorded) == {"installation", "environment"}
        and isinstance(recorded["installation"], str)
        and isinstance(recorded["environment"], str)
        and DIGEST.fullmatch(recorded["environment"])
    ):
        return recorded

    return None
