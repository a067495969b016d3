"""The NPU variant's autotuner on triton-ascend: a config BiShengIR refuses for the Unified Buffer is dropped, remembered, and the next one compiled.

triton-ascend 3.2.0 compiles each config at the launch. Its ``npubin`` stage
runs ``bishengir-compile`` with ``subprocess.run(..., check=True)``
(``triton/backends/ascend/compiler.py``, ``linalg_to_bin_enable_npu_compile_A2_A3``),
and ``triton.compiler.compile`` turns the ``CalledProcessError`` into
``MLIRCompilationError("ConvertLinalgRToBinary", <the compiler's stderr>)``
(``triton/compiler/compiler.py``, the stage loop of ``compile``). BiShengIR
writes a Unified Buffer overflow to stderr as ``ub overflow, requires N bits
while M bits available`` (measured with ascendnpu-ir 1.2.0 on
``examples/elementwise/add.py``, fp32, ``BLOCK_SIZE`` 8192, strides not
specialized: 4,194,304 bits required, 1,572,864 available). triton-ascend's
``Autotuner._bench`` (``triton/runtime/autotuner.py``) times such a config
``inf`` and says nothing; where every config is refused it launches the
first one anyway, which fails again with the compiler's traceback; with one
config it does not benchmark, and the launch fails likewise. No refusal is
kept: every new process compiles the refused configs again.

:func:`drop_refused_configs` (a decorator of the NPU variant's autotuner
factory) and :func:`with_refusals` give the NPU variant's autotuner these
rules instead (on triton-ascend only; anywhere else, an emulation, the
autotuner is returned as it is):

- a config whose compile BiShengIR refuses for the UB is timed ``inf``, with
  one warning naming the kernel, the config and the bytes, and the next is
  compiled;
- where no config the launch tries compiles and BiShengIR refused at least
  one (one config included),
  :class:`~ninetoothed_ascend.runtime.ub.UnifiedBufferOverflowError` names the
  kernel, the bytes and what to do; no second compile, no compiler traceback;
- each refusal is remembered in the plugin's cache
  (:meth:`~ninetoothed_ascend.cache.Cache.remember`, kind ``"refusal"``) under
  a stamp of what decides the compile: the NPU variant's source, the SoC,
  triton-ascend's version and the ``bishengir-compile`` it runs, the kernel, the config's keyword arguments and compiler options, and the
  launch's specialization as triton-ascend 3.2's JIT applies it
  (``mangle_type`` and ``compute_spec_key`` of ``triton/runtime/jit.py``: each
  argument's type, ``"D"`` for a pointer or integer divisible by 16, ``"1"``
  for an integer equal to 1; constexpr values as given). A later autotuner,
  in this process or another, skips a remembered config without compiling it;
- any other compile failure (``MLIRCompilationError``, ``OutOfResources``,
  ``CompileTimeAssertionFailure``) is timed ``inf`` as triton-ascend times it,
  and not remembered; where no config compiles and BiShengIR refused none,
  the first such failure is raised as the compiler raised it. Any other
  exception is raised at once.

A remembered refusal is data read from the cache directory: it is accepted
only as a JSON object of two byte counts, required above available; anything
else is ignored (logged) and the config compiled again. Nothing runs from it.
"""

import functools
import hashlib
import json
import logging
import os
import shutil
import warnings

from ninetoothed_ascend import host
from ninetoothed_ascend.check import bishengir
from ninetoothed_ascend.runtime.ub import UnifiedBufferOverflowError

logger = logging.getLogger(__name__)

#: The :data:`~ninetoothed_ascend.cache.MEMO_KINDS` kind refusals are remembered under.
MEMO_KIND = "refusal"


def drop_refused_configs(kernel, variant, soc, cache=None):
    """A decorator for a factory of an autotuner (``DeferAutotune``'s): what the factory returns goes through :func:`with_refusals`.

    :param kernel: ``str``, the kernel's name.
    :param variant: ``str``, sha256 hex of the NPU variant's source.
    :param soc: ``str``, the SoC the variant was generated for.
    :param cache: see :func:`with_refusals`.
    :return: ``callable(factory) -> factory``.
    """

    def decorate(factory):
        @functools.wraps(factory)
        def made():
            return with_refusals(factory(), kernel, variant, soc, cache)

        return made

    return decorate


