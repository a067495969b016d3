#!/usr/bin/env bash
# usage: run_llvm_mlir.sh FILE.llvm.mlir  -> translates, compiles, links with driver.c + runtime_stubs.c, runs
set -e
L=/usr/lib/llvm-19/bin
f=$1; b=${f%.*}; python3 strip_hacc.py "$f" "$b.clean.mlir"; f="$b.clean.mlir"
nice -n 10 $L/mlir-translate --mlir-to-llvmir "$f" -o "$b.ll"
nice -n 10 $L/llc -O1 -filetype=obj -relocation-model=pic "$b.ll" -o "$b.o"
nice -n 10 cc -O1 -o "$b.exe" driver.c runtime_stubs.c "$b.o" -lm
./"$b.exe"
