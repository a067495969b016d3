"""The config an autotuner chose, recorded per size bucket and reused by every process and machine with the same key.

On with ``NINETOOTHED_ASCEND_SHARED_TUNING=1``. A kernel's variant is
imported with its autotuners (Triton's ``Autotuner``, or the functools-cached
factory that makes one at the first launch in the NPU variant); each
autotuner's in-memory choices become a :class:`Choices`: a tuning key the
autotuner has not met is looked up in the local cache directory
(``<cache>/tuning/<record>.json``) and then on the remote store
(``ninetoothed-ascend:tuning:<record>``); a choice the autotuner makes is
written to both. So a second process, or machine, with the same record key
does not benchmark.

The record key (:meth:`Choices.record_key`) holds the kernel's cache key,
the variant, the autotuner's name, its configs, the tuning key's values
bucketed by :func:`bucket`, Triton's device target and the
:class:`~ninetoothed_ascend.cache.toolchain.Toolchain` digest (which holds
the plugin's Target, the SoC).

Trust: a record names one of the autotuner's own configs, by its index and
its keyword arguments; one that names anything else is ignored, so a record
read from outside can choose a slower config, never a config, block size or
constexpr the kernel does not state. Records on the store carry an
HMAC-SHA256 with the remote cache's secret; a client with the secret writes
and ignores records whose ``mac`` does not verify, one without it only
reads.

Works where the autotuner keeps its choices in ``self.cache``, a ``dict``
from the tuning key (the values of its ``key`` arguments, then the tensor
arguments' dtypes) that ``run`` checks with ``key not in self.cache``:
CUDA Triton 3.9 (``triton/runtime/autotuner.py``), its interpreter, and
triton-ascend 3.2.0 (the same method, same file).
"""

import functools
import hashlib
import hmac
import inspect
import json
import logging
import os
import pathlib
import uuid

from ninetoothed_ascend.cache import remote, toolchain

logger = logging.getLogger(__name__)

#: ``1`` turns shared tuning on.
SHARE_VARIABLE = "NINETOOTHED_ASCEND_SHARED_TUNING"

#: The largest record read (bytes).
MAX_RECORD_SIZE = 1 << 16

_PREFIX = "ninetoothed-ascend:tuning:"
_KEY_DOMAIN = "ninetoothed-ascend tuning key 1"
_MAC_DOMAIN = b"ninetoothed-ascend tuning record 1\n"


def requested():
    """Whether :data:`SHARE_VARIABLE` is ``1``."""

    return os.environ.get(SHARE_VARIABLE) == "1"


def bucket(value):
    """Return the bucket of one value of a tuning key: sizes at most a factor 2 apart on each axis share one.

    An ``int`` of at least 2 becomes ``("pow2", ceil(log2(value)))``, the
    exponent of ``triton.next_power_of_2(value)``: FitUnifiedBuffer's
    ``early_config_prune`` keeps the configs chosen for the next power of 2
    of a launch-sized constexpr, so a config recorded for one size of a
    bucket is among those kept for every other. Smaller ``int`` values
    (unit strides, layout flags, 0), ``bool`` and everything else (dtype
    names) stay exact.

    :param value: one element of Triton's tuning key.
    :return: a ``repr``-able value.
    """

    if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
        return ("pow2", (value - 1).bit_length())

    return value


def share(launch, kernel_key, variant, directory):
    """Make every autotuner of the module ``launch`` comes from record and reuse its choices; return ``launch``.

    Idempotent. The module's autotuners are found in ``launch.__globals__``:
    ``Autotuner`` objects, and functions cached with ``functools.cache``
    that take no arguments (the NPU variant's factories), which are wrapped
    so that the autotuner they make is shared.

    :param launch: a variant's launch function.
    :param kernel_key: ``str``, the kernel's cache key (sha256 hex).
    :param variant: ``str``, the variant's name (``"cuda"``, ``"npu"``, ...).
    :param directory: ``pathlib.Path`` or ``None``, the local cache
        directory (records kept on the store only where ``None``).
    """

    namespace = getattr(launch, "__globals__", None)

    if namespace is None:
        return launch

    records = Records(directory)

    for name, value in list(namespace.items()):
        if _is_autotuner(value):
            _attach(value, records, (kernel_key, variant, name))
        elif _is_factory(value):
            namespace[name] = _shared_factory(
                value, records, (kernel_key, variant, name)
            )

    return launch


