"""What every rewrite pass shares: the pass protocol, name resolution and the pipeline runner."""

import ast
import collections
import contextlib
import dataclasses
import functools
import gc

from ninetoothed_ascend.compiler import generated
from ninetoothed_ascend.compiler.target import Target


class RewriteError(Exception):
    """A pass found code it cannot make valid for its target.

    :param message: what is wrong, naming the construct.
    :param hint: what the kernel's author can do about it.
    """

    def __init__(self, message, hint):
        super().__init__(message)
        self.message = message
        self.hint = hint


class PipelineError(Exception):
    """A pass of a pipeline failed; names the pass.

    :param pass_name: the failing pass's class name.
    :param message: what went wrong.
    :param hint: what to do.
    """

    def __init__(self, pass_name, message, hint):
        super().__init__(f"pass {pass_name}: {message} {hint}")
        self.pass_name = pass_name
        self.message = message
        self.hint = hint


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


class Pass(Transformer):
    """One rewrite of a generated Triton module, for one constraint.

    Subclasses implement ``visit_*`` methods that call :meth:`rewrote` for
    each change, and may override :meth:`finish` for module-level edits.
    Calls are matched by what they resolve to through the module's imports
    (``triton.language.load`` whether written so or as ``tl.load``), never by
    variable names.

    :param target: :class:`~ninetoothed_ascend.compiler.target.Target`, what
        the variant is generated for: the only source of facts about the SoC
        and the toolchain a pass may use (:attr:`target`).
    :param facts: ``dict`` shared by the passes of one pipeline run
        (:func:`run_pipeline`): what a pass decided that a later pass
        builds on, under a key the writing pass documents, so that no pass
        reads it back from the rewritten code; ``None`` for an empty one.

    While it runs, :attr:`module` is the
    :class:`~ninetoothed_ascend.compiler.generated.GeneratedModule` of the
    tree: its kernels, autotuners and launches.
    """

    #: ``str`` for a pass whose rewrite makes the kernel less precise than
    #: its CUDA variant: what is lost, said to the user by ``show`` and
    #: ``info`` whenever the pass fired (:func:`~ninetoothed_ascend.compiler.pipelines.precision_notes`).
    PRECISION = None

    #: ``None``, or dotted names (``"triton.language.clamp"``) one of which
    #: (or a name under it) a module must refer to for the pass to have
    #: anything to rewrite (:meth:`applies_to`): a pass with nothing to
    #: rewrite is not run.
    TRIGGERS = None

    #: Dotted names a rewrite of the pass may make the module refer to
    #: where it did not, among the :attr:`TRIGGERS` of the passes (``range``
    #: for a pass that writes loops): :func:`run_pipeline` decides whether a
    #: later pass applies from the references before the rewrite and these,
    #: without finding them again (``tests/test_pipeline_facts.py`` checks
    #: every pass on every example).
    INTRODUCES = ()

    def __init__(self, target, facts=None):
        super().__init__()
        self.target = target
        self.facts = {} if facts is None else facts

    @classmethod
    def applies_to(cls, module):
        """Whether the pass may rewrite ``module`` (a :class:`~ninetoothed_ascend.compiler.generated.GeneratedModule`): it refers to one of :attr:`TRIGGERS`.

        A pass with :attr:`TRIGGERS` leaves a module that refers to none of
        them as it is, reports no rewrite and records no fact
        (``tests/test_pipeline_facts.py`` checks it on every example):
        :func:`run_pipeline` asks after a rewrite without walking the module
        again (:meth:`~ninetoothed_ascend.compiler.generated.GeneratedModule.refers_to`
        answers from the references before it and :attr:`INTRODUCES`).
        """

        return cls.TRIGGERS is None or module.refers_to(cls.TRIGGERS)

    def run(self, tree, module=None):
        """Rewrite ``tree`` (an ``ast.Module``) in place; return the number of rewrites.

        ``module`` is the :class:`~ninetoothed_ascend.compiler.generated.GeneratedModule`
        of ``tree`` when the caller has it (its imports are resolved once),
        else it is made here.

        Statements the pass creates get the location of their enclosing
        statement, as ``ast.fix_missing_locations`` gives them (``ast.unparse``
        reads a statement's line); expressions it creates may lack one: fixing
        every node of the module after every pass was a large part of a
        pipeline's time. Call ``ast.fix_missing_locations`` before compiling
        a rewritten tree.
        """

        self.rewrites = 0
        self.module = module if module is not None else generated.GeneratedModule(tree)
        self.aliases = self.module.aliases
        self.visit(tree)
        self.finish(tree)

        # A pass that reports no rewrite created no statement (it leaves the
        # tree as it was: tests/test_pipeline_facts.py), so none lacks a
        # location; most passes of a pipeline rewrite nothing.
        if self.rewrites:
            _fix_statement_locations(tree)

        return self.rewrites

    def rewrote(self, count=1):
        self.rewrites += count

    def finish(self, tree):
        pass

    def resolve(self, node):
        """Return the dotted name ``node`` refers to through the imports, or ``None``."""

        return resolve(node, self.aliases)

    def is_call_to(self, node, *names):
        if not isinstance(node, ast.Call):
            return False

        func = node.func

        # An attribute resolves to a dotted name that ends in it: where none
        # of ``names`` does, there is nothing to resolve (most calls of a
        # kernel, asked whether they are a load, are not).
        if func.__class__ is ast.Attribute and func.attr not in _last_parts(names):
            return False

        return self.resolve(func) in names

    def constexpr_parameters(self, kernel):
        """The names of ``kernel``'s parameters annotated ``triton.language.constexpr`` (``set``)."""

        return constexpr_parameters(kernel, self.aliases)


