"""Read and write fp64 tensors as int64 bits, converting to and from fp32 with integer operations."""

import ast

from ninetoothed_ascend.compiler.npu.lower_float64 import DEMOTE
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports, walk

#: The module-level ``triton.jit`` function that loads a block, fp32 where
#: the pointer points to fp64. It takes ``triton.language.load``'s first
#: three parameters, in its order (``None`` for one the load left out): the
#: UB model costs a call of it as that load.
LOAD = "ninetoothed_ascend_load_float64_as_float32"

#: The module-level ``triton.jit`` function that stores a block, as fp64
#: bits where the pointer points to fp64: ``(pointer, value, mask)``, as
#: ``triton.language.store``.
STORE = "ninetoothed_ascend_store_float32_as_float64"

#: The ``triton.jit`` function that rounds fp64 bits (an int64 block) to the
#: nearest fp32, ties to even.
NARROW = "ninetoothed_ascend_float32_from_float64_bits"

#: The ``triton.jit`` function that loads the bits of an fp64 block through
#: an int64 pointer, 0 where masked: ``(pointer, mask)``.
LOAD_BITS = "ninetoothed_ascend_load_float64_bits"

#: The ``triton.jit`` function that gives the fp64 bits of an fp32 block.
WIDEN = "ninetoothed_ascend_float64_bits_from_float32"

_SOURCE = f"""
@triton.jit
def {NARROW}(bits):
    high = (bits >> 32).to(triton.language.int32)
    low = bits.to(triton.language.int32)
    exponent = ((high >> 20) & 0x7FF) - 896
    nan = ((high & 0x7FF00000) == 0x7FF00000) & (((high & 0xFFFFF) | low) != 0)
    # The 24-bit significand, then its round bit and a sticky bit for the
    # 28 bits below it: shifted right with them, it rounds as all 29 would.
    significand = ((high & 0xFFFFF) << 3) | ((low >> 29) & 7) | 0x800000
    dropped = low & 0x1FFFFFFF
    extended = (significand << 2) | ((dropped >> 27) & 2) | ((dropped & 0xFFFFFFF) != 0).to(triton.language.int32)
    # Normal results keep 24 bits; subnormal ones fewer, the rest are 0.
    shift = triton.language.where(exponent >= 1, 2, triton.language.minimum(3 - exponent, 27))
    truncated = extended >> shift
    rounded = (extended + (1 << (shift - 1)) - 1 + (truncated & 1)) >> shift
    # A carry out of the significand moves into the exponent, up to inf.
    magnitude = triton.language.where(exponent >= 1, (exponent - 1) << 23, 0) + rounded
    magnitude = triton.language.where(exponent >= 255, 0x7F800000, magnitude)
    magnitude = triton.language.where(nan, 0x7FC00000, magnitude)
    return ((high & -0x80000000) | magnitude).to(triton.language.float32, bitcast=True)


@triton.jit
def {WIDEN}(value):
    bits = triton.language.cast(value, triton.language.float32).to(triton.language.int32, bitcast=True)
    exponent = (bits >> 23) & 0xFF
    fraction = bits & 0x7FFFFF
    # A subnormal is fraction * 2**-149: fraction converts to fp32 exactly,
    # as a normal number whose exponent is 149 less than the value's.
    normalized = triton.language.where(exponent == 0, fraction.to(triton.language.float32).to(triton.language.int32, bitcast=True), bits)
    widened = ((normalized >> 23) & 0xFF) + triton.language.where(exponent == 0, 896 - 149, 896)
    widened = triton.language.where(exponent == 0xFF, 0x7FF, widened)
    widened = triton.language.where((bits << 1) == 0, 0, widened)
    high = (bits & -0x80000000) | (widened << 20) | ((normalized & 0x7FFFFF) >> 3)
    low = (normalized & 7) << 29
    return (high.to(triton.language.int64) << 32) | (low.to(triton.language.int64) & 0xFFFFFFFF)


@triton.jit
def {LOAD_BITS}(pointer, mask):
    bits_pointer = pointer.to(triton.language.pointer_type(triton.language.int64))
    if mask is None:
        bits = triton.language.load(bits_pointer)
    else:
        bits = triton.language.load(bits_pointer, mask=mask, other=0)
    return bits


@triton.jit
def {LOAD}(pointer, mask, other):
    if pointer.dtype.element_ty == triton.language.float64:
        loaded = {NARROW}({LOAD_BITS}(pointer, mask))
        # The fill is selected after the conversion: an int64 load fills
        # with bits, and a cast to fp64 of the fill is refused.
        if other is not None:
            loaded = triton.language.where(mask, loaded, other)
    elif mask is None:
        loaded = triton.language.load(pointer)
    else:
        loaded = triton.language.load(pointer, mask=mask, other=other)
    return loaded


@triton.jit
def {STORE}(pointer, value, mask):
    if pointer.dtype.element_ty == triton.language.float64:
        triton.language.store(pointer.to(triton.language.pointer_type(triton.language.int64)), {WIDEN}(value), mask=mask)
    else:
        triton.language.store(pointer, value, mask=mask)
"""


