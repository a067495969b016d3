"""A cache tier shared by a fleet: kernels' entries and sources on a Redis store.

Set ``NINETOOTHED_ASCEND_REMOTE_CACHE=redis://host:port/db`` (off when unset;
needs the ``remote`` extra, ``pip install ninetoothed-ascend[remote]``). A
``make`` that misses its kernel on disk reads it from the store
(:meth:`RemoteStore.fetch`) and writes it to the local cache; a ``make``
that generates a kernel puts its entry and sources on the store after
storing them on disk (:meth:`RemoteStore.publish`).

Layout on the store::

    ninetoothed-ascend:source:<sha256>  the source's bytes
    ninetoothed-ascend:kernel:<key>     a hash: ``entry`` (the entry's JSON)
                                        and ``mac`` (HMAC-SHA256, hex)

Trust: writes are authenticated: the ``mac`` is an HMAC-SHA256 over the
key, the entry's JSON and its sources' digests, with the secret of
``NINETOOTHED_ASCEND_REMOTE_SECRET`` (or the file
``NINETOOTHED_ASCEND_REMOTE_SECRET_FILE`` names). Every entry read goes
through :func:`~ninetoothed_ascend.cache.archive.admit_outside_entry`: each
source's sha256, the entry's checks bound to its key. A client with the
secret refuses every entry whose ``mac`` does not verify, and takes one
that verifies as its writer, a holder of the secret, stored it, once its
key is the one this environment gives its definition. A client without the
secret only reads, and admits what it reads as an imported archive's entry:
every variant built here from NineToothed's source and compared, stored as
not verified, so the first ``make`` compares NineToothed's source with what
its definition generates before anything of it runs.

Faults (the server down, stopped, full, slow) never fail a kernel: it is
generated locally, with one warning per process for each kind of fault.
Each command waits at most :data:`TIMEOUT` seconds, and after a server
that does not answer the store is left alone for :data:`RETRY_AFTER`
seconds. Threat model: docs/cache.md.
"""

import hashlib
import hmac
import json
import logging
import os
import time
import warnings

from ninetoothed_ascend.cache.archive import (
    MAX_ENTRY_SIZE,
    MAX_SOURCE_SIZE,
    admit_outside_entry,
)
from ninetoothed_ascend.cache.entry import DIGEST

logger = logging.getLogger(__name__)

#: The store's URL (``redis://[user:password@]host:port/db``, or ``rediss://``
#: for TLS); the remote tier is off when it is unset or empty.
REMOTE_VARIABLE = "NINETOOTHED_ASCEND_REMOTE_CACHE"
#: The shared secret that authenticates writes (UTF-8 text).
SECRET_VARIABLE = "NINETOOTHED_ASCEND_REMOTE_SECRET"
#: A file holding the secret (its first line), when the secret is not in the environment.
SECRET_FILE_VARIABLE = "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE"

#: Seconds a connection or a command waits for the server.
TIMEOUT = 1.0
#: Seconds the store is left alone after it did not answer.
RETRY_AFTER = 30.0

_PREFIX = "ninetoothed-ascend:"
_MAC_DOMAIN = b"ninetoothed-ascend remote entry 1\n"


def mac(secret, key, data, digests):
    """Return the HMAC-SHA256 (hex ``str``) that authenticates an entry on the store.

    :param secret: ``bytes``, the shared secret.
    :param key: ``str``, the key the entry is stored under.
    :param data: ``bytes``, the entry's JSON.
    :param digests: iterable of ``str``, the sha256 of the sources it names.
    """

    # The entry's length first: no split of the message reads as another
    # entry with other digests.
    message = b"\n".join(
        (
            _MAC_DOMAIN + key.encode(),
            str(len(data)).encode(),
            data,
            *sorted(d.encode() for d in digests),
        )
    )

    return hmac.new(secret, message, hashlib.sha256).hexdigest()