def with_refusals(autotuner, kernel, variant, soc, cache=None):
    """Give ``autotuner`` the rules of this module where ``import triton`` is triton-ascend; else return it as it is.

    :param autotuner: what ``triton.autotune(...)(kernel)`` returned.
    :param kernel: ``str``, the kernel's name (for messages and the stamp).
    :param variant: ``str``, sha256 hex of the NPU variant's source (the
        stamp's part that changes with every pass and NineToothed output).
    :param soc: ``str``, the SoC the variant was generated for
        (``Target.soc.name``); the launch's own, from the active driver's
        target, where there is one.
    :param cache: a :class:`~ninetoothed_ascend.cache.Cache` for the
        refusals, or ``None``: the default one, opened at the first compile
        that needs it.
    :return: a ``RefusingAutotuner`` (a subclass of triton-ascend's
        ``Autotuner``, with the same state) or ``autotuner`` itself.
    """

    if not host.triton_package_is_ascend():
        return autotuner

    from triton.runtime.autotuner import Autotuner

    if not isinstance(autotuner, Autotuner):
        return autotuner

    # The autotuner as ``triton.autotune`` built it, with every argument the
    # kernel gave, under a class that handles a refused compile.
    wrapped = object.__new__(_refusing_class())
    wrapped.__dict__.update(autotuner.__dict__)
    wrapped.refusals = Refusals(kernel, variant, soc, cache)

    return wrapped


class Refusals:
    """The refused configs of one kernel's NPU variant: remembered in the cache, read back, and reported.

    :param kernel: ``str``, the kernel's name.
    :param variant: ``str``, sha256 hex of the NPU variant's source.
    :param soc: ``str``, the SoC name the variant was generated for.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` or ``None`` (the
        default one, opened when first needed).
    """

    def __init__(self, kernel, variant, soc, cache=None):
        self.kernel = kernel
        self.variant = variant
        self.generated_for = soc
        self._cache = cache
        self._soc = None
        self._compiler = None

    @property
    def cache(self):
        if self._cache is None:
            from ninetoothed_ascend.cache import Cache

            self._cache = Cache()

        return self._cache

    @property
    def soc(self):
        """The SoC a launch compiles for: the active driver's target (an Ascend host), else the one the variant was generated for."""

        if self._soc is None:
            try:
                import triton.runtime.driver

                self._soc = triton.runtime.driver.active.get_current_target().arch
            except Exception:
                # No NPU driver (the tests of this module run on a CPU).
                self._soc = self.generated_for

        return self._soc

    @property
    def compiler(self):
        """What names the NPU compiler a launch runs: triton-ascend's version and the ``bishengir-compile`` it finds, by path, size and modification time.

        triton-ascend 3.2.0 runs the ``bishengir-compile`` on ``PATH``, else
        ``$TRITON_NPU_COMPILER_PATH/npuc`` (``_get_npucompiler_path`` in
        ``triton/backends/ascend/utils.py``): another CANN may plan the UB
        otherwise, so its refusals are not this one's.
        """

        if self._compiler is None:
            found = shutil.which("bishengir-compile") or os.path.join(
                os.getenv("TRITON_NPU_COMPILER_PATH", ""), "npuc"
            )

            try:
                status = os.stat(found)
                identity = [os.path.realpath(found), status.st_size, status.st_mtime_ns]
            except OSError:
                identity = None

            self._compiler = [host.version(host.TRITON_ASCEND), identity]

        return self._compiler

    def stamp(self, config, specialization):
        """sha256 hex of what decides the compile of ``config`` (``dict`` of its keyword arguments and options) at a launch of ``specialization`` (``tuple``, :func:`specialization`)."""

        decided = {
            "variant": self.variant,
            "soc": self.soc,
            "compiler": self.compiler,
            "kernel": self.kernel,
            "config": sorted((name, repr(value)) for name, value in config.items()),
            "specialization": [list(item) for item in specialization],
        }

        return hashlib.sha256(json.dumps(decided).encode()).hexdigest()

    def recall(self, stamp):
        """``(required, available)`` bytes of a remembered refusal, or ``None``.

        A record that is not two such byte counts is ignored (logged).
        """

        text = self.cache.memo(MEMO_KIND, stamp)

        if text is None:
            return None

        try:
            record = json.loads(text)
            required, available = record["required_bytes"], record["available_bytes"]
        except (ValueError, TypeError, KeyError):
            required = available = None

        if not (
            type(required) is int
            and type(available) is int
            and required > available > 0
        ):
            logger.warning(
                "ninetoothed-ascend: ignoring the remembered refusal %s of kernel "
                "`%s` (not two byte counts, required above available); compiling "
                "the config again",
                stamp,
                self.kernel,
            )

            return None

        return required, available

    def remember(self, stamp, config, required, available):
        """Keep a refusal of ``config`` (``dict``) needing ``required`` of ``available`` bytes under ``stamp``."""

        self.cache.remember(
            MEMO_KIND,
            stamp,
            json.dumps(
                {
                    "kernel": self.kernel,
                    "soc": self.soc,
                    "config": {name: repr(value) for name, value in config.items()},
                    "required_bytes": required,
                    "available_bytes": available,
                }
            ),
        )

    def warn(self, config, required, available, remembered):
        """Say, in one line, that ``config`` (``dict``) is dropped."""

        warnings.warn(
            f"ninetoothed-ascend: kernel `{self.kernel}` (NPU variant): BiShengIR "
            f"{'refused earlier' if remembered else 'refused'} config "
            f"{_shown(config)} on {self.soc}: it needs {required} bytes of Unified "
            f"Buffer, {available} available; trying the next config.",
            stacklevel=2,
        )

    def error(self, refused):
        """:class:`UnifiedBufferOverflowError` for a launch none of whose configs compiled: ``refused`` is ``[(config, required, available)]``, each a refusal."""

        config, required, available = min(refused, key=lambda item: item[1])

        return UnifiedBufferOverflowError(
            f"kernel `{self.kernel}` (NPU variant) cannot run this launch on "
            f"{self.soc}: BiShengIR refused {len(refused)} of its configs for the "
            f"Unified Buffer and none compiled; the smallest, {_shown(config)}, "
            f"needs {required} bytes, {available} available (docs/ub.md). Pass "
            "smaller block sizes (configs), smaller or contiguous inputs, or tile "
            "fewer tensors per program."
        )


