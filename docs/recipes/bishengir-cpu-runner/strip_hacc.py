"""Make BiShengIR's LLVM-dialect output readable by upstream mlir-translate 19:
drop the module's attributes (HACC target spec) and HACC/HIVM attribute values."""

import re
import sys

t = open(sys.argv[1]).read()
t = re.sub(r"^module attributes \{.*\} \{$", "module {", t, count=1, flags=re.M)
t = re.sub(r",?\s*[a-z_]+\.[a-z_]+ = #(hacc|hivm)\.[a-z_]+<[^>]*>", "", t)
t = t.replace("{, ", "{").replace("attributes {}", "")
t = t.replace("llvm.func @main(", "llvm.func @bishengir_generated_main(")
open(sys.argv[2], "w").write(t)