class RemoteStore:
    """The Redis store that ``url`` names, with the ``secret`` that authenticates writes.

    :param url: ``str``, a ``redis://`` URL.
    :param secret: ``bytes`` or ``None`` (then the store is only read).
    :raises ImportError: the ``redis`` package is not installed.
    :raises ValueError: ``url`` is not a Redis URL.
    """

    def __init__(self, url, secret):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self._redis = redis
        self.secret = secret
        self.client = redis.Redis.from_url(
            url,
            socket_timeout=TIMEOUT,
            socket_connect_timeout=TIMEOUT,
            # One try per command: a retry would multiply the wait.
            retry=Retry(NoBackoff(), 0),
        )
        kwargs = self.client.connection_pool.connection_kwargs
        # Named without its password in every message.
        self.name = (
            f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
            f"/{kwargs.get('db', 0)}"
        )
        self._warned = set()
        self._resting_until = 0.0

    def fetch(self, cache, key, admit, admit_authenticated=None):
        """Return what ``cache`` stores for the store's entry of ``key``, checked and admitted, or ``None``.

        ``None`` where the store holds no entry of ``key`` or lacks one of
        its sources (evicted by the server), or cannot be read (one warning
        per kind of fault), or its entry is refused (its
        ``mac`` does not verify, or it fails
        :func:`~ninetoothed_ascend.cache.archive.admit_outside_entry`; one
        warning): the caller generates the kernel then.

        :param cache: :class:`~ninetoothed_ascend.cache.Cache`, the local cache.
        :param key: ``str``, the kernel's key (sha256 hex).
        :param admit: as :func:`~ninetoothed_ascend.cache.archive.import_archive`,
            for a store read without the secret
            (:func:`ninetoothed_ascend.jit.admit_entry`).
        :param admit_authenticated: the same, for an entry whose ``mac``
            verified with the secret
            (:func:`ninetoothed_ascend.jit.admit_authenticated_entry`);
            ``None`` to admit it with ``admit`` too.
        :return: :class:`~ninetoothed_ascend.cache.Entry` or ``None``.
        """

        if not DIGEST.fullmatch(key) or self._resting():
            return None

        try:
            record = self.client.hgetall(f"{_PREFIX}kernel:{key}")

            if not record:
                return None

            data = record.get(b"entry", b"")
            digests = _digests(data) if len(data) <= MAX_ENTRY_SIZE else []
            values = (
                self.client.mget([f"{_PREFIX}source:{d}" for d in digests])
                if digests
                else []
            )
        except self._redis.RedisError as error:
            self._fault(error)

            return None

        if None in values:
            # A source evicted by the server's own policy: a miss, not a forgery.
            logger.info(
                "ninetoothed-ascend: the remote cache %s lacks a source of kernel %s",
                self.name,
                key,
            )

            return None

        try:
            if len(data) > MAX_ENTRY_SIZE:
                raise ValueError(f"is over {MAX_ENTRY_SIZE} bytes")

            if self.secret is not None and not hmac.compare_digest(
                record.get(b"mac", b"").decode("ascii", "replace"),
                mac(self.secret, key, data, digests),
            ):
                raise ValueError(
                    "has no valid HMAC: it was not written with this secret"
                )

            sources = {
                digest: value
                for digest, value in zip(digests, values)
                if len(value) <= MAX_SOURCE_SIZE
            }

            if self.secret is not None and admit_authenticated is not None:
                admit = admit_authenticated

            return admit_outside_entry(cache, key, data, sources, admit)
        except Exception as error:  # noqa: BLE001
            # Whatever the store's bytes make fail is a refusal: an entry
            # from outside never fails the kernel.
            if not isinstance(error, ValueError):
                error = f"fails its checks ({type(error).__name__}: {_one_line(error)})"

            self._warn(
                "refused",
                f"refused the entry of kernel {key[:12]} on the remote cache "
                f"{self.name}: it {error}; the kernel is generated here. Clear "
                "the store if it holds entries you did not write",
            )

            return None

    def publish(self, cache, key, entry, raise_errors=False):
        """Put the entry of ``key`` that ``cache`` stored, and its sources, on the store.

        Sources first, then the entry that names them, so a reader never
        finds an entry without its sources. The entry goes without where it
        came from on this machine (its origin's ``from``: a manifest's or
        archive's path here, which a reader, who records the store as its
        origin, has no use for). Without the secret nothing is
        written. A failure is one warning per kind of fault; the kernel is
        not affected.

        :param cache: :class:`~ninetoothed_ascend.cache.Cache`, the local cache.
        :param key: ``str``, the kernel's key.
        :param entry: :class:`~ninetoothed_ascend.cache.Entry`, as stored.
        :param raise_errors: ``True`` to raise instead of warning (``warm``).
        :return: ``int``, the bytes written to the store (0 where nothing was).
        :raises RemoteError: with ``raise_errors``, the entry could not be
            read from ``cache`` or written to the store (one line).
        """

        if self.secret is None or (self._resting() and not raise_errors):
            return 0

        try:
            stored = json.loads(cache.entry_path(key).read_bytes())

            if not isinstance(stored, dict):
                raise ValueError("it is not a JSON object")
        except (OSError, ValueError) as error:
            if raise_errors:
                raise RemoteError(f"cannot read its cache entry: {error}") from None

            logger.info("ninetoothed-ascend: not publishing %s: %s", key, error)

            return 0

        stored["origin"] = {"kind": entry.origin["kind"], "from": None}
        data = json.dumps(stored, indent=1).encode("utf-8")
        sources = {
            variant.digest: variant.source.encode("utf-8")
            for variant in entry.variants.values()
            if variant.source is not None
        }

        try:
            pipeline = self.client.pipeline(transaction=False)

            for digest, source in sources.items():
                pipeline.set(f"{_PREFIX}source:{digest}", source)

            pipeline.execute()
            self.client.hset(
                f"{_PREFIX}kernel:{key}",
                mapping={
                    "entry": data,
                    "mac": mac(self.secret, key, data, sources),
                },
            )
        except self._redis.RedisError as error:
            if raise_errors:
                raise RemoteError(
                    f"the remote cache {self.name} did not take it ({_one_line(error)})"
                ) from None

            self._fault(error)

            return 0

        return len(data) + sum(map(len, sources.values()))

    def ping(self):
        """Check that the server answers.

        :raises RemoteError: it does not (one line naming the store).
        """

        try:
            self.client.ping()
        except self._redis.RedisError as error:
            raise RemoteError(
                f"the remote cache {self.name} is unreachable ({_one_line(error)}); "
                "start the server or check the URL"
            ) from None

    @property
    def errors(self):
        """The exception class of every fault of the store (``redis.RedisError``)."""

        return self._redis.RedisError

    def available(self):
        """Whether the store may be asked now: ``False`` for :data:`RETRY_AFTER` seconds after it did not answer."""

        return not self._resting()

    def fault(self, error):
        """Report ``error``, one of :attr:`errors`, as this store's faults are reported: one warning per kind of fault, a rest after a server that did not answer."""

        self._fault(error)

    def refuse(self, kind, message):
        """Warn ``message`` (``str``, one line without its final period) once per process for ``kind`` (``str``), then log it."""

        self._warn(kind, message)

    def _resting(self):
        return time.monotonic() < self._resting_until

    def _fault(self, error):
        redis = self._redis

        if isinstance(error, redis.exceptions.OutOfMemoryError):
            kind, what = "full", "is full (maxmemory)"
            hint = "raise its maxmemory or clear it"
        elif isinstance(error, redis.TimeoutError):
            kind, what = "slow", f"did not answer within {TIMEOUT} s"
            hint = "check the server's load"
        elif isinstance(error, redis.ConnectionError):
            kind, what = "unreachable", "is unreachable"
            hint = f"start the server or unset {REMOTE_VARIABLE}"
        else:
            kind, what = "error", "refused a command"
            hint = "check the server's configuration"

        if kind in ("slow", "unreachable"):
            self._resting_until = time.monotonic() + RETRY_AFTER

        self._warn(
            kind,
            f"the remote cache {self.name} {what} ({_one_line(error)}); kernels "
            f"are generated and cached locally; {hint}",
        )

    def _warn(self, kind, message):
        if kind in self._warned:
            logger.info("ninetoothed-ascend: %s", message)

            return

        self._warned.add(kind)
        warnings.warn(f"ninetoothed-ascend: {message}.", stacklevel=5)