def refusal(error):
    """``(required, available)`` bytes where ``error`` (or an exception it was raised from) is BiShengIR's UB overflow; else ``None``.

    Reads the compiler's output wherever triton-ascend 3.2.0 carries it: the
    ``stderr`` and ``stdout`` of ``subprocess.CalledProcessError`` and the
    message of ``MLIRCompilationError``
    (:func:`~ninetoothed_ascend.check.bishengir.parse_output` reads it).
    """

    seen = set()

    while error is not None and id(error) not in seen:
        seen.add(id(error))
        texts = [str(error)]

        for stream in ("stderr", "stdout"):
            output = getattr(error, stream, None)

            if isinstance(output, bytes):
                output = output.decode("utf-8", "replace")

            if isinstance(output, str):
                texts.append(output)

        result = bishengir.parse_output("\n".join(texts))

        if result.outcome == "ub_overflow":
            return result.ub_required_bytes, result.ub_available_bytes

        error = error.__cause__ or error.__context__

    return None


def specialization(jit_function, args, meta):
    """What triton-ascend 3.2's JIT specializes a launch on, argument by argument.

    :param jit_function: the ``triton.runtime.JITFunction`` launched.
    :param args: ``tuple``, the positional arguments of the launch.
    :param meta: ``dict``, the keyword arguments of the launch (constexprs
        the caller or the config passes; others are ignored).
    :return: ``tuple`` of ``(name, type, key)``: for a parameter that is not
        a constexpr its ``mangle_type`` and ``compute_spec_key``
        (``triton/runtime/jit.py``: ``"D"`` a pointer or integer divisible by
        16, ``"1"`` an integer equal to 1, ``"N"`` neither; ``align`` off for
        a ``do_not_specialize`` parameter), for a constexpr ``"constexpr"``
        and its value's ``repr``.
    """

    from triton.runtime.jit import compute_spec_key, mangle_type

    values = dict(zip(jit_function.arg_names, args)) | dict(meta)
    items = []

    for parameter in jit_function.params:
        if parameter.name not in values:
            continue

        value = values[parameter.name]

        if parameter.is_constexpr:
            items.append((parameter.name, "constexpr", repr(value)))
        else:
            items.append(
                (
                    parameter.name,
                    mangle_type(value),
                    compute_spec_key(value, align=not parameter.do_not_specialize),
                )
            )

    return tuple(items)


def _shown(config):
    # The block sizes as the caller named them (NineToothed prefixes them).
    return (
        "{"
        + ", ".join(
            f"{name.rsplit('prefix_', 1)[-1]}: {value}"
            for name, value in config.items()
        )
        + "}"
    )


