"""``make`` and ``jit``: NineToothed's entry points, returning dual-variant handles.

The data path is one straight line: NineToothed kernel → generated Triton
(:mod:`~ninetoothed_ascend.jit.ninetoothed_adapter`) → passes
(:mod:`~ninetoothed_ascend.compiler.pipelines`) → source → cache (:mod:`~ninetoothed_ascend.cache`) → import → dispatch
(:class:`~ninetoothed_ascend.jit.handle.Handle`).

Why one module: ``make`` and every way an entry from outside enters the
cache (an archive, a manifest, the remote store, with the secret or
without) share one decision, whether an entry may be bound to the
definition being made (:func:`admitted` and the key and digest checks
beside it); kept beside ``make``, each admission path reads as the branch
of ``make`` it is.
"""

import dataclasses
import logging
import warnings

from ninetoothed_ascend import host

# First: the adapter chooses where NineToothed keeps its generated files
# before anything imports NineToothed.
from ninetoothed_ascend.jit import ninetoothed_adapter  # noqa: F401  # isort: skip
from ninetoothed_ascend.cache import Cache, Entry, Variant
from ninetoothed_ascend.cache.entry import text_digest
from ninetoothed_ascend.cache.remote import store_from_environment
from ninetoothed_ascend.compiler.launch import read_launch_facts
from ninetoothed_ascend.jit.dispatch import new_handle
from ninetoothed_ascend.jit.environment import Memos, device_properties, installation
from ninetoothed_ascend.jit.fingerprint import (
    definition_digest,
    environment_digest,
    environment_key,
)
from ninetoothed_ascend.jit.handle import (
    Handle,
    MixedDevicesError,
    VariantUnavailableError,
)
from ninetoothed_ascend.jit.ninetoothed_adapter import (
    PLAIN_JIT,
    PLAIN_MAKE,
    GeneratedSource,
    advance_counters,
    annotate,
    counters,
    generate_source,
)
from ninetoothed_ascend.jit.variants import VARIANTS, build_variant

logger = logging.getLogger(__name__)


def make(
    arrangement,
    application,
    tensors,
    caller="torch",
    kernel_name=None,
    output_dir=None,
    num_warps=None,
    num_stages=None,
    max_num_configs=None,
):
    """Build a kernel from an arrangement and an application, as ``ninetoothed.make`` does.

    Takes exactly ``ninetoothed.make``'s arguments. With ``caller="torch"``
    (the default) it returns a :class:`Handle` with CUDA, NPU and CPU
    variants, generated once and then reused from the disk cache, also by
    later processes, and by other machines where
    ``NINETOOTHED_ASCEND_REMOTE_CACHE`` names a shared store
    (:mod:`~ninetoothed_ascend.cache.remote`). ``make`` generates NineToothed's source (the CUDA
    variant) and builds the variant of the device this process most likely
    calls with (:func:`ninetoothed_ascend.host.likely_call_device_type`);
    any other is built at its first use and added to the cache entry
    (``warm`` builds all three ahead of time).
    Other callers ask NineToothed for ahead-of-time C sources, which have no
    NPU variant; they are passed to ``ninetoothed.make`` unchanged.

    :param arrangement: the arrangement function.
    :param application: the application function.
    :param tensors: ``tuple`` of ``ninetoothed.Tensor``.
    :param kernel_name: ``str`` or ``None`` (the application's name).
    :param num_warps: ``int``, iterable of ``int`` or ``None``.
    :param num_stages: ``int``, iterable of ``int`` or ``None``.
    :param max_num_configs: ``int`` or ``None``.
    :return: :class:`Handle`.
    :raises Exception: what NineToothed raises for an invalid kernel, with a
        note naming the kernel.
    """

    if caller != "torch":
        return PLAIN_MAKE(
            arrangement,
            application,
            tensors,
            caller=caller,
            kernel_name=kernel_name,
            output_dir=output_dir,
            num_warps=num_warps,
            num_stages=num_stages,
            max_num_configs=max_num_configs,
        )

    options = _options(kernel_name, num_warps, num_stages, max_num_configs, False)

    return _handle(
        ("make", arrangement, application, tensors, options),
        lambda: annotate(arrangement, application, tensors),
        options,
        {"arrangement": _name(arrangement), "application": _name(application)},
    )


