import sys

src = open(sys.argv[1]).read().rstrip()
assert src.endswith("}")
open(sys.argv[3], "w").write(src[:-1] + open(sys.argv[2]).read())
