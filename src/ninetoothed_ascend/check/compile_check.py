"""The Ascend compile check: an NPU variant through triton-ascend's ``ttir`` and ``ttadapter`` stages, then BiShengIR.

Runs only where ``import triton`` is triton-ascend (3.2 API). It needs no NPU
and no CANN: ``ttir`` is Triton's frontend and TTIR passes, ``ttadapter`` runs
``triton-adapter-opt`` (shipped in the wheel) to lower TTIR to Linalg/HIVM.
Recipe: docs/ascend.md, "Compile stages without an NPU". The
third stage, optional, is BiShengIR (:mod:`ninetoothed_ascend.check.bishengir`,
``bishengir-compile`` of ``ascendnpu-ir``), up to the external ``hivmc`` step;
that is where the Unified Buffer is planned. The kernel compiled is the one a
launch of the recorded call compiles (:func:`launch_arguments`). A kernel
that passes has cleared everything short of ``hivmc`` (CANN); it has not run
on an NPU.
"""

import ast
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import math
import subprocess
import threading
import time

import torch

from ninetoothed_ascend.check import bishengir as bishengir_compiler
from ninetoothed_ascend.check import memos
from ninetoothed_ascend.compiler.facts import stored_layout
from ninetoothed_ascend.compiler.npu.ub import fit_unified_buffer as ub_configs
from ninetoothed_ascend.compiler.npu.ub import model as ub_model
from ninetoothed_ascend.compiler.syntax import import_aliases

#: The SoC the check compiles for (Atlas A2).
DEFAULT_ARCH = bishengir_compiler.DEFAULT_ARCH

#: Which configs :func:`check_variant` compiles: those the autotuner tries
#: for the recorded launch, or every config in the variant's source.
CONFIG_SETS = ("launch", "all")

#: How :func:`check_variant` orders configs to keep the smallest and the
#: largest: by the UB model's bytes (``ub_model.footprint``, the block-size
#: product where the model cannot size a tile) or by the block-size product.
EXTREMES = ("bytes", "block")

_TORCH_TO_TRITON = {
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float32: "fp32",
    torch.float64: "fp64",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.uint8: "u8",
    torch.bool: "i1",
}