@functools.cache
def _last_parts(names):
    # The last components of dotted ``names`` (a tuple of ``str``).
    return frozenset(name.rpartition(".")[2] for name in names)


class MaskPass(Pass):
    """A pass that rewrites only the ``mask=`` argument of ``triton.language.load`` and ``store``.

    Subclasses implement :meth:`rewrite_mask`, which returns the new mask
    expression and calls :meth:`rewrote` for each change.
    """

    def visit_Call(self, node):
        self.generic_visit(node)

        if self.is_call_to(node, "triton.language.load", "triton.language.store"):
            mask = keyword(node, "mask")

            if mask is not None:
                mask.value = self.rewrite_mask(mask.value)

        return node

    def rewrite_mask(self, mask):
        raise NotImplementedError


def convert_if_dtype(name, from_dtype, to_dtype):
    """Return the source of ``triton.jit`` function ``name(x)`` that converts ``from_dtype`` blocks to ``to_dtype``.

    Other blocks are returned as they are. The ``if`` is on the block's
    dtype, which is known at compile time, so the frontend folds it.

    :param name: ``str``.
    :param from_dtype: ``str``, a ``triton.language`` dtype name (``"float64"``).
    :param to_dtype: ``str``, likewise (``"float32"``).
    """

    return f"""
@triton.jit
def {name}(x):
    if x.dtype == triton.language.{from_dtype}:
        return x.to(triton.language.{to_dtype})
    else:
        return x
"""


class LoadWrapperPass(Pass):
    """A pass that wraps every ``triton.language.load(...)`` in ``triton.jit`` functions with a call.

    Subclasses set :attr:`WRAPPER`, the name of a ``triton.jit`` function,
    and :attr:`WRAPPER_SOURCE`, its definition, added at module level when
    a load was wrapped; they may visit more inside kernels, where
    :attr:`in_kernel` is true.
    """

    WRAPPER = None
    WRAPPER_SOURCE = None

    def run(self, tree, module=None):
        self.in_kernel = False
        self._wrapped = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if not any(
            self.resolve(decorator) == "triton.jit" for decorator in node.decorator_list
        ):
            return node

        self.in_kernel = True
        self.generic_visit(node)
        self.in_kernel = False

        return node

    def visit_Call(self, node):
        self.generic_visit(node)

        if self.in_kernel and self.is_call_to(node, "triton.language.load"):
            self._wrapped = True
            self.rewrote()

            return ast.copy_location(
                ast.Call(ast.Name(self.WRAPPER, ast.Load()), [node], []), node
            )

        return node

    def finish(self, tree):
        if self._wrapped:
            insert_after_imports(tree, ast.parse(self.WRAPPER_SOURCE).body)


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


