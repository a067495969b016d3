"""NineToothed's generated module as the passes see it: its kernels, autotuners and launches, each found one way.

A module NineToothed generates has module-level ``triton.jit`` kernels, for
an autotuned kernel one ``name = triton.autotune(configs=[...],
key=[...])(kernel)`` statement, and a launch function whose body launches
each kernel as ``kernel[grid](arguments)`` (or ``name[grid](...)``). Every
pass asks for these through :class:`GeneratedModule`, so there is one
definition of each; the passes rewrite the tree in place, so a
:class:`GeneratedModule` answers from the tree as it is when asked.
"""

import ast
import dataclasses
import functools

from ninetoothed_ascend.compiler import syntax


@dataclasses.dataclass(frozen=True)
class Autotuner:
    """One module-level ``name = triton.autotune(...)(kernel)`` statement.

    :param statement: ``ast.Assign``, the statement itself.
    :param name: ``str``, the name it binds (what the launch indexes with the grid).
    :param kernel: ``ast.FunctionDef`` of the module the autotuner wraps, or
        ``None`` where its argument is not one.
    """

    statement: ast.Assign
    name: str
    kernel: ast.FunctionDef

    @property
    def call(self):
        """The ``triton.autotune(...)`` call (``ast.Call``)."""

        return self.statement.value.func

    def keyword(self, name):
        """The ``ast.keyword`` ``name`` of the ``triton.autotune`` call (``configs``, ``key``, ...), or ``None``."""

        return syntax.keyword(self.call, name)

    def block_sizes(self):
        """:func:`block_sizes` of its call."""

        return block_sizes(self.call)


