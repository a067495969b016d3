"""Example kernel modules: loading them, running them, checking them against torch.

An example module defines, at module level:

* ``kernel``: a :class:`~ninetoothed_ascend.Handle`;
* ``inputs(device, dtype)``: a ``tuple`` of input tensors;
* ``launch(kernel, *inputs)``: calls ``kernel`` (the handle or one variant's
  launch function) and returns the output tensor;
* ``reference(*inputs)``: the same result computed by torch;

and may define ``TOLERANCES``, a ``dict`` like :data:`TOLERANCES` for the
dtypes where the kernel's own precision differs.
"""

import dataclasses
import importlib.util
import pathlib
import sys
import time

import torch

#: Tolerances when comparing with torch, by dtype (absolute, relative).
TOLERANCES = {
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
    torch.float32: (1e-4, 1e-4),
}


def find_modules(paths):
    """Expand ``paths`` (files or directories of ``*.py``) into a sorted list of files.

    :raises FileNotFoundError: a path does not exist.
    """

    files = []

    for path in map(pathlib.Path, paths):
        if path.is_dir():
            files.extend(sorted(path.glob("*.py")))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no example module or directory at {path}")

    return files


def load_module(path):
    """Import the example module at ``path``; this builds its kernel (or loads it from the cache).

    :raises AttributeError: the module lacks one of the names listed above.
    """

    path = pathlib.Path(path).resolve()
    name = f"ninetoothed_ascend_examples.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)

    missing = [
        attribute
        for attribute in ("kernel", "inputs", "launch", "reference")
        if not hasattr(module, attribute)
    ]

    if missing:
        raise AttributeError(f"example {path} does not define {', '.join(missing)}")

    return module


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The result of one run against torch.

    :param matches: ``bool``.
    :param max_abs_error: ``float``, the largest absolute difference.
    :param seconds: ``float``, wall time of the launch (including any first-call compilation).
    """

    matches: bool
    max_abs_error: float
    seconds: float


def compare(module, kernel, device, dtype=torch.float16):
    """Run ``module.launch(kernel, ...)`` on ``device`` and compare with ``module.reference``.

    :param module: a loaded example module.
    :param kernel: the handle or a variant's launch function.
    :param device: ``str`` or ``torch.device``.
    :param dtype: ``torch.dtype`` of the inputs.
    :return: :class:`Comparison`.
    """

    inputs = module.inputs(device, dtype)
    start = time.perf_counter()
    output = module.launch(kernel, *inputs)

    if output.device.type == "cuda":
        torch.cuda.synchronize()

    seconds = time.perf_counter() - start
    expected = module.reference(*inputs)
    atol, rtol = getattr(module, "TOLERANCES", {}).get(dtype, TOLERANCES[dtype])
    difference = (output.float() - expected.float()).abs()

    return Comparison(
        matches=bool(
            torch.allclose(output.float(), expected.float(), atol=atol, rtol=rtol)
        ),
        max_abs_error=difference.max().item() if difference.numel() else 0.0,
        seconds=seconds,
    )


def best_device():
    """Return ``"cuda"``, ``"npu"`` or ``"cpu"``: the first that torch reports available, in that order."""

    if torch.cuda.is_available():
        return "cuda"

    npu = getattr(torch, "npu", None)

    if npu is not None and npu.is_available():
        return "npu"

    return "cpu"