@functools.cache
def _refusing_class():
    # Made at the first use: it subclasses triton-ascend's ``Autotuner``,
    # which only exists where ``import triton`` is triton-ascend.
    from triton.compiler.errors import CompileTimeAssertionFailure, MLIRCompilationError
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.errors import OutOfResources

    class RefusingAutotuner(Autotuner):
        """triton-ascend's ``Autotuner`` with the rules of :mod:`ninetoothed_ascend.runtime.refused_configs`."""

        def run(self, *args, **kwargs):
            if len(self.configs) != 1:
                return super().run(*args, **kwargs)

            # One config: triton-ascend neither prunes nor benchmarks it.
            (config,) = self.configs
            stamp = self._stamp(args, kwargs, config)
            remembered = self.refusals.recall(stamp)

            if remembered is not None:
                raise self.refusals.error([(config.kwargs, *remembered)])

            try:
                return super().run(*args, **kwargs)
            except Exception as error:
                found = refusal(error)

                if found is None:
                    raise

                self.refusals.remember(stamp, config.all_kwargs(), *found)

                raise self.refusals.error([(config.kwargs, *found)]) from None

        def prune_configs(self, kwargs):
            pruned = super().prune_configs(kwargs)
            args = tuple(self.nargs.values())
            self._refused = []
            kept = []

            for config in pruned:
                remembered = self.refusals.recall(self._stamp(args, kwargs, config))

                if remembered is None:
                    kept.append(config)
                else:
                    self._refused.append((config.kwargs, *remembered))
                    self.refusals.warn(config.kwargs, *remembered, remembered=True)

            if pruned and not kept:
                raise self.refusals.error(self._refused)

            # ``_bench`` compiles them one after another: at the last, it
            # knows whether any compiled.
            self._pending = len(kept)
            self._compiled = 0
            self._failed = []

            return kept

        def _bench(self, *args, config, **meta):
            self._pending -= 1
            found = None

            try:
                timing = self.do_bench(
                    self._launcher(args, config, meta), quantiles=(0.5, 0.2, 0.8)
                )
            except (OutOfResources, CompileTimeAssertionFailure) as error:
                # As triton-ascend's ``_bench``.
                self._failed.append(error)
                timing = [float("inf")] * 3
            except Exception as error:
                found = refusal(error)

                if found is None:
                    if not isinstance(error, MLIRCompilationError):
                        raise

                    # As triton-ascend's ``_bench``: another config may compile.
                    self._failed.append(error)
                    timing = [float("inf")] * 3

                else:
                    self.refusals.remember(
                        self._stamp(args, meta, config), config.all_kwargs(), *found
                    )
                    self._refused.append((config.kwargs, *found))
                    timing = [float("inf")] * 3
            else:
                self._compiled += 1

            # None compiled: triton-ascend would launch the first config,
            # compiling it again to fail with the compiler's traceback.
            if self._pending == 0 and self._compiled == 0:
                if self._refused:
                    raise self.refusals.error(self._refused) from None

                if self._failed:
                    raise self._failed[0]

            if found is not None:
                self.refusals.warn(config.kwargs, *found, remembered=False)

            return timing

        def _launcher(self, args, config, meta):
            # As triton-ascend's ``_bench``: the hooks around ``fn.run``.
            conflicts = meta.keys() & config.kwargs.keys()

            if conflicts:
                raise ValueError(
                    f"Conflicting meta-parameters: {', '.join(conflicts)}. Make "
                    "sure that you don't re-define auto-tuned symbols."
                )

            current = dict(meta, **config.all_kwargs())
            full_nargs = {**self.nargs, **current}

            def kernel_call():
                if config.pre_hook:
                    config.pre_hook(full_nargs)

                self.pre_hook(full_nargs)

                try:
                    self.fn.run(*args, **current)
                except Exception as error:
                    try:
                        self.post_hook(full_nargs, exception=error)
                    finally:
                        raise

                self.post_hook(full_nargs, exception=None)

            return kernel_call

        def _stamp(self, args, meta, config):
            jit_function = self.fn

            while not hasattr(jit_function, "params"):
                jit_function = jit_function.fn

            return self.refusals.stamp(
                config.all_kwargs(),
                specialization(jit_function, args, meta | config.all_kwargs()),
            )

    return RefusingAutotuner
