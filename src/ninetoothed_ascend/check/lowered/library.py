"""Bodies, for the CPU, of the functions triton-ascend's Linalg calls but only declares.

The ``ttadapter`` output declares two kinds of functions that the NPU's
libraries implement (triton-ascend 3.2.0):

* libdevice (``triton/language/extra/ascend/libdevice.py``): scalar
  ``__hmf_<name>`` functions, suffix ``f`` for fp32 and ``Dh`` for fp16 (one
  name may be declared with other types too), applied with ``linalg.map``;
* tile operations ``triton-adapter-opt`` lowers to a call on tensors:
  ``triton_gather(src, index, axis)`` (``tl.gather``),
  ``triton_sort(x, dim, descending)`` (``tl.sort``) and
  ``triton_flip(x, dim)`` (``tl.flip``; ntops' rot90). A module that calls
  one of them twice declares the second ``triton_flip_0`` and so on.

Each declaration becomes a definition in the math, arith, tensor and scf
dialects, of the declared types, with the meaning Triton gives the
operation. What runs is therefore that meaning, not the NPU library's code:
an error inside the library is out of this check's sight. A declaration of
any other function is refused with its name (:class:`NoCpuBody`).
"""

import re

# Per libdevice name without ``__hmf_`` and its type suffix: the body, in
# which ``{x}``, ``{y}`` are the arguments, ``{t}`` the first argument's type
# and ``%r`` the result.
LIBDEVICE = {
    "tanh": "%r = math.tanh {x} : {t}",
    "tan": "%r = math.tan {x} : {t}",
    "atan": "%r = math.atan {x} : {t}",
    "log1p": "%r = math.log1p {x} : {t}",
    "round": "%r = math.round {x} : {t}",
    "pow": "%r = math.powf {x}, {y} : {t}",
    "powi": "%r = math.ipowi {x}, {y} : {t}",
    "recip": "%one = arith.constant 1.0 : {t}\n%r = arith.divf %one, {x} : {t}",
    "relu": "%zero = arith.constant 0.0 : {t}\n%r = arith.maximumf {x}, %zero : {t}",
    "isnan": "%r = arith.cmpf uno, {x}, {x} : {t}",
    "isinf": "%a = math.absf {x} : {t}\n%w = arith.extf %a : {t} to f64\n"
    "%inf = arith.constant 0x7FF0000000000000 : f64\n%r = arith.cmpf oeq, %w, %inf : f64",
}

_DECLARATION = re.compile(
    r"^(?P<indent>[ \t]*)func\.func private @(?P<name>(?:__hmf_|triton_)\w+)"
    r"\((?P<types>.*)\) -> (?P<result>\S+?)(?: attributes \{[^}]*\})?(?: loc\(.*\))?$",
    re.MULTILINE,
)


class NoCpuBody(LookupError):
    """A declared function has no CPU body here; the message names it with its types."""


def define(linalg):
    """Replace every ``__hmf_*`` and ``triton_*`` declaration of a ``ttadapter`` output with a definition.

    :param linalg: ``str``, MLIR text.
    :return: ``str``.
    :raises NoCpuBody: a declared function this module has no body for.
    """

    def replace(match):
        name, result = match["name"], match["result"]
        types = _split(match["types"])

        operation = re.sub(r"_\d+$", "", name)

        if name.startswith("__hmf_"):
            body = _libdevice(name, types)
        elif operation == "triton_gather" and len(types) == 3:
            body = _gather(types, result)
        elif operation == "triton_sort" and len(types) == 3:
            body = _sort(types, result)
        elif operation == "triton_flip" and len(types) == 2:
            body = _flip(types, result)
        else:
            body = None

        if body is None:
            raise NoCpuBody(
                f"{name}({', '.join(types)}) -> {result} has no CPU body in the lowered check"
            )

        indent = match["indent"]
        parameters = ", ".join(f"%p{index}: {kind}" for index, kind in enumerate(types))
        lines = "\n".join(f"{indent}  {line}" for line in body.splitlines())

        return (
            f"{indent}func.func private @{name}({parameters}) -> {result} {{\n"
            f"{lines}\n{indent}  return %r : {result}\n{indent}}}"
        )

    return _DECLARATION.sub(replace, linalg)


def _libdevice(name, types):
    stem = re.sub(r"(f|Dh)$", "", name.removeprefix("__hmf_"))
    body = LIBDEVICE.get(stem, LIBDEVICE.get(name.removeprefix("__hmf_")))

    if body is None or len(types) > 2:
        return None

    return body.format(x="%p0", y="%p1", t=types[0])


def _shape(kind):
    # ``tensor<1x256xf32>`` -> ([1, 256], "f32")
    match = re.fullmatch(r"tensor<((?:\d+x)+)(\w+)>", kind)

    if match is None:
        return None, None

    return [int(size) for size in match[1].split("x") if size], match[2]


def _gather(types, result):
    # out[i] = src[i with its axis coordinate replaced by index[i]] (tl.gather).
    shape, _ = _shape(types[0])
    index_shape, _ = _shape(types[1])

    if shape is None or index_shape is None or len(shape) != len(index_shape):
        return None

    return _read_remapped(types, result, 2, lambda dim, size: ([], "%iv"), index=1)


def _flip(types, result):
    # out[i] = x[i with its dim coordinate d replaced by size - 1 - d] (tl.flip).
    shape, _ = _shape(types[0])

    if shape is None or types[0] != result:
        return None

    def back(dim, size):
        return [
            f"  %last{dim} = arith.constant {size - 1} : index",
            f"  %back{dim} = arith.subi %last{dim}, %d{dim} : index",
        ], f"%back{dim}"

    return _read_remapped(types, result, 1, back)


