"""Manifests: every kernel a program made, with what is needed to make its variants again.

``ninetoothed-ascend record -- CMD`` runs ``CMD`` with
``$NINETOOTHED_ASCEND_RECORD`` set to a directory; each Python process of it
that imports NineToothed activates ninetoothed-ascend, which (through
:func:`record_from_environment`) writes the kernels that process made to a file
of its own in that directory when it exits. ``record`` then merges them into
one manifest, a JSON document:

.. code-block:: json

    {"format": "ninetoothed-ascend-manifest", "version": 1,
     "command": ["python", "train.py"],
     "environment": {"python": "3.11.7", "ninetoothed": "0.26.0", ...},
     "kernels": [{"definition": "<sha256>", "key": "<sha256>",
                  "kernel_name": "add", "launch_name": "launch_add",
                  "counters_delta": [12, 1],
                  "origin": {"arrangement": "pkg.kernels:arrangement",
                             "application": "pkg.kernels:add"},
                  "max_num_configs": null,
                  "source": "<NineToothed's generated module>",
                  "variants": {"cuda": "<sha256>", "npu": "<sha256>", "cpu": null},
                  "calls": [{"device": "cpu", "args": [
                      {"tensor": [3, 100], "stride": [100, 1], "dtype": "float32"},
                      {"value": 2}], "kwargs": {"BLOCK_SIZE": {"value": 128}}}]}]}

What makes a kernel again is NineToothed's generated source (``source``,
the CUDA variant byte for byte) with its definition digest: the NPU and CPU
variants are the pass pipelines applied to it (within the
``max_num_configs`` given to ``make``, which the source does not show), and
the cache key is the digest combined with the warming environment.
Recording the defining module and attribute instead would not do: operator
libraries make kernels inside functions, at run time, from the ndim and
dtype of their inputs, and the key depends on NineToothed's naming counters
at that moment in that program.
``origin`` names those functions for people. ``calls`` are the argument types
of the first call per device type (``kwargs`` where the call passed keyword
arguments, such as a caller-given block size), which the Ascend compile
check needs (``ninetoothed-ascend check KEY``).
"""

import atexit
import json
import os
import pathlib
import uuid

import torch

from ninetoothed_ascend.cache import write_atomically
from ninetoothed_ascend.jit import observe
from ninetoothed_ascend.jit.environment import environment

FORMAT = "ninetoothed-ascend-manifest"
VERSION = 1

#: Largest manifest read (bytes), checked before reading: a kernel's record
#: holds its generated source, tens of KiB.
MAX_SIZE = 256 * 2**20

#: Set by ``record`` to the directory where each process writes its kernels.
RECORD_VARIABLE = "NINETOOTHED_ASCEND_RECORD"

_KERNEL_FIELDS = {
    "definition": str,
    "key": str,
    "kernel_name": str,
    "launch_name": str,
    "counters_delta": list,
    "source": str,
    "variants": dict,
}


class ManifestError(ValueError):
    """A manifest cannot be read: the message says which file and why, in one line."""


def environment_description():
    """Return :func:`~ninetoothed_ascend.jit.environment.environment` as a ``dict``."""

    return dict(environment())


class _Recorder:
    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.kernels = {}

    def __call__(self, handle, record):
        record = {
            name: value
            for name, value in record.items()
            if name not in ("built", "stored")
        }
        kernel = self.kernels.setdefault(record["key"], record | {"calls": []})
        # ``warm`` compares what it builds with every variant's digest.
        handle.build()
        kernel["variants"] = handle.entry.digests()

    def note_call(self, handle, args, kwargs):
        """Note the argument types of ``handle``'s first call per device type, before the call (a call that fails counts too).

        Keyword arguments (a block size the caller passes as
        ``kernel(x, y, BLOCK_SIZE=1024)``) are noted under ``kwargs``.
        """

        calls = self.kernels[handle.key]["calls"]
        device = next(
            (
                a.device.type
                for a in (*args, *kwargs.values())
                if isinstance(a, torch.Tensor)
            ),
            None,
        )

        if all(call["device"] != device for call in calls):
            call = {"device": device, "args": [_describe_argument(a) for a in args]}

            if kwargs:
                call["kwargs"] = {
                    name: _describe_argument(value) for name, value in kwargs.items()
                }

            calls.append(call)

    def write(self):
        if not self.kernels:
            return

        document = {
            "format": FORMAT,
            "version": VERSION,
            "environment": environment_description(),
            "kernels": list(self.kernels.values()),
        }
        path = self.directory / f"{os.getpid()}-{uuid.uuid4().hex}.json"
        write_atomically(path, json.dumps(document).encode("utf-8"))


def _describe_argument(arg):
    if isinstance(arg, torch.Tensor):
        return {
            "tensor": list(arg.shape),
            "stride": list(arg.stride()),
            "dtype": str(arg.dtype).removeprefix("torch."),
        }

    if isinstance(arg, (bool, int, float)) or arg is None:
        return {"value": arg}

    return {"unsupported": type(arg).__name__}