def arange_positions(owner, node):
    """The tile axes, counted from the innermost (0), along which the ``arange`` calls in ``node`` vary (``set``).

    ``arange(0, B)[:, None]`` varies along axis 1 from the innermost,
    ``arange(0, B)[None, :]`` and a bare ``arange(0, B)`` along axis 0
    (broadcasting aligns shapes on the right).
    """

    positions = set()
    indexed = set()

    for inner in walk(node):
        if isinstance(inner, ast.Subscript) and owner.is_call_to(
            inner.value, "triton.language.arange"
        ):
            indexed.add(id(inner.value))
            index = (
                inner.slice.elts
                if isinstance(inner.slice, ast.Tuple)
                else [inner.slice]
            )
            positions.update(
                len(index) - 1 - axis
                for axis, item in enumerate(index)
                if isinstance(item, ast.Slice)
            )

    positions.update(
        0
        for inner in walk(node)
        if owner.is_call_to(inner, "triton.language.arange")
        and id(inner) not in indexed
    )

    return positions


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


_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _fix_statement_locations(tree):
    # ``ast.fix_missing_locations`` restricted to the statements: a
    # statement's inherited location comes from statement-like ancestors only.
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


@dataclasses.dataclass(frozen=True)
class Rewritten:
    """The result of a pipeline.

    :param source: the rewritten module's text.
    :param rewrites: ``(pass name, number of rewrites)`` for each pass that changed something.
    :param analysis: what :func:`run_pipeline`'s ``analyse`` returned for
        the source before any pass, or ``None``.
    """

    source: str
    rewrites: tuple[tuple[str, int], ...]
    analysis: object = None


def run_pipeline(source, passes, target=None, analyse=None):
    """Parse ``source``, run ``passes`` (classes, in order) on it, and unparse.

    :param source: ``str``, a generated Triton module.
    :param passes: sequence of :class:`Pass` subclasses.
    :param target: :class:`~ninetoothed_ascend.compiler.target.Target` each
        pass receives; default: the NPU variant's target here
        (``Target.from_environment("npu")``).
    :param analyse: ``None``, or a callable that receives ``source`` parsed
        (``ast.Module``) before any pass runs and must not change it; what
        it returns is :attr:`Rewritten.analysis`. Facts a later stage reads
        from the source are read from this parse rather than a second one.
    :return: :class:`Rewritten`.
    :raises PipelineError: naming the pass, when one fails (no analysis is
        returned then); what ``analyse`` raises propagates.
    """

    if target is None:
        target = Target.from_environment("npu")

    with collection_paused():
        return _rewrite(source, passes, target, analyse)


def _rewrite(source, passes, target, analyse):
    # The tree is freed when this returns, before collection resumes.
    tree = ast.parse(source)
    analysis = analyse(tree) if analyse is not None else None
    rewrites = []
    # What the module refers to is found once and kept: most passes of a
    # pipeline have nothing to rewrite in a given kernel, and walking the
    # whole module only to find that was most of their time.
    module = generated.GeneratedModule(tree)
    facts = {}

    for pass_class in passes:
        if not pass_class.applies_to(module):
            continue

        try:
            count = pass_class(target, facts).run(tree, module)
        except RewriteError as error:
            raise PipelineError(
                pass_class.__name__, error.message, error.hint
            ) from error
        except Exception as error:
            raise PipelineError(
                pass_class.__name__,
                f"crashed with {type(error).__name__}: {error}.",
                "This is a bug in ninetoothed-ascend; please report it with the kernel.",
            ) from error

        if count:
            rewrites.append((pass_class.__name__, count))
            module = module.rewritten(pass_class.INTRODUCES)

    return Rewritten(ast.unparse(tree) + "\n", tuple(rewrites), analysis)


@contextlib.contextmanager
def collection_paused():
    """Pause Python's cyclic garbage collector inside the ``with`` block (not when it is already off).

    For work on a parsed module (:func:`run_pipeline`, reading launch facts)
    that frees what it allocates before the block ends. Process-wide, as
    ``gc.disable`` is: a block of another thread may end the pause early,
    never extend it (measured: no cyclic garbage is left by the NPU pipeline
    of flash attention, and its peak RSS grows by 9 MB).
    """

    # A pipeline allocates tens of thousands of AST nodes that live until it
    # ends, and make no reference cycles: freed by reference counting, they
    # need no cyclic collection. Collected meanwhile, they would survive into
    # the oldest generation and bring on a full collection, which with torch,
    # Triton and sympy imported scans the whole heap: 130-150 ms, measured
    # with ``gc.callbacks`` during softmax's CPU variant (bench/warm_make.py),
    # 5x NineToothed's whole ``make`` of it. What the block allocates must be
    # freed before it ends, or the first collection after it promotes it all.
    if not gc.isenabled():
        yield
        return

    gc.disable()

    try:
        yield
    finally:
        gc.enable()
