"""Which tiles of a kernel are live at once: its statements in execution order, and the last use of each name.

The UB model (:mod:`~ninetoothed_ascend.compiler.npu.ub.model`) counts a
tile from its assignment to its last use, extended to the end of any loop
it is used in but defined outside of (it is needed in the next iteration).
"""

import ast

from ninetoothed_ascend.compiler.syntax import find, walk


def statements_in_order(body, loop, branch):
    """Yield ``(statement, innermost enclosing loop)`` in execution order, loops before their bodies.

    An ``if`` whose branch ``branch(statement)`` tells keeps only that branch.
    """

    for statement in body:
        if isinstance(statement, ast.If):
            taken = branch(statement)

            if taken is not None:
                yield from statements_in_order(
                    statement.body if taken else statement.orelse, loop, branch
                )
                continue

        yield statement, loop

        if isinstance(statement, (ast.For, ast.While)):
            yield from statements_in_order(statement.body, statement, branch)
            yield from statements_in_order(statement.orelse, loop, branch)
        elif isinstance(statement, ast.If):
            yield from statements_in_order(statement.body, loop, branch)
            yield from statements_in_order(statement.orelse, loop, branch)


def last_uses(statements):
    """Map each name to the position of its last use, extended to the end of any loop it is used in but defined outside of."""

    position_of = {
        id(statement): index for index, (statement, _) in enumerate(statements)
    }
    enclosing_loop = {}

    for statement, loop in statements:
        enclosing_loop.setdefault(id(statement), loop)

    loop_end = {}

    for index, (_, loop) in enumerate(statements):
        while loop is not None:
            loop_end[id(loop)] = index
            loop = enclosing_loop.get(id(loop))

    defined = {}
    last = {}

    for index, (statement, loop) in enumerate(statements):
        for name in reads(statement):
            use = index
            enclosing = loop

            while (
                enclosing is not None
                and defined.get(name, -1) < position_of[id(enclosing)]
            ):
                use = max(use, loop_end.get(id(enclosing), index))
                enclosing = enclosing_loop.get(id(enclosing))

            last[name] = max(last.get(name, -1), use)

        for name in assigned_names(statement):
            defined.setdefault(name, index)

    return last


def _own_expressions(statement):
    """The expressions a statement evaluates itself (not those of a nested body)."""

    if isinstance(statement, (ast.For,)):
        return [statement.iter]

    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]

    if isinstance(statement, ast.AugAssign):
        return [statement.target, statement.value]

    return [
        child
        for child in ast.iter_child_nodes(statement)
        if isinstance(child, ast.expr)
    ]


def reads(statement):
    return {
        node.id
        for expression in _own_expressions(statement)
        for node in find(expression, ast.Name)
        if not isinstance(node.ctx, ast.Store)
    } | (
        {statement.target.id}
        if isinstance(statement, ast.AugAssign)
        and isinstance(statement.target, ast.Name)
        else set()
    )


def assigned_names(statement):
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For)):
        targets = [statement.target]
    else:
        return []

    return [
        node.id
        for target in targets
        for node in walk(target)
        if isinstance(node, ast.Name)
    ]
