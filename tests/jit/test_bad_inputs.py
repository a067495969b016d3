"""Bad inputs at a call: the right answer, or a one-line ``ValueError``/``TypeError`` naming the kernel, the argument and what was expected.

Each input here was silently wrong or crashed in the CPU variant, where
plain NineToothed cannot run to compare. The checks are those of
:func:`ninetoothed_ascend.jit.arguments.checked`, which wraps the NPU and CPU
variants' launches (and the emulated NPU variant's; the CUDA variant's with
``NINETOOTHED_ASCEND_CHECK_ARGS=1``), before anything is launched.
"""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import ninetoothed
import numpy
import pytest
import torch
from helpers import ROOT, shared_example
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.examples import as_ndim
from ninetoothed_ascend.jit import arguments


def make_add_2d():
    def arrangement(
        x, y, z, BLOCK_M=ninetoothed.block_size(), BLOCK_N=ninetoothed.block_size()
    ):
        return (
            x.tile((BLOCK_M, BLOCK_N)),
            y.tile((BLOCK_M, BLOCK_N)),
            z.tile((BLOCK_M, BLOCK_N)),
        )

    def application(x, y, z):
        z = x + y  # noqa: F841

    return ninetoothed_ascend.make(
        arrangement,
        application,
        (Tensor(2), Tensor(2), Tensor(2)),
        kernel_name="add_2d",
    )


@pytest.mark.parametrize("shape", [(1, 4), (3, 1)])
def test_a_2d_operand_of_another_shape_is_refused(shape):
    # Before: ``y`` read as zeros past its end (no size check for 2-D tiles,
    # whose row index divides the program id by each tensor's own number of
    # column tiles). NineToothed has no broadcasting of its own: plain
    # NineToothed reads the same padding (scripts/plain_on_cuda.py).
    kernel = make_add_2d()
    x, y, z = torch.ones(3, 4), torch.ones(shape), torch.zeros(3, 4)
    dimension = 0 if shape[0] != 3 else 1

    with pytest.raises(ValueError) as raised:
        kernel(x, y, z)

    message = str(raised.value)
    assert message.startswith("kernel `add_2d` (cpu variant): argument 2 (`")
    assert f"must have size {(3, 4)[dimension]} in dimension {dimension}" in message
    assert "\n" not in message
    assert torch.equal(z, torch.zeros(3, 4))  # nothing launched

    # Equal shapes run.
    y = torch.arange(12.0).view(3, 4)
    kernel(x, y, z)
    assert torch.equal(z, x + y)


def test_flattened_operands_of_another_element_count_are_refused():
    # Before: ``z.flatten()[:20]`` written, the rest left, for ``x`` and
    # ``y`` of 20 elements and ``z`` of 30.
    module = shared_example("flat_mul")
    x, y, z = torch.ones(4, 5), torch.ones(4, 5), torch.zeros(5, 6)

    with pytest.raises(ValueError) as raised:
        module.kernel(*(as_ndim(tensor, module.NDIM) for tensor in (x, y, z)))

    assert "argument 3 (`" in str(raised.value)
    assert "must have 20 elements, as argument 1" in str(raised.value)
    assert "given 30 (shape (1, 1, 5, 6))" in str(raised.value)
    assert torch.equal(z, torch.zeros(5, 6))

    # One element count, other shapes: the same flat elements, as plain
    # NineToothed reads them.
    z = torch.zeros(2, 10)
    module.kernel(*(as_ndim(tensor, module.NDIM) for tensor in (x, y, z)))
    assert torch.equal(z, torch.ones(2, 10))


def test_a_meta_tensor_the_kernel_reads_is_refused():
    # Before: the CPU variant read an uninitialized element (1.68e+25).
    kernel = shared_example("add").kernel
    x, z = torch.ones(4), torch.zeros(4)

    with pytest.raises(ValueError, match=r"argument 2 \(`\w+`\) is a meta tensor"):
        kernel(x, torch.empty(4, device="meta"), z)

    assert torch.equal(z, torch.zeros(4))


def test_a_meta_placeholder_the_kernel_does_not_read_still_runs():
    # Read under ``if has_mask``: a placeholder, as plain NineToothed takes it.
    module = shared_example("attention_optional_mask")
    inputs = module.inputs("cpu", torch.float32)
    expected = module.reference(*inputs)

    torch.testing.assert_close(module.launch(module.kernel, *inputs), expected)


def test_a_complex_tensor_is_a_type_error():
    # Before: a bare ``KeyError: 'complex64'``.
    kernel = shared_example("add").kernel
    x = torch.ones(4, dtype=torch.complex64)

    with pytest.raises(TypeError) as raised:
        kernel(x, x, x)

    message = str(raised.value)
    assert message.startswith("kernel `add` (cpu variant): argument 1 (`")
    assert "has dtype torch.complex64, which Triton has no type for" in message