class AccessFloat64AsBits(Pass):
    """Load and store through ``triton.jit`` functions that read and write fp64 tensors as int64 bits and convert them with integer operations.

    Constraint: BiShengIR 1.2.0 converts no fp64 value to fp32 or back
    ("unsupported datatype for arith::TruncFOp to hfusion", and
    ``arith::ExtFOp``), so a kernel that computes in fp32 on an fp64 tensor
    (:class:`~ninetoothed_ascend.compiler.npu.lower_float64.LowerFloat64`)
    cannot convert what it loads or stores; and triton-ascend 3.2's
    frontend refuses every cast to fp64 ("[fp8, fp64] is unsupported on
    Ascend for now"), among them the one that makes a masked load's fill
    value. An fp64 tensor read through an int64 pointer, its values made
    fp32 with shifts, masks and selects on int32 words, and written back
    the same way, holds no fp64 value at all, and reaches ``hivmc``.
    Measured with ascendnpu-ir 1.2.0 for Ascend910B1
    (``.venv-ascend/bin/python -m pytest -m ascend``):
    ``tests/compiler/npu/test_access_float64_as_bits.py::test_an_fp64_kernel_reaches_hivmc_only_through_bits``
    (without the pass, BiShengIR refuses the conversions) and
    ``::test_an_fp64_softmax_reaches_hivmc`` (``examples/reduction/softmax.py``
    over rows of 781 fp64 values, 151,744 B of UB planned at 1,024 lanes).
    The conversions' integer temporaries take UB the model does not price
    (docs/ub.md, "fp64 tensors"): an fp64 launch's largest configs can
    overflow, and the launch drops them
    (:class:`~ninetoothed_ascend.compiler.npu.drop_refused_configs.DropRefusedConfigs`).

    In kernels:

    - ``ninetoothed_ascend_float32_if_float64(load(p, mask=m, other=c))``
      (every load :class:`~ninetoothed_ascend.compiler.npu.lower_float64.LowerFloat64`
      wrapped) and a load no pass wrapped become
      ``ninetoothed_ascend_load_float64_as_float32(p, m, c)`` (``None``
      for a mask or fill the load has not);
    - ``store(p, v, mask=m)`` becomes
      ``ninetoothed_ascend_store_float32_as_float64(p, v, m)``;
    - LowerFloat64's wrapper around what a later pass made of a load
      (``trans(load(...))``) is dropped: no block is fp64 any more.

    Both are ``triton.jit`` functions whose ``if`` on the pointer's
    element type the frontend folds: other element types are loaded and
    stored as the kernel wrote it, with no operation added. For fp64, the
    load reads ``p`` cast to an int64 pointer (masked lanes read 0) and
    selects the fill value ``c`` after the conversion; the store converts
    ``v`` to fp32 first, then writes its fp64 bits through the int64
    pointer. Loads and stores with other arguments (``eviction_policy``,
    ``boundary_check``, ...), which NineToothed does not write, are left
    as they are.

    The conversions, on the two 32-bit halves of the bits: fp64 to fp32
    rounds to nearest, ties to even; ±0, fp32 subnormals (rounded to
    nearest too), overflow to ±inf, ±inf and NaN (a quiet NaN) are those of
    a float conversion. fp32 to fp64 is exact: ±0, subnormals (normalized
    through their fp32 integer conversion, exact below 2**23), ±inf and NaN
    (payload kept). ``tests/compiler/npu/test_access_float64_as_bits.py``
    compares both with torch's, bit for bit, on Triton's interpreter.

    :Constraint: BiShengIR 1.2.0 refuses fp64 to fp32 conversions and back
        ("unsupported datatype for arith::TruncFOp to hfusion"); triton-ascend
        3.2 refuses every cast to fp64
    :Source: ascendnpu-ir 1.2.0 (`bishengir-compile`, Ascend910B1);
        `tests/compiler/npu/test_access_float64_as_bits.py`
    :Rewrites: every load and store of a kernel goes through a `triton.jit`
        function that reads and writes an fp64 tensor through an int64
        pointer, converting with integer operations (fp64 to fp32 rounded
        to nearest even; fp32 to fp64 exact); for other element types the
        load or store as written (an `if` on the pointer's element type,
        folded)
    """

    #: What the helpers call: a module of stores alone gets a load.
    INTRODUCES = ("triton.language.load", "triton.language.minimum")

    def run(self, tree, module=None):
        self._accessed = False
        self._in_kernel = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if self.module.is_kernel(node):
            self._in_kernel = True
            self.generic_visit(node)
            self._in_kernel = False

        return node

    def visit_Call(self, node):
        if not self._in_kernel:
            return node

        self.generic_visit(node)

        if (
            node.func.__class__ is ast.Name
            and node.func.id == DEMOTE
            and len(node.args) == 1
            and not any(
                self.is_call_to(inner, "triton.language.load")
                for inner in walk(node.args[0])
            )
        ):
            # LowerFloat64's conversion is the loads' now: no block it
            # wraps is fp64 any more, save one of a load left as written.
            return node.args[0]

        accessed = self._load(node) or self._store(node)

        return node if accessed is None else ast.copy_location(accessed, node)

    def finish(self, tree):
        if not self._accessed:
            return

        insert_after_imports(tree, ast.parse(_SOURCE).body)

        # Every call of LowerFloat64's wrapper went with its load.
        if not any(
            node.__class__ is ast.Name and node.id == DEMOTE for node in ast.walk(tree)
        ):
            tree.body = [
                statement
                for statement in tree.body
                if not (
                    statement.__class__ is ast.FunctionDef and statement.name == DEMOTE
                )
            ]

    def _load(self, node):
        # ``load(p[, m[, c]])``, positional or by keyword: the call of LOAD.
        if not self.is_call_to(node, "triton.language.load"):
            return None

        arguments = _arguments(node, ("pointer", "mask", "other"))

        if arguments is None:
            return None

        return self._call(LOAD, arguments)

    def _store(self, node):
        if not self.is_call_to(node, "triton.language.store"):
            return None

        arguments = _arguments(node, ("pointer", "value", "mask"))

        if arguments is None or arguments[1] is None:
            return None

        return self._call(STORE, arguments)

    def _call(self, name, arguments):
        self._accessed = True
        self.rewrote()

        return ast.Call(
            ast.Name(name, ast.Load()),
            [
                ast.Constant(None) if argument is None else argument
                for argument in arguments
            ],
            [],
        )


def _arguments(call, parameters):
    # The values of ``parameters`` (the call's leading ones, in order) given
    # positionally or by keyword, ``None`` for each left out; ``None`` where
    # the call passes anything else or no first one.
    if len(call.args) > len(parameters):
        return None

    values = dict(zip(parameters, call.args))

    for item in call.keywords:
        if item.arg not in parameters or item.arg in values:
            return None

        values[item.arg] = item.value

    if parameters[0] not in values:
        return None

    return [values.get(parameter) for parameter in parameters]
