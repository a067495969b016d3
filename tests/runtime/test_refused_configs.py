"""The NPU variant's runtime autotuner against BiShengIR's real UB refusal, on the CPU.

Level 3: each config of ``examples/elementwise/add.py``'s NPU variant is
compiled as a triton-ascend 3.2.0 launch compiles it (the kernel's binder and
the backend's attributes, ``ttir``, ``ttadapter``), then by
``bishengir-compile`` (ascendnpu-ir 1.2.0, Ascend910B1) with the flags
triton-ascend passes; a failure is raised as triton-ascend's ``compile``
raises it (``MLIRCompilationError`` from the ``CalledProcessError``, with
the compiler's stderr). No NPU: reaching the external ``hivmc`` step counts
as a compile, and nothing is launched or timed.
"""

import hashlib
import json
import subprocess
import tempfile
import warnings

import pytest
import torch
from helpers import shared_example

from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.check import bishengir
from ninetoothed_ascend.runtime import (
    UnifiedBufferOverflowError,
    drop_refused_configs,
)
from ninetoothed_ascend.runtime.refused_configs import with_refusals

pytestmark = pytest.mark.ascend


def _block_size(kernel):
    # add's one constexpr; NineToothed numbers its block sizes per process.
    (name,) = [param.name for param in kernel.params if param.is_constexpr]

    return name


VARIANT = hashlib.sha256(b"add's NPU variant").hexdigest()


class BiShengIRLaunch:
    """A stand-in for the kernel's ``JITFunction`` whose ``run`` compiles as a launch does, up to BiShengIR's ``hivmc`` step.

    Compiled kernels are kept by signature and constants, as the JIT's
    in-memory cache keeps them; :attr:`compiled` lists the block size of
    each compile.
    """

    def __init__(self, kernel):
        self.fn = kernel
        self.arg_names = kernel.arg_names
        self.params = kernel.params
        self.compiled = []
        self._done = set()

    def run(self, *args, grid=None, warmup=False, **kwargs):
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend
        from triton.compiler.errors import MLIRCompilationError

        from ninetoothed_ascend.check.compile_check import compile_stages

        kernel = self.fn
        backend = make_backend(GPUTarget("npu", bishengir.DEFAULT_ARCH, 0))
        kernel.create_binder(backend)
        named = dict(zip(self.arg_names, args)) | {
            param.name: kwargs[param.name]
            for param in kernel.params
            if param.is_constexpr
        }
        bound, kinds, *_ = kernel.binder(**named)
        values = tuple(bound.values())
        names = [kernel.params[index].name for index in kernel.non_constexpr_indices]
        attrs = backend.get_attrs_descriptor(kernel.params, values)
        specialized = attrs.get_constants()
        constants = {
            param.name: value
            for value, param in zip(values, kernel.params)
            if param.is_constexpr or param.num in specialized
        }
        signature = dict(zip(names, kinds))
        key = repr((signature, constants, attrs.to_dict()))

        if key in self._done:
            return

        self.compiled.append(kwargs[_block_size(kernel)])
        linalg, _ = compile_stages(kernel, signature, constants, attrs=attrs)

        with tempfile.TemporaryDirectory() as directory:
            with open(f"{directory}/kernel.ttadapter.mlir", "w") as file:
                file.write(linalg)

            try:
                # As triton/backends/ascend/compiler.py runs it.
                subprocess.run(
                    bishengir.compile_command("kernel.ttadapter.mlir", "kernel"),
                    cwd=directory,
                    capture_output=True,
                    check=True,
                )
            except subprocess.CalledProcessError as error:
                output = (error.stdout + error.stderr).decode("utf-8", "replace")

                # No CANN here: the external hivmc step is where a compile
                # that BiShengIR accepted stops.
                if bishengir.parse_output(output).outcome != "hivmc":
                    # As triton/compiler/compiler.py wraps a stage's failure:
                    # chained implicitly, the stderr in the message.
                    raise MLIRCompilationError(  # noqa: B904
                        "ConvertLinalgRToBinary", error.stderr.decode("utf-8")
                    )

        self._done.add(key)


def _autotuner(kernel, block_sizes, cache):
    import triton

    launch = BiShengIRLaunch(kernel)

    # As DropRefusedConfigs decorates DeferAutotune's factory.
    @drop_refused_configs("add", VARIANT, "Ascend910B1", cache)
    def factory():
        return triton.autotune(
            configs=[
                triton.Config({_block_size(kernel): size}) for size in block_sizes
            ],
            key=["ninetoothed_ninetoothed_tensor_0_size_0"],
            do_bench=lambda call, quantiles: (call(), [1.0, 1.0, 1.0])[1],
        )(launch)

    return factory(), launch


