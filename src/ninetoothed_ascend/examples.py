"""Example kernel modules: loading them, running them, checking them against torch.

An example module defines, at module level:

* ``kernel``: a :class:`~ninetoothed_ascend.Handle`;
* ``inputs(device, dtype, **case)``: a ``tuple`` of input tensors;
* ``launch(kernel, *inputs)``: calls ``kernel`` (the handle or one variant's
  launch function) and returns the output tensor, or a ``tuple`` of them;
* ``reference(*inputs)``: the same result(s) computed by torch, or, for a
  kernel whose result torch cannot reproduce (random numbers, say),
  ``verify(outputs, *inputs)``: checks the kernel's ``outputs`` (a ``tuple``,
  one tensor per output) against properties they must have and returns
  ``(matches, max_abs_error)`` (``bool``, ``float``); :func:`compare` calls it
  instead of comparing with ``reference`` when it is defined;

``inputs`` may hold non-tensor arguments (a dimension, a probability, a seed)
as well; ``launch``, ``reference`` and ``verify`` receive them in the same
place. A module may define

* ``DTYPES``: the input dtypes it supports (default :data:`DTYPES`);
* ``CASES``: a ``tuple`` of ``dict`` of keyword arguments to ``inputs``, one
  per shape case (default ``({},)``, the defaults of ``inputs``);
* ``TOLERANCES``: a ``dict`` like :data:`TOLERANCES` for the dtypes where the
  kernel's own precision differs;
* ``KNOWN_FAILURES``: ``{check: reason}`` for checks the kernel cannot pass
  yet (``"cpu"``, ``"emulation"``, ``"compile_check"``); the tests mark them
  strict ``xfail`` with the reason, and ``demo`` reports a run on a device
  type listed there as a known failure, not a mismatch.

Examples are grouped by kind in subdirectories (``examples/elementwise``,
``examples/reduction``, ...); a file whose name starts with ``_`` is not an
example.
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


#: Input dtypes of an example that does not define ``DTYPES``.
DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def find_modules(paths):
    """Expand ``paths`` (files, or directories searched recursively for ``*.py``) into a sorted list of files.

    :raises FileNotFoundError: a path does not exist.
    """

    files = []

    for path in map(pathlib.Path, paths):
        if path.is_dir():
            files.extend(
                file
                for file in sorted(path.rglob("*.py"))
                if not file.name.startswith("_")
            )
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no example module or directory at {path}")

    return files


class NotAnExampleError(AttributeError):
    """A module lacks what an example defines; the message names the file and the names, in one line."""


class ExampleImportError(ImportError):
    """Importing an example module failed; the message names the file and the error, in one line."""


def load_module(path):
    """Import the example module at ``path``; this builds its kernel (or loads it from the cache).

    :raises NotAnExampleError: the module lacks one of the names listed
        above (``reference`` counts as present where ``verify`` is).
    :raises ExampleImportError: importing the module raised (a module it
        imports is not on ``PYTHONPATH``, say); the message holds the first
        line of the error.
    """

    path = pathlib.Path(path).resolve()
    name = f"ninetoothed_ascend_examples.{path.parent.name}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module

    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        lines = str(error).strip().splitlines()
        hint = (
            "; put the directory that holds it on PYTHONPATH"
            if isinstance(error, ModuleNotFoundError)
            else "; run it with python to see the traceback"
        )

        raise ExampleImportError(
            f"importing {path} failed: {type(error).__name__}: "
            f"{lines[0] if lines else ''}{hint}"
        ) from error

    missing = [
        attribute
        for attribute in ("kernel", "inputs", "launch", "reference")
        if not hasattr(module, attribute)
        and not (attribute == "reference" and hasattr(module, "verify"))
    ]

    if missing:
        raise NotAnExampleError(
            f"{path} is not an example module: it does not define "
            f"{', '.join(missing)}; see examples/elementwise/add.py for what an "
            "example defines"
        )

    return module


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The result of one run against torch.

    :param matches: ``bool``.
    :param max_abs_error: ``float``, the largest absolute difference where
        both results are finite.
    :param seconds: ``float``, wall time of the launch (including any first-call compilation).
    :param nonfinite: ``int``, elements where one result is NaN or infinite
        and the other is not the same (a NaN that torch does not give).
    """

    matches: bool
    max_abs_error: float
    seconds: float
    nonfinite: int = 0


def dtypes(module):
    """The input dtypes of example ``module`` (``tuple`` of ``torch.dtype``)."""

    return getattr(module, "DTYPES", DTYPES)


def cases(module):
    """The shape cases of example ``module``: ``tuple`` of ``dict`` of keyword arguments to its ``inputs``."""

    return getattr(module, "CASES", ({},))