def jit(
    func=None,
    *,
    caller="torch",
    kernel_name=None,
    num_warps=None,
    num_stages=None,
    max_num_configs=None,
    _prettify=False,
):
    """Decorate an annotated application, as ``ninetoothed.jit`` does.

    Takes exactly ``ninetoothed.jit``'s arguments and returns a
    :class:`Handle` (see :func:`make`). Callers other than ``"torch"`` are
    passed to ``ninetoothed.jit`` unchanged.
    """

    def decorator(func):
        if caller != "torch":
            return PLAIN_JIT(
                func,
                caller=caller,
                kernel_name=kernel_name,
                num_warps=num_warps,
                num_stages=num_stages,
                max_num_configs=max_num_configs,
                _prettify=_prettify,
            )

        options = _options(
            kernel_name, num_warps, num_stages, max_num_configs, _prettify
        )

        return _handle(
            ("jit", func, dict(func.__annotations__), options),
            lambda: func,
            options,
            {"application": _name(func)},
        )

    return decorator if func is None else decorator(func)


def _options(kernel_name, num_warps, num_stages, max_num_configs, prettify):
    return {
        "kernel_name": kernel_name,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "max_num_configs": max_num_configs,
        "prettify": prettify,
    }


#: ``(observer, on_call)`` pairs; see :func:`observe`.
_observers = []


def observe(observer, on_call=None):
    """Call ``observer(handle, record)`` for every kernel handle made from now on, until :func:`unobserve`.

    ``record`` is a ``dict`` with ``definition`` (the
    :func:`~ninetoothed_ascend.jit.fingerprint.definition_digest`), ``key``,
    ``kernel_name``, ``launch_name``, ``counters_delta``, ``origin`` (``dict``
    of ``"module:qualname"`` of the functions it was made from),
    ``max_num_configs`` (the option given to ``make``, or ``None``) and
    ``source`` (NineToothed's generated source, the CUDA variant), ``built``
    (generated in this call rather than loaded) and ``stored`` (``False``
    when it could not be written to the cache).
    ``ninetoothed-ascend record`` uses it to write manifests.

    :param observer: callable ``(handle, record)``.
    :param on_call: callable ``(handle, args, kwargs)`` called before every
        call of those handles, or ``None``. Handles made while one is set
        dispatch through the generic path
        (:class:`~ninetoothed_ascend.jit.dispatch.ObservedHandle`).
    """

    _observers.append((observer, on_call))


def unobserve(observer):
    """Stop calling ``observer`` and its ``on_call`` (see :func:`observe`) for handles made from now on."""

    _observers[:] = [pair for pair in _observers if pair[0] is not observer]


def _name(func):
    func = getattr(func, "func", func)  # a functools.partial of an arrangement

    return f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', '?')}"


def _handle(definition, annotated_application, options, origin):
    cache = Cache()
    memos = Memos(cache)
    properties = device_properties(memos)
    counters_before = counters()
    digest = definition_digest(definition, properties, counters_before, memos=memos)

    return _load_or_build(
        digest,
        origin,
        generate=lambda: _generate(
            annotated_application, options, properties, counters_before
        ),
        cache=cache,
        memos=memos,
    )


