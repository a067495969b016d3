"""Launch one program per core and loop over the tasks inside the kernel."""

import ast

from ninetoothed_ascend.compiler.npu.ub.model import uses_dot
from ninetoothed_ascend.compiler.passes import Pass, RewriteError
from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    clone,
    insert_after_imports,
    statements,
    stored_names,
    structure,
    walk,
)


class PersistentGrid(Pass):
    """Make every launch a persistent grid: ``min(tasks, cores)`` programs, each looping over tasks.

    Constraints (triton-ascend migration and performance guides;
    docs/ascend.md, "Grid and cores"):

    * the grid (coreDim) must not exceed 65535 ("coreDim=N can't be greater
      than UINT16_MAX"), while NineToothed launches one program per tile, so
      an add of 2**24 elements with 128-element tiles asks for 131072;
    * programs beyond the physical cores run in batches, each batch paying
      the launch overhead again; the grid should be the number of vector
      cores for vector-only kernels and of AI cores for kernels with
      ``tl.dot``.

    NineToothed's kernels are task-parallel: the program id is read once
    (``pid = tl.program_id(0)``), decomposed into tile indices, and nothing
    is shared between programs. So each kernel becomes::

        pid_start = tl.program_id(0)            # the original statement's value
        num_tasks = <the grid, in kernel terms>
        for pid in range(pid_start, num_tasks, tl.num_programs(0)):
            ...                                  # the original body after it

    and its launch grid ``lambda meta: (tasks,)`` becomes
    ``lambda meta: (min(tasks, ninetoothed_num_cores(cube)),)``. A launch
    with no task (a tensor with zero elements) launches nothing: the launch
    statement runs under ``if tasks > 0``, with every ``meta`` value taken
    as 1, since a grid of ``min(0, cores)`` = 0 programs is no valid coreDim
    and NineToothed's task counts, ``(size - 1) // block + 1`` per dimension,
    are 0 for a block size of 1 exactly when they are 0 for every block size. The grid's
    expression is rewritten in the kernel's terms by matching it against the
    launch's own arguments (``t.size(0)`` is what the launch passes for the
    kernel's parameter ``t_size_0``; ``meta['B']`` is constexpr ``B``). When
    tasks do not exceed the cores the loop runs once per program: the rule is
    to apply it to every kernel, since it costs one scalar compare then and
    saves the launch error and the batching otherwise.

    The core count comes, at the first launch, from the driver's
    ``get_device_properties`` (``num_vectorcore`` or ``num_aicore``, on an
    NPU), else from the target's SoC (:attr:`Pass.target`; 24 AI cores
    and 48 vector cores of an Atlas A2 910B1 by default, configurable), and
    is never more than 65535.

    :raises RewriteError: a launch's grid is not one-dimensional, uses a
        value the launch does not pass to the kernel, or the kernel does not
        read ``tl.program_id(0)`` into a variable at its top level.

    :Constraint: coreDim must not exceed 65535, and programs beyond the cores
        run in batches
    :Source: triton-ascend migration and performance guides; docs/ub.md
    :Rewrites: `min(tasks, cores)` programs loop over tasks (vector cores, AI
        cores with `tl.dot`); a launch with no task launches nothing (0
        programs is no valid coreDim)
    """

    # Each program loops over its tasks.
    INTRODUCES = ("range",)

    def visit_Module(self, node):
        self.spec = self.target.soc
        done = set()
        guards = {}

        for kernel, call in list(self.module.launches()):
            if not isinstance(call.func.slice, ast.Lambda):
                continue

            if kernel.name in done:
                raise RewriteError(
                    f"kernel `{kernel.name}` is launched more than once.",
                    "PersistentGrid rewrites one launch per kernel; launch it from one place.",
                )

            guards[id(call)] = self.rewrite(kernel, call)
            done.add(kernel.name)
            self.rewrote()

        # Launches are host code: the kernels, most of the module, are not walked.
        kernels = {id(kernel) for kernel in self.module.kernels().values()}
        guard = _GuardLaunches(guards)
        node.body = [
            statement if id(statement) in kernels else guard.visit(statement)
            for statement in node.body
        ]

        if done:
            insert_after_imports(node, ast.parse(self.helper()).body)

        return node

    def rewrite(self, kernel, call):
        grid = call.func.slice
        elements = grid.body.elts if isinstance(grid.body, ast.Tuple) else None

        if elements is None or len(elements) != 1:
            raise RewriteError(
                f"the grid of `{kernel.name}` is not a one-element tuple: "
                f"{ast.unparse(grid.body)}.",
                "NineToothed flattens grids to one dimension; this launch was not generated by it.",
            )

        meta = grid.args.args[0].arg if grid.args.args else None
        tasks = _KernelTerms(kernel, call, meta).translate(elements[0])
        any_task = ast.Compare(
            _UnitMeta(meta).visit(clone(elements[0])),
            [ast.Gt()],
            [ast.Constant(0)],
        )
        position, pid = _program_id_statement(self, kernel)
        loop = ast.parse(
            f"for {pid} in range(ninetoothed_first_task, ninetoothed_num_tasks, "
            "triton.language.num_programs(0)):\n    pass"
        ).body[0]
        outer = {argument.arg for argument in kernel.args.args}.union(
            *map(stored_names, kernel.body[: position + 1])
        )
        loop.body = _rename_outer_assignments(
            kernel, kernel.body[position + 1 :], outer
        ) or [ast.Pass()]
        kernel.body[position].targets = [
            ast.Name("ninetoothed_first_task", ast.Store())
        ]
        kernel.body[position + 1 :] = [
            ast.Assign([ast.Name("ninetoothed_num_tasks", ast.Store())], tasks),
            loop,
        ]
        # Most kernels have no ``tl.dot``: the module's references tell
        # without walking the kernel.
        cube = self.module.refers_to(("triton.language.dot",)) and uses_dot(
            kernel, self.aliases
        )
        elements[0] = ast.parse(
            f"min({ast.unparse(elements[0])}, ninetoothed_num_cores({cube}))",
            mode="eval",
        ).body

        return any_task

    def helper(self):
        return _NUM_CORES.format(
            aicore=self.spec.num_aicore,
            vectorcore=self.spec.num_vectorcore,
            max_core_dim=self.spec.max_core_dim,
        )


