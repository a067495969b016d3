"""Triton's compiled kernels and launchers on the fleet's Redis store, under a key that adds the toolchain.

Set ``TRITON_CACHE_MANAGER=ninetoothed_ascend.cache.triton_binaries:StoreCacheManager``
with the store of :mod:`ninetoothed_ascend.cache.remote`
(``NINETOOTHED_ASCEND_REMOTE_CACHE`` and its secret). Triton's local cache
(``TRITON_CACHE_DIR``) works as with Triton's own ``FileCacheManager``; a
file or group of files that Triton misses there is read from the store and
written there before Triton loads it; what Triton writes there is put on the
store too.

Layout on the store, under the key :func:`store_key` (Triton's key and the
:class:`~ninetoothed_ascend.cache.toolchain.Toolchain`)::

    ninetoothed-ascend:triton:blob:<sha256>              a file's bytes
    ninetoothed-ascend:triton:file:<store key>:<name>    ``digest``, ``mac``
    ninetoothed-ascend:triton:group:<store key>:<name>   ``files`` (JSON: name -> sha256), ``mac``

Trust: a binary cannot be checked by rebuilding it cheaply, so only a
client with the secret reads or writes; without it the manager is Triton's
``FileCacheManager``. Each ``mac`` is an HMAC-SHA256 with the secret over the
store key, the file's or group's name and its digests; each blob must match
its sha256. A file that fails either is refused (one warning) and Triton
compiles it here. Faults of the store never fail a compile: the local cache
is used, with one warning per kind of fault (:class:`~ninetoothed_ascend.cache.remote.RemoteStore`).
"""

import hashlib
import hmac
import json
import logging
import re
import warnings

from triton.runtime.cache import FileCacheManager

from ninetoothed_ascend.cache import remote, toolchain

logger = logging.getLogger(__name__)

#: The largest file put on or read from the store (bytes).
MAX_FILE_SIZE = 64 << 20
#: The most files one group holds.
MAX_GROUP_FILES = 64

#: Files kept off the store: triton-ascend 3.2.0 writes ``precompiled.h``
#: through the cache manager, then compiles ``precompiled.h.gch`` beside it
#: without it, and precompiles only where both are missing
#: (``backends/ascend/driver.py``, ``make_npu_launcher_stub``): a header read
#: from the store would leave its machine without the ``.gch``.
LOCAL_ONLY = frozenset({"precompiled.h"})

_PREFIX = "ninetoothed-ascend:triton:"
_KEY_DOMAIN = b"ninetoothed-ascend triton binaries 1\n"
_MAC_DOMAIN = b"ninetoothed-ascend triton binary 1\n"
_GROUP = "__grp__"
# A plain file name: no directory, not ``.`` or ``..``.
_NAME = re.compile(r"(?!\.{1,2}\Z)[A-Za-z0-9_.+=-]{1,255}")
_DIGEST = re.compile(r"[0-9a-f]{64}")

_warned_without_secret = False


def store_key(triton_key, chain):
    """Return the key (sha256 hex) a Triton cache entry is stored under: Triton's key and the toolchain.

    :param triton_key: ``str``, the key Triton gives its cache manager.
    :param chain: :class:`~ninetoothed_ascend.cache.toolchain.Toolchain`.
    """

    return hashlib.sha256(
        _KEY_DOMAIN + chain.digest().encode() + b"\n" + triton_key.encode()
    ).hexdigest()


def mac(secret, key, kind, name, payload):
    """Return the HMAC-SHA256 (hex ``str``) of a file (``kind="file"``, ``payload`` its sha256) or group (``"group"``, its JSON) on the store.

    :param secret: ``bytes``.
    :param key: ``str``, the store key (:func:`store_key`).
    :param kind: ``str``, ``"file"`` or ``"group"``.
    :param name: ``str``, the file's or group's name.
    :param payload: ``str``.
    """

    message = "\n".join((key, kind, name, str(len(payload)), payload)).encode()

    return hmac.new(secret, _MAC_DOMAIN + message, hashlib.sha256).hexdigest()