def test_a_numpy_array_is_a_type_error():
    # Before: ``TypeError: 'int' object is not callable`` from the launch.
    kernel = shared_example("add").kernel
    x = torch.ones(4)

    with pytest.raises(TypeError) as raised:
        kernel(x, numpy.ones(4, dtype=numpy.float32), torch.zeros(4))

    assert "argument 2 (`" in str(raised.value)
    assert "must be a torch.Tensor with 1 dimensions, given numpy.ndarray" in str(
        raised.value
    )


#: Two elements 2**31 apart: a 2 GiB ``bool`` buffer, never touched (the
#: pages are not allocated), as a strided view.
HUGE_OFFSET = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import ninetoothed_ascend.examples as examples
module = examples.load_module(sys.argv[2])
x = torch.empty(2**31 + 1, dtype=torch.bool)[:: 2**31]
try:
    module.kernel(x, x, torch.zeros(2, dtype=torch.bool))
except ValueError as error:
    print(error)
"""


def test_offsets_past_32_bits_are_refused_before_the_launch():
    # Before: the interpreter's 32-bit offsets wrapped and the process ended
    # with a segmentation fault.
    # The package under test, wherever it is imported from.
    source = pathlib.Path(ninetoothed_ascend.__file__).resolve().parent.parent
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            HUGE_OFFSET,
            str(source),
            str(ROOT / "examples" / "elementwise" / "add.py"),
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(source)},
        check=False,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert "argument 1 (`" in result.stdout
    assert "reaches element offset 2147483648" in result.stdout
    assert "must stay below 2**31" in result.stdout


def test_every_variant_s_launch_is_checked_alike(monkeypatch):
    # The same check wraps each variant's launch: the NPU variant, its
    # emulation, and the CUDA variant with NINETOOTHED_ASCEND_CHECK_ARGS=1.
    kernel = shared_example("add").kernel
    required = kernel.requirements
    x = torch.ones(4, dtype=torch.complex64)

    for variant in ("npu", "cuda"):
        launch = arguments.checked(lambda *args: None, required, "add", variant)

        with pytest.raises(TypeError, match=rf"kernel `add` \({variant} variant\)"):
            launch(x, x, x)

    monkeypatch.setenv("NINETOOTHED_ASCEND_EMULATE_NPU", "1")
    emulated = make_add_2d()  # a handle made now dispatches to the emulation

    with pytest.raises(TypeError, match=r"kernel `add_2d` \(npu variant\)"):
        emulated(*(torch.ones(2, 2, dtype=torch.complex64) for _ in range(3)))


def test_bool_add_is_what_plain_ninetoothed_computes():
    # ``+`` on bool tiles is Triton's ``arith.addi`` on ``i1``: addition
    # modulo 2, True + True = False, in plain NineToothed's CUDA variant too
    # (its TTIR, below, compiled by CUDA Triton's frontend without a GPU;
    # run on a GPU by scripts/plain_on_cuda.py). torch gives True. Both our
    # variants compute what the CUDA variant computes.
    kernel = shared_example("add").kernel
    x = torch.tensor([True, True, False, False])
    y = torch.tensor([True, False, True, False])

    for launch in (kernel, kernel.emulated("cpu")):
        z = torch.zeros(4, dtype=torch.bool)
        launch(x, y, z)

        assert z.tolist() == [False, True, True, False]


def test_plain_ninetoothed_adds_bool_tiles_modulo_2(tmp_path, monkeypatch):
    # NineToothed's own source of ``add``, compiled by CUDA Triton's
    # frontend for bool pointers (no GPU needed up to TTIR): the sum is
    # ``arith.addi`` on ``i1``.
    import triton
    from triton.backends.compiler import GPUTarget

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    # Triton reads a kernel's source from its file.
    path = tmp_path / "plain_add.py"
    path.write_text(shared_example("add").kernel.source("cuda"))
    spec = importlib.util.spec_from_file_location("plain_add", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.add
    signature = {
        name: "*i1"
        if name.endswith("_pointer")
        else "constexpr"
        if "BLOCK_SIZE" in name
        else "i32"
        for name in kernel.arg_names
    }
    constexprs = {name: 4 for name, kind in signature.items() if kind == "constexpr"}
    compiled = triton.compile(
        triton.compiler.ASTSource(kernel, signature, constexprs),
        target=GPUTarget("cuda", 90, 32),
    )

    assert re.search(r"arith\.addi %\w+, %\w+ : tensor<\d+xi1>", compiled.asm["ttir"])