@pytest.mark.parametrize(
    ("block_sizes", "compiled"),
    [([8192], [8192]), ([4096, 8192], [4096, 8192, 4096])],
    ids=["one", "two"],
)
def test_without_it_triton_ascend_fails_the_launch_with_the_compilers_error(
    kernel, block_sizes, compiled
):
    """The constraint DropRefusedConfigs answers, measured: triton-ascend's own autotuner with every config refused."""

    import triton
    from triton.compiler.errors import MLIRCompilationError

    launch = BiShengIRLaunch(kernel)
    autotuner = triton.autotune(
        configs=[triton.Config({_block_size(kernel): size}) for size in block_sizes],
        key=["ninetoothed_ninetoothed_tensor_0_size_0"],
        do_bench=lambda call, quantiles: (call(), [1.0, 1.0, 1.0])[1],
    )(launch)

    with pytest.raises(MLIRCompilationError, match="ub overflow, requires"):
        autotuner[(1,)](*_strided_inputs())

    # With several configs, the first is compiled again for the launch.
    assert launch.compiled == compiled


def _strided_inputs():
    # Every third element: strides of 3 are neither 1 nor divisible by 16,
    # so the launch does not specialize them and each access is a gather.
    tensors = [torch.randn(4099 * 3)[::3] for _ in range(3)]

    return [
        value
        for tensor in tensors
        for value in (tensor, tensor.size(0), tensor.stride(0))
    ]


@pytest.fixture(scope="module")
def kernel():
    handle = shared_example("add").kernel

    return handle.module("npu").add


def test_an_overflowing_config_is_dropped_and_the_next_compiled(kernel, tmp_path):
    refusing, launch = _autotuner(kernel, [8192, 1024], Cache(tmp_path))

    with pytest.warns(UserWarning) as caught:
        refusing[(1,)](*_strided_inputs())

    assert launch.compiled == [8192, 1024]
    assert refusing.best_config.kwargs == {_block_size(kernel): 1024}
    (warning,) = [
        str(item.message)
        for item in caught
        if str(item.message).startswith("ninetoothed-ascend")
    ]
    assert "kernel `add`" in warning
    assert f"BLOCK_SIZE_{_block_size(kernel).rsplit('_', 1)[1]}: 8192" in warning
    assert "524288 bytes of Unified Buffer, 196608 available" in warning

    # A fresh autotuner and cache object, as in a later process: the refused
    # config is not compiled again.
    again, relaunch = _autotuner(kernel, [8192, 1024], Cache(tmp_path))

    with pytest.warns(UserWarning, match="refused earlier"):
        again[(1,)](*_strided_inputs())

    assert relaunch.compiled == [1024]
    assert again.best_config.kwargs == {_block_size(kernel): 1024}


def test_a_config_bishengir_refuses_on_adds_strided_launch_costs_one_compile(tmp_path):
    """add's own configs of 32 to 4096 lanes, fp32, strides of 3, as the UB model kept them before it counted both strided loads' buffers: BiShengIR refuses 4096 (262,144 B)."""

    import ast

    import triton

    from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import kernel_configs

    handle = shared_example("add").kernel
    module = handle.module("npu")
    ((_, block_sizes),) = kernel_configs(ast.parse(handle.source("npu")))
    kernel = module.add
    launch = BiShengIRLaunch(kernel)
    autotuner = triton.autotune(
        configs=[
            triton.Config(sizes)
            for sizes in sorted(block_sizes, key=lambda sizes: [*sizes.values()])
            if max(sizes.values()) <= 4096
        ],
        key=["ninetoothed_ninetoothed_tensor_0_size_0"],
        do_bench=lambda call, quantiles: (call(), [1.0, 1.0, 1.0])[1],
    )(launch)
    refusing = with_refusals(autotuner, "add", VARIANT, "Ascend910B1", Cache(tmp_path))

    with pytest.warns(UserWarning, match=r"BLOCK_SIZE_\d+: 4096.* 262144 bytes"):
        refusing[(1,)](*_strided_inputs())

    assert launch.compiled == [32, 64, 128, 256, 512, 1024, 2048, 4096]
    (refused,) = [
        config
        for config in refusing.configs_timings
        if config.kwargs[_block_size(kernel)] == 4096
    ]
    assert refusing.configs_timings[refused] == [float("inf")] * 3
    assert refusing.best_config.kwargs[_block_size(kernel)] != 4096


@pytest.mark.parametrize("block_sizes", [[8192], [4096, 8192]], ids=["one", "two"])
def test_every_config_refused_raises_with_the_bytes(kernel, tmp_path, block_sizes):
    refusing, launch = _autotuner(kernel, block_sizes, Cache(tmp_path))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        with pytest.raises(UnifiedBufferOverflowError) as raised:
            refusing[(1,)](*_strided_inputs())

    message = str(raised.value)
    assert launch.compiled == block_sizes
    assert "\n" not in message
    assert "kernel `add`" in message
    assert f"refused {len(block_sizes)} of its configs" in message
    assert "196608 available" in message
    assert "Pass smaller block sizes" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__

    # Remembered: a fresh autotuner refuses the launch without compiling.
    again, relaunch = _autotuner(kernel, block_sizes, Cache(tmp_path))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        with pytest.raises(UnifiedBufferOverflowError, match="196608 available"):
            again[(1,)](*_strided_inputs())

    assert relaunch.compiled == []


