"""SynchronizeReadBack: a barrier between a store and a later load of the same tensor in one program."""

import ast

import torch
from helpers import assert_no_rewrite, load_example, rewrite

from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import STORE
from ninetoothed_ascend.compiler.npu.synchronize_read_back import SynchronizeReadBack

BARRIER = "triton.language.debug_barrier()"


def _statements(source):
    kernel = ast.parse(source).body[-1]

    return [ast.unparse(statement) for statement in kernel.body]


def test_a_store_read_back_later_gets_a_barrier_after_it():
    source, count = rewrite(
        SynchronizeReadBack,
        """
        import triton

        @triton.jit
        def kernel(x_pointer, mean_pointer, n):
            mean_pointers = mean_pointer
            triton.language.store(mean_pointers + n * 0, triton.language.load(x_pointer))
            y = triton.language.load(mean_pointers + n * 0) * 2
            triton.language.store(x_pointer, y)
        """,
    )

    assert count == 1
    assert _statements(source)[1:4] == [
        "triton.language.store(mean_pointers + n * 0, triton.language.load(x_pointer))",
        BARRIER,
        "y = triton.language.load(mean_pointers + n * 0) * 2",
    ]


def test_a_tensor_updated_in_place_once_needs_no_barrier():
    # Load, then store: the program never reads back what it stored.
    assert_no_rewrite(
        SynchronizeReadBack,
        """
        import triton

        @triton.jit
        def kernel(x_pointer, n):
            pointers = x_pointer + triton.language.arange(0, 16) * n
            triton.language.store(pointers, triton.language.load(pointers) * 2)
        """,
    )


def test_a_store_read_by_the_next_iteration_of_a_loop_gets_a_barrier():
    # ``total = total + x[i]`` on a parameter: each iteration loads what the
    # previous one stored.
    source, count = rewrite(
        SynchronizeReadBack,
        """
        import triton

        @triton.jit
        def kernel(x_pointer, total_pointer, n):
            for i in range(n):
                total = triton.language.load(total_pointer)
                triton.language.store(total_pointer, total + triton.language.load(x_pointer + i))
        """,
    )
    loop = ast.parse(source).body[-1].body[0]

    assert count == 1
    assert ast.unparse(loop.body[-1]) == BARRIER


def test_stores_in_branches_are_ordered_before_the_loads_after_the_branch():
    source, count = rewrite(
        SynchronizeReadBack,
        """
        import triton

        @triton.jit
        def kernel(x_pointer, out_pointer, flag):
            if flag:
                triton.language.store(out_pointer, 1.0)
            else:
                triton.language.store(out_pointer, 2.0)
            triton.language.store(x_pointer, triton.language.load(out_pointer))
        """,
    )
    branch = ast.parse(source).body[-1].body[0]

    assert count == 2
    assert ast.unparse(branch.body[-1]) == ast.unparse(branch.orelse[-1]) == BARRIER


def test_stores_to_other_tensors_get_no_barrier():
    assert_no_rewrite(
        SynchronizeReadBack,
        """
        import triton

        @triton.jit
        def kernel(x_pointer, y_pointer, z_pointer):
            triton.language.store(y_pointer, triton.language.load(x_pointer))
            triton.language.store(z_pointer, triton.language.load(x_pointer) + 1)
        """,
    )


def test_it_matches_pointer_structure_not_names():
    template = """
        import triton

        @triton.jit
        def kernel({a}, {b}):
            {c} = {b} + 0
            triton.language.store({c}, triton.language.load({a}))
            triton.language.store({a}, triton.language.load({c}))
        """
    counts = [
        rewrite(SynchronizeReadBack, template.format(**names))[1]
        for names in (
            {"a": "x", "b": "mean", "c": "mean_pointers"},
            {"a": "q", "b": "r", "c": "s"},
        )
    ]

    assert counts == [1, 1]


def test_the_saved_statistics_example_orders_each_statistic_before_its_read_back():
    # Its NPU variant: a barrier after the mean's store (read back in the
    # variance loop and the normalization) and after the variance's (read
    # back for the standard deviation), inside the persistent-grid loop.
    module = load_example("instance_norm_saved_stats")
    kernel = next(
        node
        for node in ast.parse(module.kernel.source("npu")).body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(statement, ast.For) for statement in node.body)
    )
    (persistent_loop,) = [node for node in kernel.body if isinstance(node, ast.For)]
    body = [ast.unparse(statement) for statement in persistent_loop.body]
    stores = [index for index, line in enumerate(body) if line.startswith(f"{STORE}(")]

    assert dict(module.kernel.rewrites("npu"))["SynchronizeReadBack"] == 2
    assert [body[index + 1] for index in stores] == [BARRIER, BARRIER]
    assert BARRIER not in module.kernel.source("cuda")


def test_the_saved_statistics_example_matches_torch_emulated_on_the_cpu():
    module = load_example("instance_norm_saved_stats")

    for case in examples.cases(module):
        result = examples.compare(
            module, module.kernel.emulated("cpu"), "cpu", torch.float32, case
        )

        assert result.matches, (case, result)
