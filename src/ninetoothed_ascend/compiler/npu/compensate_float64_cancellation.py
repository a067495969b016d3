"""Subtract a constant from a block read from fp64 with the part of it that fp32 drops."""

import ast
import collections

from ninetoothed_ascend.compiler.npu.access_float64_as_bits import (
    LOAD,
    LOAD_BITS,
    NARROW,
)
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import find, insert_after_imports, statements

#: The module-level ``triton.jit`` function that loads as
#: :data:`~ninetoothed_ascend.compiler.npu.access_float64_as_bits.LOAD` does
#: (same parameters) and returns the block with its residual: for an fp64
#: tensor, the fp32 nearest each value and the fp32 nearest what that
#: leaves; for any other, the block as loaded and the scalar integer 0.
LOAD_WITH_RESIDUAL = "ninetoothed_ascend_load_float64_with_residual"

#: The module-level ``triton.jit`` function ``(residual, narrow, other)``
#: that subtracts ``other`` from ``narrow``, adding ``residual`` where both
#: are fp32.
SUBTRACT = "ninetoothed_ascend_subtract_with_residual"

#: The ``triton.jit`` function that gives, from fp64 bits, the fp32 nearest
#: the value less its own nearest fp32.
RESIDUAL = "ninetoothed_ascend_float64_residual"

_SOURCE = f"""
@triton.jit
def {RESIDUAL}(bits):
    high = (bits >> 32).to(triton.language.int32)
    low = bits.to(triton.language.int32)
    exponent = ((high >> 20) & 0x7FF) - 896
    # The 29 bits fp32 drops, less 2**29 where they round the kept ones
    # up (to nearest, ties to even), weigh 2**(exponent - 179): exact
    # within fp32's normal range, where that weight is itself normal.
    dropped = low & 0x1FFFFFFF
    up = (dropped > 0x10000000) | ((dropped == 0x10000000) & (((low >> 29) & 1) != 0))
    weight = ((exponent - 52) << 23).to(triton.language.float32, bitcast=True)
    residual = (dropped - (up.to(triton.language.int32) << 29)).to(triton.language.float32) * weight
    residual = triton.language.where((exponent >= 53) & (exponent <= 254), residual, 0.0)
    return triton.language.where(high < 0, -residual, residual)


@triton.jit
def {LOAD_WITH_RESIDUAL}(pointer, mask, other):
    if pointer.dtype.element_ty == triton.language.float64:
        bits = {LOAD_BITS}(pointer, mask)
        loaded = {NARROW}(bits)
        if other is not None:
            loaded = triton.language.where(mask, loaded, other)
        residual = {RESIDUAL}(bits)
    else:
        loaded = {LOAD}(pointer, mask, other)
        # Read exactly, the block has no residual: an integer, which the
        # subtraction tells from an fp32 residual, and the frontend drops.
        residual = triton.language.full((), 0, triton.language.int32)
    return loaded, residual


@triton.jit
def {SUBTRACT}(residual, narrow, other):
    if residual.dtype == triton.language.float32:
        if narrow.dtype == triton.language.float32:
            difference = narrow - other + residual
        else:
            difference = narrow - other
    else:
        difference = narrow - other
    return difference
"""

#: The prefixes of the names that keep a loaded block and its residual.
_LOADED = "ninetoothed_loaded_"
_RESIDUAL = "ninetoothed_residual_"