def record_from_environment():
    """Start recording if ``$NINETOOTHED_ASCEND_RECORD`` names a directory (see module docstring)."""

    directory = os.environ.get(RECORD_VARIABLE)

    if not directory:
        return

    recorder = _Recorder(directory)
    observe(recorder, on_call=recorder.note_call)
    atexit.register(recorder.write)


def merge(directory, command):
    """Merge the files that recording processes wrote to ``directory`` into one manifest.

    :param directory: ``pathlib.Path``.
    :param command: ``list`` of ``str``, the recorded command.
    :return: ``dict``, the manifest (kernels in the order first made, each once).
    """

    kernels = {}
    environments = []

    for path in sorted(
        pathlib.Path(directory).glob("*.json"), key=lambda p: p.stat().st_mtime
    ):
        document = read(path)
        environments.append(document["environment"])

        for kernel in document["kernels"]:
            kernels.setdefault(kernel["key"], kernel)

    return {
        "format": FORMAT,
        "version": VERSION,
        "command": list(command),
        "environment": environments[0] if environments else environment_description(),
        "kernels": list(kernels.values()),
    }


def write(path, manifest):
    """Write ``manifest`` to ``path`` atomically (all or nothing).

    :raises OSError: the file cannot be written.
    """

    path = pathlib.Path(path)
    write_atomically(path, (json.dumps(manifest, indent=1) + "\n").encode("utf-8"))


def read(path):
    """Read and validate a manifest.

    :param path: ``str`` or ``pathlib.Path``.
    :return: ``dict``.
    :raises ManifestError: unreadable, larger than :data:`MAX_SIZE` (checked
        before reading), nested too deeply for the JSON parser, not JSON, not
        a manifest, another version, or a kernel record missing a field.
    """

    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size

            if size > MAX_SIZE:
                raise ManifestError(
                    f"{path} is {size} bytes, more than the limit of {MAX_SIZE}; "
                    "it is not a manifest written by `record`"
                )

            document = json.loads(file.read(MAX_SIZE + 1))
    except OSError as error:
        raise ManifestError(
            f"cannot read manifest {path}: {error.strerror or error}"
        ) from None
    except RecursionError:
        raise ManifestError(
            f"{path} is nested too deeply to be a manifest written by `record`"
        ) from None
    except ValueError as error:
        raise ManifestError(f"{path} is not JSON: {error}") from None

    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ManifestError(
            f'{path} is not a ninetoothed-ascend manifest (no "format": "{FORMAT}")'
        )

    if document.get("version") != VERSION:
        raise ManifestError(
            f"{path} is manifest version {document.get('version')!r}; this "
            f"ninetoothed-ascend reads version {VERSION}: record it again"
        )

    if not isinstance(document.get("environment"), dict):
        raise ManifestError(f"{path} has no environment description")

    kernels = document.get("kernels")

    if not isinstance(kernels, list):
        raise ManifestError(f"{path} has no list of kernels")

    for index, kernel in enumerate(kernels):
        for field, kind in _KERNEL_FIELDS.items():
            if not isinstance(kernel, dict) or not isinstance(kernel.get(field), kind):
                raise ManifestError(
                    f"{path}: kernel {index} has no valid {field!r} field"
                )

        limit = kernel.get("max_num_configs")

        if limit is not None and not (type(limit) is int and limit >= 1):
            raise ManifestError(
                f"{path}: kernel {index} has no valid 'max_num_configs' field "
                "(a positive integer or null)"
            )

        delta = kernel["counters_delta"]

        if len(delta) != 2 or not all(type(n) is int and n >= 0 for n in delta):
            raise ManifestError(
                f"{path}: kernel {index} has no valid 'counters_delta' field "
                "(two non-negative integers)"
            )

    return document


def call_inputs(call):
    """Make CPU arguments with the types of a recorded call (for the compile check).

    :param call: ``dict``, one of a kernel's ``calls``.
    :return: ``(args, kwargs)``: a ``tuple`` and a ``dict`` of uninitialized
        tensors of the recorded shape, strides and dtype, and the recorded
        scalar values.
    :raises ManifestError: an argument type was not recorded, or the call
        is not a record of arguments (a damaged manifest).
    """

    args, kwargs = call.get("args"), call.get("kwargs", {})

    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ManifestError("the recorded call has no list of args and dict of kwargs")

    return (
        tuple(map(_recorded_argument, args)),
        {name: _recorded_argument(value) for name, value in kwargs.items()},
    )


def _recorded_argument(arg):
    if not isinstance(arg, dict):
        raise ManifestError(
            f"a recorded argument is {type(arg).__name__}, not a record"
        )

    if "tensor" in arg:
        try:
            return torch.empty_strided(
                arg["tensor"], arg["stride"], dtype=getattr(torch, arg["dtype"])
            )
        except (AttributeError, KeyError, RuntimeError, TypeError) as error:
            raise ManifestError(f"a recorded tensor is malformed: {error}") from None

    if "value" in arg:
        return arg["value"]

    raise ManifestError(
        f"an argument of type {arg.get('unsupported')} was not recorded"
    )
