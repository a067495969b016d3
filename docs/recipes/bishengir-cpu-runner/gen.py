import sys

import triton
import triton.language as tl
from triton._C.libtriton import ir
from triton.backends.ascend.compiler import AscendBackend, make_ttir, ttir_to_linalg
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


def add_loop_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Each program adds 2 consecutive tiles in a loop: a loop for BiShengIR to multi-buffer.
    pid = tl.program_id(0)
    for i in range(0, 2):
        offs = (pid * 2 + i) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(out_ptr + offs, x + y, mask=m)


# gen.py OUT [--loop]: the ttadapter output of add_kernel (BLOCK 256), or of add_loop_kernel (BLOCK 128).
loop = "--loop" in sys.argv[2:]
# The host wrappers call the kernel by name (@add_kernel), whichever body it has.
add_loop_kernel.__name__ = "add_kernel"
kernel = triton.jit(add_loop_kernel if loop else add_kernel)
target = GPUTarget("npu", "Ascend910B1", 0)
backend = AscendBackend(target)
src = ASTSource(
    fn=kernel,
    signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
    constants={"BLOCK": 128 if loop else 256},
)
opts = backend.parse_options({})
ctx = ir.context()
ir.load_dialects(ctx)
backend.load_dialects(ctx)
codegen_fns = backend.get_codegen_implementation()
mod = src.make_ir(opts, codegen_fns, backend.get_module_map(), ctx)
metadata = {
    "hash": "x",
    "enable_nd2nz_on_vector": False,
    "enable_select_analysis": False,
    "compile_on_910_95": False,
    "force_simt_template": False,
    "enable_linearize": False,
}
ttir = make_ttir(mod, metadata, opts)
lin = ttir_to_linalg(ttir, metadata, opts, named_ops=True)
open(sys.argv[1], "w").write(lin)
print("ok", len(lin))