def from_generated(generated, origin=None, cuda_launch=None):
    """Return a handle for source that NineToothed has already generated.

    Used for kernels made by plain NineToothed before
    :func:`ninetoothed_ascend.activate`: their source is all that is left of
    their definition, so it is their key, and NineToothed's naming counters
    are not replayed.

    :param generated: :class:`~ninetoothed_ascend.jit.ninetoothed_adapter.GeneratedSource`.
    :param origin: ``dict`` for :func:`observe`, or ``None``.
    :param cuda_launch: the launch function NineToothed already imported
        from ``generated``, which calls with CUDA tensors run as they are
        (no argument check), or ``None`` to import the CUDA variant.
    :return: :class:`Handle`.
    """

    digest = definition_digest(
        ("generated", generated.source, generated.kernel_name, generated.launch_name)
    )

    return _load_or_build(
        digest,
        origin or {},
        generate=lambda: (generated, (0, 0)),
        launches={"cuda": cuda_launch} if cuda_launch is not None else None,
    )


def rebuild(
    digest,
    generated,
    counters_delta,
    expected,
    cache=None,
    compare=VARIANTS,
    origin=None,
):
    """Build and cache the variants of a kernel from NineToothed's recorded source (``warm`` and ``check`` from a manifest).

    The one way a manifest's kernel enters the cache (an archive's entries
    take the same steps, :func:`admit_entry`): NineToothed's recorded source
    must have its recorded digest before any pass reads it; every variant is
    built here from it (:func:`admitted`) and those of ``compare`` must have
    their recorded digests; and the entry is stored as not verified
    (:attr:`~ninetoothed_ascend.cache.Entry.verified`), so that the first
    ``make`` of the kernel, which has its definition, generates the source
    and compares before anything of the entry runs.

    :param digest: ``str``, the kernel's definition digest.
    :param generated: :class:`~ninetoothed_ascend.jit.ninetoothed_adapter.GeneratedSource`.
    :param counters_delta: ``(int, int)``.
    :param expected: ``dict`` from variant name to the sha256 (or ``None``)
        recorded for it; ``"cuda"`` is always compared.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` or ``None`` (the default one).
    :param compare: the variant names whose recorded digests the variants
        built here must have besides ``"cuda"``: all where the manifest was
        recorded with this ninetoothed-ascend, ``()`` where the passes that
        built its other variants were others.
    :param origin: ``str`` or ``None``, the manifest the kernel comes from,
        recorded as the entry's origin (:attr:`~ninetoothed_ascend.cache.Entry.origin`).
    :return: ``(handle, built)``; ``built`` is ``False`` when the entry was
        already cached with every variant.
    :raises VariantMismatchError: the source or a built variant differs from
        ``expected``; nothing was stored.
    :raises OSError: the built entry could not be stored.
    """

    _check_digests({"cuda": text_digest(generated.source)}, expected, ())
    built = []

    def build():
        built.append(True)
        entry = admitted(digest, generated, counters_delta, expected, compare)

        return dataclasses.replace(entry, origin={"kind": "manifest", "from": origin})

    def check(entry):
        _check_digests(entry.digests(), expected, compare)

    handle = _load_or_build(
        digest, None, build=build, cache=cache, replay=False, store_errors=True
    )

    if not built:
        # Cached by a program that built only the variants it used.
        built += handle.build(raise_store_errors=True, before_store=check)

        if not built:
            check(handle.entry)

    return handle, bool(built)


def admitted(digest, generated, counters_delta, expected, compare=VARIANTS):
    """Return the entry that the cache stores for a kernel from outside: every variant built here from NineToothed's source, compared with ``expected``.

    No pass reads the source before its digest is compared; no part of it
    is executed. The entry is not verified
    (:attr:`~ninetoothed_ascend.cache.Entry.verified`).

    :param digest: ``str``, the definition digest it is stored under.
    :param generated: :class:`~ninetoothed_ascend.jit.ninetoothed_adapter.GeneratedSource`.
    :param counters_delta: ``(int, int)``.
    :param expected: as :func:`rebuild`.
    :param compare: as :func:`rebuild`.
    :return: :class:`~ninetoothed_ascend.cache.Entry`.
    :raises VariantMismatchError: the source or a variant differs from ``expected``.
    """

    _check_digests({"cuda": text_digest(generated.source)}, expected, ())
    entry = _entry(generated, tuple(counters_delta), all_variants=True)
    _check_digests(entry.digests(), expected, compare)

    return dataclasses.replace(entry, definition=digest, verified=False)


