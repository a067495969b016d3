"""``make`` and ``jit``: NineToothed's entry points, returning dual-variant handles.

The data path is one straight line: NineToothed kernel → generated Triton
(:mod:`~ninetoothed_ascend.jit.ninetoothed_adapter`) → passes
(:mod:`~ninetoothed_ascend.ascendify`, :mod:`~ninetoothed_ascend.jit.interpreter`)
→ source → cache (:mod:`~ninetoothed_ascend.cache`) → import → dispatch
(:class:`~ninetoothed_ascend.jit.handle.Handle`).
"""

import warnings

import ninetoothed

from ninetoothed_ascend.cache import Cache, Entry
from ninetoothed_ascend.jit.dispatch import new_handle
from ninetoothed_ascend.jit.fingerprint import kernel_key
from ninetoothed_ascend.jit.handle import (
    Handle,
    MixedDevicesError,
    VariantUnavailableError,
)
from ninetoothed_ascend.jit.ninetoothed_adapter import (
    advance_counters,
    annotate,
    counters,
    device_properties,
    generate_source,
)
from ninetoothed_ascend.jit.variants import VARIANTS, build_variants


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
    later processes. Other callers ask NineToothed for ahead-of-time C
    sources, which have no NPU variant; they are passed to
    ``ninetoothed.make`` unchanged.

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
        return ninetoothed.make(
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
            return ninetoothed.jit(
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


def _handle(definition, annotated_application, options):
    properties = device_properties()
    counters_before = counters()
    key = kernel_key(definition, properties, counters_before)
    cache = Cache()

    entry = cache.load(key)

    if entry is None:
        with cache.lock(key):
            entry = cache.load(key)

            if entry is None:
                entry = _generate(
                    annotated_application, options, properties, counters_before
                )
                _store(cache, key, entry)

                return new_handle(entry.kernel_name, key, entry)

    advance_counters(entry.counters_delta)

    return new_handle(entry.kernel_name, key, entry)


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

    return Entry(
        kernel_name=generated.kernel_name,
        launch_name=generated.launch_name,
        variants=build_variants(generated),
        counters_delta=tuple(
            after - before for after, before in zip(counters_after, counters_before)
        ),
    )


def _store(cache, key, entry):
    try:
        cache.store(key, entry)
    except OSError as error:
        warnings.warn(
            f"ninetoothed-ascend: could not cache kernel `{entry.kernel_name}` in "
            f"{cache.directory} ({error}); it runs from memory and will be generated "
            "again in the next process.",
            stacklevel=3,
        )


__all__ = [
    "VARIANTS",
    "Handle",
    "MixedDevicesError",
    "VariantUnavailableError",
    "jit",
    "make",
]
