"""Small Triton modules the CPU passes' tests run on the interpreter."""

import importlib.util
import textwrap

from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.target import Target

#: ``y = x + 1`` over ``BLOCK`` elements, as NineToothed writes a kernel: a
#: ``triton.jit`` function and its launch.
ADD_ONE = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, y_pointer, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_pointer + offsets, tl.load(x_pointer + offsets) + 1)

def launch(x, y):
    kernel[(1,)](x, y, BLOCK=x.numel())
"""


def compiled_module(source, passes, directory):
    """Run ``passes`` (the CPU target) on ``source``, write it under ``directory`` and import it.

    The interpreter reads a kernel's source from its file, so the module is
    imported from one.
    """

    rewritten = run_pipeline(
        textwrap.dedent(source), passes, Target.from_environment("cpu")
    )
    path = directory / "cpu_variant.py"
    path.write_text(rewritten.source)
    spec = importlib.util.spec_from_file_location("cpu_variant", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return module
