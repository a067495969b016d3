"""The compiler's launch analysis: what a kernel's launch function takes and requires, from NineToothed's source (level 1)."""

import ast

import pytest
from helpers import load_example, shared_example

from ninetoothed_ascend.compiler import launch
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import CPU, NPU


def test_tensor_parameters_are_those_passed_with_sizes_and_strides():
    kernel = load_example("rms_norm").kernel

    parameters, tensors = launch.launch_parameters(
        ast.parse(kernel.source("cuda")), kernel.launch_name
    )

    # rms_norm(input, weight, eps, num_normalized_elements, output): the two
    # scalars (Tensor(0)) are passed as they are.
    assert len(parameters) == 6 and parameters[-1] == "BLOCK_SIZE"
    assert tensors == tuple(parameters[index] for index in (0, 1, 4))


@pytest.mark.parametrize(
    "name, ndims, equal_sizes",
    [
        ("matmul", ((0, 2), (1, 2), (2, 2)), (((0, 0), (2, 0)),)),
        # A row of the input and of the output per program: a 2-D tile's
        # index is the program id divided by the number of its own column
        # tiles.
        ("softmax", ((0, 2), (1, 2)), (((0, 0), (1, 0)), ((0, 1), (1, 1)))),
        ("add", ((0, 1), (1, 1), (2, 1)), (((0, 0), (1, 0), (2, 0)),)),
        # Offsets built from index variables several assignments deep, and
        # two groups in one kernel.
        (
            "paged_attention",
            ((0, 4), (1, 4), (2, 4), (3, 2), (4, 2), (6, 4)),
            (
                ((0, 0), (3, 0), (4, 0), (6, 0)),
                ((0, 1), (6, 1)),
                ((1, 2), (2, 2)),
            ),
        ),
        (
            "topk_topp_sampling",
            ((0, 2), (1, 2), (2, 1), (3, 1), (4, 1), (5, 1)),
            (((0, 0), (1, 0)), ((2, 0), (3, 0), (4, 0), (5, 0))),
        ),
    ],
)
def test_requirements_are_read_from_the_generated_source(name, ndims, equal_sizes):
    kernel = shared_example(name).kernel

    required = launch.requirements(
        ast.parse(kernel.source("cuda")), kernel.entry.kernel_name, kernel.launch_name
    )

    assert required.ndims == ndims
    assert required.equal_sizes == equal_sizes
    # As the handle has them, from its entry.
    assert kernel.requirements == required


@pytest.mark.parametrize("passes", [NPU, CPU], ids=["npu", "cpu"])
def test_a_pipeline_reads_the_launch_facts_one_parse_of_the_source_gives(passes):
    """The facts stored with an entry are the same whichever parse they come from: a pipeline's own tree, before its passes, or one of the source alone."""

    kernel = shared_example("paged_attention").kernel
    source, names = kernel.source("cuda"), (kernel.kernel_name, kernel.launch_name)

    rewritten = run_pipeline(
        source, passes, analyse=lambda module: launch.launch_facts(module, *names)
    )

    assert rewritten.analysis == launch.read_launch_facts(source, *names)
    assert rewritten.analysis == kernel.entry.launch


def test_a_launch_function_with_star_arguments_has_no_parameters():
    module = ast.parse(
        "import triton\n"
        "@triton.jit\n"
        "def kernel(x):\n    pass\n"
        "def launch(*args):\n    kernel[(1,)](*args)\n"
    )

    assert launch.launch_facts(module, "kernel", "launch") == {
        "parameters": None,
        "tensors": [],
        "requirements": None,
    }