class GeneratedModule:
    """The kernels, autotuners and launches of a generated module (``ast.Module``).

    :param tree: ``ast.Module``, NineToothed's generated source or a
        variant's, parsed.
    :param aliases: ``dict`` from
        :func:`~ninetoothed_ascend.compiler.syntax.import_aliases` of ``tree``,
        if the caller has it.
    """

    def __init__(self, tree, aliases=None):
        self.tree = tree
        self.aliases = syntax.import_aliases(tree) if aliases is None else aliases
        # ``None``, or for a module :meth:`rewritten` made before its
        # references were found: a superset of them, what :meth:`refers_to`
        # answers from.
        self._references_bound = None

    def rewritten(self, introduced=()):
        """A :class:`GeneratedModule` of the same tree, after a pass rewrote it in place.

        It answers from the tree as it is now, except :meth:`refers_to`,
        which answers from this module's references (found, or this module's
        superset of them) and ``introduced``: the rewrite removes references
        or adds only those.

        :param introduced: dotted names (``str``) the rewrite may have made
            the module refer to, the pass's
            :attr:`~ninetoothed_ascend.compiler.passes.Pass.INTRODUCES`.
        """

        module = GeneratedModule(self.tree)
        earlier = (
            self.references
            if "_names" in self.__dict__ or self._references_bound is None
            else self._references_bound
        )
        module._references_bound = earlier.union(
            prefix for name in introduced for prefix in _prefixes(name)
        )

        return module

    @property
    def references(self):
        """Every dotted name the module refers to, with all its prefixes (``frozenset`` of ``str``).

        What names and attribute chains read or write resolves to through
        the imports (``tl.load`` is ``triton.language.load``, and
        ``triton.language`` and ``triton``; an unimported name is itself), and
        what each import names. Computed at the first request and kept: unlike
        the other answers, it describes the tree as it was then, so
        :func:`~ninetoothed_ascend.compiler.passes.run_pipeline` takes a new
        :class:`GeneratedModule` (:meth:`rewritten`) after each pass that
        rewrote the tree.
        """

        return self._names[0]

    @property
    def unbound_names(self):
        """The names the module reads (``ast.Load``) and binds nowhere (``frozenset`` of ``str``).

        Bound: by an import (its first component), an assignment or
        ``del``, a definition, a parameter, a loop or comprehension target,
        ``except ... as``, ``global`` or ``nonlocal``. Kept like
        :attr:`references`, which is found in the same walk.
        """

        return self._names[1]

    @functools.cached_property
    def _names(self):
        names = set()
        read = set()
        bound = set()
        # Found again after passes that rewrote the tree, so made cheap:
        # depth first (a set has no order), an attribute chain on a name
        # resolved once as a whole (its inner links are its prefixes), no
        # visit of constants and nodes without fields, and node types told
        # apart by identity, not ``isinstance`` (``ast.parse`` and the passes
        # make no subclasses of them): about half the time of a resolve per node of
        # ``syntax.walk`` (softmax's NPU variant, flash attention's). What is
        # read and bound is found in the same walk: a walk of its own cost
        # ImportStandardModules as much as this one.
        stack = [self.tree]

        while stack:
            node = stack.pop()
            node_type = type(node)

            if node_type is ast.Name:
                names.add(syntax.resolve(node, self.aliases))
                (read if type(node.ctx) is ast.Load else bound).add(node.id)
            elif node_type is ast.Attribute:
                base = node

                while type(base) is ast.Attribute:
                    base = base.value

                if type(base) is ast.Name:
                    names.add(syntax.resolve(node, self.aliases))
                    read.add(base.id)
                else:
                    stack.append(base)
            elif node_type is ast.Import or node_type is ast.ImportFrom:
                if node_type is ast.Import:
                    names.update(alias.name for alias in node.names)
                elif node.module is not None:
                    names.update(f"{node.module}.{alias.name}" for alias in node.names)

                bound.update(
                    (alias.asname or alias.name).split(".")[0] for alias in node.names
                )
            elif node_type is not ast.Constant:
                if node_type in _BINDING_NAME:
                    bound.add(getattr(node, _BINDING_NAME[node_type]))
                elif node_type is ast.Global or node_type is ast.Nonlocal:
                    bound.update(node.names)

                for field in node._fields:
                    value = getattr(node, field, None)

                    if type(value) is list:
                        stack.extend(
                            [item for item in value if isinstance(item, ast.AST)]
                        )
                    elif isinstance(value, ast.AST) and value._fields:
                        stack.append(value)

        return (
            frozenset(prefix for name in names for prefix in _prefixes(name)),
            frozenset(read - bound),
        )

    def refers_to(self, names):
        """Whether the module may refer to any of ``names`` (dotted ``str``), or to a name under one.

        Exact (:attr:`references`) for a module parsed as it is; for one
        :meth:`rewritten` made, answered from the references before the
        rewrites and what they introduced, without walking the tree: a
        superset, which a pass's :meth:`~ninetoothed_ascend.compiler.passes.Pass.applies_to`
        allows (finding the references after each rewrite was a tenth of
        flash attention's NPU pipeline and of softmax's CPU one).
        """

        if self._references_bound is not None and "_names" not in self.__dict__:
            return not self._references_bound.isdisjoint(names)

        return not self.references.isdisjoint(names)

    def functions(self):
        """The module-level functions: ``dict`` name -> ``ast.FunctionDef``."""

        return {
            statement.name: statement
            for statement in self.tree.body
            if isinstance(statement, ast.FunctionDef)
        }

    def kernels(self):
        """The module-level ``triton.jit`` functions: ``dict`` name -> ``ast.FunctionDef``."""

        return {
            name: function
            for name, function in self.functions().items()
            if self.is_kernel(function)
        }

    def is_kernel(self, function):
        """Whether ``function`` (an ``ast.FunctionDef``, at module level or not) is a ``triton.jit`` kernel: the one test of the passes."""

        return any(self.is_jit(decorator) for decorator in function.decorator_list)

    def is_jit(self, decorator):
        """Whether ``decorator`` (an ``ast.expr``) resolves to ``triton.jit`` through the module's imports."""

        return syntax.resolve(decorator, self.aliases) == "triton.jit"

    def autotuners(self):
        """The module-level autotuner statements, in order: ``list`` of :class:`Autotuner`."""

        functions = self.functions()

        return [
            Autotuner(
                statement,
                statement.targets[0].id,
                functions.get(getattr(_first_argument(statement.value), "id", None)),
            )
            for statement in self.tree.body
            if isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and self.is_autotuned(statement.value)
        ]

    def autotune_calls(self):
        """Every ``triton.autotune(...)(kernel)`` of the module, wherever it is: at module level or in the factory ``DeferAutotune`` makes.

        :return: ``list`` of ``(kernel, call)``: the ``ast.FunctionDef`` of
            the module it wraps (``None`` where it wraps none) and the
            ``triton.autotune(...)`` call, in :func:`ast.walk`'s order.
        """

        functions = self.functions()

        return [
            (functions.get(getattr(_first_argument(node), "id", None)), node.func)
            for node in self._host_nodes()
            if self.is_autotuned(node)
        ]

    def launches(self):
        """Yield ``(kernel, call)`` for each call that launches a kernel of the module, directly or through its autotuner.

        :return: iterator of ``(ast.FunctionDef, ast.Call)``; the call is
            ``kernel[grid](...)`` or ``autotuned[grid](...)``.
        """

        kernels = self.kernels()
        launched = {
            autotuner.name: autotuner.statement.value.args[0].id
            for autotuner in self.autotuners()
            if isinstance(_first_argument(autotuner.statement.value), ast.Name)
        }
        launched.update({name: name for name in kernels})

        for node in self._host_nodes(kernels):
            if _launched_name(node) in launched:
                yield kernels[launched[_launched_name(node)]], node

    def launch(self, name):
        """``(grid, call)`` of the first ``name[grid](...)`` of the module, or ``None``."""

        for node in self._host_nodes():
            if _launched_name(node) == name:
                return node.func.slice, node

        return None

    def launch_function(self, call):
        """The module-level function whose body holds ``call`` (one of :meth:`launches`), or ``None``."""

        for statement in self.host_statements():
            if isinstance(statement, ast.FunctionDef) and any(
                node is call for node in syntax.walk(statement)
            ):
                return statement

        return None

    def insert_before_launch(self, call, statement):
        """Insert ``statement`` (a launch's guard) just before the innermost statement holding ``call``.

        :param call: ``ast.Call``, one of :meth:`launches`.
        :param statement: ``ast.stmt``.
        :raises ValueError: ``call`` is not in the module.
        """

        if not _insert_before(self.tree.body, call, statement, self.host_statements()):
            raise ValueError(f"the launch {ast.unparse(call)} is not in the module")

    def _host_nodes(self, kernels=None):
        """The nodes outside the kernels, in :func:`ast.walk`'s order (see :meth:`host_statements`)."""

        return syntax.walk(ast.Module(self.host_statements(kernels), []))

    def host_statements(self, kernels=None):
        """The module-level statements but the kernels (``kernels``, as :meth:`kernels` returns them, when the caller has it).

        Launches and autotuners are host code: a kernel launches nothing.
        Not walking the kernels, most of a module, keeps finding launches
        and inserting a launch's guard cheap.
        """

        kernels = {id(kernel) for kernel in (kernels or self.kernels()).values()}

        return [
            statement for statement in self.tree.body if id(statement) not in kernels
        ]

    def is_autotuned(self, node):
        """Whether ``node`` is ``triton.autotune(...)(kernel)``."""

        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Call)
            and syntax.resolve(node.func.func, self.aliases) == "triton.autotune"
        )


