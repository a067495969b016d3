"""Keep the addresses of a gather load's masked-out lanes inside its tensor."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import (
    added,
    clone,
    find,
    keyword,
    statements,
    summands,
    walk,
)


class ConfineMaskedLanes(Pass):
    """Rewrite ``load(p + offset, mask=m, ...)``, where ``offset`` is a gather, into ``load(p + offset * m, mask=m, ...)``.

    Constraint: triton-ascend issues the memory access of every lane of a
    masked load, masked-out lanes included, and the mask only selects the
    value returned; where a masked-out lane's address is unmapped, the NPU
    raises an SMMU fault (a ``vector core exception``) and the process dies
    (triton-lang/triton-ascend#2332, triton-ascend 3.2.2). Masked-out lanes
    must address memory inside their tensor. Measured on triton-ascend 3.2.0's
    lowering: ``triton-adapter-opt`` lowers a load whose address is not
    affine in ``arange`` (a gather) to a scalar loop (``DiscreteMemAccess``)
    that runs ``memref.load`` on every lane and then selects with the mask;
    run on the CPU with every tensor between guard pages (the lowered level,
    ``ninetoothed-ascend check --run``, docs/lowered.md), 111 of 668 cases of
    the bundled examples faulted on such reads: the window gathers of
    avg_pool2d, max_pool2d, max_pool2d_fixed, conv2d and conv2d_bias (padding
    lanes, before the input's first byte and past its last) and the flattened
    gathers of flat_cast, flat_lt, flat_mul, flat_sigmoid and flat_sum_dim
    with strided inputs (lanes past the input's end). An affine load's mask
    is instead folded into the extent that ``triton-adapter-opt`` copies, so
    its masked-out lanes are not read (``tests/check/lowered_kernels.py``).

    Rewrite: the offset of a masked gather load becomes ``offset * m``
    (the boolean mask as 0 or 1): a masked-out lane reads the tensor's first
    element (the pointer the kernel was passed, ``p``), and its value is
    discarded by the mask as before; masked-in lanes address what they did.
    The access stays a gather (a product with the mask is not affine
    either), so no affine access turns into a scalar loop; an affine load
    is left alone, as are stores. A product, not ``where(m, offset, 0)``:
    ``triton-adapter-opt`` computes a gather's offset lane by lane inside
    its scalar loop when the offset is arithmetic on ``arange`` (the
    product too: one multiplication by the lane's mask, a ``tensor.extract``
    from the mask block the load needs anyway, which ``triton-adapter-opt``
    marks as one more ``DiscreteMemAccess`` op in the same loop), but computes a ``where`` of it as whole
    blocks before the loop, five more ``i32`` blocks in the UB (measured on
    ``tests/reproducers/masked_gather_reads_masked_lanes.py``; conv2d fp16,
    first config: BiShengIR planned 36,448 B of UB before the pass,
    62,560 B with ``where``, 57,472 B with the product; strided inputs
    65,152 B before, 73,536 B with the product; ``bench/discrete_access.py
    examples/vision/conv2d.py --without ConfineMaskedLanes --bishengir``).
    (``triton-adapter-opt`` guards
    each lane of a masked gather store, ``scf.if``, and writes nothing for a
    masked-out one). A tensor with no element has no valid lane to point
    at; a launch over one reads nothing only where its grid is empty.
    One cost, measured (``bench/discrete_access.py --without
    ConfineMaskedLanes``, docs/verification.md): a gather along one axis
    whose other axis is affine is lowered by ``triton-adapter-opt`` to a
    loop over the gathered rows, each row a copy of the whole tile's width
    whatever the mask (conv2d's weight when its filters do not collapse:
    rows of ``(c, r, s)`` digits, each a strided copy of the tile's filter
    lanes, which read past the weight's end); confined, both axes go
    element by element.

    Matched by structure: in a ``load`` with a ``mask``, the pointer is a
    chain of ``+`` with exactly one summand that names a kernel parameter
    (directly or through names assigned once to it): the tensor's pointer
    ``p``; the other summands are the offset. The offset is a gather when it
    holds a ``//`` or ``%`` of a tile (an expression holding ``arange`` or a
    block loaded along the tile), a product of two tiles, or a block loaded
    along the tile (an index tensor). A conditional on a constexpr parameter
    among the summands (the launch-decided layout of
    ``ContiguousFlatAccess`` and ``TransposeStridedTiles``: ``A if FLAG else
    B``) is decided per branch, each branch with the branch of the mask on
    the same constexpr, so the affine branch of such an access stays as it
    is and only the gather branch is confined.

    :Constraint: triton-ascend issues the memory access of every lane of a
        masked load and masks only the value (an SMMU fault / `vector core
        exception` where a masked-out lane's address is unmapped);
        `triton-adapter-opt` 3.2.0 folds an affine load's mask into the extent
        it copies, but lowers a gather (an address not affine in `arange`) to a
        scalar loop (`DiscreteMemAccess`) that reads every lane, then selects
    :Source: triton-lang/triton-ascend#2332; measured at the lowered level
        (`ninetoothed-ascend check --run`,
        `tests/check/test_lowered_examples.py`, docs/lowered.md): 111 of 668
        cases of the examples faulted before the pass (reads before and past
        the input of pooling and convolution windows, past the end of strided
        flattened inputs), 0 after;
        `tests/reproducers/masked_gather_reads_masked_lanes.py`;
        `tests/compiler/npu/test_confine_masked_lanes.py`
    :Rewrites: in a masked load whose offset (the summands besides the tensor's
        pointer parameter) is a gather (`//` or `%` of a tile, a product of two
        tiles, an index tensor), the offset becomes `offset * mask`: masked-out
        lanes address the tensor's first element (a product, not `where(mask,
        offset, 0)`: `triton-adapter-opt` keeps a product in its per-lane loop,
        but computes a `where` as whole blocks in the UB, conv2d fp16, first
        config: 36,448 B planned before the pass, 62,560 B with `where`, 57,472
        B with the product); a conditional on a constexpr layout flag among the
        summands is decided per branch with the mask's branch, so an affine
        fast path stays affine; stores and affine loads are left alone: on
        every example, dtype, shape case and layout the affine copies
        (`memref.copy`) and the scalar loops of the `ttadapter` output are as
        they were, but for the weight of conv2d and conv2d_bias with strided
        (non-collapsing) filters, a gather along its rows whose rows were each
        a strided copy of the tile's filter lanes, which read past the weight
        and now go element by element (docs/verification.md, "The lowered
        level")
    """

    TRIGGERS = ("triton.language.load",)

    def run(self, tree, module=None):
        self._flags = None

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if not any(
            self.resolve(decorator) == "triton.jit" for decorator in node.decorator_list
        ):
            return node

        self._flags = self.constexpr_parameters(node)
        self._parameters = {argument.arg for argument in node.args.args}
        self._values = _single_assignments(node)
        self._tiles = {"any": set(), "loaded": set()}
        self._holding = {}
        self._find_tiles(node)
        self._holding = {}
        self.generic_visit(node)
        self._flags = None

        return node

    def visit_Call(self, node):
        self.generic_visit(node)

        if not (
            self.is_call_to(node, "triton.language.load")
            and node.args
            and self._flags is not None
        ):
            return node

        mask = keyword(node, "mask")

        if mask is None or (
            isinstance(mask.value, ast.Constant) and mask.value.value is None
        ):
            return node

        terms = list(summands(node.args[0]))
        bases = [index for index, term in enumerate(terms) if self._is_base(term)]

        if len(bases) != 1 or len(terms) < 2:
            return node

        base = terms[bases[0]]
        offset = terms[: bases[0]] + terms[bases[0] + 1 :]
        confined = self._confine(offset, mask.value)

        if confined is None:
            return node

        node.args[0] = ast.BinOp(base, ast.Add(), confined)
        self.rewrote()
        # Nodes the rewrite dropped may lend their ids to new ones.
        self._holding = {}

        return node

    def _confine(self, terms, mask):
        # The offset ``sum(terms)`` with each gather branch confined under
        # ``mask``, or ``None`` where no branch is a gather.
        for index, term in enumerate(terms):
            if isinstance(term, ast.IfExp) and self._is_flag(term.test):
                branches = []

                for branch, taken in ((term.body, True), (term.orelse, False)):
                    inner = terms[:index] + list(summands(branch)) + terms[index + 1 :]
                    branches.append(
                        (inner, self._confine(inner, _decided(mask, term.test, taken)))
                    )

                if all(confined is None for _, confined in branches):
                    return None

                body, orelse = (
                    confined if confined is not None else added(inner)
                    for inner, confined in branches
                )

                return ast.IfExp(term.test, body, orelse)

        offset = added(terms)

        if not self._gathers(offset):
            return None

        return ast.BinOp(offset, ast.Mult(), clone(mask))

    def _is_flag(self, test):
        return isinstance(test, ast.Name) and test.id in self._flags

    def _is_base(self, term, seen=frozenset()):
        # A name of a kernel parameter, or one assigned once to such a name.
        if not isinstance(term, ast.Name) or term.id in seen:
            return False

        if term.id in self._values:
            return self._is_base(self._values[term.id], seen | {term.id})

        return term.id in self._parameters and term.id not in self._flags

    def _gathers(self, offset):
        for node in walk(offset):
            if isinstance(node, ast.BinOp):
                if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and self._holds_tile(
                    node.left
                ):
                    return True

                if (
                    isinstance(node.op, ast.Mult)
                    and self._holds_tile(node.left)
                    and self._holds_tile(node.right)
                ):
                    return True
            elif self._is_block_load(node) or (
                isinstance(node, ast.Name) and node.id in self._tiles["loaded"]
            ):
                return True

        return False

    def _holds_tile(self, node):
        # Asked of many nodes of one expression, and of the same nodes
        # again; the answer is kept for this run of the pass.
        key = id(node)
        known = self._holding.get(key)

        if known is None:
            known = self._holding[key] = self._find_tile(node)

        return known

    def _find_tile(self, node):
        return any(
            (self.is_call_to(inner, "triton.language.arange") and not _one_lane(inner))
            or self._is_block_load(inner)
            or (isinstance(inner, ast.Name) and inner.id in self._tiles["any"])
            for inner in walk(node)
        )

    def _is_block_load(self, node):
        return (
            self.is_call_to(node, "triton.language.load")
            and bool(node.args)
            and self._holds_tile(node.args[0])
        )

    def _find_tiles(self, kernel):
        # Names assigned a tile ("any") and those assigned a block loaded
        # along the tile ("loaded"), to a fixed point over the assignments.
        # Only names a masked load's pointer reads matter, and those their
        # assignments read: the other assignments (most of a kernel's text)
        # are not looked at.
        relevant = {
            node.id
            for call in find(kernel, ast.Call)
            if self.is_call_to(call, "triton.language.load")
            and call.args
            and keyword(call, "mask") is not None
            for node in find(call.args[0], ast.Name)
        }
        assignments = []
        pending = [
            statement
            for statement in statements(kernel)
            if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and statement.value is not None
        ]
        grew = True

        while grew:
            grew = False

            for statement in list(pending):
                if _targets(statement) & relevant:
                    pending.remove(statement)
                    assignments.append(statement)
                    relevant |= {node.id for node in find(statement.value, ast.Name)}
                    grew = True

        changed = True

        while changed:
            changed = False
            # What holds a tile grows with the names found so far.
            self._holding = {}

            for statement in assignments:
                names = _targets(statement)
                kinds = []

                if self._holds_tile(statement.value):
                    kinds.append("any")

                if any(
                    self._is_block_load(inner)
                    or (
                        isinstance(inner, ast.Name)
                        and inner.id in self._tiles["loaded"]
                    )
                    for inner in walk(statement.value)
                ):
                    kinds.append("loaded")

                for kind in kinds:
                    if not names <= self._tiles[kind]:
                        self._tiles[kind] |= names
                        changed = True


def _targets(statement):
    # The names an assignment statement binds.
    targets = (
        statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    )

    return {name.id for target in targets for name in find(target, ast.Name)}


def _one_lane(arange):
    # ``arange(0, 1)``: one lane, a program's scalar (a block-table entry
    # read by it is one index per program, which leaves the tile affine).
    bounds = arange.args

    return (
        len(bounds) == 2
        and all(isinstance(bound, ast.Constant) for bound in bounds)
        and bounds[1].value - bounds[0].value == 1
    )


def _single_assignments(kernel):
    # Names assigned exactly once in ``kernel`` (by ``name = value``), with the value.
    assigned = {}

    for statement in statements(kernel):
        targets = ()

        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = (statement.target,)

        for target in targets:
            for name in walk(target):
                if isinstance(name, ast.Name):
                    value = (
                        statement.value
                        if isinstance(statement, ast.Assign) and target is name
                        else None
                    )
                    assigned.setdefault(name.id, []).append(value)

    return {
        name: values[0]
        for name, values in assigned.items()
        if len(values) == 1 and values[0] is not None
    }


def _decided(mask, test, taken):
    # ``mask`` where the constexpr ``test`` is ``taken``: each conditional on
    # the same name, at the top of the mask or of an operand of its ``&``
    # tree, becomes its branch; the tree keeps its shape.
    if isinstance(mask, ast.IfExp) and _same_flag(mask.test, test):
        return _decided(mask.body if taken else mask.orelse, test, taken)

    if isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd):
        left = _decided(mask.left, test, taken)
        right = _decided(mask.right, test, taken)

        if left is not mask.left or right is not mask.right:
            return ast.BinOp(left, ast.BitAnd(), right)

    return mask


def _same_flag(first, second):
    return (
        isinstance(first, ast.Name)
        and isinstance(second, ast.Name)
        and first.id == second.id
    )
