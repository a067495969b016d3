"""The AST toolkit every layer reads generated Triton with: walks, searches, copies, structural keys and name resolution.

A leaf: it imports nothing of the package. The passes (:mod:`.passes`), the
analysis of a generated module (:mod:`.generated`), the cache key and the
launch analysis all read trees through it.
"""

import ast
import collections
import functools

#: The ``triton.language`` functions that reduce a tile along an axis.
REDUCTIONS = tuple(
    f"triton.language.{name}"
    for name in ("sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum")
)


class Transformer(ast.NodeTransformer):
    """``ast.NodeTransformer`` with the same protocol and results, in a third of its time.

    A pipeline's time is mostly its passes walking the module, so the walk
    is made cheaper, not the passes changed: the ``visit_*`` method of a node
    type is looked up once per instance, not per node, and nodes that hold
    no other node (operators, ``Load``/``Store``, constants, and names) are
    not visited where visiting them would change nothing, that is where the
    transformer has no ``visit_*`` method for them and keeps this class's
    :meth:`generic_visit`, and a list or field is written only where a visit
    returned another node. A walk of flash attention's 14,647 nodes with no
    ``visit_*`` method: 13.8 ms with ``ast.NodeTransformer``, 4.2 ms with
    this class (CPU time, best of 7), 3.3 ms since lists and fields are
    written only where a visit changed them (best of 30).
    """

    def visit(self, node):
        try:
            visitors = self._visitors
        except AttributeError:
            visitors = self._visitors = {}

        visitor = visitors.get(node.__class__)

        if visitor is None:
            visitor = visitors[node.__class__] = getattr(
                self, f"visit_{node.__class__.__name__}", self.generic_visit
            )

        return visitor(node)

    def generic_visit(self, node):
        visit = self.visit
        inert = _inert_types(type(self))

        for field in node._fields:
            try:
                old_value = getattr(node, field)
            except AttributeError:
                continue

            if old_value.__class__ is list:
                # Most visits return the node they were given: the list and
                # the field are written only where one did not.
                changed = False
                new_values = []

                for value in old_value:
                    if value.__class__ in inert or not isinstance(value, ast.AST):
                        new_values.append(value)
                        continue

                    new_value = visit(value)

                    if new_value is value:
                        new_values.append(value)
                        continue

                    changed = True

                    if new_value is None:
                        continue

                    if not isinstance(new_value, ast.AST):
                        new_values.extend(new_value)
                        continue

                    new_values.append(new_value)

                if changed:
                    old_value[:] = new_values
            elif isinstance(old_value, ast.AST) and old_value.__class__ not in inert:
                new_node = visit(old_value)

                if new_node is None:
                    delattr(node, field)
                elif new_node is not old_value:
                    setattr(node, field, new_node)

        return node


@functools.cache
def _inert_types(transformer_class):
    # The node types whose visit is a no-op for ``transformer_class``: its
    # ``visit`` and ``generic_visit`` are :class:`Transformer`'s (which leave
    # a node without child nodes as it is) and it has no ``visit_*`` method
    # for them. ``Constant`` holds values, never nodes; ``Name`` a context.
    if (transformer_class.visit, transformer_class.generic_visit) != (
        Transformer.visit,
        Transformer.generic_visit,
    ):
        return frozenset()

    # The names after ``visit_`` of its methods, read off its classes: a
    # ``hasattr`` per node type was a millisecond of a process's first CPU
    # variant.
    visited = {
        name.removeprefix("visit_")
        for owner in transformer_class.__mro__
        for name in vars(owner)
        if name.startswith("visit_")
    }
    leaves = {
        node_class for node_class in _FIELDLESS if node_class.__name__ not in visited
    }

    # ``ast.NodeVisitor.visit_Constant`` only forwards to the visitors of
    # Python 3.7's constant nodes, where a class defines one.
    if transformer_class.visit_Constant is ast.NodeVisitor.visit_Constant and (
        visited.isdisjoint(_CONSTANT_NODE_NAMES)
    ):
        leaves.add(ast.Constant)

    if "Name" not in visited and {ast.Load, ast.Store, ast.Del} <= leaves:
        leaves.add(ast.Name)

    # No expression holds a statement (Python's grammar: statements are only
    # in the bodies of statements, handlers and ``case`` clauses), so a
    # transformer that visits statements only need not enter the rest, most
    # of a module's nodes.
    if all(
        _NODE_CLASSES_BY_NAME[name] in leaves
        for name in visited
        if name in _NODE_CLASSES_BY_NAME
    ):
        leaves.update(_NODE_CLASSES_BY_NAME.values())

    return frozenset(leaves)