class RemoteError(Exception):
    """The remote store cannot be used as asked (``warm --remote``); the message is one line naming it and what to do."""


def writer(url):
    """Return a :class:`RemoteStore` of ``url`` that can write, with the secret of the environment, its server answering.

    :param url: ``str``, a ``redis://`` URL.
    :raises RemoteError: no secret is set (:data:`SECRET_VARIABLE`,
        :data:`SECRET_FILE_VARIABLE`), its file cannot be read, the
        ``redis`` package is missing, ``url`` is not a Redis URL, or the
        server does not answer (one line each).
    """

    secret, problem = _secret()

    if problem is not None:
        raise RemoteError(problem)

    if secret is None:
        raise RemoteError(
            f"writing to a remote cache needs its secret: set {SECRET_VARIABLE} "
            f"or {SECRET_FILE_VARIABLE}"
        )

    try:
        store = RemoteStore(url, secret)
    except ImportError:
        raise RemoteError(
            "the redis package is missing; run pip install 'ninetoothed-ascend[remote]'"
        ) from None
    except ValueError as error:
        # Not named: a URL may hold a password.
        raise RemoteError(
            f"the remote cache's URL is not a Redis URL ({_one_line(error)})"
        ) from None

    store.ping()

    return store


def _digests(data):
    # The sources an entry names, read only to fetch them: the entry is
    # checked in full by ``admit_outside_entry``.
    try:
        variants = json.loads(data).get("variants", {})

        return sorted(
            {
                record["digest"]
                for record in variants.values()
                if isinstance(record, dict)
                and isinstance(record.get("digest"), str)
                and DIGEST.fullmatch(record["digest"])
            }
        )
    except (ValueError, AttributeError, RecursionError):
        return []


