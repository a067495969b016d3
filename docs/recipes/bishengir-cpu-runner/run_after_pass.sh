#!/usr/bin/env bash
# usage: run_after_pass.sh KERNEL.ttadapter.mlir K [HOST_WRAPPER.mlir]
# Runs bishengir-compile (triton-ascend's flags) dumping the whole module after every pass,
# takes the module after the K-th pass, appends our HOST entry wrapper, applies ub_text_step.py,
# lowers with bishengir-opt --lower-for-cpu-runner-pipeline, and runs it with driver.c.
set -e
cd "$(dirname "$0")"
B=$("${PY:?set PY to the python of the triton-ascend environment}" -c 'import ascendnpuir,os;print(os.path.join(os.path.dirname(ascendnpuir.__file__),"bin"))')
IN=$1; K=$2; HW=${3:-w_ffts_gm.mlir}; T=${IN%.ttadapter.mlir}
[ -f "$T.dump.txt" ] || nice -n 10 $B/bishengir-compile "$IN" $(cat flags.txt) --mlir-print-ir-after-all --mlir-print-ir-module-scope \
  --mlir-disable-threading -o /tmp/kernel_unused > /dev/null 2> "$T.dump.txt" || true   # stops at "External hivmc run fails"
echo "pass $K: $(grep 'IR Dump After' "$T.dump.txt" | sed -n "${K}p" | sed -E 's/.*IR Dump After //')"
awk -v k=$K '/IR Dump After/{n++; p=(n==k); next} p' "$T.dump.txt" > "$T.after$K.mlir"
python3 append_host.py "$T.after$K.mlir" "$HW" "$T.after$K.host.mlir"
python3 ub_text_step.py "$T.after$K.host.mlir" "$T.after$K.cpu.mlir"
nice -n 10 $B/bishengir-opt "$T.after$K.cpu.mlir" --lower-for-cpu-runner-pipeline=wrapper-name=bishengir_generated_main -o "$T.after$K.llvm.mlir"
./run_llvm_mlir.sh "$T.after$K.llvm.mlir"