_CONSTANT_NODE_NAMES = ("Num", "Str", "Bytes", "NameConstant", "Ellipsis")


def _node_classes(node_class):
    for subclass in node_class.__subclasses__():
        yield subclass
        yield from _node_classes(subclass)


_NODE_CLASSES = frozenset(_node_classes(ast.AST))


_FIELDLESS = frozenset(
    node_class for node_class in _NODE_CLASSES if not node_class._fields
)


# The node types that hold no statement, by name: every type but the
# statements, handlers, ``case`` clauses and modules.
_NODE_CLASSES_BY_NAME = {
    node_class.__name__: node_class
    for node_class in _NODE_CLASSES
    if not issubclass(
        node_class, (ast.stmt, ast.excepthandler, ast.match_case, ast.mod)
    )
}


# What :func:`clone` shares: nothing to change in them (``pass`` has a location).
_SHARED = frozenset(
    node_class for node_class in _FIELDLESS if not node_class._attributes
)


def constexpr_parameters(kernel, aliases):
    """The names of ``kernel``'s parameters annotated ``triton.language.constexpr`` (``set``).

    :param kernel: ``ast.FunctionDef``.
    :param aliases: ``dict`` from :func:`import_aliases`.
    """

    return {
        argument.arg
        for argument in kernel.args.args
        if argument.annotation is not None
        and resolve(argument.annotation, aliases) == "triton.language.constexpr"
    }


def resolve(node, aliases):
    """Return the dotted name ``node`` refers to, given :func:`import_aliases`, or ``None``."""

    parts = []

    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value

    if not isinstance(node, ast.Name):
        return None

    return ".".join([aliases.get(node.id, node.id), *reversed(parts)])


def operands(node, operator):
    """The operands of a chain of binary ``operator`` (an ``ast.operator`` class), left to right."""

    if isinstance(node, ast.BinOp) and isinstance(node.op, operator):
        yield from operands(node.left, operator)
        yield from operands(node.right, operator)
    else:
        yield node


def summands(node):
    """The terms of a chain of ``+`` (an address: the pointer, then its offsets)."""

    return operands(node, ast.Add)


def added(terms):
    """The chain of ``+`` of ``terms`` (a non-empty ``list`` of ``ast`` expressions), left to right: what :func:`summands` reads back."""

    total = terms[0]

    for term in terms[1:]:
        total = ast.BinOp(total, ast.Add(), term)

    return total


def is_zero(node):
    """Whether ``node`` is the ``int`` literal ``0``."""

    return (
        isinstance(node, ast.Constant) and type(node.value) is int and node.value == 0
    )


def tuple_element(node):
    """What ``node`` reads where it indexes a tuple display with a literal: ``(1, 128)[1]`` is ``128`` (NineToothed writes a tile's dimension so); any other node is itself."""

    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Tuple)
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is int
        and -len(node.value.elts) <= node.slice.value < len(node.value.elts)
    ):
        return node.value.elts[node.slice.value]

    return node


def import_aliases(tree):
    """Map each name bound by an import in ``tree`` to the dotted name it stands for.

    Where a name is bound twice, the import met last in breadth-first order
    (``ast.walk``'s) wins.
    """

    aliases = {}

    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    return aliases


