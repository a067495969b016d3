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
"""

import ast
import functools

import torch

from ninetoothed_ascend.jit.handle import Handle

#: Variant name → the ``torch.Tensor`` property that says a tensor is on its device type.
_DEVICE_PROPERTIES = {"cuda": "is_cuda", "npu": "is_npu", "cpu": "is_cpu"}

#: Names the generated ``__call__`` uses itself; a launch parameter with one of them keeps the generic path.
_GENERATED_NAMES = {"self", "launch", "Handle"}


def new_handle(kernel_name, key, entry):
    """Return a :class:`Handle` for ``entry`` with a ``__call__`` specialized to its launch function.

    :param kernel_name: ``str``.
    :param key: ``str``, the cache key.
    :param entry: :class:`~ninetoothed_ascend.cache.Entry`.
    :return: an instance of a subclass of :class:`Handle`; of the plain
        class when the launch function's parameters cannot be read from the
        CUDA source or it has no tensor parameter.
    """

    parameters = launch_parameters(entry.variants["cuda"].source, entry.launch_name)

    if (
        parameters is None
        or not parameters[1]
        or _GENERATED_NAMES.intersection(parameters[0])
    ):
        return Handle(kernel_name, key, entry)

    return _handle_class(*parameters)(kernel_name, key, entry)


def launch_parameters(source, launch_name):
    """Read the parameters of the launch function ``launch_name`` in generated ``source``.

    NineToothed's launch function passes every tensor parameter with its
    ``.size(i)`` and ``.stride(i)``; scalar parameters (``Tensor(0)``) are
    passed as they are. So a parameter is a tensor exactly when the function
    calls ``.size`` or ``.stride`` on it.

    :param source: ``str``, a generated module.
    :param launch_name: ``str``.
    :return: ``(parameters, tensor_parameters)``: ``tuple`` of ``str``, all
        the parameters, and those that are tensors; ``None`` if the function
        is not found or takes ``*args`` or ``**kwargs``.
    """

    start = source.find(f"\ndef {launch_name}(")

    if start < 0:
        return None

    # The launch function is the module's last definition: parse only it.
    (function,) = ast.parse(source[start:]).body[:1]
    signature = function.args

    if signature.vararg or signature.kwarg or signature.kwonlyargs:
        return None

    names = [argument.arg for argument in signature.args]
    tensors = {
        node.func.value.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("size", "stride")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
    }

    return tuple(names), tuple(name for name in names if name in tensors)


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

    return type("Handle", (Handle,), {"__call__": namespace["__call__"]})
