"""The one place where ninetoothed-ascend reaches into NineToothed 0.26.

Everything NineToothed-specific that is not public API lives here, so that a
NineToothed upgrade touches one module:

* NineToothed creates ``~/.ninetoothed`` when imported; where that cannot be
  written, :func:`_import_ninetoothed` points it at a private directory, so
  NineToothed is imported here first (:mod:`ninetoothed_ascend.jit` imports
  this module before anything else).
* ``CodeGenerator`` and ``calculate_default_configs`` ask the *active Triton
  driver* for device properties, which fails on a machine without a GPU
  ("0 active drivers", docs/ascend.md). :func:`generate_source` answers
  those queries for the duration of one generation only, then restores the
  driver exactly as it was. Remove it when NineToothed takes the properties
  as arguments.
* ``ninetoothed.make`` both annotates the application and imports the
  generated module; :func:`annotate` repeats its annotation step so that the
  source can be generated without importing it.
* NineToothed names tensors and block sizes from two process-wide counters.
  :func:`counters` and :func:`advance_counters` let a cache hit leave them
  where a real generation would have, so the next kernel gets the same names
  (and the same cache key) as in a cold run.
* :mod:`ninetoothed_ascend.activation` replaces ``ninetoothed.make`` and
  ``ninetoothed.jit``, the ``jit`` that ``ninetoothed.make`` calls, and the call
  of NineToothed's kernel handle. The originals, and what a NineToothed handle
  holds, are read here: :data:`PLAIN_MAKE`, :data:`PLAIN_JIT`,
  :data:`MAKE_MODULE`, :data:`NineToothedHandle`, :func:`handle_source`,
  :func:`handle_launch`, :func:`handle_path`.
* The cache key describes a NineToothed tensor by its public fields and its
  history of operations, :func:`tensor_history`.
"""

import contextlib
import dataclasses
import functools
import inspect
import os
import pathlib
import sys
import threading
import types
import unittest.mock
import warnings

import triton

from ninetoothed_ascend import cache as cache_module


def _import_ninetoothed():
    # NineToothed 0.26 creates ``Path.home() / ".ninetoothed"`` when
    # ``ninetoothed.generation`` is imported, writes every generated module
    # there, and has no setting to move it. Where the home cannot hold it
    # (read-only, or not a directory), it would fail at import, before the
    # cache's own fallback could apply: import it with ``Path.home()``
    # answering a private directory instead, for that import only.
    if "ninetoothed.generation" in sys.modules:
        return sys.modules["ninetoothed"]

    home = pathlib.Path.home()
    directory = home / ".ninetoothed"

    try:
        directory.mkdir(exist_ok=True)
        usable = os.access(directory, os.W_OK | os.X_OK)
    except OSError:
        usable = False

    if usable:
        import ninetoothed

        return ninetoothed

    private_home = cache_module.private_directory() / "ninetoothed-home"
    private_home.mkdir(mode=0o700, exist_ok=True)
    warnings.warn(
        f"ninetoothed-ascend: {directory} cannot be written; NineToothed's "
        f"generated files go to {private_home / '.ninetoothed'} instead. Make "
        "your home writable (or set HOME) to keep them there.",
        stacklevel=2,
    )

    with unittest.mock.patch.object(
        pathlib.Path, "home", classmethod(lambda cls: cls(private_home))
    ):
        import ninetoothed

    return ninetoothed


ninetoothed = _import_ninetoothed()

from ninetoothed.generation import CodeGenerator  # noqa: E402
from ninetoothed.utils import calculate_default_configs  # noqa: E402

#: The device properties NineToothed's generator reads, with the values of an
#: H100 SXM (65536 registers per SM, 227 KiB of shared memory per block), used
#: when no GPU is present. ``max_num_regs`` bounds the elements of a tile,
#: ``max_shared_mem`` sets the default ``num_stages``.
DEFAULT_DEVICE_PROPERTIES = {"max_num_regs": 65536, "max_shared_mem": 232448}

_generation_lock = threading.Lock()

#: ``ninetoothed.make`` and ``ninetoothed.jit`` as NineToothed defines them,
#: taken from their defining modules so that they stay the originals while
#: :mod:`ninetoothed_ascend.activation` has replaced the package's names.
MAKE_MODULE = sys.modules["ninetoothed.make"]
PLAIN_MAKE = MAKE_MODULE.make
PLAIN_JIT = sys.modules["ninetoothed.jit"].jit

#: The class of what ``ninetoothed.make``/``ninetoothed.jit`` return for
#: ``caller="torch"``; it keeps the generated module's path in ``_source``,
#: the kernel in ``_kernel`` and the launch function in ``_launch``.
NineToothedHandle = sys.modules["ninetoothed.jit"]._Handle


@functools.cache
def device_properties():
    """Return the device properties NineToothed's generator will see.

    :return: ``dict`` with the keys of :data:`DEFAULT_DEVICE_PROPERTIES`:
        the current device's values where an active Triton driver reports
        them, the defaults otherwise (no driver, or a driver such as
        triton-ascend's that lacks a key).
    """

    try:
        active = triton.runtime.driver.active
        reported = active.utils.get_device_properties(active.get_current_device())
    except RuntimeError:
        reported = {}

    return {
        key: reported.get(key, default)
        for key, default in DEFAULT_DEVICE_PROPERTIES.items()
    }


class _PropertiesDriver:
    """A stand-in driver that answers NineToothed's property queries only."""

    def __init__(self, properties):
        self.utils = types.SimpleNamespace(
            get_device_properties=lambda device: dict(properties)
        )

    def get_current_device(self):
        return 0