def walk(tree):
    """Yield every node of ``tree``: ``ast.walk``'s nodes in its order, in less than half its time."""

    queue = collections.deque([tree])

    while queue:
        node = queue.popleft()

        for field in node._fields:
            value = getattr(node, field, None)

            if isinstance(value, ast.AST):
                queue.append(value)
            elif isinstance(value, list):
                queue.extend(item for item in value if isinstance(item, ast.AST))

        yield node


def find(tree, node_class):
    """The nodes of class ``node_class`` in ``tree`` (an AST, ``tree`` included), in no promised order: a ``list``.

    What ``[node for node in walk(tree) if isinstance(node, node_class)]``
    holds, for an expression or statement class with no subclasses (the
    ``ast`` module's own), in less than half its time: names, constants,
    contexts and operators, most of a kernel's nodes, are not queued and
    visited. Where the order matters, use :func:`walk`.
    """

    found = [tree] if tree.__class__ is node_class else []
    stack = [tree]

    while stack:
        node = stack.pop()

        for field in node._fields:
            value = getattr(node, field, None)

            for child in value if value.__class__ is list else (value,):
                if child.__class__ is node_class:
                    found.append(child)

                if child.__class__ not in _LEAVES and isinstance(child, ast.AST):
                    stack.append(child)

    return found


# The node classes that hold no expression or statement: nothing of
# :func:`find`'s is under them.
_LEAVES = frozenset(
    {ast.Name, ast.Constant}
    | {
        node_class
        for node_class in vars(ast).values()
        if isinstance(node_class, type)
        and issubclass(
            node_class,
            (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop),
        )
    }
)


def stored_names(tree):
    """The names assigned anywhere in ``tree`` (an AST): the ``id`` of each ``ast.Name`` in ``Store`` context, a ``set`` of ``str``.

    What ``{node.id for node in walk(tree) if isinstance(node, ast.Name) and
    isinstance(node.ctx, ast.Store)}`` finds, from :func:`find`'s names.
    """

    return {node.id for node in find(tree, ast.Name) if node.ctx.__class__ is ast.Store}


def structure(node, replace=None):
    """A hashable key of ``node`` (an AST, a list of them, or a leaf value), equal for two nodes exactly where ``ast.dump`` is.

    For telling the same expression written twice apart from another (a
    dictionary key, a comparison) without formatting a string: the fields
    in order, a missing field and an optional one set to ``None`` alike (as
    ``ast.dump`` leaves both out), and ``repr`` of each leaf value (as
    ``ast.dump`` writes it: ``1`` and ``1.0`` differ). Locations are not
    part of it, as they are not of ``ast.dump``'s text. Its ``repr`` is the
    same in every process.

    :param replace: ``None``, or a callable given each AST node of ``node``
        (``node`` included) before its fields: where it returns a key other
        than ``None``, that key stands for the node, as the key of another
        expression would (a name's key replaced by that of what it was
        assigned), without building that expression.
    """

    if isinstance(node, ast.AST):
        if replace is not None:
            replaced = replace(node)

            if replaced is not None:
                return replaced

        key = [node.__class__]

        for field, optional in _fields_of(node.__class__):
            value = getattr(node, field, _ABSENT)

            if value is _ABSENT or (value is None and optional):
                key.append(_ABSENT)
            else:
                key.append(structure(value, replace))

        return tuple(key)

    if node.__class__ is list:
        return tuple([structure(item, replace) for item in node])

    return repr(node)