class StageError(RuntimeError):
    """A compile stage failed.

    :param stage: ``"ttir"`` or ``"ttadapter"``.
    :param detail: the compiler's message.
    """

    def __init__(self, stage, detail):
        super().__init__(f"[{stage}] {detail}")
        self.stage = stage
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One compiled config.

    :param config: ``dict`` of constexpr values (block sizes and sizes rounded up to a power of two).
    :param seconds: ``dict`` stage name (``"ttir"``, ``"ttadapter"``,
        ``"bishengir"``) -> seconds; a Linalg text compiled earlier in the
        same :class:`BiShengIRStage` repeats that compile's seconds.
    :param linalg: the ``ttadapter`` output (MLIR text).
    :param bishengir: :class:`~ninetoothed_ascend.check.bishengir.BiShengIRResult`,
        or ``None`` where the BiShengIR stage did not run.
    :param ub_model_bytes: ``int``, the UB model's peak for this config's
        constants, in bytes (:func:`~ninetoothed_ascend.compiler.npu.ub.model.footprint`),
        or ``None`` where the model cannot size the kernel's tiles.
    """

    config: dict
    seconds: dict
    linalg: str
    bishengir: bishengir_compiler.BiShengIRResult | None = None
    ub_model_bytes: int | None = None


class BiShengIRStage:
    """The BiShengIR stage of a check run: each distinct Linalg text compiled once, up to ``jobs`` at a time.

    Identical texts (by sha256) share one compile: configs and dtypes often
    lower to the same Linalg. With a ``cache``, an outcome is remembered
    there (by the text, the flags, the SoC and ascendnpu-ir's version), and
    a later stage, in this process or another, takes it instead of
    compiling; a timeout, which depends on the machine's load, is not
    remembered. A context manager; closing it waits for the compiles in
    flight.

    :param arch: ``str``, the SoC (see :mod:`ninetoothed_ascend.check.bishengir`).
    :param jobs: ``int`` >= 1, compiles run at once (threads; each compile is
        a ``bishengir-compile`` process).
    :param timeout: ``float`` seconds per compile, or ``None``.
    :param memory_report: ``bool``, ask BiShengIR for its UB plan
        (``planned_ub_bytes``).
    :param single_buffered: ``bool``, compile with ``multibuffer=False``
        whatever the launch's options: the plan BiShengIR falls back to on
        an overflow, which the UB model estimates. A measurement of the
        model, not what a launch compiles.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` to remember
        outcomes in, or ``None``.
    :raises ValueError: ``arch`` is not a SoC BiShengIR knows.
    :raises ninetoothed_ascend.check.bishengir.BiShengIRNotInstalled: ``ascendnpu-ir``
        is missing (its message is the one line to print).
    """

    def __init__(
        self,
        arch=DEFAULT_ARCH,
        *,
        jobs=1,
        timeout=None,
        memory_report=False,
        single_buffered=False,
        cache=None,
    ):
        bishengir_compiler.compiler_path(arch)
        self.arch = arch
        self.single_buffered = single_buffered
        self.timeout = timeout
        self.memory_report = memory_report
        self.cache = cache
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        self._futures = {}
        self._lock = threading.Lock()

    def submit(self, linalg, options=None):
        """Start (or find) the compile of ``linalg`` (``str``) with a launch's ``options`` (``dict``, see :func:`~ninetoothed_ascend.check.bishengir.option_flags`); return a ``concurrent.futures.Future`` of its :class:`~ninetoothed_ascend.check.bishengir.BiShengIRResult`."""

        options = dict(options or {})

        if self.single_buffered:
            options["multibuffer"] = False

        flags = bishengir_compiler.option_flags(options, self.arch)
        key = hashlib.sha256(
            repr(
                (
                    linalg,
                    flags,
                    self.arch,
                    self.memory_report,
                    bishengir_compiler.version(),
                )
            ).encode()
        ).hexdigest()

        with self._lock:
            if key not in self._futures:
                remembered = self._recall(key)

                if remembered is not None:
                    self._futures[key] = concurrent.futures.Future()
                    self._futures[key].set_result(remembered)
                else:
                    self._futures[key] = self._executor.submit(
                        self._compile, key, linalg, options
                    )

            return self._futures[key]

    def _compile(self, key, linalg, options):
        result = bishengir_compiler.compile_linalg(
            linalg,
            self.arch,
            options=options,
            memory_report=self.memory_report,
            timeout=self.timeout,
        )

        if self.cache is not None:
            memos.remember_outcome(self.cache, key, result)

        return result

    def _recall(self, key):
        return memos.recall_outcome(self.cache, key) if self.cache is not None else None

    def close(self):
        self._executor.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def compile_stages(
    jit_function,
    signature,
    constants,
    arch=DEFAULT_ARCH,
    *,
    attrs=None,
    options=None,
    cache=None,
):
    """Run ``ttir`` and ``ttadapter`` on a ``triton.jit`` function.

    With a ``cache``, what they made is remembered there under the key
    ``triton.compile`` gives the same compile (Triton's version, the source
    and its specialization, the backend, the options and the environment
    variables Triton's cache honours), so a kernel checked again, by
    another check or another process, is not compiled again: the Linalg
    text and the seconds of the compile that made it come back. A failure
    is not remembered. The key does not see a stage replaced in-process
    (a test's recorder): such a caller passes no cache.

    :param jit_function: ``triton.runtime.JITFunction``.
    :param signature: ``dict`` parameter name -> Triton type (``"*fp16"``,
        ``"i32"``, ...) for every non-constexpr parameter.
    :param constants: ``dict`` parameter name -> value for every constexpr
        parameter (and every argument a launch specializes to a constant).
    :param arch: ``str``, the Ascend SoC.
    :param attrs: the backend's ``AttrsDescriptor`` of a launch (from
        :func:`launch_arguments`), or ``None`` for no specialization.
    :param options: ``dict``, the launch's keywords that are not kernel
        parameters (from :func:`launch_arguments`), parsed by the backend as
        ``JITFunction.run`` parses them; ``None`` for none.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` to remember the
        stages' output in, or ``None`` to compile every time.
    :return: ``(linalg_text, seconds_per_stage)``.
    :raises StageError: naming the stage that failed and the compiler's message.
    """

    from triton._C.libtriton import get_cache_invalidating_env_vars, ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend, triton_key

    # Triton 3.2 reads the signature's values in order and ignores its keys.
    ordered = {
        name: signature[name]
        for name in jit_function.arg_names
        if name not in constants
    }
    target = GPUTarget("npu", arch, 0)
    backend = make_backend(target)
    options = backend.parse_options(dict(options or {}))
    source = ASTSource(jit_function, ordered, dict(constants), attrs)
    key = f"{source.hash()}-{backend.hash()}-{options.hash()}"
    environment = get_cache_invalidating_env_vars()
    stamp = hashlib.sha256(
        f"{triton_key()}-{key}-{sorted(environment.items())}".encode()
    ).hexdigest()

    if cache is not None and (remembered := memos.recall_stages(cache, stamp)):
        return remembered

    metadata = {
        "hash": hashlib.sha256(key.encode()).hexdigest(),
        "target": target,
        **options.__dict__,
        **environment,
    }
    stages = {}
    backend.add_stages(stages, options)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    seconds = {}

    try:
        start = time.perf_counter()

        try:
            module = source.make_ir(
                options,
                backend.get_codegen_implementation(),
                backend.get_module_map(),
                context,
            )
            module = stages["ttir"](module, metadata)
        except Exception as error:
            raise StageError("ttir", f"{type(error).__name__}: {error}") from error

        seconds["ttir"] = time.perf_counter() - start
        start = time.perf_counter()

        try:
            linalg = stages["ttadapter"](module, metadata)
        except subprocess.CalledProcessError as error:
            stderr = (error.stderr or b"").decode("utf-8", "replace").strip()
            raise StageError(
                "ttadapter",
                f"triton-adapter-opt exited with {error.returncode}: {stderr}",
            ) from error
        except Exception as error:
            raise StageError("ttadapter", f"{type(error).__name__}: {error}") from error

        seconds["ttadapter"] = time.perf_counter() - start
    finally:
        # As ``triton.compile`` does, so that a later fork inherits no MLIR thread pool.
        context.disable_multithreading()

    if cache is not None:
        memos.remember_stages(cache, stamp, linalg, seconds)

    return linalg, seconds


def check_variant(
    handle,
    launch,
    *inputs,
    variant="npu",
    arch=DEFAULT_ARCH,
    configs="launch",
    extremes=None,
    bishengir=None,
    cache=None,
):
    """Compile-check a handle's variant for its autotune configs, with arguments from a real call.

    ``launch(kernel, *inputs)`` is called once with a recorder in place of
    the kernel, so that the argument types, their specialization and the
    constexpr values come from the same code path a real call takes;
    nothing is launched.

    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param launch: ``callable(kernel, *inputs)`` that calls ``kernel`` with
        the kernel's arguments (an example's ``launch``).
    :param inputs: tensors (any device; dtypes, shapes, strides and data
        pointer alignment matter).
    :param variant: ``str``, the variant to check.
    :param arch: ``str``, the Ascend SoC.
    :param configs: ``"launch"`` (the configs the autotuner tries for this
        launch) or ``"all"`` (every config in the variant's source).
    :param extremes: ``None`` (every config of the set), or ``"bytes"`` /
        ``"block"``: only the smallest and the largest config by
        :data:`EXTREMES`' order.
    :param bishengir: a :class:`BiShengIRStage` to run the third stage in,
        or ``None`` to stop after ``ttadapter``.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` that remembers
        the ``ttir`` and ``ttadapter`` output (:func:`compile_stages`), or
        ``None``.
    :return: ``list`` of :class:`CheckResult`, one per config checked.
    :raises StageError: for the first config that fails ``ttir`` or
        ``ttadapter``. A BiShengIR failure is a result, not an error.
    """

    kernel, arguments = launch_arguments(
        handle.module(variant), handle, launch, inputs, variant, arch, configs=configs
    )

    model = _UnifiedBufferModel(
        handle.source(variant),
        handle.kernel_name,
        handle.entry.variants[variant].facts,
    )

    if extremes is not None:
        arguments = _extremes(model, arguments, extremes)

    compiled = []

    for config, signature, constants, attrs, options in arguments:
        linalg, seconds = compile_stages(
            kernel,
            signature,
            constants,
            arch,
            attrs=attrs,
            options=options,
            cache=cache,
        )
        pending = bishengir.submit(linalg, options) if bishengir is not None else None
        compiled.append((config, seconds, linalg, pending, model.bytes(constants)))

    results = []

    for config, seconds, linalg, pending, model_bytes in compiled:
        outcome = pending.result() if pending is not None else None

        if outcome is not None:
            seconds = seconds | {"bishengir": outcome.seconds}

        results.append(CheckResult(config, seconds, linalg, outcome, model_bytes))

    return results


class _UnifiedBufferModel:
    # The UB model of the kernel a check compiles, read from the variant's
    # source once. ``facts``: the variant's (``Variant.facts``): the model
    # needs to know which constexprs choose a transposed access, which the
    # source does not say.

    def __init__(self, source, kernel_name, facts):
        tree = ast.parse(source)
        self.kernel = next(
            (
                node
                for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == kernel_name
            ),
            None,
        )
        self.aliases = import_aliases(tree)
        self.layout = stored_layout(facts, kernel_name)
        # A config's integers -> its peak: the extremes' order and the
        # results read each config's once.
        self._peaks = {}

    def bytes(self, constants):
        """The model's peak for a config's ``constants`` (its integers, as compiled), or ``None``."""

        if self.kernel is None:
            return None

        numbers = tuple(
            sorted(
                (name, value)
                for name, value in constants.items()
                if isinstance(value, int)
            )
        )

        if numbers not in self._peaks:
            try:
                self._peaks[numbers] = ub_model.footprint(
                    self.kernel, self.aliases, dict(numbers), layout=self.layout
                ).peak
            except ub_model.UnknownSize:
                self._peaks[numbers] = None

        return self._peaks[numbers]


def _extremes(model, arguments, order):
    if order not in EXTREMES:
        raise ValueError(f"extremes must be one of {EXTREMES}, not {order!r}")

    def product(config):
        return math.prod(value for value in config.values() if isinstance(value, int))

    def size(item):
        config, _, constants, _, _ = item
        bytes_ = model.bytes(constants) if order == "bytes" else None

        return (1, product(config)) if bytes_ is None else (0, bytes_)

    ordered = sorted(arguments, key=size)

    return ordered[:1] + ordered[1:][-1:]


def compile_arguments(module, handle, launch, inputs, variant):
    """Return a variant's kernel and, for each of its autotune configs, its signature and constants, from a real call.

    ``launch(kernel, *inputs)`` is called once with a recorder in place of
    the kernel; nothing is launched. Every integer is typed plainly
    (``i32``/``i64``), with no specialization: this works with any Triton
    (CUDA Triton included); :func:`launch_arguments` gives what
    triton-ascend's JIT compiles.

    :param module: the variant's module (``handle.module(variant)``, or an
        emulation of it).
    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param launch: ``callable(kernel, *inputs)`` (an example's ``launch``).
    :param inputs: tensors (any device; only dtypes and shapes matter).
    :param variant: ``str``, the variant whose source holds the configs.
    :return: ``(kernel, [(signature, constants), ...])``: the ``triton.jit``
        function, and the arguments :func:`compile_stages` takes, one pair
        per config (one pair when the variant does not autotune); the
        signature is in the kernel's parameter order.
    """

    kernel, calls = _config_calls(module, handle, launch, inputs, variant)
    arguments = []

    for named in calls:
        constants = {
            param.name: named[param.name]
            for param in kernel.params
            if param.is_constexpr
        }
        signature = {
            name: _triton_type(named[name])
            for name in kernel.arg_names
            if name not in constants
        }
        arguments.append((signature, constants))

    return kernel, arguments


def launch_arguments(
    module,
    handle,
    launch,
    inputs,
    variant="npu",
    arch=DEFAULT_ARCH,
    *,
    configs="launch",
):
    """Like :func:`compile_arguments`, but specialized as triton-ascend 3.2's JIT specializes a launch with these inputs.

    Each config's arguments go through the kernel's own binder
    (``JITFunction.create_binder``; its ``compute_spec_key`` marks integers
    equal to 1 and pointers and integers divisible by 16) and
    ``backend.get_attrs_descriptor(params, values)``, and the signature,
    constants and attributes are then formed as ``JITFunction.run`` forms
    them (triton/runtime/jit.py of triton-ascend 3.2.0): an integer equal to
    1 becomes a constant, so a stride of 1 makes an access contiguous
    (docs/ascend.md, "What a launch compiles"). Pointer alignment
    comes from ``data_ptr()``: CPU tensors from torch's allocator are
    aligned to far more than 16 bytes, as device allocations are, but a view
    at an element offset is not. Needs triton-ascend as ``triton``.

    :param module: the variant's module (``handle.module(variant)``).
    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param launch: ``callable(kernel, *inputs)`` (an example's ``launch``).
    :param inputs: tensors (any device; dtypes, shapes, strides and the
        alignment of their data pointers matter).
    :param variant: ``str``, the variant whose source holds the configs.
    :param arch: ``str``, the Ascend SoC.
    :param configs: ``"launch"`` or ``"all"`` (:data:`CONFIG_SETS`).
    :return: ``(kernel, [(config, signature, constants, attrs, options), ...])``:
        one tuple per config; ``config`` holds the config's constexpr values,
        ``attrs`` is the backend's ``AttrsDescriptor``, ``options`` the
        launch's keywords that are not kernel parameters (``num_warps``,
        ``sync_solver``, ...); the last four are what :func:`compile_stages`
        takes.
    """

    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    kernel, calls = _config_calls(module, handle, launch, inputs, variant, configs)
    backend = make_backend(GPUTarget("npu", arch, 0))
    kernel.create_binder(backend)
    arguments = []

    for named in calls:
        bound, signature_and_specialization, *_ = kernel.binder(**named)
        values = tuple(bound.values())
        names = [kernel.params[index].name for index in kernel.non_constexpr_indices]
        signature = {
            name: "*i8" if kind == "none" else kind
            for name, kind in zip(names, signature_and_specialization)
        }
        attrs = backend.get_attrs_descriptor(kernel.params, values)
        specialized = attrs.get_constants()
        constants = {
            param.name: value
            for value, param in zip(values, kernel.params)
            if param.is_constexpr or param.num in specialized or value is None
        }
        config = {
            param.name: named[param.name]
            for param in kernel.params
            if param.is_constexpr
        }
        options = {
            name: value for name, value in named.items() if name not in kernel.arg_names
        }
        arguments.append((config, signature, constants, attrs, options))

    return kernel, arguments


def _config_calls(module, handle, launch, inputs, variant, configs="launch"):
    # The recorded call's arguments by name, completed by each config.
    if configs not in CONFIG_SETS:
        raise ValueError(f"configs must be one of {CONFIG_SETS}, not {configs!r}")

    kernel = getattr(module, handle.kernel_name)
    call = _record_kernel_call(module, handle, launch, inputs, variant)
    launched = dict(zip(kernel.arg_names, call.args)) | call.kwargs
    # The variant's own configs, those its autotuner tries for this launch:
    # the NPU pipeline replaces NineToothed's (FitUnifiedBuffer) and defers
    # the autotuner into a factory.
    tree = ast.parse(handle.source(variant))
    chosen = (
        ub_configs.launch_configs(tree, launched)
        if configs == "launch"
        else [
            config for _, found in ub_configs.kernel_configs(tree) for config in found
        ]
    )

    return kernel, [launched | config for config in chosen or [{}]]


@dataclasses.dataclass
class _RecordedCall:
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)


class _Recorder:
    def __init__(self):
        self.call = None

    def __getitem__(self, grid):
        def record(*args, **kwargs):
            self.call = _RecordedCall(args, kwargs)

        return record

    def __call__(self):
        # Stands in for the ``functools.cache`` factory that DeferAutotune makes.
        return self


def _record_kernel_call(module, handle, launch, inputs, variant):
    recorder = _Recorder()

    with replaced_kernel(module, handle, recorder):
        launch(getattr(module, handle.launch_name), *inputs)

    return recorder.call


@contextlib.contextmanager
def replaced_kernel(module, handle, replacement):
    """Within the ``with``, the variant module's launch function calls ``replacement`` in place of its kernel.

    NineToothed's launch function calls ``<kernel>_with_auto_tuning`` when
    the kernel autotunes (after ``DeferAutotune``, a factory returning the
    autotuner: ``replacement()`` must then return what is indexed by the
    grid), else ``<kernel>``; ``replacement[grid](*args, **kwargs)`` receives
    the kernel's arguments.

    :param module: a variant's module (``handle.module(variant)``).
    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param replacement: the object put in the kernel's place.
    """

    autotuned = f"{handle.kernel_name}_with_auto_tuning"
    name = autotuned if autotuned in vars(module) else handle.kernel_name
    saved = vars(module)[name]
    vars(module)[name] = replacement

    try:
        yield
    finally:
        vars(module)[name] = saved


def _triton_type(value):
    if isinstance(value, torch.Tensor):
        return "*" + _TORCH_TO_TRITON[value.dtype]

    if isinstance(value, bool):
        return "i1"

    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"

    if isinstance(value, float):
        return "fp32"

    raise TypeError(f"no Triton type for argument {value!r}")
