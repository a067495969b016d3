"""Writes our HOST entry wrapper for the device kernel signature at a given point of BiShengIR's pipeline.
usage: make_wrapper.py OUT [--ffts] [--gm] [--pid-args]
 --ffts: kernel has the leading i64 ffts_base_address (after hfusion-add-ffts-addr)
 --gm: kernel memrefs carry #hivm.address_space<gm> (after hivm-infer-mem-scope)
 --pid-args: kernel still takes the 6 trailing i32 (grid, program id); otherwise 3 (grid) and the
             program id comes from hivm.hir.get_block_idx (-> cpu_get_block_idx, set per call here)."""

import sys

out, opts = sys.argv[1], set(sys.argv[2:])
sp = ", #hivm.address_space<gm>" if "--gm" in opts else ""
I8, F = f"memref<?xi8{sp}>", f"memref<?xf32{sp}>"
L = []
L.append("  func.func private @cpu_set_block_idx(i64)")
L.append(
    "  func.func @host(%x: memref<1000xf32> {hacc.arg_type = #hacc.arg_type<input>}, %y: memref<1000xf32> {hacc.arg_type = #hacc.arg_type<input>}, %o: memref<1000xf32> {hacc.arg_type = #hacc.arg_type<output>}) attributes {hacc.function_kind = #hacc.function_kind<HOST>, hacc.host_func_type = #hacc.host_func_type<host_entry>} {"
)
L += [
    "    %c0 = arith.constant 0 : index",
    "    %c1 = arith.constant 1 : index",
    "    %c4 = arith.constant 4 : index",
    "    %ffts = arith.constant 0 : i64",
    "    %n32 = arith.constant 1000 : i32",
    "    %g32 = arith.constant 4 : i32",
    "    %one = arith.constant 1 : i32",
    "    %zero = arith.constant 0 : i32",
    "    %w0 = memref.alloc(%c0) : memref<?xi8>",
]
if sp:
    L.append(f"    %w = memref.memory_space_cast %w0 : memref<?xi8> to {I8}")
    for v in "xyo":
        L.append(
            f"    %{v}s = memref.memory_space_cast %{v} : memref<1000xf32> to memref<1000xf32{sp}>"
        )
        L.append(f"    %{v}d = memref.cast %{v}s : memref<1000xf32{sp}> to {F}")
else:
    L.append("    %w = memref.cast %w0 : memref<?xi8> to memref<?xi8>")
    for v in "xyo":
        L.append(f"    %{v}d = memref.cast %{v} : memref<1000xf32> to {F}")
L.append("    scf.for %p = %c0 to %c4 step %c1 {")
L.append("      %p64 = arith.index_cast %p : index to i64")
L.append("      %p32 = arith.index_cast %p : index to i32")
L.append("      func.call @cpu_set_block_idx(%p64) : (i64) -> ()")
args, types = [], []
if "--ffts" in opts:
    args.append("%ffts")
    types.append("i64")
args += ["%w", "%w", "%xd", "%yd", "%od", "%n32", "%g32", "%one", "%one"]
types += [I8, I8, F, F, F] + ["i32"] * 4
if "--pid-args" in opts:
    args += ["%p32", "%zero", "%zero"]
    types += ["i32"] * 3
L.append(f"      func.call @add_kernel({', '.join(args)}) : ({', '.join(types)}) -> ()")
L += ["    }", "    return", "  }", "}"]
open(out, "w").write("\n".join(L) + "\n")