def block_sizes(autotune):
    """The block sizes of each config of a ``triton.autotune(configs=[...], ...)`` call: ``list`` of ``dict`` name -> ``int``."""

    return [
        ast.literal_eval(config.args[0])
        for config in syntax.keyword(autotune, "configs").value.elts
    ]


def launch_arguments(kernel, call):
    """Map ``kernel``'s parameter names to the argument expressions of its launch ``call``.

    :param kernel: ``ast.FunctionDef``.
    :param call: ``ast.Call``, ``kernel[grid](...)``: positional arguments,
        then keywords.
    :return: ``dict`` parameter name -> ``ast.expr``.
    """

    parameters = [argument.arg for argument in kernel.args.args]
    arguments = dict(zip(parameters, call.args))
    arguments.update(
        (item.arg, item.value) for item in call.keywords if item.arg is not None
    )

    return arguments


#: The node types that bind a name, and the field holding it.
_BINDING_NAME = {
    ast.FunctionDef: "name",
    ast.AsyncFunctionDef: "name",
    ast.ClassDef: "name",
    ast.arg: "arg",
    ast.ExceptHandler: "name",
}


def _prefixes(dotted):
    parts = dotted.split(".")

    return (".".join(parts[:end]) for end in range(1, len(parts) + 1))


def _launched_name(node):
    """``name`` for a call ``name[grid](...)``, else ``None``."""

    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
    ):
        return node.func.value.id

    return None


def _insert_before(body, call, statement, searched=None):
    """Insert ``statement`` before the innermost statement of ``body`` that holds ``call``; whether one does.

    ``searched``: the statements of ``body`` that may hold it (all when ``None``).
    """

    for item in body if searched is None else searched:
        if any(node is call for node in syntax.walk(item)):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(item, field, None)

                if isinstance(inner, list) and _insert_before(inner, call, statement):
                    return True

            body.insert(body.index(item), statement)

            return True

    return False


def _first_argument(call):
    return call.args[0] if call.args else None
