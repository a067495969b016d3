from downstream_ops.ops import main

main()
