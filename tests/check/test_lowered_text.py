"""The lowered check's text steps: the kernel's signature, the driver, the copies, libdevice, and naming a faulting operation.

No compiler runs here; these run in both environments of .ci/run.
"""

import pathlib

import pytest

from ninetoothed_ascend.check.lowered import faults, library, lowering

# The shape of a ttadapter output (triton-ascend 3.2.0, a masked vector add):
# sync-block lock, workspace, the kernel's arguments, grid, program id.
ADD = """\
module {
  func.func @add(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xf32> {tt.divisibility = 16 : i32, tt.tensor_kind = 0 : i32}, %arg3: i32, %arg4: memref<?xf32> {tt.tensor_kind = 1 : i32}, %arg5: i32, %arg6: i32, %arg7: i32, %arg8: i32, %arg9: i32, %arg10: i32) attributes {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"} {
    return
  }
}
"""


def test_signature_is_the_global_kernel_and_its_parameter_types():
    signature = lowering.parse_signature(ADD)

    assert signature.name == "add"
    assert signature.arguments == ("memref<?xf32>", "i32", "memref<?xf32>")
    assert len(signature.types) == 2 + 3 + 6


def test_a_function_that_is_not_the_kernel_is_skipped():
    helper = "  func.func private @helper(%arg0: f32) -> f32\n"
    text = ADD.replace("module {\n", "module {\n" + helper)

    assert lowering.parse_signature(text).name == "add"


def test_a_kernel_without_the_program_parameters_is_refused():
    text = ADD.replace(", %arg10: i32", "")

    with pytest.raises(lowering.LoweringError, match="six i32"):
        lowering.parse_signature(text)


def test_no_kernel_is_an_error():
    with pytest.raises(lowering.LoweringError, match="global_kernel"):
        lowering.parse_signature("module {\n}\n")


def test_driver_passes_grid_then_program_id_to_the_kernel():
    driver = lowering.driver(lowering.parse_signature(ADD))

    assert "func.func @ninetoothed_lowered_launch(%a0: memref<?xi8>" in driver
    assert "%gx: i32, %gy: i32, %gz: i32) attributes {llvm.emit_c_interface}" in driver
    assert (
        "func.call @add(%a0, %a1, %a2, %a3, %a4, %gx, %gy, %gz, %x32, %y32, %z32)"
        in driver
    )
    # Axis 0 is the innermost loop.
    assert (
        driver.index("scf.for %z")
        < driver.index("scf.for %y")
        < driver.index("scf.for %x")
    )


def test_copies_become_linalg_copies_with_their_location():
    text = (
        "    memref.copy %subview, %subview_0 : memref<?xf32, strided<[1], offset: ?>> "
        "to memref<?xf32, strided<[1]>> loc(#loc12)\n"
    )

    assert lowering.rewrite_copies(text) == (
        "    linalg.copy ins(%subview : memref<?xf32, strided<[1], offset: ?>>) "
        "outs(%subview_0 : memref<?xf32, strided<[1]>>) loc(#loc12)\n"
    )


def test_libdevice_declarations_get_bodies_of_their_own_types():
    text = (
        "  func.func private @__hmf_tanhf(f32) -> f32 attributes {llvm.readnone}\n"
        "  func.func private @__hmf_powf(f16, f16) -> f16 attributes {llvm.readnone}\n"
    )
    defined = library.define(text)

    assert "func.func private @__hmf_tanhf(%p0: f32) -> f32 {" in defined
    assert "%r = math.tanh %p0 : f32" in defined
    assert "func.func private @__hmf_powf(%p0: f16, %p1: f16) -> f16 {" in defined
    assert "%r = math.powf %p0, %p1 : f16" in defined
    assert "attributes" not in defined


def test_each_call_of_a_tile_operation_gets_a_body():
    # A second tl.flip in one module is declared triton_flip_0 (ntops' rot90).
    text = (
        "  func.func private @triton_flip(tensor<32x32xbf16>, i64) -> tensor<32x32xbf16>\n"
        "  func.func private @triton_flip_0(tensor<32x32xbf16>, i64) -> tensor<32x32xbf16>\n"
    )
    defined = library.define(text)

    for name in ("triton_flip", "triton_flip_0"):
        assert (
            f"func.func private @{name}(%p0: tensor<32x32xbf16>, %p1: i64) "
            "-> tensor<32x32xbf16> {" in defined
        )

    assert defined.count("%back1 = arith.subi %last1, %d1 : index") == 2


def test_a_libdevice_function_without_a_cpu_body_is_named():
    text = "  func.func private @__hmf_ilogbf(f32) -> f32 attributes {llvm.readnone}\n"

    with pytest.raises(library.NoCpuBody, match="__hmf_ilogbf"):
        library.define(text)


# Two sibling loops reuse the names %5 and %view: the load on line 11 reads
# through the second loop's %view, a view of %arg3.
SIBLINGS = """\
module {
  func.func @k(%arg0: memref<?xi8>, %arg2: memref<?xf32>, %arg3: memref<?xf32>) {
    scf.for %i = %c0 to %c4 step %c1 {
      %5 = arith.index_cast %i : index to i32
      %view = memref.reinterpret_cast %arg2 to offset: [%c0], sizes: [1], strides: [1] : memref<?xf32> to memref<1xf32>
      %6 = memref.load %view[%c0] : memref<1xf32>
    }
    scf.for %i = %c0 to %c4 step %c1 {
      %5 = arith.index_cast %i : index to i32
      %view = memref.reinterpret_cast %arg3 to offset: [%c0], sizes: [1], strides: [1] : memref<?xf32> to memref<1xf32>
      %6 = memref.load %view[%c0] : memref<1xf32>
    }
    return
  }
}
"""


@pytest.mark.parametrize(("line", "parameter"), [(6, "%arg2"), (11, "%arg3")])
def test_a_faulting_load_is_traced_to_the_parameter_its_own_region_sees(
    tmp_path, line, parameter
):
    snapshot = pathlib.Path(tmp_path / "snapshot.mlir")
    snapshot.write_text(SIBLINGS)

    operation, traced = faults.operation_at(snapshot, line)

    assert "memref.load %view" in operation
    assert traced == {parameter: "read"}