def same(first, second):
    """Whether ``ast.dump`` of ``first`` and ``second`` (ASTs, lists of them, or leaf values) is the same; see :func:`structure`.

    Compared field by field, stopping at the first difference: most pairs a
    pass compares differ near their root.
    """

    if first is second:
        return True

    if first.__class__ is not second.__class__:
        return False

    if isinstance(first, ast.AST):
        for field, optional in _fields_of(first.__class__):
            left = getattr(first, field, _ABSENT)
            right = getattr(second, field, _ABSENT)

            if optional and left is None:
                left = _ABSENT

            if optional and right is None:
                right = _ABSENT

            if not same(left, right):
                return False

        return True

    if first.__class__ is list:
        return len(first) == len(second) and all(map(same, first, second))

    return repr(first) == repr(second)


class _Absent:
    # A field ``ast.dump`` leaves out: missing, or ``None`` where optional.
    # Its ``repr`` is the same in every process, and so is that of
    # ``structure``'s keys: the cache key describes NineToothed's symbols by it.
    __slots__ = ()

    def __repr__(self):
        return "<absent>"


_ABSENT = _Absent()


@functools.cache
def _fields_of(node_class):
    # ``(field, whether it is optional)``, as ``ast.dump`` tells: optional
    # fields have the class attribute ``None``.
    return tuple(
        (field, getattr(node_class, field, ...) is None) for field in node_class._fields
    )


def clone(node, replace=None):
    """A deep copy of ``node`` (an AST, a list of them, or a leaf value), as ``copy.deepcopy`` makes, in a fraction of its time.

    No memo: a generated module is a tree, each node reached once. Leaf
    values (names, constants, a ``Constant``'s value) are immutable and
    shared, and so are the nodes without fields or location (``Load``,
    ``Add``, ...), as ``ast.parse`` shares them. NineToothed's source of flash attention
    (14,647 nodes): 60 ms with ``copy.deepcopy``, 13 ms with this function
    (best of 10 on the 2-core development machine).

    :param replace: ``None``, or a function called with each copied node,
        after its children (bottom-up), returning what
        takes its place in the copy (the node itself to keep it): a copy
        rewritten as it is made, without a second walk.
    """

    if isinstance(node, list):
        return [clone(item, replace) for item in node]

    if not isinstance(node, ast.AST) or node.__class__ in _SHARED:
        return node

    return _clone(node, replace)


def _clone(node, replace):
    # One call per node with fields, none per leaf: the copy of a module
    # was mostly calls that returned their argument.
    # Every field and location copied at once, then the nodes among them
    # replaced by their copies: most values (names, constants, locations)
    # are kept as they are.
    copied = node.__class__.__new__(node.__class__)
    fields = copied.__dict__
    fields.update(node.__dict__)

    for name, value in fields.items():
        if value.__class__ is list:
            fields[name] = [
                _clone(item, replace)
                if isinstance(item, ast.AST) and item.__class__ not in _SHARED
                else item
                for item in value
            ]
        elif isinstance(value, ast.AST) and value.__class__ not in _SHARED:
            fields[name] = _clone(value, replace)

    return copied if replace is None else replace(copied)


def statements(tree):
    """Yield the statements of ``tree`` with its ``except`` handlers, ``case`` clauses and ``tree`` itself, in :func:`walk`'s order.

    A statement's parent is one of those: walking only them meets every
    statement (``Import``, ``Try``, ...) in the order :func:`walk` does,
    without visiting the expressions, most of a generated module's nodes.
    """

    queue = collections.deque([tree])

    while queue:
        node = queue.popleft()
        queue.extend(_statement_children(node))

        yield node


def assignments(function):
    """The statements that bind each name of ``function``: ``dict`` name -> ``list`` of statements, in :func:`statements`' order.

    The one assignment analysis of the passes. A binding is an ``=``
    (``ast.Assign``), an augmented or annotated assignment, or a ``for``
    loop; every ``ast.Name`` of its target counts (a tuple unpacked, and the
    names of a subscripted or attribute target), once per occurrence. Only
    the statements are walked, not the expressions, most of a kernel's
    nodes.

    :param function: ``ast.FunctionDef`` (or any AST).
    """

    bound = {}

    for node in statements(function):
        node_class = node.__class__

        if node_class is ast.Assign:
            targets = node.targets
        elif node_class in _TARGET_STATEMENTS:
            targets = (node.target,)
        else:
            continue

        for target in targets:
            for name in walk(target):
                if name.__class__ is ast.Name:
                    bound.setdefault(name.id, []).append(node)

    return bound


