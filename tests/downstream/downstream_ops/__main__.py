import sys

from downstream_ops.ops import OPS, main

main(sys.argv[1:] or OPS)