def admit_entry(key, stored, texts):
    """Return what the cache stores for an entry from outside that nobody vouches for (``import``, a remote store read without its secret): :func:`admitted`, and its key this environment's.

    :param key: ``str``, the key the entry is named after.
    :param stored: ``dict``, the entry as the archive holds it (checked by
        :func:`~ninetoothed_ascend.cache.check_entry`).
    :param texts: ``dict`` from sha256 hex to the text (``str``) of each
        source it names, checked against its digest; NineToothed's is read.
    :return: :class:`~ninetoothed_ascend.cache.Entry`, not verified.
    :raises VariantMismatchError: its key is not the one this environment
        gives its definition (it was made with another Python, NineToothed,
        Triton or ninetoothed-ascend, or another NPU target), or a variant
        built here differs from the archive's.
    """

    _check_key(key, stored)
    expected = {name: record["digest"] for name, record in stored["variants"].items()}
    source = texts[expected["cuda"]]

    return admitted(
        stored["definition"],
        GeneratedSource(source, stored["kernel_name"], stored["launch_name"]),
        stored["counters_delta"],
        expected,
        compare=tuple(expected),
    )


def admit_authenticated_entry(key, stored, texts):
    """Return what the cache stores for a remote store's entry whose HMAC verified with the fleet's secret: the entry as its writer stored it, no variant built again.

    The HMAC says a holder of the secret wrote it, and holding the secret
    is being trusted to write code that runs (docs/cache.md, "A cache
    shared by a fleet"). What is checked here is what binds the entry to
    this kernel and environment: its key must be the one this environment
    gives its definition (the key holds the Python, NineToothed, Triton and
    ninetoothed-ascend it was made with, and the NPU target), and
    (:func:`~ninetoothed_ascend.cache.archive.admit_outside_entry`, before)
    its fields are type-checked and every source matches its sha256.
    ``verified`` is what the writer recorded: an entry a holder of the
    secret built from a manifest is still compared with its definition by
    the first ``make`` that reads it.

    :param key: ``str``, the key the entry is stored under.
    :param stored: ``dict``, the entry's JSON, checked by
        :func:`~ninetoothed_ascend.cache.check_entry`.
    :param texts: as :func:`admit_entry`.
    :return: :class:`~ninetoothed_ascend.cache.Entry`.
    :raises VariantMismatchError: its key is not the one this environment
        gives its definition.
    """

    _check_key(key, stored)
    variants = {
        name: Variant(
            texts[record["digest"]] if record["digest"] is not None else None,
            tuple((pass_name, count) for pass_name, count in record["rewrites"]),
            record["error"],
            facts=record["facts"],
        )
        for name, record in stored["variants"].items()
    }

    return Entry.from_stored(stored, variants)


def _check_key(key, stored):
    if environment_key(stored["definition"]) != key:
        raise VariantMismatchError(
            "its key is not the one this environment gives its definition: it "
            "was made with another Python, NineToothed, Triton or "
            "ninetoothed-ascend, or for another NPU target. Export it from an "
            "environment like this one"
        )


class VariantMismatchError(ValueError):
    """Variants built from recorded source differ from the recorded digests."""


def _check_digests(digests, expected, compare):
    differing = sorted(
        name
        for name in VARIANTS
        if (name == "cuda" or name in compare)
        and name in digests
        and digests[name] != expected.get(name)
    )

    if differing:
        why = (
            " (NineToothed's recorded source does not match its digest; no pass read it)"
            if "cuda" in differing
            else ""
        )

        raise VariantMismatchError(
            f"variants {', '.join(differing)} differ from the recorded ones{why}; "
            "nothing was cached. Record the manifest again from a source you trust"
        )