class StoreCacheManager(FileCacheManager):
    """Triton's ``FileCacheManager`` backed by the Redis store of :func:`~ninetoothed_ascend.cache.remote.store_from_environment`.

    Triton constructs it (``TRITON_CACHE_MANAGER``); the arguments are
    Triton's. Dumps and overrides (``TRITON_KERNEL_DUMP``,
    ``TRITON_KERNEL_OVERRIDE``) stay local.

    :param key: ``str``, Triton's key of one compiled kernel or launcher.
    """

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        self._store = None if override or dump else _store()
        self._digests = {}

        if self._store is not None:
            try:
                self._name = store_key(key, toolchain.current())
            except Exception as error:  # noqa: BLE001
                self._store.refuse(
                    "toolchain",
                    f"cannot fingerprint the toolchain ({type(error).__name__}: "
                    f"{error}); Triton's binaries are cached locally only",
                )
                self._store = None

    def get_file(self, filename):
        """Return the local path of ``filename``, read from the store (authenticated) where the local cache lacks it; ``None`` on a miss."""

        path = super().get_file(filename)

        if path is not None or self._store is None or filename in LOCAL_ONLY:
            return path

        data = self._fetch_file(filename)

        return None if data is None else super().put(data, filename)

    def put(self, data, filename, binary=True):
        """Write ``data`` to the local cache and, but for group indexes, put it on the store; return the local path."""

        path = super().put(data, filename, binary=binary)

        if (
            self._store is not None
            and not filename.startswith(_GROUP)
            and filename not in LOCAL_ONLY
        ):
            payload = data if isinstance(data, bytes) else str(data).encode("utf-8")
            digest = hashlib.sha256(payload).hexdigest()
            self._digests[filename] = digest

            if len(payload) <= MAX_FILE_SIZE and _NAME.fullmatch(filename):
                self._write(
                    {f"{_PREFIX}blob:{digest}": payload},
                    f"{_PREFIX}file:{self._name}:{filename}",
                    {
                        "digest": digest,
                        "mac": mac(
                            self._store.secret, self._name, "file", filename, digest
                        ),
                    },
                )

        return path

    def get_group(self, filename):
        """Return ``{name: local path}`` of the group ``filename``, read from the store (every file authenticated) where the local cache lacks it; ``None`` on a miss."""

        group = super().get_group(filename)

        if group is not None or self._store is None:
            return group

        files = self._fetch_group(filename)

        if files is None:
            return None

        paths = {
            name: super(StoreCacheManager, self).put(data, name)
            for name, data in files.items()
        }
        super().put_group(filename, paths)

        return paths

    def put_group(self, filename, group):
        """Write the group index locally and put the group (names and sha256 of its files) on the store."""

        path = super().put_group(filename, group)

        if self._store is None or not _NAME.fullmatch(filename):
            return path

        digests = {}

        for name, child in group.items():
            digest = self._digests.get(name) or toolchain.file_digest(child)

            if digest is None or not _NAME.fullmatch(name):
                return path

            digests[name] = digest

        if len(digests) <= MAX_GROUP_FILES:
            files = json.dumps(digests, sort_keys=True)
            self._write(
                {},
                f"{_PREFIX}group:{self._name}:{filename}",
                {
                    "files": files,
                    "mac": mac(
                        self._store.secret, self._name, "group", filename, files
                    ),
                },
            )

        return path

    def _write(self, blobs, name, record):
        store = self._store

        if not store.available():
            return

        try:
            pipeline = store.client.pipeline(transaction=False)

            for blob, payload in blobs.items():
                pipeline.set(blob, payload)

            # The blobs first: a reader never finds a record whose bytes are not there.
            pipeline.hset(name, mapping=record)
            pipeline.execute()
        except store.errors as error:
            store.fault(error)

    def _verified_field(self, kind, filename, field, encoding):
        """The ``field`` of the store's ``kind`` record of ``filename``, decoded, where its HMAC verifies; ``None`` otherwise (no such record, a name Triton does not give, a refused HMAC)."""

        if not _NAME.fullmatch(filename):
            return None

        record = self._read_record(f"{_PREFIX}{kind}:{self._name}:{filename}")

        if record is None:
            return None

        value = record.get(field, b"").decode(encoding, "replace")

        return value if self._verified(record, kind, filename, value) else None

    def _fetch_file(self, filename):
        digest = self._verified_field("file", filename, b"digest", "ascii")

        if digest is None:
            return None

        blobs = self._read_blobs({filename: digest}, filename)

        return None if blobs is None else blobs[filename]

    def _fetch_group(self, filename):
        files = self._verified_field("group", filename, b"files", "utf-8")

        if files is None:
            return None

        try:
            digests = json.loads(files)
            valid = (
                isinstance(digests, dict)
                and 0 < len(digests) <= MAX_GROUP_FILES
                and all(
                    isinstance(digest, str)
                    and _NAME.fullmatch(name)
                    and _DIGEST.fullmatch(digest)
                    for name, digest in digests.items()
                )
            )
        except ValueError:
            valid = False

        if not valid:
            self._refuse(filename, "its list of files is malformed")

            return None

        return self._read_blobs(digests, filename)

    def _read_record(self, name):
        store = self._store

        if not store.available():
            return None

        try:
            return store.client.hgetall(name) or None
        except store.errors as error:
            store.fault(error)

            return None

    def _read_blobs(self, digests, filename):
        store = self._store

        try:
            values = store.client.mget([f"{_PREFIX}blob:{d}" for d in digests.values()])
        except store.errors as error:
            store.fault(error)

            return None

        if None in values:
            # Evicted by the server's own policy: a miss, not a forgery.
            logger.info(
                "ninetoothed-ascend: %s lacks a file of %s", store.name, filename
            )

            return None

        files = {}

        for (name, digest), value in zip(digests.items(), values):
            if (
                len(value) > MAX_FILE_SIZE
                or hashlib.sha256(value).hexdigest() != digest
            ):
                self._refuse(filename, f"the bytes of {name} do not match their sha256")

                return None

            files[name] = value

        return files

    def _verified(self, record, kind, name, payload):
        expected = mac(self._store.secret, self._name, kind, name, payload)

        if hmac.compare_digest(
            record.get(b"mac", b"").decode("ascii", "replace"), expected
        ):
            return True

        self._refuse(name, "it has no valid HMAC: it was not written with this secret")

        return False

    def _refuse(self, name, reason):
        self._store.refuse(
            "refused-binary",
            f"refused Triton's {name} on the remote cache {self._store.name}: {reason}; "
            "Triton compiles it here. Clear the store if it holds files you did not write",
        )


def _store():
    global _warned_without_secret

    store = remote.store_from_environment()

    if store is None or store.secret is not None:
        return store

    if not _warned_without_secret:
        _warned_without_secret = True
        warnings.warn(
            f"ninetoothed-ascend: {remote.SECRET_VARIABLE} is unset: Triton's "
            "binaries are neither read from nor written to the remote cache "
            "(a binary cannot be checked without the secret); they are cached "
            "locally only.",
            stacklevel=4,
        )

    return None


__all__ = [
    "LOCAL_ONLY",
    "MAX_FILE_SIZE",
    "MAX_GROUP_FILES",
    "StoreCacheManager",
    "mac",
    "store_key",
]
