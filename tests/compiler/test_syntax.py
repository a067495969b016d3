"""The walks of compiler.syntax give what the ``ast`` module's give, in the same order."""

import ast
import copy
import textwrap

from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    assignments,
    binds_directly,
    clone,
    find,
    import_aliases,
    same,
    single_assignments,
    statements,
    stored_names,
    structure,
    walk,
)

MODULE = textwrap.dedent(
    """
    import math as m
    from triton import language as tl

    def kernel(x, y: tl.constexpr, *args, z=1, **kwargs):
        import numpy as m
        total = (x + 1) * -y if x < y <= 3 else [i for i in range(4) if i]
        try:
            total += m.sqrt(2.0)
        except ValueError as error:
            raise RuntimeError(f"{error!r}") from error
        finally:
            pass
        match total:
            case [first, *_]:
                return first
            case _:
                return lambda a, b=2: a + b + total

    value = kernel(1, 2)[0:3, None]
    """
)


STATEMENT_LIKE = (ast.stmt, ast.excepthandler, ast.match_case, ast.Module)


def test_walk_yields_the_nodes_of_ast_walk_in_its_order():
    tree = ast.parse(MODULE)

    assert [id(node) for node in walk(tree)] == [id(node) for node in ast.walk(tree)]


def test_statements_are_the_statement_level_nodes_of_ast_walk_in_its_order():
    tree = ast.parse(MODULE)
    expected = [node for node in ast.walk(tree) if isinstance(node, STATEMENT_LIKE)]

    assert [id(node) for node in statements(tree)] == [id(node) for node in expected]


def test_the_import_met_last_breadth_first_wins():
    # ``m`` is bound at module level to math and inside the function to numpy.
    assert import_aliases(ast.parse(MODULE))["m"] == "numpy"


class _Renamer(Transformer):
    def visit_Call(self, node):
        self.generic_visit(node)

        if isinstance(node.func, ast.Name):
            node.func = ast.Name(f"renamed_{node.func.id}", ast.Load())

        return node

    def visit_Pass(self, node):
        return None

    def visit_Raise(self, node):
        return [ast.Expr(ast.Constant(1)), node]


class _Reference(ast.NodeTransformer):
    visit_Call = _Renamer.visit_Call
    visit_Pass = _Renamer.visit_Pass
    visit_Raise = _Renamer.visit_Raise


class _ConstantCounter(Transformer):
    def __init__(self):
        self.constants = 0

    def visit_Constant(self, node):
        self.constants += 1

        return node


def test_transformer_rewrites_as_node_transformer_does():
    ours, reference = ast.parse(MODULE), ast.parse(MODULE)

    _Renamer().visit(ours)
    _Reference().visit(reference)

    assert ast.dump(ours, include_attributes=True) == ast.dump(
        reference, include_attributes=True
    )
    assert "renamed_kernel" in ast.unparse(ours)


def test_transformer_visits_constants_where_it_has_a_visitor_for_them():
    counter = _ConstantCounter()
    counter.visit(ast.parse(MODULE))

    assert counter.constants == sum(
        isinstance(node, ast.Constant) for node in ast.walk(ast.parse(MODULE))
    )


def test_clone_is_a_deep_copy_like_deepcopys():
    tree = ast.parse(MODULE)
    copied = clone(tree)

    assert ast.dump(copied, include_attributes=True) == ast.dump(
        copy.deepcopy(tree), include_attributes=True
    )
    # Nothing shared: changing the copy leaves the original as it was.
    original = ast.dump(tree, include_attributes=True)
    for node in ast.walk(copied):
        if isinstance(node, ast.Name):
            node.id = "renamed"
        if isinstance(node, ast.FunctionDef):
            node.body.clear()
    assert ast.dump(tree, include_attributes=True) == original


def test_clone_replaces_copied_nodes_bottom_up_and_leaves_the_original():
    tree = ast.parse("f(g(x), y)")
    original = ast.dump(tree)
    seen = []

    def replace(node):
        seen.append(type(node).__name__)

        if isinstance(node, ast.Call) and node.func.id == "g":
            return ast.Name("z", ast.Load())

        return node

    copied = clone(tree, replace)

    assert ast.unparse(copied) == "f(z, y)"
    assert ast.dump(tree) == original
    # Children before their parents; nodes without fields are not offered.
    assert seen == ["Name", "Name", "Name", "Call", "Name", "Call", "Expr", "Module"]


def _dump_classes(nodes):
    # The nodes grouped by ``ast.dump``, as sets of positions.
    groups = {}

    for position, node in enumerate(nodes):
        groups.setdefault(ast.dump(node), set()).add(position)

    return sorted(map(sorted, groups.values()))


