"""The Unified Buffer: the UB model (:mod:`.model`), the configs chosen by it (:mod:`.configs`) and the split of caller-sized blocks (:mod:`.sub_blocks`)."""