class CompensateFloat64Cancellation(Pass):
    """Compute a loaded block less a constant from the block's fp64 value, not from its nearest fp32 alone.

    Constraint: an fp64 tensor is computed on in fp32
    (:class:`~ninetoothed_ascend.compiler.npu.lower_float64.LowerFloat64`,
    :class:`~ninetoothed_ascend.compiler.npu.access_float64_as_bits.AccessFloat64AsBits`),
    and a difference of nearly equal numbers keeps only the digits where
    they differ: ntops' acosh at ``x = 1.000001`` is ``log(x + sqrt((x -
    1)(x + 1)))``, and fp32 ``x - 1`` is off by 5%, the result by 3.3e-5,
    33 times the test's tolerance (``atol=1e-6, rtol=1e-5``, ntops'
    ``tests/test_acosh.py``), and 41 times at ``x = 1.0000001``; with the
    pass, 0.08 times and 0.04 times (emulated on the CPU:
    ``tests/compiler/npu/test_compensate_float64_cancellation.py::test_acosh_near_1_in_fp64_matches_torch_emulated_on_the_cpu``,
    with and without the pass). BiShengIR 1.2.0 takes no fp64
    arithmetic, so the difference is not computed in fp64.

    In kernels: a name bound once, not a parameter, to a load
    (``ninetoothed_ascend_load_float64_as_float32(...)``, or a cast of
    one: ``tl.cast(..., dtype)``, ``....to(dtype)``), and a difference of
    it and a constant (``x - 1.0``, ``1.0 - x``, ``x - tl.cast(1.0,
    dtype)``): the load becomes
    ``ninetoothed_ascend_load_float64_with_residual(...)``, bound before
    the name to the block (``ninetoothed_loaded_<name>``) and its residual
    (``ninetoothed_residual_<name>``), and the difference
    ``ninetoothed_ascend_subtract_with_residual(residual, x, c)`` (negated
    for ``c - x``). For an fp64 tensor the block is ``hi``, the fp32
    nearest each value, and the residual ``lo``, the fp32 nearest ``x -
    hi``, made from the bits fp32 drops; where the name is fp32, the
    difference is ``(hi - c) + lo``: ``hi - c`` is exact for ``hi`` within
    a factor of 2 of ``c`` (Sterbenz), so only ``lo``'s rounding is lost.
    For other element types the block is the load and the residual the
    integer 0, which the subtraction ignores (folded at trace time, and the
    frontend drops the constant): the kernel computes as written.

    ``lo`` is 0 where ``hi`` is not a normal fp32 or ``|x| < 2**-74`` (its
    weight would not be normal): a difference with a constant of such
    magnitude is ``hi - c``.

    :Constraint: fp64 tensors are computed on in fp32, where a difference of
        nearly equal numbers loses digits (ntops' acosh at 1.000001 misses its
        tolerance by 33 times); BiShengIR 1.2.0 has no fp64 arithmetic
    :Source: ntops `tests/test_acosh.py`;
        `tests/compiler/npu/test_compensate_float64_cancellation.py`
    :Rewrites: `x - c` and `c - x`, `x` bound once to a load (or a cast of
        one) and `c` a constant, become `(hi - c) + lo` from the load's fp64
        bits (`hi` the fp32 nearest, `lo` the fp32 nearest the rest) where the
        tensor is fp64 and `x` fp32; `x - c` otherwise (folded)
    """

    def run(self, tree, module=None):
        self._loaded = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if self.module.is_kernel(node):
            self._compensate(node)

        return node

    def finish(self, tree):
        if self._loaded:
            insert_after_imports(tree, ast.parse(_SOURCE).body)

    def _compensate(self, function):
        # A name bound once and not a parameter holds, wherever it is read,
        # the value of its one assignment: the residual bound beside it is
        # assigned at the same point, so the two always agree.
        bindings = collections.Counter(
            name.id
            for name in find(function, ast.Name)
            if name.ctx.__class__ is ast.Store
        )
        parameters = {
            argument.arg
            for argument in ast.walk(function.args)
            if isinstance(argument, ast.arg)
        }
        taken = set(bindings) | parameters
        loads = {}

        for parent in statements(function):
            for field in ("body", "orelse", "finalbody"):
                body = getattr(parent, field, None)

                if body.__class__ is not list:
                    continue

                for statement in body:
                    load = self._load(statement)

                    if load is None:
                        continue

                    name = statement.targets[0].id

                    if bindings[name] != 1 or name in parameters:
                        continue

                    loads[name] = (load, statement, body)

        if not loads:
            return

        subtractor = _Subtract(self, loads, taken)
        subtractor.visit(function)

        for name, (loaded, residual) in subtractor.kept.items():
            load, assignment, body = loads[name]
            index = next(
                position
                for position, statement in enumerate(body)
                if statement is assignment
            )
            body.insert(
                index,
                ast.Assign(
                    [
                        ast.Tuple(
                            [
                                ast.Name(loaded, ast.Store()),
                                ast.Name(residual, ast.Store()),
                            ],
                            ast.Store(),
                        )
                    ],
                    ast.Call(ast.Name(LOAD_WITH_RESIDUAL, ast.Load()), load.args, []),
                ),
            )
            _replace(assignment, load, ast.Name(loaded, ast.Load()))
            self._loaded = True

    def _load(self, statement):
        # ``name = load(...)``, or a cast of it (``tl.cast(..., dtype)``,
        # ``....to(dtype)``): the load, else ``None``.
        if not (
            statement.__class__ is ast.Assign
            and len(statement.targets) == 1
            and statement.targets[0].__class__ is ast.Name
        ):
            return None

        value = statement.value

        if self.is_call_to(value, "triton.language.cast") and value.args:
            value = value.args[0]
        elif (
            value.__class__ is ast.Call
            and value.func.__class__ is ast.Attribute
            and value.func.attr == "to"
        ):
            value = value.func.value

        if (
            value.__class__ is ast.Call
            and value.func.__class__ is ast.Name
            and value.func.id == LOAD
            and len(value.args) == 3
            and not value.keywords
        ):
            return value

        return None

    def is_constant(self, node):
        """Whether ``node`` is a number, negated or not, or a cast of one (``tl.cast(1.0, dtype)``, ``(1.0).to(dtype)``)."""

        if node.__class__ is ast.UnaryOp and node.op.__class__ in (ast.USub, ast.UAdd):
            node = node.operand

        if node.__class__ is ast.Constant:
            return node.value.__class__ in (int, float)

        if node.__class__ is ast.Call:
            if self.is_call_to(node, "triton.language.cast") and node.args:
                return self.is_constant(node.args[0])

            if node.func.__class__ is ast.Attribute and node.func.attr == "to":
                return self.is_constant(node.func.value)

        return False


