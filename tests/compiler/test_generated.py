"""GeneratedModule: what the passes read of a generated module, on NineToothed's own output."""

import ast

import pytest
from helpers import ROOT

from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler.generated import GeneratedModule, launch_arguments
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU
from ninetoothed_ascend.compiler.target import Target

EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def matmul_source():
    return examples.load_module(EXAMPLES / "matmul" / "matmul.py").kernel.source("cuda")


def test_a_generated_module_has_one_kernel_one_autotuner_and_one_launch(matmul_source):
    module = GeneratedModule(ast.parse(matmul_source))

    (kernel,) = module.kernels().values()
    (autotuner,) = module.autotuners()
    (launch,) = module.launches()

    assert autotuner.kernel is kernel
    assert launch[0] is kernel
    assert module.launch(autotuner.name)[1] is launch[1]
    assert autotuner.block_sizes() and all(
        set(sizes) <= {argument.arg for argument in kernel.args.args}
        for sizes in autotuner.block_sizes()
    )


def test_launch_arguments_map_every_parameter_the_launch_passes(matmul_source):
    module = GeneratedModule(ast.parse(matmul_source))
    ((kernel, call),) = module.launches()

    arguments = launch_arguments(kernel, call)

    assert (
        list(arguments)
        == [argument.arg for argument in kernel.args.args][: len(call.args)]
    )
    assert all(arguments[name] is value for name, value in zip(arguments, call.args))


def test_the_autotuner_is_found_inside_the_factory_of_the_npu_variant(matmul_source):
    npu = ast.parse(
        run_pipeline(matmul_source, NPU, Target.from_environment("npu")).source
    )
    module = GeneratedModule(npu)

    # DeferAutotune moved the autotuner into a factory: not at module level.
    assert module.autotuners() == []
    ((kernel, call),) = module.autotune_calls()
    assert kernel is module.kernels()[kernel.name]
    assert isinstance(call, ast.Call)


def test_kernels_are_told_apart_by_their_decorator_not_their_name():
    module = GeneratedModule(
        ast.parse(
            "import triton as t\n"
            "@t.jit\n"
            "def helper(x):\n    pass\n"
            "def kernel(x):\n    pass\n"
            "tuned = t.autotune(configs=[t.Config({'B': 4})], key=[])(helper)\n"
            "def launch(x):\n    tuned[(1,)](x)\n    kernel(x)\n"
        )
    )

    assert list(module.kernels()) == ["helper"]
    assert list(module.functions()) == ["helper", "kernel", "launch"]
    functions = module.functions()
    assert module.is_kernel(functions["helper"])
    assert not module.is_kernel(functions["kernel"])
    assert module.is_jit(functions["helper"].decorator_list[0])
    ((kernel, _),) = module.launches()
    assert kernel.name == "helper"
    assert module.autotuners()[0].block_sizes() == [{"B": 4}]


@pytest.mark.parametrize("nested", [False, True], ids=["top-level", "nested"])
def test_a_guard_goes_just_before_the_statement_that_launches(nested):
    launch = "    if x.numel():\n        k[1,](x)\n" if nested else "    k[1,](x)\n"
    tree = ast.parse(
        f"import triton\n@triton.jit\ndef k(x):\n    pass\ndef launch(x):\n{launch}"
    )
    module = GeneratedModule(tree)
    ((_, call),) = module.launches()

    module.insert_before_launch(call, ast.parse("raise ValueError('no')").body[0])

    body = module.functions()["launch"].body
    body = body[0].body if nested else body
    assert [ast.unparse(statement) for statement in body] == [
        "raise ValueError('no')",
        "k[1,](x)",
    ]