_NUM_CORES = '''
ninetoothed_core_counts = {{}}


def ninetoothed_num_cores(cube):
    """The programs of a persistent grid: AI cores if ``cube`` (kernels with tl.dot), else vector cores."""
    if cube not in ninetoothed_core_counts:
        key = "num_aicore" if cube else "num_vectorcore"
        try:
            import triton.runtime.driver
            utils = triton.runtime.driver.active.utils
            properties = utils.get_device_properties(triton.runtime.driver.active.get_current_device())
        except Exception:
            properties = {{}}
        count = properties.get(key) or ({aicore} if cube else {vectorcore})
        ninetoothed_core_counts[cube] = max(1, min(int(count), {max_core_dim}))
    return ninetoothed_core_counts[cube]
'''


def _rename_outer_assignments(kernel, body, outer):
    """Give the task loop its own copy of each parameter or earlier variable it assigns.

    NineToothed assigns some parameters in the body (a jagged tensor's
    ``seq_len``, from its offsets). Inside the task loop such a name would
    be loop-carried: the next task would see the previous task's value, and
    Triton refuses a type change ("Loop-carried variable ... has initial type
    int32 but is re-assigned to int64", measured on jagged_softmax). From its
    first assignment on, the name becomes ``<name>_in_task``.
    """

    renamed = {}
    result = []

    for statement in body:
        if isinstance(statement, ast.Assign):
            if renamed:
                statement.value = _Rename(renamed).visit(statement.value)
            targets = {
                node.id
                for target in statement.targets
                for node in walk(target)
                if isinstance(node, ast.Name)
            }

            for name in targets & outer:
                renamed[name] = f"{name}_in_task"

            statement.targets = [
                _Rename(renamed).visit(target) for target in statement.targets
            ]
        else:
            nested = stored_names(statement) & outer

            if nested:
                raise RewriteError(
                    f"kernel `{kernel.name}` assigns {', '.join(sorted(nested))}, "
                    "defined before the task loop, inside a nested block.",
                    "PersistentGrid can only give the task loop its own copy of "
                    "a name assigned at the top level of the kernel.",
                )

            # Nothing renamed yet (a kernel that assigns no parameter): the
            # statement, often the whole tile body, is not walked again.
            if renamed:
                statement = _Rename(renamed).visit(statement)

        result.append(statement)

    return result


class _Rename(Transformer):
    def __init__(self, names):
        self._names = names

    def visit_Name(self, node):
        if node.id in self._names:
            return ast.copy_location(ast.Name(self._names[node.id], node.ctx), node)

        return node


def _program_id_statement(owner, kernel):
    for position, statement in enumerate(kernel.body):
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and owner.is_call_to(statement.value, "triton.language.program_id")
            and len(statement.value.args) == 1
            and isinstance(statement.value.args[0], ast.Constant)
            and statement.value.args[0].value == 0
        ):
            if any(isinstance(node, ast.Return) for node in statements(kernel)):
                break

            return position, statement.targets[0].id

    raise RewriteError(
        f"kernel `{kernel.name}` does not read `tl.program_id(0)` into a variable "
        "at its top level, or returns early.",
        "PersistentGrid needs NineToothed's program-id decomposition to loop over tasks.",
    )


class _UnitMeta(Transformer):
    """Take every ``meta[...]`` of a grid as 1."""

    def __init__(self, meta):
        self._meta = meta

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self._meta:
            return ast.Constant(1)

        return self.generic_visit(node)


class _GuardLaunches(Transformer):
    """Put each rewritten launch statement under its ``if tasks > 0``."""

    def __init__(self, guards):
        self._guards = guards

    def visit_Expr(self, node):
        guard = self._guards.get(id(node.value))

        if guard is None:
            return node

        return ast.If(guard, [node], [])


class _KernelTerms:
    """Rewrite a launch-side expression in the terms of the kernel's parameters."""

    def __init__(self, kernel, call, meta):
        self.kernel = kernel
        self.meta = meta
        parameters = [argument.arg for argument in kernel.args.args]
        self.passed = {}

        for parameter, argument in zip(parameters, call.args):
            self.passed.setdefault(structure(argument), parameter)

        for item in call.keywords:
            if item.arg in parameters:
                self.passed.setdefault(structure(item.value), item.arg)

        self.parameters = set(parameters)

    def translate(self, node):
        parameter = self.passed.get(structure(node))

        if parameter is not None:
            return ast.Name(parameter, ast.Load())

        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node

        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.meta
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in self.parameters
        ):
            return ast.Name(node.slice.value, ast.Load())

        if isinstance(node, ast.BinOp):
            return ast.BinOp(
                self.translate(node.left), node.op, self.translate(node.right)
            )

        if isinstance(node, ast.UnaryOp):
            return ast.UnaryOp(node.op, self.translate(node.operand))

        raise RewriteError(
            f"the grid of `{self.kernel.name}` uses `{ast.unparse(node)}`, which "
            "the launch does not pass to the kernel.",
            "PersistentGrid computes the number of tasks inside the kernel from its arguments.",
        )
