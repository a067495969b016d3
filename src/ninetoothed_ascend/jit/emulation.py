"""Run a kernel's NPU variant on Triton's CPU interpreter (level 3: emulation, not an NPU).

The NPU source, exactly as the ``ascendify`` pipeline wrote it, is put through
the CPU pipeline (``jit/interpreter.py``) after one undo: the autotuner that
``DeferAutotune`` moved into a ``functools.cache`` factory goes back to a
module-level assignment, which is where ``FixAutotuneConfig`` looks for it.
Every other line that runs is the NPU variant's: its configs, its persistent
grid, its loops.
"""

import ast
import hashlib
import linecache
import types

from ninetoothed_ascend.ascendify.base import (
    import_aliases,
    keyword,
    resolve,
    run_pipeline,
)
from ninetoothed_ascend.jit import interpreter


def npu_source_for_interpreter(npu_source, config=None):
    """Return the NPU source rewritten for the interpreter.

    :param npu_source: ``str``, a handle's ``source("npu")``.
    :param config: ``dict`` of block sizes to run with (must be one of the
        variant's configs), or ``None`` for the interpreter's own choice
        (the config with the largest tile).
    :raises ValueError: ``config`` is not one of the variant's configs.
    """

    tree = ast.parse(npu_source)
    aliases = import_aliases(tree)
    factories = {}

    for index, statement in enumerate(tree.body):
        if (
            isinstance(statement, ast.FunctionDef)
            and len(statement.body) == 1
            and isinstance(statement.body[0], ast.Return)
            and isinstance(statement.body[0].value, ast.Call)
            and isinstance(statement.body[0].value.func, ast.Call)
            and resolve(statement.body[0].value.func.func, aliases) == "triton.autotune"
        ):
            autotune = statement.body[0].value
            configs = keyword(autotune.func, "configs").value

            if config is not None:
                chosen = [
                    item
                    for item in configs.elts
                    if ast.literal_eval(item.args[0]) == config
                ]

                if not chosen:
                    raise ValueError(f"{config} is not a config of the NPU variant")

                configs.elts = chosen

            tree.body[index] = ast.Assign(
                [ast.Name(statement.name, ast.Store())], autotune, lineno=0
            )
            factories[statement.name] = statement

    class Uncall(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)

            if (
                isinstance(node.func, ast.Name)
                and node.func.id in factories
                and not node.args
            ):
                return node.func

            return node

    Uncall().visit(tree)
    ast.fix_missing_locations(tree)

    return run_pipeline(ast.unparse(tree), interpreter.PIPELINE).source


def npu_launch_on_interpreter(handle, config=None):
    """The launch function of ``handle``'s NPU variant on the CPU interpreter.

    :param handle: :class:`~ninetoothed_ascend.Handle`.
    :param config: see :func:`npu_source_for_interpreter`.
    :return: ``(launch, module)``: the launch function, taking what the
        handle's launch function takes, and the module it lives in.
    """

    source = npu_source_for_interpreter(handle.source("npu"), config)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"<npu-emulated-{handle.kernel_name}-{digest}>"
    # Triton reads kernel source through ``inspect``, hence ``linecache``.
    linecache.cache[filename] = (
        len(source),
        None,
        source.splitlines(keepends=True),
        filename,
    )
    module = types.ModuleType(f"npu_emulated_{digest}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)

    return getattr(module, handle.launch_name), module