def _one_line(error):
    lines = str(error).strip().splitlines()

    return lines[0] if lines else type(error).__name__


#: The store of each configuration this process used: ``(url, secret)`` -> store or ``None``.
_stores = {}


def store_from_environment():
    """Return the :class:`RemoteStore` that :data:`REMOTE_VARIABLE` names, or ``None`` when it is unset.

    One store per configuration per process. ``None`` also, with one
    warning, where the ``redis`` package is missing, the URL is not a Redis
    URL, or the secret file cannot be read.
    """

    url = os.environ.get(REMOTE_VARIABLE, "")

    if not url:
        return None

    secret, problem = _secret()
    configuration = (url, secret)

    if configuration not in _stores:
        store = None

        try:
            if problem is not None:
                raise ValueError(problem)

            store = RemoteStore(url, secret)
        except ImportError:
            warnings.warn(
                f"ninetoothed-ascend: {REMOTE_VARIABLE} is set but the redis "
                "package is missing; kernels are cached locally only. Run "
                "pip install 'ninetoothed-ascend[remote]'.",
                stacklevel=4,
            )
        except ValueError as error:
            warnings.warn(
                f"ninetoothed-ascend: not using the remote cache of {REMOTE_VARIABLE}: "
                f"{_one_line(error)}; kernels are cached locally only.",
                stacklevel=4,
            )

        _stores[configuration] = store

    return _stores[configuration]


def _secret():
    # ``(secret or None, problem or None)``.
    text = os.environ.get(SECRET_VARIABLE, "")

    if text:
        return text.encode("utf-8"), None

    path = os.environ.get(SECRET_FILE_VARIABLE, "")

    if not path:
        return None, None

    try:
        with open(path, "rb") as file:
            line = file.readline().strip()
    except OSError as error:
        return None, (
            f"cannot read the secret file {path} of {SECRET_FILE_VARIABLE} "
            f"({error.strerror or error})"
        )

    return (line or None), None


__all__ = [
    "REMOTE_VARIABLE",
    "RETRY_AFTER",
    "SECRET_FILE_VARIABLE",
    "SECRET_VARIABLE",
    "TIMEOUT",
    "RemoteError",
    "RemoteStore",
    "mac",
    "store_from_environment",
    "writer",
]
