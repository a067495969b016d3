"""``make`` and ``jit``: NineToothed's entry points, returning dual-variant handles.

The data path is one straight line: NineToothed kernel → generated Triton
(:mod:`~ninetoothed_ascend.jit.ninetoothed_adapter`) → passes
(:mod:`~ninetoothed_ascend.compiler.pipelines`) → source → cache (:mod:`~ninetoothed_ascend.cache`) → import → dispatch
(:class:`~ninetoothed_ascend.jit.handle.Handle`).
"""

import dataclasses
import logging
import warnings

from ninetoothed_ascend import host

# First: the adapter chooses where NineToothed keeps its generated files
# before anything imports NineToothed.
from ninetoothed_ascend.jit import ninetoothed_adapter  # noqa: F401  # isort: skip
from ninetoothed_ascend.cache import Cache, Entry
from ninetoothed_ascend.compiler.launch import read_launch_facts
from ninetoothed_ascend.jit.dispatch import new_handle
from ninetoothed_ascend.jit.fingerprint import (
    Memos,
    definition_digest,
    device_properties,
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
    later processes. ``make`` generates NineToothed's source (the CUDA
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
    of ``"module:qualname"`` of the functions it was made from) and
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
        lambda: _generate(annotated_application, options, properties, counters_before),
        origin,
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
        lambda: _entry(generated, (0, 0)),
        origin or {},
        launches={"cuda": cuda_launch} if cuda_launch is not None else None,
    )


def rebuild(digest, generated, counters_delta, cache=None, expected=None):
    """Build and cache the variants of a kernel from NineToothed's recorded source (``warm`` from a manifest).

    :param digest: ``str``, the kernel's definition digest.
    :param generated: :class:`~ninetoothed_ascend.jit.ninetoothed_adapter.GeneratedSource`.
    :param counters_delta: ``(int, int)``.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` or ``None`` (the default one).
    :param expected: ``dict`` from variant name to the sha256 (or ``None``)
        each built variant must have, or ``None`` not to compare. Variants
        that differ are not stored.
    :return: ``(handle, built)``; ``built`` is ``False`` when the entry was
        already cached with every variant.
    :raises VariantMismatchError: a built variant differs from ``expected``;
        nothing was stored.
    :raises OSError: the built entry could not be stored.
    """

    built = []

    def build():
        built.append(True)
        entry = _entry(generated, tuple(counters_delta), all_variants=True)

        if expected is not None:
            _check_digests(entry, expected)

        return entry

    handle = _load_or_build(
        digest, build, None, cache=cache, replay=False, store_errors=True
    )

    if not built:
        # Cached by a program that built only the variants it used.
        check = None

        if expected is not None:

            def check(entry):
                _check_digests(entry, expected)

        built += handle.build(raise_store_errors=True, before_store=check)

        if check is not None and not built:
            check(handle.entry)

    return handle, bool(built)


class VariantMismatchError(ValueError):
    """Variants built from recorded source differ from the recorded digests."""


def _check_digests(entry, expected):
    digests = entry.digests()
    differing = sorted(
        name for name in VARIANTS if digests.get(name) != expected.get(name)
    )

    if differing:
        raise VariantMismatchError(
            f"variants {', '.join(differing)} differ from the recorded ones, with "
            "the same ninetoothed-ascend; nothing was cached. Record the manifest "
            "again from a source you trust"
        )


def _load_or_build(
    digest,
    build,
    origin,
    cache=None,
    replay=True,
    store_errors=False,
    launches=None,
    memos=None,
):
    cache = cache if cache is not None else Cache()
    key = environment_key(digest, memos)

    # What a cold ``make`` builds (:func:`_entry`): NineToothed's source and
    # the variant the first call most likely needs. The handle reads another
    # where it is first needed.
    read = ("cuda", host.likely_call_device_type())
    entry = cache.load(key, digest, read)
    built = False
    stored = True

    if entry is not None and memos is not None:
        memos.store()

    if entry is None:
        with cache.lock(key):
            entry = cache.load(key, digest, read)

            if entry is None:
                entry = dataclasses.replace(build(), definition=digest)
                stored = _store(cache, key, entry, raise_errors=store_errors)
                replay = False
                built = True

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


def _record(digest, key, entry, origin):
    return {
        "definition": digest,
        "key": key,
        "kernel_name": entry.kernel_name,
        "launch_name": entry.launch_name,
        "counters_delta": list(entry.counters_delta),
        "origin": origin,
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

    return _entry(
        generated,
        tuple(after - before for after, before in zip(counters_after, counters_before)),
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

    return Entry(
        kernel_name=generated.kernel_name,
        launch_name=generated.launch_name,
        variants=variants,
        counters_delta=counters_delta,
        launch=launch,
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
    "from_generated",
    "jit",
    "make",
    "observe",
    "rebuild",
    "unobserve",
]