def _load_or_build(
    digest,
    origin,
    generate=None,
    build=None,
    cache=None,
    replay=True,
    store_errors=False,
    launches=None,
    memos=None,
):
    # ``generate`` makes NineToothed's source from the kernel's definition
    # (``make``, ``jit``, a kernel plain NineToothed made): an entry found
    # that came from outside is compared with it before anything of it runs.
    # ``build`` makes an entry from outside (a manifest's recorded source),
    # which is stored as not verified.
    cache = cache if cache is not None else Cache()
    key = environment_key(digest, memos)

    # What a cold ``make`` builds (:func:`_entry`): NineToothed's source and
    # the variant the first call most likely needs. The handle reads another
    # where it is first needed.
    read = ("cuda", host.likely_call_device_type())
    entry = cache.load(key, digest, read, quarantine=True)
    built = False
    stored = True
    _note_environment(cache, memos)

    if entry is not None and (entry.verified or build is not None):
        cache.touch(key)

        if memos is not None:
            memos.store()
    else:
        with cache.locked(key, raise_errors=store_errors) as held:
            entry = cache.load(key, digest, read, quarantine=True) if held else entry
            remote = store_from_environment() if generate is not None else None

            if entry is None and held and remote is not None:
                entry = _from_remote(remote, cache, key, digest, read)

            if build is not None:
                if entry is None:
                    entry = build()
                    stored = held and _store(cache, key, entry, store_errors)
                    built = True
            elif entry is None or not entry.verified:
                generated, delta = generate()
                replay = False

                if entry is not None and _generates(entry, generated, delta):
                    entry.verified = True
                    stored = held and _mark_verified(cache, key, entry)

                    # Bound to its definition once for the fleet: readers
                    # with the secret take it as it is from now on.
                    if stored and remote is not None:
                        remote.publish(cache, key, entry)
                else:
                    if entry is not None:
                        warnings.warn(
                            f"ninetoothed-ascend: the cache entry {key[:12]} came "
                            "from outside (warm, check, import or the remote cache) "
                            "and is not what "
                            f"the definition of kernel `{generated.kernel_name}` "
                            "generates here; it was replaced by what it generates.",
                            stacklevel=4,
                        )

                    entry = dataclasses.replace(
                        _entry(generated, delta), definition=digest
                    )
                    stored = held and _store(cache, key, entry, store_errors)
                    built = True

                    if stored and remote is not None:
                        remote.publish(cache, key, entry)

    if replay:
        advance_counters(entry.counters_delta)

    observers = tuple(_observers) if origin is not None else ()
    on_call = tuple(on_call for _, on_call in observers if on_call is not None)
    handle = new_handle(entry.kernel_name, key, entry, cache, launches, on_call)

    if observers:
        record = _record(digest, key, entry, origin)

        for observer, _ in observers:
            observer(handle, record | {"built": built, "stored": stored})

    return handle


#: The cache directories this process has noted its environment in.
_noted = set()


def _note_environment(cache, memos):
    # Once per process and cache directory: ``clear --stale`` keeps what the
    # environment an installation used last can reach.
    if cache.directory not in _noted:
        _noted.add(cache.directory)
        cache.note_environment(environment_digest(memos), installation())


def _from_remote(remote, cache, key, digest, read):
    # Read-through: the remote store's entry, checked and admitted
    # (``RemoteStore.fetch``), written to the local cache and loaded from it
    # as any entry; one not verified is compared with its definition next.
    admitted_entry = remote.fetch(cache, key, admit_entry, admit_authenticated_entry)

    if admitted_entry is None:
        return None

    admitted_entry.origin = {"kind": "remote", "from": remote.name}

    if not _store(cache, key, admitted_entry):
        return None

    return cache.load(key, digest, read, quarantine=True)


