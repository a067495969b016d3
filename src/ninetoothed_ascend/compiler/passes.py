"""The pass protocol and the pipeline runner: what every rewrite pass shares."""

import ast
import dataclasses
import functools

from ninetoothed_ascend.compiler import generated
from ninetoothed_ascend.compiler.facts import stored
from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    assignments,
    constexpr_parameters,
    fix_statement_locations,
    insert_after_imports,
    keyword,
    resolve,
    walk,
)
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
    #: without finding them again (``tests/compiler/test_pipelines.py`` checks
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
        (``tests/compiler/test_pipelines.py`` checks it on every example):
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
        # tree as it was: tests/compiler/test_pipelines.py), so none lacks a
        # location; most passes of a pipeline rewrite nothing.
        if self.rewrites:
            fix_statement_locations(tree)

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


class ComparisonMaskPass(MaskPass):
    """A :class:`MaskPass` that rewrites each comparison of a mask, innermost first.

    Subclasses implement :meth:`rewrite_comparison`, which returns the
    comparison to put in place of ``node`` (``node`` itself where nothing
    changes) and calls :meth:`rewrote` for each change.
    """

    def rewrite_mask(self, mask):
        return _Comparisons(self.rewrite_comparison).visit(mask)

    def rewrite_comparison(self, node):
        raise NotImplementedError


class _Comparisons(Transformer):
    def __init__(self, rewrite):
        self._rewrite = rewrite

    def visit_Compare(self, node):
        self.generic_visit(node)

        return self._rewrite(node)


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
        if not self.module.is_kernel(node):
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


def holds_arange(owner, node):
    """Whether ``node`` (``ast``) calls ``triton.language.arange`` anywhere, resolved through ``owner``'s imports: whether it varies per lane."""

    return any(
        owner.is_call_to(inner, "triton.language.arange") for inner in walk(node)
    )


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


def tile_names(owner, function):
    """The names ``function`` binds to a tile: an assignment whose value holds an ``arange`` or a ``load`` (``set`` of ``str``).

    Every name of such an assignment's target counts; the others are
    scalars (a program's indices and sizes). ``owner``: the
    :class:`Pass` whose imports resolve the calls.
    """

    return {
        name
        for name, bindings in assignments(function).items()
        if any(
            binding.__class__ is not ast.For
            and binding.value is not None
            and any(
                owner.is_call_to(
                    inner, "triton.language.arange", "triton.language.load"
                )
                for inner in walk(binding.value)
            )
            for binding in bindings
        )
    }


@dataclasses.dataclass(frozen=True)
class Rewritten:
    """The result of a pipeline.

    :param source: the rewritten module's text.
    :param rewrites: ``(pass name, number of rewrites)`` for each pass that changed something.
    :param analysis: what :func:`run_pipeline`'s ``analyse`` returned for
        the source before any pass, or ``None``.
    :param facts: what readers of the rewritten source need of the facts
        its passes published (:func:`~ninetoothed_ascend.compiler.facts.stored`,
        JSON): kept with the variant.
    """

    source: str
    rewrites: tuple[tuple[str, int], ...]
    analysis: object = None
    facts: dict = dataclasses.field(default_factory=dict)


def run_pipeline(source, passes, target=None, analyse=None, facts=None):
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
    :param facts: ``None``, or a ``dict`` of facts about the kernel that
        its source does not carry (what the user gave ``make``, under the
        key the pass that reads it documents), which the passes start
        from (:attr:`Pass.facts`); not changed.
    :return: :class:`Rewritten`.
    :raises PipelineError: naming the pass, when one fails (no analysis is
        returned then); what ``analyse`` raises propagates.
    """

    if target is None:
        target = Target.from_environment("npu")

    facts = dict(facts or {})
    tree = ast.parse(source)
    analysis = analyse(tree) if analyse is not None else None
    rewrites = []
    # What the module refers to is found once and kept: most passes of a
    # pipeline have nothing to rewrite in a given kernel, and walking the
    # whole module only to find that was most of their time.
    module = generated.GeneratedModule(tree)

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

    # The facts hold nodes of the tree: only their stored form outlives it.
    return Rewritten(ast.unparse(tree) + "\n", tuple(rewrites), analysis, stored(facts))