class Choices(dict):
    """An autotuner's choices (tuning key -> ``Config``) that reads and writes the records of :class:`Records`.

    :param autotuner: the autotuner whose ``cache`` this replaces.
    :param records: :class:`Records`.
    :param identity: ``tuple`` of ``str``: kernel key, variant, autotuner name.
    """

    def __init__(self, autotuner, records, identity, choices=()):
        super().__init__(choices)
        self._autotuner = autotuner
        self._records = records
        self._identity = identity

    def record_key(self, tuning_key):
        """``str``, the sha256 (hex) a choice for ``tuning_key`` (``tuple``) is recorded under."""

        configs = tuple(_kwargs_text(config) for config in self._autotuner.configs)
        description = (
            _KEY_DOMAIN,
            self._identity,
            configs,
            tuple(bucket(value) for value in tuning_key),
            toolchain.current().digest(),
        )

        return hashlib.sha256(repr(description).encode()).hexdigest()

    def __contains__(self, tuning_key):
        if super().__contains__(tuning_key):
            return True

        try:
            name = self.record_key(tuning_key)
        except Exception as error:  # noqa: BLE001
            logger.info("ninetoothed-ascend: no tuning record: %s", error)

            return False

        config = self._records.find(name, self._autotuner.configs)

        if config is None:
            return False

        super().__setitem__(tuning_key, config)

        return True

    def __setitem__(self, tuning_key, config):
        super().__setitem__(tuning_key, config)
        configs = self._autotuner.configs
        # The same object, or an equal one (a pruning or Triton's own disk
        # cache may make new ``Config`` objects).
        index = next((i for i, c in enumerate(configs) if c is config), None)

        if index is None:
            text = _kwargs_text(config)
            index = next(
                (i for i, c in enumerate(configs) if _kwargs_text(c) == text), None
            )

        if index is None:
            return

        try:
            self._records.record(self.record_key(tuning_key), index, configs[index])
        except Exception as error:  # noqa: BLE001
            # A choice not recorded costs another process a benchmark, never a result.
            logger.info("ninetoothed-ascend: tuning choice not recorded: %s", error)