def single_assignments(function):
    """The names ``function`` binds exactly once, by ``=``: ``dict`` name -> the assigned value (``ast.expr``).

    Such a name holds that value wherever it is read after the assignment
    (:func:`assignments` counts every binding).
    """

    return {
        name: nodes[0].value
        for name, nodes in assignments(function).items()
        if len(nodes) == 1 and nodes[0].__class__ is ast.Assign
    }


def binds_directly(statement, name):
    """Whether ``statement`` (one of :func:`assignments`' bindings) binds ``name`` as a whole target, not inside a tuple or a subscript."""

    targets = (
        statement.targets if statement.__class__ is ast.Assign else (statement.target,)
    )

    return any(target.__class__ is ast.Name and target.id == name for target in targets)


#: The statements besides ``ast.Assign`` that bind their ``target``.
_TARGET_STATEMENTS = (ast.AugAssign, ast.AnnAssign, ast.For)


_STATEMENT_LIKE = (ast.stmt, ast.excepthandler, ast.match_case)


# The fields that hold statements, handlers and ``case`` clauses (Python's
# grammar), as lists; of an expression (``IfExp``, ``Lambda``), ``body`` and
# ``orelse`` hold one expression.
_BODIES = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))


def _statement_children(node):
    # What ``ast.iter_child_nodes`` yields of the statement-like children,
    # in its order, without going through the expressions: a third of its
    # time on softmax's module.
    children = []

    for field in node._fields:
        if field in _BODIES:
            value = getattr(node, field, None)

            if value.__class__ is list:
                children.extend(
                    child for child in value if isinstance(child, _STATEMENT_LIKE)
                )

    return children


def fix_statement_locations(tree):
    """Give each statement of ``tree`` that lacks a location its enclosing statement's, in place.

    ``ast.fix_missing_locations`` restricted to the statements (``ast.unparse``
    reads a statement's line): a statement's inherited location comes from
    statement-like ancestors only, so the expressions are not visited.
    """

    def fix(node, inherited):
        if node._attributes:
            # Read off the node's own attributes: ``end_lineno`` and
            # ``end_col_offset`` default to ``None`` on the class, the others
            # are missing until set.
            attributes = node.__dict__
            lineno, col_offset, end_lineno, end_col_offset = inherited

            if "lineno" in attributes:
                lineno = attributes["lineno"]
            else:
                node.lineno = lineno

            if "col_offset" in attributes:
                col_offset = attributes["col_offset"]
            else:
                node.col_offset = col_offset

            if attributes.get("end_lineno") is None:
                node.end_lineno = end_lineno
            else:
                end_lineno = attributes["end_lineno"]

            if attributes.get("end_col_offset") is None:
                node.end_col_offset = end_col_offset
            else:
                end_col_offset = attributes["end_col_offset"]

            inherited = (lineno, col_offset, end_lineno, end_col_offset)

        for child in _statement_children(node):
            fix(child, inherited)

    fix(tree, (1, 0, 1, 0))


def keyword(call, name):
    """Return the ``ast.keyword`` named ``name`` in ``call``, or ``None``."""

    for item in call.keywords:
        if item.arg == name:
            return item

    return None


def dotted_name(name):
    """Return the ``ast`` expression for a dotted name such as ``triton.language.load``."""

    return ast.parse(name, mode="eval").body


def insert_after_imports(tree, statements):
    """Insert ``statements`` after the leading imports of module ``tree``."""

    index = 0

    while index < len(tree.body) and isinstance(
        tree.body[index], (ast.Import, ast.ImportFrom)
    ):
        index += 1

    tree.body[index:index] = statements