def _read_remapped(types, result, axis, replaced, index=None):
    # A ``linalg.generic`` over ``result`` that reads ``%p0`` at each
    # position ``d`` with ``d[%p<axis>]`` replaced: ``replaced(dim, size)``
    # returns the lines that compute the replacement and its name.
    # ``index``: the position of an index tensor parameter, read at ``d``
    # as ``%iv`` (tl.gather).
    shape, element = _shape(result)
    rank = len(shape)
    dims = ", ".join(f"d{dim}" for dim in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    parallel = ", ".join(['"parallel"'] * rank)
    maps, inputs, arguments, head = [identity], "", f"%o: {element}", []

    if index is not None:
        _, index_element = _shape(types[index])
        maps.append(identity)
        inputs = f"ins(%p{index} : {types[index]}) "
        arguments = f"%i: {index_element}, {arguments}"
        head = [f"  %iv = arith.index_cast %i : {index_element} to index"]

    lines = [
        f"%init = tensor.empty() : {result}",
        f"%axis = arith.index_cast %p{axis} : {types[axis]} to index",
        f"%r = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
        f"iterator_types = [{parallel}]}} {inputs}outs(%init : {result}) {{",
        f"^bb0({arguments}):",
        *head,
    ]

    for dim, size in enumerate(shape):
        computed, value = replaced(dim, size)
        lines += [
            f"  %d{dim} = linalg.index {dim} : index",
            f"  %k{dim} = arith.constant {dim} : index",
            f"  %on{dim} = arith.cmpi eq, %axis, %k{dim} : index",
            *computed,
            f"  %x{dim} = arith.select %on{dim}, {value}, %d{dim} : index",
        ]

    coordinates = ", ".join(f"%x{dim}" for dim in range(rank))
    lines += [
        f"  %v = tensor.extract %p0[{coordinates}] : {types[0]}",
        f"  linalg.yield %v : {element}",
        f"}} -> {result}",
    ]

    return "\n".join(lines)


def _sort(types, result):
    # Sorts along ``dim`` (descending if asked): an exchange sort per line of
    # the tile, on tensors (values only; equal values are interchangeable).
    shape, element = _shape(types[0])

    if shape is None or types[0] != result:
        return None

    kind = types[0]
    compare = "arith.cmpf" if element.startswith(("f", "bf")) else "arith.cmpi"
    greater, less = ("ogt", "olt") if compare == "arith.cmpf" else ("sgt", "slt")
    lines = [
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        f"%dim = arith.index_cast %p1 : {types[1]} to index",
        f"%r = scf.index_switch %dim -> {kind}",
    ]

    for axis in range(len(shape)):
        lines.append(f"case {axis} {{")
        current, depth = "%p0", 0

        for dim, size in enumerate(shape):
            if dim == axis:
                continue

            lines += [
                f"%n{axis}_{dim} = arith.constant {size} : index",
                f"%t{axis}_{dim} = scf.for %o{dim} = %c0 to %n{axis}_{dim} step %c1 "
                f"iter_args(%a{axis}_{dim} = {current}) -> ({kind}) {{",
            ]
            current, depth = f"%a{axis}_{dim}", depth + 1

        def at(position, axis=axis):
            return ", ".join(
                position if dim == axis else f"%o{dim}" for dim in range(len(shape))
            )

        lines += [
            f"%n{axis} = arith.constant {shape[axis]} : index",
            f"%s{axis} = scf.for %i = %c0 to %n{axis} step %c1 iter_args(%ti = {current}) -> ({kind}) {{",
            "%next = arith.addi %i, %c1 : index",
            f"%u = scf.for %j = %next to %n{axis} step %c1 iter_args(%tj = %ti) -> ({kind}) {{",
            f"%vi = tensor.extract %tj[{at('%i')}] : {kind}",
            f"%vj = tensor.extract %tj[{at('%j')}] : {kind}",
            f"%gt = {compare} {greater}, %vi, %vj : {element}",
            f"%lt = {compare} {less}, %vi, %vj : {element}",
            "%swap = arith.select %p2, %lt, %gt : i1",
            f"%w = scf.if %swap -> ({kind}) {{",
            f"%b = tensor.insert %vj into %tj[{at('%i')}] : {kind}",
            f"%c = tensor.insert %vi into %b[{at('%j')}] : {kind}",
            f"scf.yield %c : {kind}",
            "} else {",
            f"scf.yield %tj : {kind}",
            "}",
            f"scf.yield %w : {kind}",
            "}",
            f"scf.yield %u : {kind}",
            "}",
        ]
        result_name = f"%s{axis}"

        for dim in reversed(range(len(shape))):
            if dim == axis:
                continue

            lines += [f"scf.yield {result_name} : {kind}", "}"]
            result_name = f"%t{axis}_{dim}"

        lines += [f"scf.yield {result_name} : {kind}", "}"]

    lines += ["default {", f"scf.yield %p0 : {kind}", "}"]

    return "\n".join(lines)


def _split(text):
    parts, depth, start = [], 0, 0

    for index, character in enumerate(text):
        if character in "<([{":
            depth += 1
        elif character in ">)]}":
            depth -= 1
        elif character == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1

    if text[start:].strip():
        parts.append(text[start:].strip())

    return parts
