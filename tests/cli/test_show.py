"""``ninetoothed-ascend show``: the variants of a kernel as a diff, with the passes that fired and why."""

import textwrap

from click.testing import CliRunner
from conftest import EXAMPLE_PATHS

from ninetoothed_ascend.cli import main
from ninetoothed_ascend.compiler.npu.flat_index_digits import WINDOW


def show(*arguments):
    return CliRunner().invoke(main, ["show", *map(str, arguments)])


def test_default_is_a_unified_diff_from_cuda_to_npu_with_the_passes_and_their_constraints():
    result = show(EXAMPLE_PATHS["add"])

    assert result.exit_code == 0, result.output
    assert "kernel add: cuda -> npu" in result.output
    assert (
        "  FoldTrueMask x3: Rewrite ``mask=True & m`` into ``mask=m``" in result.output
    )
    assert (
        "Constraint: the Triton 3.2 frontend that triton-ascend 3.2.0 ships fails"
        in (result.output)
    )
    assert "--- add (cuda)\n+++ add (npu)\n" in result.output
    removed = [line for line in result.output.splitlines() if line.startswith("-    ")]
    added = [line for line in result.output.splitlines() if line.startswith("+    ")]
    assert any("mask=True &" in line for line in removed)
    assert added and not any("mask=True &" in line for line in added)


def test_show_says_when_a_variant_loses_fp64_precision():
    npu = show(EXAMPLE_PATHS["add"]).output
    cpu = show(EXAMPLE_PATHS["add"], "--variant", "cpu").output

    assert (
        "precision (LowerFloat64): on fp64 tensors, and for fp64 intermediates, "
        "this kernel computes in fp32" in npu
    )
    assert "precision (" not in cpu


def test_variant_cpu_diffs_against_the_cpu_variant():
    result = show(EXAMPLE_PATHS["add"], "--variant", "cpu")

    assert result.exit_code == 0, result.output
    assert "kernel add: cuda -> cpu" in result.output
    assert "  BindLanguageModule x" in result.output
    assert "+++ add (cpu)" in result.output
    assert "FoldTrueMask" not in result.output


def test_side_by_side_keeps_every_character_of_long_lines():
    result = show(EXAMPLE_PATHS["add"], "--side-by-side", "--width", "100")

    assert result.exit_code == 0, result.output
    table = result.output.split("\n\n", 1)[1].splitlines()
    assert table[0].startswith("add (cuda)") and "add (npu)" in table[0]
    assert all(len(line) <= 100 for line in table)
    assert any(line[48:51] == " | " for line in table)
    assert any(line[48:51] == " > " for line in table)  # import functools, added
    # Wrapped continuation rows carry the rest of each generated line.
    assert any(line[48:51] == " . " for line in table)


def test_emulated_diffs_the_npu_variant_against_its_emulation():
    result = show(EXAMPLE_PATHS["libdevice_math"], "--emulated", "cpu")

    assert result.exit_code == 0, result.output
    assert "kernel libdevice_math: npu -> npu emulated on cpu" in result.output
    assert "  EmulateLibdeviceOnCpu x" in result.output
    assert "-    from triton.language.extra.cann import libdevice" in result.output
    assert "+def ninetoothed_emulated_tanh(a0):" in result.output


def test_path_and_attribute_name_a_handle_at_another_name(tmp_path):
    module = tmp_path / "my_kernels.py"
    module.write_text(
        textwrap.dedent(
            """
            import ninetoothed
            from ninetoothed import Tensor

            import ninetoothed_ascend


            def arrangement(x, y, BLOCK_SIZE=ninetoothed.block_size()):
                return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


            def application(x, y):
                y = x * 2  # noqa: F841


            doubled = ninetoothed_ascend.make(
                arrangement, application, (Tensor(1), Tensor(1)), kernel_name="doubled"
            )
            """
        )
    )

    result = show(f"{module}:doubled")

    assert result.exit_code == 0, result.output
    assert "kernel doubled: cuda -> npu" in result.output

    missing = show(module)

    assert missing.exit_code == 2
    assert "has no ninetoothed_ascend handle named `kernel`" in missing.output


def test_a_missing_file_is_a_usage_error(tmp_path):
    result = show(tmp_path / "nothing.py")

    assert result.exit_code == 2
    assert "no Python file at" in result.output


def test_emulated_cuda_shows_the_mapping_to_cuda_libdevice():
    result = show(EXAMPLE_PATHS["libdevice_math"], "--emulated", "cuda")

    assert result.exit_code == 0, result.output
    assert "kernel libdevice_math: npu -> npu emulated on cuda" in result.output
    assert "  EmulateLibdeviceOnCuda x" in result.output
    assert (
        "+from triton.language.extra import libdevice as ninetoothed_portable_libdevice"
        in result.output
    )
    assert (
        "+    return ninetoothed_portable_libdevice.tanh(x0).to(ninetoothed_dtype)"
        in (result.output)
    )


def test_npu_diff_names_the_accesses_that_stay_a_gather():
    result = show(EXAMPLE_PATHS["max_pool2d"])

    assert result.exit_code == 0, result.output
    # The pooling window; the store has ContiguousFlatAccess's fast path.
    assert "accesses that stay a gather on the NPU (1;" in result.output
    assert f"  max_pool2d load: {WINDOW}" in result.output
    flattened = show(EXAMPLE_PATHS["flat_sigmoid"])
    assert "accesses that stay a gather on the NPU (0;" in flattened.output
    assert "  ContiguousFlatAccess x2:" in flattened.output
    # One block-table entry per program leaves the tile's address affine.
    assert (
        "stay a gather on the NPU (0;" in show(EXAMPLE_PATHS["paged_attention"]).output
    )
