"""The Ascend compile check: an NPU variant through triton-ascend's ``ttir`` and ``ttadapter`` stages.

Runs only where ``import triton`` is triton-ascend (3.2 API). It needs no NPU
and no CANN: ``ttir`` is Triton's frontend and TTIR passes, ``ttadapter`` runs
``triton-adapter-opt`` (shipped in the wheel) to lower TTIR to Linalg/HIVM.
It stops before ``npubin`` (``bishengir-compile``, part of CANN). A kernel that
passes has cleared everything short of the NPU compiler itself; it has not run
on an NPU. Recipe: ../shared/ASCEND.md, "What runs on a machine without an NPU".
"""

import ast
import dataclasses
import hashlib
import subprocess
import time

import torch

from ninetoothed_ascend.ascendify import ub_configs

#: The SoC the check compiles for (Atlas A2).
DEFAULT_ARCH = "Ascend910B1"

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
    :param seconds: ``dict`` stage name -> seconds.
    :param linalg: the ``ttadapter`` output (MLIR text).
    """

    config: dict
    seconds: dict
    linalg: str


def compile_stages(
    jit_function, signature, constants, arch=DEFAULT_ARCH, *, attrs=None
):
    """Run ``ttir`` and ``ttadapter`` on a ``triton.jit`` function.

    :param jit_function: ``triton.runtime.JITFunction``.
    :param signature: ``dict`` parameter name -> Triton type (``"*fp16"``,
        ``"i32"``, ...) for every non-constexpr parameter.
    :param constants: ``dict`` parameter name -> value for every constexpr
        parameter (and every argument a launch specializes to a constant).
    :param arch: ``str``, the Ascend SoC.
    :param attrs: the backend's ``AttrsDescriptor`` of a launch (from
        :func:`launch_arguments`), or ``None`` for no specialization.
    :return: ``(linalg_text, seconds_per_stage)``.
    :raises StageError: naming the stage that failed and the compiler's message.
    """

    from triton._C.libtriton import get_cache_invalidating_env_vars, ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    # Triton 3.2 reads the signature's values in order and ignores its keys.
    ordered = {
        name: signature[name]
        for name in jit_function.arg_names
        if name not in constants
    }
    target = GPUTarget("npu", arch, 0)
    backend = make_backend(target)
    options = backend.parse_options({})
    source = ASTSource(jit_function, ordered, dict(constants), attrs)
    key = f"{source.hash()}-{backend.hash()}-{options.hash()}"
    metadata = {
        "hash": hashlib.sha256(key.encode()).hexdigest(),
        "target": target,
        **options.__dict__,
        **get_cache_invalidating_env_vars(),
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

    return linalg, seconds


def check_variant(handle, launch, *inputs, variant="npu"):
    """Compile-check a handle's variant for every autotune config, with arguments from a real call.

    ``launch(kernel, *inputs)`` is called once with a recorder in place of
    the kernel, so that the argument types and the constexpr values come from
    the same code path a real call takes; nothing is launched.

    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param launch: ``callable(kernel, *inputs)`` that calls ``kernel`` with
        the kernel's arguments (an example's ``launch``).
    :param inputs: tensors (any device; only dtypes and shapes matter).
    :param variant: ``str``, the variant to check.
    :return: ``list`` of :class:`CheckResult`, one per autotune config.
    :raises StageError: for the first config that fails.
    """

    kernel, arguments = launch_arguments(
        handle.module(variant), handle, launch, inputs, variant
    )
    results = []

    for config, signature, constants, attrs in arguments:
        linalg, seconds = compile_stages(kernel, signature, constants, attrs=attrs)
        results.append(CheckResult(config, seconds, linalg))

    return results


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


def launch_arguments(module, handle, launch, inputs, variant="npu", arch=DEFAULT_ARCH):
    """Like :func:`compile_arguments`, but specialized as triton-ascend 3.2's JIT specializes a launch with these inputs.

    Each config's arguments go through the kernel's own binder
    (``JITFunction.create_binder``; its ``compute_spec_key`` marks integers
    equal to 1 and pointers and integers divisible by 16) and
    ``backend.get_attrs_descriptor(params, values)``, and the signature,
    constants and attributes are then formed as ``JITFunction.run`` forms
    them (triton/runtime/jit.py of triton-ascend 3.2.0): an integer equal to
    1 becomes a constant, so a stride of 1 makes an access contiguous
    (../shared/ASCEND.md, "What a real launch compiles"). Pointer alignment
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
    :return: ``(kernel, [(config, signature, constants, attrs), ...])``: one
        tuple per config; ``config`` holds the config's constexpr values,
        ``attrs`` is the backend's ``AttrsDescriptor``; the last three are
        what :func:`compile_stages` takes.
    """

    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    kernel, calls = _config_calls(module, handle, launch, inputs, variant)
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
        arguments.append((config, signature, constants, attrs))

    return kernel, arguments


def _config_calls(module, handle, launch, inputs, variant):
    # The recorded call's arguments by name, completed by each config.
    kernel = getattr(module, handle.kernel_name)
    call = _record_kernel_call(module, handle, launch, inputs, variant)
    launched = dict(zip(kernel.arg_names, call.args)) | call.kwargs
    # The variant's own configs, those its autotuner tries for this launch:
    # the NPU pipeline replaces NineToothed's (FitUnifiedBuffer) and defers
    # the autotuner into a factory.
    configs = ub_configs.launch_configs(
        ast.parse(handle.source(variant)), launched
    ) or [{}]

    return kernel, [launched | config for config in configs]


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
    # NineToothed launches ``<kernel>_with_auto_tuning`` when it autotunes.
    autotuned = f"{handle.kernel_name}_with_auto_tuning"
    launched = autotuned if autotuned in vars(module) else handle.kernel_name
    saved = vars(module)[launched]
    recorder = _Recorder()
    vars(module)[launched] = recorder

    try:
        launch(getattr(module, handle.launch_name), *inputs)
    finally:
        vars(module)[launched] = saved

    return recorder.call


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
