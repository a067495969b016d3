"""Per-kernel dispatch: a :class:`Handle` whose ``__call__`` is written for its launch function's parameters.

The generic :meth:`Handle.__call__` walks every argument, asks each whether
it is a tensor and reads its device type: about a microsecond per call for
three tensors. Every variant's launch function has the same parameters, and
which of them are tensors is visible in its source, so each kernel gets a
``__call__`` with exactly its launch function's parameters, which reads one
boolean property per tensor (``is_cuda``, ``is_npu`` or ``is_cpu``) and
calls the launch function directly. Anything the fast path does not recognize (mixed device
types, a ``meta`` placeholder, an argument that is not a tensor, a first
call) falls back to the generic path, which applies the device rule
(:meth:`Handle.__call__`: ``meta`` tensors do not vote) and raises the errors.

The parameters are the compiler's analysis of NineToothed's source
(:func:`~ninetoothed_ascend.compiler.launch.launch_facts`), made once, when
the kernel is generated, and stored with its cache entry; a handle reads
them from the entry.
"""

import functools

import torch

from ninetoothed_ascend.jit.handle import Handle

#: Variant name → the ``torch.Tensor`` property that says a tensor is on its device type.
_DEVICE_PROPERTIES = {"cuda": "is_cuda", "npu": "is_npu", "cpu": "is_cpu"}

#: Names the generated ``__call__`` uses itself; a launch parameter with one of them keeps the generic path.
_GENERATED_NAMES = {"self", "launch", "Handle"}


def new_handle(kernel_name, key, entry, cache=None, launches=None, on_call=()):
    """Return a :class:`Handle` for ``entry`` with a ``__call__`` specialized to its launch function.

    :param kernel_name: ``str``.
    :param key: ``str``, the cache key.
    :param entry: :class:`~ninetoothed_ascend.cache.Entry`; its ``launch``
        facts (:func:`~ninetoothed_ascend.compiler.launch.launch_facts`)
        decide the ``__call__``.
    :param cache: as :class:`Handle`.
    :param launches: as :class:`Handle`.
    :param on_call: ``tuple`` of callables ``(handle, args, kwargs)`` called
        before every call, or ``()``; see :class:`ObservedHandle`.
    :return: an instance of a subclass of :class:`Handle`; of the plain
        class when the entry names no launch parameters or no tensor
        parameter, or a parameter is named like the generated code's own.
    """

    if on_call:
        return ObservedHandle(kernel_name, key, entry, cache, launches, on_call)

    facts = entry.launch or {}
    parameters = facts.get("parameters")
    tensors = tuple(facts.get("tensors", ()))

    if parameters is None or not tensors or _GENERATED_NAMES.intersection(parameters):
        return Handle(kernel_name, key, entry, cache, launches)

    return _handle_class(tuple(parameters), tensors)(
        kernel_name, key, entry, cache, launches
    )


class ObservedHandle(Handle):
    """A :class:`Handle` that calls each of ``on_call`` with ``(handle, args, kwargs)`` before every call.

    For tools that watch a program's calls (``ninetoothed-ascend record``,
    see :func:`ninetoothed_ascend.jit.observe`); it dispatches through the
    generic :meth:`Handle.__call__`.

    :param on_call: ``tuple`` of callables.
    """

    def __init__(self, kernel_name, key, entry, cache, launches, on_call):
        super().__init__(kernel_name, key, entry, cache, launches)
        self.on_call = on_call

    def __call__(self, *args, **kwargs):
        for observer in self.on_call:
            observer(self, args, kwargs)

        return super().__call__(*args, **kwargs)


def _resolve_and_launch(variant):
    # The first call through a specialized ``__call__`` lands here, then the
    # launch function shadows this method on the instance.
    def launch(self, *args, **kwargs):
        launch = self.launch_for(variant)
        setattr(self, f"_launch_{variant}", launch)

        return launch(*args, **kwargs)

    return launch


class _SpecializedHandle(Handle):
    _launch_cuda = _resolve_and_launch("cuda")
    _launch_npu = _resolve_and_launch("npu")
    _launch_cpu = _resolve_and_launch("cpu")


@functools.cache
def _handle_class(parameters, tensor_parameters):
    arguments = ", ".join(parameters)
    lines = [f"def __call__(self, {arguments}):", "    try:"]
    branch = "if"

    for variant, device_property in _DEVICE_PROPERTIES.items():
        if not hasattr(torch.Tensor, device_property):  # ``is_npu`` needs torch_npu
            continue

        condition = " and ".join(
            f"{tensor}.{device_property}" for tensor in tensor_parameters
        )
        lines += [
            f"        {branch} {condition}:",
            f"            launch = self._launch_{variant}",
        ]
        branch = "elif"

    lines += [
        "        else:",
        "            launch = Handle.__call__",
        "    except AttributeError:  # an argument that is not a tensor",
        "        launch = Handle.__call__",
        "    if launch is Handle.__call__:",
        f"        return launch(self, {arguments})",
        f"    return launch({arguments})",
    ]
    namespace = {"Handle": Handle}
    exec(compile("\n".join(lines), f"<dispatch {arguments}>", "exec"), namespace)

    return type("Handle", (_SpecializedHandle,), {"__call__": namespace["__call__"]})