class _Subtract(ast.NodeTransformer):
    # Rewrites ``name - c`` and ``c - name`` of the loaded names, naming the
    # block and the residual each keeps (``kept``: name -> their names).

    def __init__(self, owner, loads, taken):
        self.owner = owner
        self.loads = loads
        self.taken = taken
        self.kept = {}

    def visit_BinOp(self, node):
        self.generic_visit(node)

        if node.op.__class__ is not ast.Sub:
            return node

        for name, other, negate in (
            (node.left, node.right, False),
            (node.right, node.left, True),
        ):
            if (
                name.__class__ is ast.Name
                and name.id in self.loads
                and self.owner.is_constant(other)
            ):
                self.owner.rewrote()
                _, residual = self._kept(name.id)
                difference = ast.Call(
                    ast.Name(SUBTRACT, ast.Load()),
                    [
                        ast.Name(residual, ast.Load()),
                        ast.Name(name.id, ast.Load()),
                        other,
                    ],
                    [],
                )

                if negate:
                    difference = ast.UnaryOp(ast.USub(), difference)

                return ast.copy_location(difference, node)

        return node

    def _kept(self, name):
        if name not in self.kept:
            self.kept[name] = tuple(
                self._unused(prefix + name) for prefix in (_LOADED, _RESIDUAL)
            )

        return self.kept[name]

    def _unused(self, name):
        while name in self.taken:
            name += "_"

        self.taken.add(name)

        return name


def _replace(statement, node, replacement):
    # Put ``replacement`` where ``node`` is in ``statement``'s value.
    if statement.value is node:
        statement.value = replacement

        return

    for parent in ast.walk(statement.value):
        for field, value in ast.iter_fields(parent):
            if value is node:
                setattr(parent, field, replacement)
            elif value.__class__ is list and any(item is node for item in value):
                setattr(
                    parent,
                    field,
                    [replacement if item is node else item for item in value],
                )
