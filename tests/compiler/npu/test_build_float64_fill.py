"""BuildFloat64Fill: pass tests on small modules (level 1) and the Ascend compile check of masked fp64 loads (level 2)."""

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.build_float64_fill import LOAD, BuildFloat64Fill

FLOATS = ("*fp64", "*fp32", "*fp16")

KERNEL = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, y_pointer, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_pointer + offsets, mask=mask, other=FILL)
    tl.store(y_pointer + offsets, x.to(tl.float32), mask=mask)
"""


@pytest.mark.parametrize("fill", ["0", "-1.5", "float('-inf')"])
def test_a_masked_load_with_a_number_fill_loads_through_the_helper(fill):
    source, count = rewrite(BuildFloat64Fill, KERNEL.replace("FILL", fill))

    assert f"x = {LOAD}(x_pointer + offsets, mask, {fill})" in source
    assert f"def {LOAD}(pointer, mask, other):" in source
    assert count == 1


@pytest.mark.parametrize(
    "load",
    [
        # No mask: no fill value, nothing cast.
        "tl.load(x_pointer + offsets)",
        # A fill computed in the kernel is a tensor: no fp64 form exists.
        "tl.load(x_pointer + offsets, mask=mask, other=n * 2)",
        # Another keyword the helper does not pass on.
        "tl.load(x_pointer + offsets, mask=mask, other=0, eviction_policy='evict_last')",
    ],
)
def test_other_loads_are_left_as_written(load):
    source = assert_no_rewrite(
        BuildFloat64Fill,
        KERNEL.replace("tl.load(x_pointer + offsets, mask=mask, other=FILL)", load),
    )

    assert LOAD not in source


def test_loads_outside_kernels_are_left_as_written():
    assert_no_rewrite(
        BuildFloat64Fill,
        """
        import triton.language as tl
        def host(p, m):
            return tl.load(p, mask=m, other=0)
        """,
    )


@pytest.mark.ascend
@pytest.mark.parametrize(
    ("fill", "pointer"),
    [
        *((fill, pointer) for fill in ("0", "float('-inf')") for pointer in FLOATS),
        # An integer tensor has no infinity to be filled with.
        ("0", "*i32"),
    ],
)
def test_masked_loads_pass_the_compile_check_and_stay_affine(fill, pointer, tmp_path):
    from ninetoothed_ascend.check.compile_check import StageError, compile_stages

    written = KERNEL.replace("FILL", fill)
    rewritten, _ = rewrite(BuildFloat64Fill, written)
    signature = {"x_pointer": pointer, "y_pointer": "*fp32", "n": "i32"}

    def compiled(source, name):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        module = _import(path)

        return compile_stages(module.kernel, signature, {"BLOCK": 64})[0]

    linalg = compiled(rewritten, "rewritten")

    # An affine copy of the loaded block, not a loop over its elements.
    assert "memref.reinterpret_cast" in linalg
    assert "scf.for" not in linalg

    if pointer == "*fp64":
        with pytest.raises(StageError, match="unsupported on Ascend"):
            compiled(written, "written")
    else:
        # Other element types: the load the kernel wrote, op for op.
        assert _operations(linalg) == _operations(compiled(written, "written"))


def _import(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return module


def _operations(linalg):
    # The ops of the kernel's body, without locations and value names.
    return [
        line.split("=", 1)[-1].split(" loc(")[0].split()[0]
        for line in linalg.splitlines()
        if line.strip()
        and not line.strip().startswith(("func.func", "}", "#", "module"))
    ]
