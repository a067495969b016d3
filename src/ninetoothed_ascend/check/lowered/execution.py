"""A lowered kernel run over its grid on torch CPU tensors, every tensor fenced, in a child process.

Fencing: the tensors that share a storage form one region: the bytes from
the lowest to the highest byte any of them can address (a view's gaps
included). Each region is mapped between inaccessible guards (``mmap``,
``PROT_NONE``, :data:`GUARD_BYTES` each), so an access outside every
region, masked-out lanes included, faults. Pages fence at page
granularity, so the kernel runs once per placement (:data:`PLACEMENTS`):

* ``"end"``: each region's last byte is the last byte before its guard, so
  the first byte past a tensor faults; its start sits wherever that puts it
  (aligned to the element, as every access is, not to the 16 bytes
  ``tt.divisibility`` promises the NPU compiler; the CPU code does not rely on it);
* ``"start"``: each region begins on the page right after its guard, so the
  first byte before a tensor faults.

The page bytes around a region that are not the tensor's are filled with
``0xff`` (a NaN in every float type), and both placements start from the
tensors' values; their results must be equal byte for byte. The results of
``"end"`` are copied back into the tensors.

The child (:mod:`.child`) reports a fault through :file:`runtime.c`'s
handler; :mod:`.faults` names the tensor and the operation.
"""

import dataclasses
import json
import mmap
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import torch

from ninetoothed_ascend.check.lowered import faults as faults_module
from ninetoothed_ascend.check.lowered import lowering

#: Where each region lies between its guards: the kernel runs once per placement.
PLACEMENTS = ("end", "start")

#: Inaccessible bytes before and after every region (reserved address space, no memory).
GUARD_BYTES = 1 << 24

#: The value of every byte of a region's pages that is not a tensor's.
FILL = 0xFF

_SCALAR_TYPES = ("i1", "i8", "i16", "i32", "i64", "f32", "f64")

# Bytes per element of a memref's element type; a bool tensor's i1 is a byte.
_BYTES = {
    "i1": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
}

_CHILD = pathlib.Path(__file__).with_name("child.py")


class ExecutionError(RuntimeError):
    """The lowered kernel could not be run (not a fault of the kernel: bad arguments, a dead child)."""


@dataclasses.dataclass(frozen=True)
class Execution:
    """One run of a lowered kernel.

    :param seconds: ``float``, wall time of the child process (both placements).
    :param differing: ``tuple`` of ``str``, the labels of the regions whose
        bytes differ between the placements (empty when they agree).
    """

    seconds: float
    differing: tuple


@dataclasses.dataclass(frozen=True)
class Argument:
    """One argument of the kernel, in the order of its ``ttadapter`` parameters.

    :param value: ``torch.Tensor`` (CPU) for a ``memref`` parameter, else an ``int``, ``float`` or ``bool``.
    :param label: ``str``, how a report names it (``"output (ninetoothed_tensor_2)"``).
    """

    value: object
    label: str


@dataclasses.dataclass
class _Region:
    storage: torch.Tensor  # the storage's bytes (uint8)
    start: int
    end: int
    labels: list