@contextlib.contextmanager
def driver_reporting(properties):
    """Make the active Triton driver report ``properties`` inside the ``with`` block, then restore it exactly.

    What :func:`generate_source` does around NineToothed's generator; also
    for running plain ``ninetoothed.make`` without a GPU (benchmarks, tests).
    Not thread-safe: it swaps a process-wide driver.

    :param properties: ``dict`` like :data:`DEFAULT_DEVICE_PROPERTIES`.
    """

    # ``DriverConfig`` keeps its state in instance attributes whose names differ
    # between Triton 3.2 (``active``) and 3.9 (``_active``); a snapshot of the
    # instance dictionary restores either exactly.
    driver = triton.runtime.driver
    saved = dict(vars(driver))
    driver.set_active(_PropertiesDriver(properties))

    try:
        yield
    finally:
        vars(driver).clear()
        vars(driver).update(saved)


@dataclasses.dataclass(frozen=True)
class GeneratedSource:
    """What NineToothed generated for one kernel.

    :param source: the generated Triton module, byte for byte.
    :param kernel_name: name of the ``triton.jit`` kernel in ``source``.
    :param launch_name: name of the launch function in ``source``.
    :param max_num_configs: the ``max_num_configs`` given to ``make`` or
        ``jit`` (``int``), or ``None``: the one option that bounds the
        variants and that ``source`` does not show.
    """

    source: str
    kernel_name: str
    launch_name: str
    max_num_configs: int | None = None


def generate_source(
    func,
    kernel_name,
    num_warps,
    num_stages,
    max_num_configs,
    prettify,
    properties,
):
    """Run NineToothed's code generator on an annotated application.

    :param func: the application, annotated with arranged tensors (as
        ``ninetoothed.jit`` expects).
    :param kernel_name: ``str`` or ``None`` (then ``func.__name__``).
    :param num_warps: ``int``, iterable of ``int`` or ``None`` (NineToothed's
        default from ``properties``).
    :param num_stages: like ``num_warps``.
    :param max_num_configs: ``int`` or ``None``.
    :param prettify: ``bool``, NineToothed's experimental ``_prettify``.
    :param properties: ``dict`` of device properties (see
        :data:`DEFAULT_DEVICE_PROPERTIES`).
    :return: :class:`GeneratedSource`.
    :raises Exception: whatever NineToothed raises for the kernel.
    """

    kernel_name = kernel_name if kernel_name is not None else func.__name__

    with _generation_lock, driver_reporting(properties):
        default_num_warps, default_num_stages = calculate_default_configs()

        generator = CodeGenerator()
        path = generator(
            func,
            "torch",
            kernel_name,
            default_num_warps if num_warps is None else num_warps,
            default_num_stages if num_stages is None else num_stages,
            max_num_configs,
            prettify,
        )

    return GeneratedSource(
        source=pathlib.Path(path).read_text(encoding="utf-8"),
        kernel_name=kernel_name,
        launch_name=generator.launch_func_name,
        max_num_configs=max_num_configs,
    )


def annotate(arrangement, application, tensors):
    """Annotate ``application`` with the arranged ``tensors``, as ``ninetoothed.make`` does.

    :param arrangement: the arrangement function.
    :param application: the application function; its ``__annotations__``
        are replaced.
    :param tensors: ``tuple`` of ``ninetoothed.Tensor``.
    :return: ``application``.
    """

    params = inspect.signature(application).parameters
    arranged = arrangement(*tensors)
    arranged = arranged if isinstance(arranged, tuple) else (arranged,)
    application.__annotations__ = dict(zip(params, arranged))

    return application


def counters():
    """Return NineToothed's naming counters: ``(tensors created, block sizes created)``."""

    return ninetoothed.Tensor.num_instances, ninetoothed.block_size._num_block_sizes


def advance_counters(delta):
    """Advance NineToothed's naming counters by ``delta``, a pair from :func:`counters`."""

    num_tensors, num_block_sizes = delta
    ninetoothed.Tensor.num_instances += num_tensors
    ninetoothed.block_size._num_block_sizes += num_block_sizes


def handle_source(handle):
    """Return what NineToothed generated for one of its own handles.

    :param handle: a :data:`NineToothedHandle`.
    :return: :class:`GeneratedSource`.
    :raises OSError: the generated file is gone.
    """

    kernel = handle._kernel

    # ``_kernel`` is a ``triton.jit`` function, or an autotuner wrapping one.
    while not isinstance(kernel, types.FunctionType):
        kernel = kernel.fn

    return GeneratedSource(
        source=pathlib.Path(handle._source).read_text(encoding="utf-8"),
        kernel_name=kernel.__name__,
        launch_name=handle._launch.__name__,
    )


def handle_launch(handle):
    """Return the launch function NineToothed imported for one of its own handles (a :data:`NineToothedHandle`)."""

    return handle._launch


def handle_path(handle):
    """Return the path of the module NineToothed generated for one of its own handles (``str``)."""

    return str(handle._source)


def tensor_history(tensor):
    """Return the operations a ``ninetoothed.Tensor`` was made with: ``((function, args, kwargs), ...)`` (``tile``, ``expand``, ...)."""

    return tuple(tensor._history)


def symbol_expression(symbol):
    """Return the expression a ``ninetoothed.Symbol`` stands for (an ``ast.expr``, NineToothed's own: read it, do not change it).

    ``Symbol.node`` gives a rewritten copy; its text, ``str(symbol)``, is
    ``ast.unparse`` of this node.
    """

    return symbol._node
