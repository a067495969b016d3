#!/usr/bin/env bash
# BiShengIR's CPU runner on a masked vector add, after chosen passes of bishengir-compile
# (README.md). x86 CPU only; no NPU, no CANN. Needs the repository's .venv-ascend
# (triton-ascend 3.2.0, ascendnpu-ir 1.2.0), /usr/lib/llvm-19 (mlir-translate, llc) and cc.
#   docs/recipes/bishengir-cpu-runner/reproduce.sh [WORK_DIR]   (default: a new temporary one)
set -u
recipe=$(cd "$(dirname "$0")" && pwd)
export PY=${PY:-$(cd "$recipe/../../.." && pwd)/.venv-ascend/bin/python}
work=${1:-$(mktemp -d)}
cp "$recipe"/* "$work"
cd "$work"
echo "work directory: $work"
B=$($PY -c 'import ascendnpuir,os;print(os.path.join(os.path.dirname(ascendnpuir.__file__),"bin"))')
rm -f add.dump.txt addloop.dump.txt
nice -n 10 $PY gen.py add.ttadapter.mlir            # masked vector add, BLOCK 256 (grid 4, n 1000 in the wrapper)
nice -n 10 $PY gen.py addloop.ttadapter.mlir --loop   # same, 2 tiles of 128 per program in a loop (multi-buffered)
python3 make_wrapper.py w_pid.mlir --pid-args; python3 make_wrapper.py w_ffts_pid.mlir --ffts --pid-args
python3 make_wrapper.py w_ffts.mlir --ffts;     python3 make_wrapper.py w_ffts_gm.mlir --ffts --gm
echo "## (b) module after pass K + our host wrapper -> bishengir-opt --lower-for-cpu-runner-pipeline -> CPU"
for KW in 9:w_pid 40:w_ffts_pid 41:w_ffts 71:w_ffts 115:w_ffts 164:w_ffts_gm 234:w_ffts_gm 243:w_ffts_gm 253:w_ffts_gm; do
  echo "== add K=${KW%%:*}"; ./run_after_pass.sh add.ttadapter.mlir ${KW%%:*} ${KW##*:}.mlir 2>&1 | grep -v '^$' | head -4 | cut -c1-220; done
for KW in 234:w_ffts_gm 243:w_ffts_gm 253:w_ffts_gm; do
  echo "== addloop K=${KW%%:*}"; ./run_after_pass.sh addloop.ttadapter.mlir ${KW%%:*} ${KW##*:}.mlir 2>&1 | grep -v '^$' | head -4 | cut -c1-220; done
echo "## negative controls (UB addresses changed by hand; must FAIL)"
sed 's/%ub_off_2 = arith.index_cast %c1024_i64/%ub_off_2 = arith.index_cast %c0_i64/' add.after243.cpu.mlir > control_overlap.mlir
$B/bishengir-opt control_overlap.mlir --lower-for-cpu-runner-pipeline=wrapper-name=bishengir_generated_main -o control_overlap.llvm.mlir && ./run_llvm_mlir.sh control_overlap.llvm.mlir | tail -1
sed 's/%ub_off_6 = arith.index_cast %c1536_i64/%ub_off_6 = arith.index_cast %c2048_i64/' addloop.after243.cpu.mlir > control_multibuffer.mlir
$B/bishengir-opt control_multibuffer.mlir --lower-for-cpu-runner-pipeline=wrapper-name=bishengir_generated_main -o control_multibuffer.llvm.mlir && ./run_llvm_mlir.sh control_multibuffer.llvm.mlir | tail -1
echo "## (a) host wrapper inside the bishengir-compile input, --enable-cpu-runner-after=PASS"
python3 append_host.py add.ttadapter.mlir host_wrapper_ttadapter.mlir A_input.mlir
for P in adapt-triton-kernel hfusion-add-ffts-addr convert-hfusion-to-hivm hivm-plan-memory convert-hivm-to-std; do
  echo "== $P"; nice -n 10 $B/bishengir-compile A_input.mlir $(cat flags.txt) --enable-cpu-runner-after=$P -o A_$P.out > A_$P.log 2>&1
  echo "rc=$?"; grep -m2 -E "LLVM ERROR|error:" A_$P.log | cut -c1-200
  [ "$P" = adapt-triton-kernel ] && ./run_llvm_mlir.sh A_$P.out
done