def compare(module, kernel, device, dtype=torch.float16, case=None):
    """Run ``module.launch(kernel, ...)`` on ``device`` and compare with ``module.reference`` (or check with ``module.verify``).

    :param module: a loaded example module.
    :param kernel: the handle or a variant's launch function.
    :param device: ``str`` or ``torch.device``.
    :param dtype: ``torch.dtype`` of the inputs.
    :param case: ``dict`` of keyword arguments to ``module.inputs`` (one of :func:`cases`).
    :return: :class:`Comparison`.
    """

    inputs = module.inputs(device, dtype, **(case or {}))
    start = time.perf_counter()
    outputs = _as_tuple(module.launch(kernel, *inputs))

    if any(output.device.type == "cuda" for output in outputs):
        torch.cuda.synchronize()

    seconds = time.perf_counter() - start

    if hasattr(module, "verify"):
        matches, max_abs_error = module.verify(outputs, *inputs)

        return Comparison(
            matches=bool(matches), max_abs_error=float(max_abs_error), seconds=seconds
        )

    expected = _as_tuple(module.reference(*inputs))
    atol, rtol = tolerances(module, dtype)
    matches, max_abs_error = len(outputs) == len(expected), 0.0
    nonfinite = 0

    for output, reference in zip(outputs, expected):
        output, reference = output.float().cpu(), reference.float().cpu()
        matches = matches and output.shape == reference.shape
        matches = matches and torch.allclose(
            output, reference, atol=atol, rtol=rtol, equal_nan=True
        )

        if output.shape == reference.shape and output.numel():
            finite = output.isfinite() & reference.isfinite()
            same = (output == reference) | (output.isnan() & reference.isnan())
            nonfinite += int((~finite & ~same).sum())

            if finite.any():
                difference = (output - reference).abs()[finite]
                max_abs_error = max(max_abs_error, difference.max().item())

    return Comparison(
        matches=bool(matches),
        max_abs_error=max_abs_error,
        seconds=seconds,
        nonfinite=nonfinite,
    )


def tolerances(module, dtype):
    """``(atol, rtol)`` that example ``module``'s results in ``dtype`` are compared with torch's by: its ``TOLERANCES``, else :data:`TOLERANCES`."""

    return getattr(module, "TOLERANCES", {}).get(dtype, TOLERANCES[dtype])


def noncontiguous(inputs):
    """A non-contiguous variant of an example's ``inputs``, with equal values.

    Per argument:

    * a tensor of 2 or more dims: a slice of a buffer one element wider in
      the last dim (``buffer[..., :n]``), so every stride but the last grows
      (and is no longer a multiple of 16); the last stays 1;
    * a 1-D tensor: a view one element into a longer buffer. It stays
      contiguous (a 1-D view with stride 1 is), but its data pointer is no
      longer 16-byte aligned, which changes what triton-ascend's JIT
      specializes (no ``tt.divisibility`` on it);
    * a 0-D tensor, a nested (jagged) tensor, or any other argument: unchanged.

    The compile check uses it (``ninetoothed-ascend check --non-contiguous``)
    to compile the kernel a launch with sliced views compiles.

    :param inputs: ``tuple``, what an example's ``inputs`` returns.
    :return: ``tuple`` of the same length.
    """

    def variant(value):
        if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.is_nested:
            return value

        if value.dim() == 1:
            buffer = torch.empty(
                value.numel() + 1, dtype=value.dtype, device=value.device
            )

            return buffer[1:].copy_(value)

        buffer = torch.empty(
            (*value.shape[:-1], value.shape[-1] + 1),
            dtype=value.dtype,
            device=value.device,
        )

        return buffer[..., : value.shape[-1]].copy_(value)

    return tuple(variant(value) for value in inputs)


def _as_tuple(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def best_device():
    """Return ``"cuda"``, ``"npu"`` or ``"cpu"``: the first that torch reports available, in that order."""

    if torch.cuda.is_available():
        return "cuda"

    npu = getattr(torch, "npu", None)

    if npu is not None and npu.is_available():
        return "npu"

    return "cpu"


#: The memory layouts :func:`laid_out` makes, for examples that accept any strides.
LAYOUTS = ("contiguous", "transposed", "strided", "sliced", "expanded")


def laid_out(values, layout):
    """Return a tensor equal to ``values`` whose strides are those of ``layout``.

    :param values: ``torch.Tensor`` of any shape (1 to 4 dims in the examples).
    :param layout: one of :data:`LAYOUTS`: ``"contiguous"``; ``"transposed"``
        (dims stored in reverse order); ``"strided"`` (every other element of
        the innermost dim: still collapsible to one stride); ``"sliced"``
        (the innermost dim narrowed from a wider one: not collapsible);
        ``"expanded"`` (the outermost dim broadcast from size 1: stride 0, and
        the values are those of ``values[:1]``, repeated).
    :raises ValueError: an unknown ``layout``.
    """

    if layout == "contiguous":
        return values.contiguous()

    if layout == "transposed":
        dims = tuple(reversed(range(values.ndim)))

        return values.permute(dims).contiguous().permute(dims)

    if layout in ("strided", "sliced"):
        wider = list(values.shape)
        wider[-1] = 2 * wider[-1] if layout == "strided" else wider[-1] + 3
        storage = torch.zeros(wider, dtype=values.dtype, device=values.device)
        view = (
            storage[..., ::2]
            if layout == "strided"
            else storage[..., : values.shape[-1]]
        )
        view.copy_(values)

        return view

    if layout == "expanded":
        return values[:1].expand(values.shape)

    raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


def as_ndim(tensor, ndim):
    """View ``tensor`` with size-1 dimensions in front up to ``ndim`` dims, for a kernel built for ``ndim``.

    :param tensor: ``torch.Tensor`` with at most ``ndim`` dims.
    :param ndim: ``int``.
    """

    return tensor[(None,) * (ndim - tensor.ndim)]