class Records:
    """Where choices are recorded: ``directory / "tuning"`` and the remote store of :func:`~ninetoothed_ascend.cache.remote.store_from_environment`.

    A record is JSON ``{"index": int, "config": {name: value}}``, the
    config's keyword arguments (``Config.all_kwargs()``).

    :param directory: ``pathlib.Path`` or ``None``, the local cache directory.
    """

    def __init__(self, directory):
        self.directory = (
            None if directory is None else pathlib.Path(directory) / "tuning"
        )

    def find(self, name, configs):
        """Return the config of ``configs`` recorded under ``name``, or ``None`` (no record, or one that names no config of ``configs``).

        :param name: ``str``, a record key.
        :param configs: ``list`` of Triton ``Config``, the autotuner's.
        """

        data = self._read_local(name)
        local = data is not None

        if not local:
            data = self._read_remote(name)

        config = _config_of(data, configs)

        if config is not None and not local:
            self._write_local(name, data)

        return config

    def record(self, name, index, config):
        """Record that ``configs[index]`` (``config``) was chosen, under ``name``, locally and on the store (with the secret)."""

        data = json.dumps(
            {"index": index, "config": config.all_kwargs()}, sort_keys=True
        ).encode()
        self._write_local(name, data)
        store = remote.store_from_environment()

        if store is None or store.secret is None or not store.available():
            return

        try:
            store.client.hset(
                f"{_PREFIX}{name}",
                mapping={"record": data, "mac": mac(store.secret, name, data)},
            )
        except store.errors as error:
            store.fault(error)

    def _read_local(self, name):
        if self.directory is None:
            return None

        try:
            with open(self.directory / f"{name}.json", "rb") as file:
                return file.read(MAX_RECORD_SIZE + 1)
        except OSError:
            return None

    def _write_local(self, name, data):
        if self.directory is None:
            return

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            temporary = self.directory / f".{name}.{uuid.uuid4().hex}"
            temporary.write_bytes(data)
            os.replace(temporary, self.directory / f"{name}.json")
        except OSError as error:
            logger.info("ninetoothed-ascend: tuning record not written: %s", error)

    def _read_remote(self, name):
        store = remote.store_from_environment()

        if store is None or not store.available():
            return None

        try:
            record = store.client.hgetall(f"{_PREFIX}{name}")
        except store.errors as error:
            store.fault(error)

            return None

        data = record.get(b"record")

        if data is None:
            return None

        if store.secret is not None and not hmac.compare_digest(
            record.get(b"mac", b"").decode("ascii", "replace"),
            mac(store.secret, name, data),
        ):
            store.refuse(
                "refused-tuning",
                f"ignored a tuning record on the remote cache {store.name}: it has "
                "no valid HMAC; the kernel is tuned here. Clear the store if it "
                "holds records you did not write",
            )

            return None

        return data


def mac(secret, name, data):
    """Return the HMAC-SHA256 (hex ``str``) of the record ``data`` (``bytes``) under ``name`` (``str``) with ``secret`` (``bytes``)."""

    message = _MAC_DOMAIN + name.encode() + b"\n" + data

    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _config_of(data, configs):
    if data is None or len(data) > MAX_RECORD_SIZE:
        return None

    try:
        record = json.loads(data)
        index = record["index"]
        config = configs[index] if isinstance(index, int) and index >= 0 else None
    except (ValueError, KeyError, TypeError, IndexError):
        return None

    # The kwargs too: an index alone could name another config after the
    # configs changed under the same record key.
    if config is None or _kwargs_text(config) != _kwargs_text_of(record.get("config")):
        return None

    return config


def _kwargs_text(config):
    return _kwargs_text_of(config.all_kwargs())


def _kwargs_text_of(kwargs):
    if not isinstance(kwargs, dict):
        return None

    return json.dumps(kwargs, sort_keys=True, default=repr)


def _is_autotuner(value):
    configs = getattr(value, "configs", None)

    return (
        isinstance(getattr(value, "cache", None), dict)
        and isinstance(configs, list)
        and callable(getattr(value, "run", None))
        and all(callable(getattr(c, "all_kwargs", None)) for c in configs)
    )


def _is_factory(value):
    wrapped = getattr(value, "__wrapped__", None)

    if not callable(getattr(value, "cache_info", None)) or wrapped is None:
        return False

    try:
        return not inspect.signature(wrapped).parameters
    except (TypeError, ValueError):
        return False


def _attach(autotuner, records, identity):
    if not isinstance(autotuner.cache, Choices):
        autotuner.cache = Choices(autotuner, records, identity, autotuner.cache)

    return autotuner


def _shared_factory(factory, records, identity):
    if getattr(factory, "_ninetoothed_ascend_shared", False):
        return factory

    @functools.cache
    def shared():
        made = factory()

        return _attach(made, records, identity) if _is_autotuner(made) else made

    shared._ninetoothed_ascend_shared = True

    return shared


__all__ = [
    "MAX_RECORD_SIZE",
    "SHARE_VARIABLE",
    "Choices",
    "Records",
    "bucket",
    "mac",
    "requested",
    "share",
]
