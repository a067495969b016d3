"""Order a program's read-back of what it stored: a barrier between the store and the load."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import (
    find,
    keyword,
    single_assignments,
    summands,
)

_BARRIER = "triton.language.debug_barrier()"


class SynchronizeReadBack(Pass):
    """Put ``triton.language.debug_barrier()`` after a store to a tensor that the program loads afterwards.

    Rule: a program that stores to a tensor and later loads from it (a
    NineToothed application that assigns a result to a parameter, such as
    the mean of an instance norm kept for the backward pass, then reads
    that parameter) must synchronize between the store and the load; Triton
    guarantees nothing about reading back through global memory without a
    barrier, since a load need not run on the threads that stored the same
    elements (triton-lang/triton#11872, which documents
    ``tl.debug_barrier()`` for global read-back; triton-lang/triton#9887,
    stale reads across warps). The same round trip through global memory
    inside one Ascend vector kernel is a hazard too (hw-native-sys/PTOAS#730:
    an MTE3→MTE2 pipe flag alone gave intermittent stale reads), and
    triton-ascend supports ``tl.debug_barrier`` on Atlas A2/A3
    (docs/zh/triton_api/Compiler_Hint_Ops/debug_barrier.md).

    Measured (docs/verification.md, "Read-back after a store"): a library's
    instance norm that stores its mean and variance to ``(N, C)`` tensors and
    reads them back; its NPU variant, emulated on an H100 (Triton 3.6),
    read the variance as whatever the tensor held before the launch on
    every call but the first (whose autotuning runs had already stored the
    right values), errors up to 1,677 against torch (up to 0.005 with the
    persistent-grid loop taken out), while NineToothed's own kernel read
    the stored values in every run measured; with a barrier after each
    such store, exact.

    "Afterwards" is program order: a load later in the same block, in a
    block that follows, or anywhere in an enclosing loop's body (the next
    iteration). A store and a load touch the same tensor when their pointer
    expressions reach a common kernel parameter through ``+`` and
    single assignments. It runs before :class:`PersistentGrid`: one program
    of NineToothed's grid is one task, and the tasks a persistent program
    loops over touch disjoint tiles.

    :Constraint: a program that stores to a tensor and loads from it afterwards
        (an application assigning a statistic to a parameter, then reading it)
        must synchronize between the two: Triton guarantees nothing about
        reading back through global memory without a barrier, and a
        same-address global-memory round trip inside one Ascend vector kernel
        is a hazard too
    :Source: triton-lang/triton#11872 (`tl.debug_barrier()` for global
        read-back), #9887; hw-native-sys/PTOAS#730; triton-ascend
        `docs/zh/triton_api/Compiler_Hint_Ops/debug_barrier.md` (A2/A3);
        measured on an H100, docs/verification.md "Read-back after a store";
        `tests/compiler/npu/test_synchronize_read_back.py`
    :Rewrites: `tl.debug_barrier()` after a `tl.store` whose tensor (the kernel
        parameter its pointer reaches through `+` and single assignments) a
        `tl.load` reads afterwards in program order: later in the block, after
        the block, or anywhere in an enclosing loop (the next iteration);
        before `PersistentGrid`, whose tasks touch disjoint tiles
    """

    def visit_FunctionDef(self, node):
        if not self.module.is_kernel(node):
            return node

        self._bases = _PointerBases(node)
        self._loads = {}

        for statement in node.body:
            self._index_loads(statement)

        node.body = self._synchronize(node.body, frozenset())

        return node

    def _synchronize(self, body, loaded_later):
        synchronized = []
        later = set(loaded_later)

        for statement in reversed(body):
            loaded = self._loads[id(statement)]

            if isinstance(statement, (ast.For, ast.While)):
                in_loop = later | loaded
                statement.body = self._synchronize(statement.body, in_loop)
                statement.orelse = self._synchronize(statement.orelse, later)
            elif isinstance(statement, ast.If):
                statement.body = self._synchronize(statement.body, later)
                statement.orelse = self._synchronize(statement.orelse, later)
            elif self._stores_to(statement) & later:
                synchronized.append(ast.parse(_BARRIER).body[0])
                self.rewrote()

            synchronized.append(statement)
            later |= loaded

        return synchronized[::-1]

    def _stores_to(self, statement):
        if isinstance(statement, ast.Expr) and self.is_call_to(
            statement.value, "triton.language.store"
        ):
            return self._bases(_pointer(statement.value))

        return set()

    def _index_loads(self, statement):
        """Record the bases ``statement`` loads from, and those of each statement inside it, in one walk.

        :meth:`_synchronize` asks for the loads of a block's statements and
        then of the statements nested in them; found per statement, a loop
        nested ``n`` deep was walked ``n + 1`` times.
        """

        loaded = set()

        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                loaded |= self._index_loads(child)
            else:
                loaded.update(
                    base
                    for node in find(child, ast.Call)
                    if self.is_call_to(node, "triton.language.load")
                    for base in self._bases(_pointer(node))
                )

        self._loads[id(statement)] = loaded

        return loaded


class _PointerBases:
    """The kernel parameters a pointer expression of ``kernel`` is based on: ``bases(expression)`` → ``set`` of ``str``.

    Follows the summands of ``+`` and names assigned exactly once in the
    kernel; a summand that is a product or a call contributes nothing (an
    offset, not a base).
    """

    def __init__(self, kernel):
        self._parameters = {argument.arg for argument in kernel.args.args}
        self._values = single_assignments(kernel)

    def __call__(self, expression, seen=frozenset()):
        bases = set()

        for term in summands(expression) if expression is not None else ():
            if not isinstance(term, ast.Name) or term.id in seen:
                continue

            if term.id in self._values:
                bases |= self(self._values[term.id], seen | {term.id})
            elif term.id in self._parameters:
                bases.add(term.id)

        return bases


def _pointer(call):
    if call.args:
        return call.args[0]

    pointer = keyword(call, "pointer")

    return pointer.value if pointer is not None else None
