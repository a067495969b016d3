"""A launch function that runs a handle's NPU variant as triton-ascend lowers it, on CPU tensors, every tensor fenced.

:class:`LoweredLaunch` is called like the variant's launch function. Per call
it compiles the kernel that a launch with these arguments compiles:
:func:`~ninetoothed_ascend.check.compile_check.launch_arguments` gives the
specialization triton-ascend 3.2's JIT gives it (integers equal to 1 made
constants, divisibility by 16) and the configs the autotuner would try,
:func:`~ninetoothed_ascend.check.compile_check.compile_stages` the ``ttadapter``
Linalg. It lowers that to a shared object (:mod:`.lowering`) and then runs
the variant's own launch function with its kernel replaced by the lowered
one, so that the grid, the arguments and whatever the launch function does
around the kernel are the variant's. The lowered kernel runs over the whole
grid in a child process with fenced tensors (:mod:`.execution`); its results
land in the tensors as a launch's would. The autotuner is not run: one config
per launch (``config``, an index into the configs the autotuner would try).
"""

import dataclasses
import time

import torch

from ninetoothed_ascend import cache as cache_module
from ninetoothed_ascend.check import compile_check
from ninetoothed_ascend.check.lowered import execution, lowering
from ninetoothed_ascend.check.lowered import tools as tools_module


class ConfigOutOfRange(IndexError):
    """The launch has fewer configs than the index asked for."""


@dataclasses.dataclass(frozen=True)
class Record:
    """One launch of the lowered kernel.

    :param config: ``dict`` of the config's constexpr values.
    :param configs: ``int``, how many configs the autotuner would try for this launch.
    :param grid: ``tuple`` of 3 ``int``.
    :param seconds: ``dict`` step -> seconds: ``ttir``, ``ttadapter``, the
        lowering's steps (absent when cached) and ``run`` (the child, both placements).
    :param cached: ``bool``, whether the shared object came from the cache.
    :param differing: ``tuple`` of ``str``: the tensors whose bytes differ
        between the two fenced placements (:mod:`.execution`); empty when
        they agree, ``None`` when the run failed.
    :param linalg: ``str``, the ``ttadapter`` output that was lowered.
    """

    config: dict
    configs: int
    grid: tuple
    seconds: dict
    cached: bool
    differing: tuple
    linalg: str


class LoweredLaunch:
    """The NPU variant of ``handle``, lowered and run on the CPU; called like the variant's launch function.

    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param config: ``int``, which of the configs the autotuner would try for a launch to run (0: the first).
    :param arch: ``str``, the Ascend SoC compiled for.
    :param variant: ``str``, the variant (``"npu"``).
    :param directory: ``pathlib.Path`` of the directory that caches shared
        objects, or ``None`` for ``lowered/`` in the package's cache directory.
    :param timeout: ``float`` seconds per lowering step and per run, or ``None``.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` that remembers the
        ``ttir`` and ``ttadapter`` output
        (:func:`~ninetoothed_ascend.check.compile_check.compile_stages`), or
        ``None`` to compile them at every call.
    :raises ninetoothed_ascend.check.lowered.tools.ToolsMissing: a program is missing.

    Calling it runs the launch; it raises what the steps raise:
    :class:`~ninetoothed_ascend.check.compile_check.StageError` (``ttir`` or
    ``ttadapter`` failed), :class:`~.lowering.LoweringError`,
    :class:`~.faults.Fault` (a fenced access or another fatal signal in the
    kernel), :class:`~.execution.ExecutionError`, :class:`ConfigOutOfRange`.
    After each call, :attr:`records` holds one :class:`Record` per kernel launch.
    """

    def __init__(
        self,
        handle,
        *,
        config=0,
        arch=compile_check.DEFAULT_ARCH,
        variant="npu",
        directory=None,
        timeout=None,
        cache=None,
    ):
        self.handle = handle
        self.config = config
        self.arch = arch
        self.variant = variant
        self.tools = tools_module.find()
        self.directory = directory or cache_module.default_directory() / "lowered"
        self.timeout = timeout
        self.cache = cache
        self.records = []

    def __call__(self, *args, **kwargs):
        module = self.handle.module(self.variant)
        kernel, configs = compile_check.launch_arguments(
            module,
            self.handle,
            lambda launch, *inputs: launch(*inputs, **kwargs),
            args,
            self.variant,
            self.arch,
        )

        if self.config >= len(configs):
            raise ConfigOutOfRange(
                f"kernel {self.handle.kernel_name}: config {self.config} asked for, "
                f"the launch has {len(configs)}"
            )

        config, signature, constants, attrs, options = configs[self.config]
        linalg, seconds = compile_check.compile_stages(
            kernel,
            signature,
            constants,
            self.arch,
            attrs=attrs,
            options=options,
            cache=self.cache,
        )
        lowered = lowering.lower(
            linalg, self.directory, self.tools, timeout=self.timeout
        )
        runtime = lowering.runtime_library(self.directory, self.tools)
        seconds = seconds | lowered.seconds
        tensors = [value for value in args if isinstance(value, torch.Tensor)]
        runner = _Runner(self, kernel, config, constants, lowered, runtime, tensors)

        try:
            with compile_check.replaced_kernel(module, self.handle, runner):
                getattr(module, self.handle.launch_name)(*args, **kwargs)
        finally:
            # A run that faulted is recorded too, with the seconds it took.
            for grid, run_seconds, differing in runner.runs:
                self.records.append(
                    Record(
                        config=config,
                        configs=len(configs),
                        grid=grid,
                        seconds=seconds | {"run": run_seconds},
                        cached=lowered.cached,
                        differing=differing,
                        linalg=linalg,
                    )
                )