def test_a_refusal_is_remembered_per_specialization(kernel, tmp_path):
    refusing, _ = _autotuner(kernel, [8192, 1024], Cache(tmp_path))

    with pytest.warns(UserWarning):
        refusing[(1,)](*_strided_inputs())

    # Contiguous inputs specialize the strides to 1: another compile, which
    # the refusal of the strided one says nothing about.
    again, relaunch = _autotuner(kernel, [8192, 1024], Cache(tmp_path))
    contiguous = [torch.randn(4099) for _ in range(3)]
    again[(1,)](*[value for x in contiguous for value in (x, x.size(0), x.stride(0))])

    assert relaunch.compiled == [8192, 1024]


class _Failing:
    """A kernel stand-in whose compiles fail with ``error``: every one, or those of the block sizes in ``failing``."""

    def __init__(self, kernel, error, failing=None):
        self.fn = kernel
        self.arg_names = kernel.arg_names
        self.params = kernel.params
        self.error = error
        self.failing = failing
        self.runs = []

    def run(self, *args, **kwargs):
        size = kwargs[_block_size(self.fn)]
        self.runs.append(size)

        if self.failing is None or size in self.failing:
            raise self.error


def _failing_autotuner(kernel, error, cache, block_sizes=(1024, 2048), failing=None):
    import triton

    launch = _Failing(kernel, error, failing)
    autotuner = triton.autotune(
        configs=[triton.Config({_block_size(kernel): size}) for size in block_sizes],
        key=["ninetoothed_ninetoothed_tensor_0_size_0"],
        do_bench=lambda call, quantiles: (call(), [1.0, 1.0, 1.0])[1],
    )(launch)

    return with_refusals(autotuner, "add", VARIANT, "Ascend910B1", cache), launch


def _garbage():
    from triton.compiler.errors import MLIRCompilationError

    return MLIRCompilationError(
        "ConvertLinalgRToBinary",
        "loc(\"kernel.ttadapter.mlir\":1:1): error: custom op 'garbage' is unknown",
    )


def test_other_compile_failures_are_raised_as_they_are_where_no_config_compiles(
    kernel, tmp_path
):
    from triton.compiler.errors import MLIRCompilationError

    refusing, launch = _failing_autotuner(kernel, _garbage(), Cache(tmp_path))

    with pytest.raises(MLIRCompilationError, match="garbage"):
        refusing[(1,)](*_strided_inputs())

    # Both tried, as triton-ascend tries them; nothing remembered.
    assert launch.runs == [1024, 2048]
    assert not list(tmp_path.glob("memos/refusal/*"))


def test_another_compile_failure_drops_its_config_as_triton_ascend_does(
    kernel, tmp_path
):
    refusing, launch = _failing_autotuner(
        kernel, _garbage(), Cache(tmp_path), failing={1024}
    )

    refusing[(1,)](*_strided_inputs())

    # 1024 failed and was timed inf; 2048 benchmarked, then launched.
    assert launch.runs == [1024, 2048, 2048]
    assert not list(tmp_path.glob("memos/refusal/*"))


def test_a_malformed_record_is_ignored_and_the_config_compiled_again(kernel, tmp_path):
    # BiShengIR's stderr as triton-ascend carries it (ascendnpu-ir 1.2.0, add
    # fp32 at 8192, strides not specialized).
    stderr = (
        b'loc("kernel.ttadapter.mlir":2:3): error: ub overflow, requires 4194304 '
        b"bits while 1572864 bits available! (possible reason: ...)\n"
    )
    error = subprocess.CalledProcessError(1, ["bishengir-compile"], b"", stderr)
    cache = Cache(tmp_path)
    refusing, launch = _failing_autotuner(kernel, error, cache, block_sizes=(8192,))

    with pytest.raises(UnifiedBufferOverflowError, match="524288 bytes"):
        refusing[(1,)](*_strided_inputs())

    (record,) = (tmp_path / "memos" / "refusal").glob("*")
    assert json.loads(record.read_text())["required_bytes"] == 524288

    for text in ("not json", '{"required_bytes": "524288", "available_bytes": 1}'):
        record.write_text(text)
        again, relaunch = _failing_autotuner(
            kernel, error, Cache(tmp_path), block_sizes=(8192,)
        )

        with pytest.raises(UnifiedBufferOverflowError, match="524288 bytes"):
            again[(1,)](*_strided_inputs())

        # Compiled again: the record was not believed.
        assert relaunch.runs == [8192]