def test_structure_and_same_tell_nodes_apart_as_ast_dump_does():
    # ``MODULE`` parsed twice: every node has an equal twin in the other copy.
    nodes = [*walk(ast.parse(MODULE)), *walk(ast.parse(MODULE))]
    by_structure = {}

    for position, node in enumerate(nodes):
        by_structure.setdefault(structure(node), set()).add(position)

    assert sorted(map(sorted, by_structure.values())) == _dump_classes(nodes)

    for first in nodes:
        for second in nodes:
            assert same(first, second) == (ast.dump(first) == ast.dump(second))


def test_structure_and_same_follow_ast_dumps_leaves_and_absent_fields():
    pairs = [
        # ``repr`` of the value, as ``ast.dump`` writes it.
        (ast.Constant(1), ast.Constant(1.0)),
        (ast.Constant(1), ast.Constant(True)),
        (ast.Constant(0.0), ast.Constant(-0.0)),
        (ast.Constant("1"), ast.Constant(1)),
        # An optional field missing or ``None``: both left out.
        (ast.arg("x"), ast.arg("x", None)),
        # A required field missing, or ``None``: told apart.
        (ast.Constant(), ast.Constant(None)),
        (ast.Name("x", ast.Load()), ast.Name("x", ast.Store())),
        (ast.Tuple([], ast.Load()), ast.Tuple([ast.Constant(1)], ast.Load())),
    ]

    for first, second in pairs:
        expected = ast.dump(first) == ast.dump(second)

        assert same(first, second) == expected, ast.dump(first)
        assert (structure(first) == structure(second)) == expected, ast.dump(first)


def test_structure_with_replace_keys_a_node_as_its_replacement_would_be():
    # Every ``x`` read stands for ``(y + 1) * x``, whose own ``x`` stays.
    replacement = ast.parse("(y + 1) * x", mode="eval").body

    def replace(node):
        if (
            isinstance(node, ast.Name)
            and node.id == "x"
            and node is not replacement.right
        ):
            return structure(replacement, replace)

        return None

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node):
            return copy.deepcopy(replacement) if node.id == "x" else node

    tree = ast.parse(MODULE)
    substituted = Substitute().visit(ast.parse(MODULE))

    assert structure(tree, replace) == structure(substituted)
    assert structure(tree, replace) != structure(tree)
    # Where ``replace`` keys nothing, nothing changes.
    assert structure(tree, lambda node: None) == structure(tree)


def test_stored_names_are_the_names_in_store_context_of_a_walk():
    tree = ast.parse(MODULE + "\n(w := 1)\nfor a, *b in []:\n    c.d = e[f] = 2\n")
    expected = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }

    assert stored_names(tree) == expected
    assert {"total", "value", "w", "a", "b", "i"} <= expected
    assert stored_names(ast.Name("x", ast.Store())) == {"x"}


def test_find_holds_the_nodes_of_a_class_that_walk_yields():
    tree = ast.parse(MODULE)

    for node_class in (ast.Call, ast.Name, ast.Constant, ast.Assign, ast.arg):
        for root in (tree, *walk(tree)):
            expected = [node for node in walk(root) if isinstance(node, node_class)]

            assert sorted(map(id, find(root, node_class))) == sorted(map(id, expected))


ASSIGNING = textwrap.dedent(
    """
    def kernel(p, n):
        once = p + 1
        twice = 0
        twice += n
        a, b = n, p
        for i in range(n):
            inner = i * 2
        typed: int
        noted: int = 3
        if n:
            also = once
    """
)


def test_assignments_are_every_binding_statement_of_each_name_in_statement_order():
    kernel = ast.parse(ASSIGNING).body[0]
    bound = assignments(kernel)
    lines = {name: [node.lineno for node in nodes] for name, nodes in bound.items()}

    assert lines == {
        "once": [3],
        "twice": [4, 5],
        "a": [6],
        "b": [6],
        "i": [7],
        "typed": [9],
        "noted": [10],
        "inner": [8],
        "also": [12],
    }
    assert binds_directly(bound["once"][0], "once")
    assert not binds_directly(bound["a"][0], "a")


def test_single_assignments_are_the_names_bound_once_by_an_equals_sign():
    kernel = ast.parse(ASSIGNING).body[0]
    values = {
        name: ast.unparse(value) for name, value in single_assignments(kernel).items()
    }

    # ``twice`` is bound twice, ``i`` by a loop, ``typed`` and ``noted`` by
    # annotations; a tuple target binds each of its names once.
    assert values == {
        "once": "p + 1",
        "a": "(n, p)",
        "b": "(n, p)",
        "inner": "i * 2",
        "also": "once",
    }