def run(lowered, runtime, arguments, grid, *, kernel_name, timeout=None):
    """Run ``lowered`` over ``grid`` on ``arguments`` in a child process, once per placement, and copy the results back.

    :param lowered: :class:`~.lowering.Lowered`.
    :param runtime: ``pathlib.Path`` of :func:`~.lowering.runtime_library`.
    :param arguments: ``list`` of :class:`Argument`, one per parameter of
        :attr:`~.lowering.Signature.arguments`.
    :param grid: ``tuple`` of 1 to 3 ``int`` (programs per axis).
    :param kernel_name: ``str``, named in reports.
    :param timeout: ``float`` seconds for the child, or ``None``.
    :return: :class:`Execution`.
    :raises ExecutionError: arguments that do not fit the parameters, or a
        child that died without a fault report, or timed out.
    :raises ninetoothed_ascend.check.lowered.faults.Fault: the kernel faulted;
        the message names the kernel, the operation and the tensor.
    """

    types = lowered.signature.arguments

    if len(arguments) != len(types):
        raise ExecutionError(
            f"kernel {kernel_name}: {len(arguments)} arguments for {len(types)} parameters"
        )

    grid = tuple(int(value) for value in grid) + (1,) * (3 - len(grid))
    regions, places = _regions(arguments, types, kernel_name)
    page = mmap.PAGESIZE
    # Two empty regions first: the sync-block lock and the workspace, which
    # triton-ascend passes as null pointers unless the kernel asks for them.
    sizes = [0, 0, *(region.end - region.start for region in regions)]
    lengths = [-(-size // page) * page for size in sizes]
    labels = ["the sync-block lock", "the workspace"]
    labels += [", ".join(region.labels) for region in regions]
    parameters = {f"%arg{index}": label for index, label in enumerate(labels[:2])}
    parameters |= {
        f"%arg{index}": argument.label
        for index, argument in enumerate(arguments, start=2)
    }
    faults, seconds, results = [], 0.0, []

    with tempfile.TemporaryDirectory(prefix="ninetoothed-lowered-run-") as directory:
        directory = pathlib.Path(directory)

        for placement in PLACEMENTS:
            starts = [
                length - size if placement == "end" else 0
                for size, length in zip(sizes, lengths)
            ]
            data_path = directory / f"{placement}.data"
            report_path = directory / f"{placement}.report"
            report_path.touch()
            offsets = [sum(lengths[:index]) for index in range(len(lengths))]

            data = torch.full((sum(lengths),), FILL, dtype=torch.uint8)

            for index, region in enumerate(regions, start=2):
                first = offsets[index] + starts[index]
                data[first : first + sizes[index]] = region.storage[
                    region.start : region.end
                ]

            data_path.write_bytes(data.numpy().tobytes())
            spec_arguments = [["memref", 0, 0, 0], ["memref", 1, 0, 0]]

            for argument, kind, place in zip(arguments, types, places):
                if place is None:
                    spec_arguments.append(["scalar", kind, _scalar(argument.value)])
                else:
                    region_index, offset, elements = place
                    spec_arguments.append(
                        [
                            "memref",
                            region_index + 2,
                            starts[region_index + 2] + offset,
                            elements,
                        ]
                    )

            spec = {
                "runtime": str(runtime),
                "library": str(lowered.library),
                "entry": lowering.ENTRY,
                "data": str(data_path),
                "report": str(report_path),
                "guard": GUARD_BYTES,
                "regions": [
                    [offset, length] for offset, length in zip(offsets, lengths)
                ],
                "arguments": spec_arguments,
                "grid": list(grid),
            }
            spec_path = directory / f"{placement}.json"
            spec_path.write_text(json.dumps(spec))
            start_time = time.perf_counter()

            try:
                completed = subprocess.run(
                    [sys.executable, "-I", "-S", str(_CHILD), str(spec_path)],
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired as error:
                raise ExecutionError(
                    f"kernel {kernel_name}: the lowered kernel ran past {timeout} s "
                    f"(grid {grid}, {placement}-fenced placement)"
                ) from error

            seconds += time.perf_counter() - start_time
            messages = [
                json.loads(line)
                for line in completed.stdout.splitlines()
                if line.startswith("{")
            ]

            if completed.returncode == faults_module.FAULT_EXIT:
                faults.append(
                    faults_module.decode(
                        report_path.read_bytes(),
                        messages,
                        lowered,
                        starts,
                        sizes,
                        labels,
                        parameters=parameters,
                        kernel_name=kernel_name,
                        placement=placement,
                        guard=GUARD_BYTES,
                    )
                )
                continue

            if completed.returncode != 0 or not any(
                message.get("done") for message in messages
            ):
                raise ExecutionError(
                    f"kernel {kernel_name}: the child running the lowered kernel "
                    f"({placement}-fenced placement) exited with "
                    f"{_exit_status(completed.returncode)}: "
                    f"{completed.stderr.strip()[-2000:]}"
                )

            data = torch.frombuffer(
                bytearray(data_path.read_bytes()), dtype=torch.uint8
            )
            results.append(
                [
                    data[offsets[index] + starts[index] :][: sizes[index]]
                    for index in range(2, len(sizes))
                ]
            )

    if faults:
        raise faults_module.combine(faults)

    ended, started = results
    differing = tuple(
        labels[index]
        for index, (first, second) in enumerate(zip(ended, started), start=2)
        if not torch.equal(first, second)
    )

    for region, result in zip(regions, ended):
        region.storage[region.start : region.end].copy_(result)

    return Execution(seconds, differing)


def _regions(arguments, types, kernel_name):
    regions, places, by_storage = [], [], {}

    for argument, kind in zip(arguments, types):
        value = argument.value

        if kind.startswith("memref<"):
            if not isinstance(value, torch.Tensor):
                raise ExecutionError(
                    f"kernel {kernel_name}: {argument.label} is {value!r}, not a tensor, "
                    f"for a parameter of type {kind}"
                )

            if value.device.type == "meta":
                # No storage (an optional tensor left out, for one): an empty
                # region, so that any access to it faults.
                regions.append(
                    _Region(
                        torch.empty(0, dtype=torch.uint8),
                        0,
                        0,
                        [f"{argument.label}, a meta tensor"],
                    )
                )
                places.append((len(regions) - 1, 0, 0))
                continue

            if value.device.type != "cpu":
                raise ExecutionError(
                    f"kernel {kernel_name}: {argument.label} is on {value.device}; "
                    "the lowered check runs on CPU tensors"
                )

            element = re.fullmatch(r"memref<\?x(\w+)>", kind)

            if element is None or _BYTES.get(element[1]) != value.element_size():
                raise ExecutionError(
                    f"kernel {kernel_name}: {argument.label} ({value.dtype}) does not "
                    f"fit parameter type {kind}"
                )

            size = value.element_size()
            start = value.storage_offset() * size
            extent = (
                0
                if value.numel() == 0
                else (
                    sum(
                        (length - 1) * stride
                        for length, stride in zip(value.shape, value.stride())
                    )
                    + 1
                )
                * size
            )
            storage = value.untyped_storage()
            key = storage.data_ptr()

            if key not in by_storage:
                by_storage[key] = len(regions)
                regions.append(
                    _Region(
                        torch.empty(0, dtype=torch.uint8).set_(storage),
                        start,
                        start + extent,
                        [],
                    )
                )

            region = regions[by_storage[key]]
            region.start = min(region.start, start)
            region.end = max(region.end, start + extent)
            region.labels.append(argument.label)
            places.append((by_storage[key], start, extent // size))
        else:
            if kind not in _SCALAR_TYPES:
                raise ExecutionError(
                    f"kernel {kernel_name}: parameter type {kind} of {argument.label} "
                    "is not supported by the lowered check"
                )

            places.append(None)

    # Offsets relative to each region's first byte, known only now.
    places = [
        None
        if place is None
        else (place[0], place[1] - regions[place[0]].start, place[2])
        for place in places
    ]

    return regions, places


def _scalar(value):
    if isinstance(value, torch.Tensor):
        value = value.item()

    if isinstance(value, bool):
        return bool(value)

    return value


def _exit_status(code):
    if code < 0:
        try:
            import signal

            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"

    return f"status {code}"
