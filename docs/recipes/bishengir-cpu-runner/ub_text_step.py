"""Text steps on BiShengIR's HIVM-level IR so that bishengir-opt 1.2.0's --lower-for-cpu-runner-pipeline
accepts it (neither op has a CPU lowering there):
 1. hivm.hir.get_block_idx -> call @cpu_get_block_idx() (C, set by the host wrapper per block);
 2. %r = hivm.hir.pointer_cast(%addr) : memref<SHAPExT, #hivm.address_space<ub>>   (a UB address chosen by PlanMemory)
    -> memref.view of one 192 KiB global byte array standing for the Unified Buffer, at byte offset %addr,
    so the buffers PlanMemory placed (and any aliasing/overlap it chose) are executed as placed."""

import re
import sys

t = open(sys.argv[1]).read()
t, nb = re.subn(
    r"hivm\.hir\.get_block_idx -> i64", "func.call @cpu_get_block_idx() : () -> i64", t
)
UB = "memref<196608xi8, #hivm.address_space<ub>>"
count = 0


def rep(m):
    global count
    count += 1
    ind, res, addr, shape = m.group(1), m.group(2), m.group(3), m.group(4)
    k = count
    return (
        f"{ind}%ub_arena_{k} = memref.get_global @cpu_ub_arena : {UB}\n"
        f"{ind}%ub_off_{k} = arith.index_cast {addr} : i64 to index\n"
        f"{ind}{res} = memref.view %ub_arena_{k}[%ub_off_{k}][] : {UB} to memref<{shape}, #hivm.address_space<ub>>"
    )


t, np_ = re.subn(
    r"^(\s*)(%[\w]+) = hivm\.hir\.pointer_cast\((%[\w]+)\) : memref<([0-9x]+x\w+), #hivm\.address_space<ub>>",
    rep,
    t,
    flags=re.M,
)
left = len(re.findall(r"hivm\.hir\.pointer_cast", t))
i = t.index("\n", t.index("module"))
t = (
    t[: i + 1] + "  func.func private @cpu_get_block_idx() -> i64\n"
    f'  memref.global "private" @cpu_ub_arena : {UB} = uninitialized\n' + t[i + 1 :]
)
open(sys.argv[2], "w").write(t)
print(
    f"get_block_idx replaced: {nb}; pointer_cast replaced: {np_}; pointer_cast left: {left}",
    file=sys.stderr,
)