class _Runner:
    # Stands in for the variant's kernel (and for the ``functools.cache``
    # factory of its autotuner): ``runner()[grid](*args, **kwargs)``.

    def __init__(self, launch, kernel, config, constants, lowered, runtime, tensors):
        self.launch = launch
        self.kernel = kernel
        self.config = config
        self.constants = constants
        self.lowered = lowered
        self.runtime = runtime
        self.tensors = tensors
        self.runs = []

    def __call__(self):
        return self

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            named = dict(zip(self.kernel.arg_names, args)) | kwargs | self.config
            launched = grid(named) if callable(grid) else grid
            launched = tuple(int(value) for value in launched)
            arguments = [
                execution.Argument(named[name], self._label(name, named[name]))
                for name in self.kernel.arg_names
                if name not in self.constants
            ]
            start, differing = time.perf_counter(), None

            try:
                differing = execution.run(
                    self.lowered,
                    self.runtime,
                    arguments,
                    launched,
                    kernel_name=self.launch.handle.kernel_name,
                    timeout=self.launch.timeout,
                ).differing
            finally:
                self.runs.append(
                    (
                        launched + (1,) * (3 - len(launched)),
                        time.perf_counter() - start,
                        differing,
                    )
                )

        return run

    def _label(self, name, value):
        if not isinstance(value, torch.Tensor):
            return name

        for index, tensor in enumerate(self.tensors):
            if tensor is value:
                return f"tensor argument {index} of the launch ({name})"

        return f"a tensor the launch function made ({name})"


def run_linalg(linalg, grid, arguments, *, kernel_name, directory=None, timeout=None):
    """Lower a ``ttadapter`` output and run it over ``grid``, fenced (:func:`.execution.run`); results land in the tensors.

    For a kernel compiled by hand (:func:`~ninetoothed_ascend.check.compile_check.compile_stages`).

    :param linalg: ``str``, the ``ttadapter`` output.
    :param grid: ``tuple`` of 1 to 3 ``int``.
    :param arguments: ``list`` of ``(label, value)``: one per kernel
        argument that is not a constant, in order; a tensor for a pointer.
    :param kernel_name: ``str``, named in reports.
    :param directory: ``pathlib.Path`` of the shared-object cache, or ``None``.
    :param timeout: ``float`` seconds per step and per run, or ``None``.
    :return: :class:`~.execution.Execution`.
    :raises: as :func:`.lowering.lower` and :func:`.execution.run`.
    """

    tools = tools_module.find()
    directory = directory or cache_module.default_directory() / "lowered"
    lowered = lowering.lower(linalg, directory, tools, timeout=timeout)

    return execution.run(
        lowered,
        lowering.runtime_library(directory, tools),
        [execution.Argument(value, label) for label, value in arguments],
        grid,
        kernel_name=kernel_name,
        timeout=timeout,
    )