def _generates(entry, generated, counters_delta):
    # Whether an entry from outside is what the definition generates here.
    return (
        entry.variants["cuda"].source == generated.source
        and entry.kernel_name == generated.kernel_name
        and entry.launch_name == generated.launch_name
        and tuple(entry.counters_delta) == tuple(counters_delta)
    )


def _mark_verified(cache, key, entry):
    try:
        cache.mark_verified(key, entry.variants["cuda"].digest)
    except (OSError, ValueError) as error:
        logger.info(
            "ninetoothed-ascend: could not record that the entry of kernel `%s` "
            "is verified (it is compared again next time): %s",
            entry.kernel_name,
            error,
        )

        return False

    return True


def _record(digest, key, entry, origin):
    return {
        "definition": digest,
        "key": key,
        "kernel_name": entry.kernel_name,
        "launch_name": entry.launch_name,
        "counters_delta": list(entry.counters_delta),
        "origin": origin,
        "max_num_configs": (entry.launch or {}).get("max_num_configs"),
        "source": entry.variants["cuda"].source,
    }


def _generate(annotated_application, options, properties, counters_before):
    try:
        application = annotated_application()
        generated = generate_source(application, properties=properties, **options)
    except Exception as error:
        name = options["kernel_name"] or getattr(
            annotated_application, "__name__", "kernel"
        )
        error.add_note(
            f"ninetoothed-ascend: NineToothed could not generate kernel `{name}`; "
            "no variant was built. Fix the kernel so that ninetoothed.make accepts it."
        )
        raise

    counters_after = counters()

    return generated, tuple(
        after - before for after, before in zip(counters_after, counters_before)
    )


def _entry(generated, counters_delta, all_variants=False):
    # NineToothed's own source and the variant the first call most likely
    # needs, unless asked for all: the others are built at their first use
    # (``Handle.build``). The launch facts come from the first pipeline's
    # parse (``build_variant``), else from one parse of the source.
    launch = {}

    if all_variants:
        variants = {name: build_variant(generated, name, launch) for name in VARIANTS}
    else:
        variants = {"cuda": build_variant(generated, "cuda")}
        likely = host.likely_call_device_type()

        if likely not in variants:
            try:
                variants[likely] = build_variant(generated, likely, launch)
            except Exception as error:
                # Built ahead of its use, a variant must not cost the kernel
                # its make: left out, it is built again where it is first
                # used, and what it raises outside its pipeline (a pass's
                # failure is the variant's stored error) is raised there, as
                # it was before make built it.
                logger.info(
                    "ninetoothed-ascend: the %s variant of kernel `%s` is built at "
                    "its first use instead: %s",
                    likely,
                    generated.kernel_name,
                    error,
                )

    if "requirements" not in launch:
        launch.update(
            read_launch_facts(
                generated.source, generated.kernel_name, generated.launch_name
            )
        )

    if generated.max_num_configs is not None:
        launch["max_num_configs"] = generated.max_num_configs

    return Entry(
        kernel_name=generated.kernel_name,
        launch_name=generated.launch_name,
        variants=variants,
        counters_delta=counters_delta,
        launch=launch,
        environment=environment_digest(),
    )


def _store(cache, key, entry, raise_errors=False):
    try:
        cache.store(key, entry)
    except OSError as error:
        if raise_errors:
            raise

        warnings.warn(
            f"ninetoothed-ascend: could not cache kernel `{entry.kernel_name}` in "
            f"{cache.directory} ({error}); it runs from memory and will be generated "
            "again in the next process.",
            stacklevel=3,
        )

        return False

    return True


__all__ = [
    "VARIANTS",
    "GeneratedSource",
    "Handle",
    "MixedDevicesError",
    "VariantMismatchError",
    "VariantUnavailableError",
    "admit_authenticated_entry",
    "admit_entry",
    "admitted",
    "from_generated",
    "jit",
    "make",
    "observe",
    "rebuild",
    "unobserve",
]
