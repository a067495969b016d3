"""IndexLoopBounds, on small modules."""

import numpy
from helpers import rewrite

from ninetoothed_ascend.compiler.cpu.index_loop_bounds import IndexLoopBounds


def test_index_loop_bounds_wraps_range_arguments_in_kernels_only():
    source, count = rewrite(
        IndexLoopBounds,
        """
        import triton
        @triton.jit
        def kernel(n):
            for k in range(n):
                pass
        def launch(n):
            return range(n)
        """,
    )

    assert "for k in range(ninetoothed_loop_bound(n))" in source
    assert "return range(n)" in source
    assert count == 1

    namespace = {}
    exec(source.replace("@triton.jit", ""), namespace)
    bound = namespace["ninetoothed_loop_bound"]

    class Scalar:
        handle = type("Handle", (), {"data": numpy.array([7], dtype=numpy.int32)})()

    assert bound(Scalar()) == 7 and type(bound(Scalar())) is int
    assert bound(5) == 5
