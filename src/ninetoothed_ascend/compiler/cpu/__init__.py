"""The CPU variant's passes: NineToothed's source made runnable by Triton's interpreter (:mod:`.interpreter`)."""
