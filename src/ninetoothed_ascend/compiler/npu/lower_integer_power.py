"""The NPU pass :class:`LowerIntegerPower`."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports
from ninetoothed_ascend.compiler.traced_tensors import TracedTensors

#: The module-level ``triton.jit`` function that raises a tensor to a
#: positive integer power.
POWER = "ninetoothed_ascend_integer_power"

_POWER_SOURCE = f"""
@triton.jit
def {POWER}(x, n: triton.language.constexpr):
    result = x
    for _ in triton.language.static_range(n - 1):
        result = result * x
    return result
"""


class LowerIntegerPower(Pass):
    """Rewrite ``x ** n``, ``x`` a tensor and ``n`` a positive integer literal, into ``n - 1`` multiplications.

    Constraint: Triton's ``tensor`` has no ``__pow__`` (only ``constexpr``
    has), so the frontend fails on ``x ** 3`` with ``'tensor' object has no
    attribute '__pow__'``: triton-ascend 3.2.0, ``triton/language/core.py``
    (class ``tensor``) and ``CodeGenerator._apply_binary_method``
    (``triton/compiler/code_generator.py``, ``getattr(lhs, method_name)``).
    ntops' GELU (tanh form) writes ``input**3``: 3 launches (fp16, bf16,
    fp32) failed ``ttir`` (``ninetoothed-ascend check --manifest`` on them,
    in the triton-ascend environment). CUDA Triton 3.6.0 (measured on an
    H200, a ``triton.jit`` kernel storing ``x ** 3``) and 3.9.0 refuse it
    the same way, so the CUDA variant of such a kernel fails too; the NPU
    variant and its emulations compute what the application means.

    ``x ** n`` becomes ``ninetoothed_ascend_integer_power(x, n)``, a
    ``triton.jit`` function added to the module that multiplies ``x`` by
    itself ``n - 1`` times in a ``static_range`` (unrolled by the frontend):
    ``x`` is evaluated once, and the result is ``x * x * ... * x`` left to
    right in ``x``'s dtype, rounded after each product as that expression
    is. Only where ``x`` is a tensor in every launch
    (:class:`~ninetoothed_ascend.compiler.traced_tensors.TracedTensors`): a
    power of constexprs (``2 ** BLOCK``) is left to the frontend, which
    folds it. Other exponents (zero, negative, non-integer, a name) are left
    as they are, and fail as on CUDA.

    :Constraint: Triton's `tensor` has no `__pow__`: the frontend fails on `x
        ** 3` (`'tensor' object has no attribute '__pow__'`); ntops' GELU (tanh
        form) writes `input**3`. CUDA Triton 3.6.0 and 3.9.0 refuse it too, so
        only the NPU variant (and its emulations) computes such a kernel
    :Source: triton-ascend 3.2.0 `triton/language/core.py` (class `tensor`),
        `CodeGenerator._apply_binary_method`; measured: ntops' gelu (tanh)
        launches in fp16, bf16, fp32 with `ninetoothed-ascend check
        --manifest`, and a `triton.jit` kernel storing `x ** 3` on Triton 3.6.0
        (H200) and 3.9.0; `tests/compiler/npu/test_lower_integer_power.py`
    :Rewrites: `x ** n`, `x` a tensor in every launch
        (`compiler/traced_tensors.py`) and `n` a positive integer literal,
        becomes `ninetoothed_ascend_integer_power(x, n)`, a `triton.jit` helper
        multiplying `x` by itself `n - 1` times in a `static_range` (`x * x *
        ... * x`, rounded after each product); powers of constexprs and other
        exponents are left as they are
    """

    def run(self, tree, module=None):
        self._tensors = None
        self._kernel = None
        self._used = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if not any(
            self.resolve(decorator) == "triton.jit" for decorator in node.decorator_list
        ):
            return node

        self._kernel, self._tensors = node, None
        self.generic_visit(node)
        self._kernel = None

        return node

    def visit_BinOp(self, node):
        if self._kernel is None or not isinstance(node.op, ast.Pow):
            self.generic_visit(node)

            return node

        # Read from the kernel as it was, before any power in it is rewritten.
        if self._tensors is None:
            self._tensors = TracedTensors(self._kernel, self.aliases)

        exponent = node.right
        rewritable = (
            isinstance(exponent, ast.Constant)
            and type(exponent.value) is int
            and exponent.value >= 1
            and self._tensors.holds(node.left)
        )
        self.generic_visit(node)

        if not rewritable:
            return node

        self._used = True
        self.rewrote()

        return ast.copy_location(
            ast.Call(ast.Name(POWER, ast.Load()), [node.left, exponent], []), node
        )

    def finish(self, tree):
        if self._used:
            insert_after_imports(tree, ast.parse(_POWER_SOURCE).body)
