"""The lowered level of the Ascend checks: the NPU variant as triton-ascend lowers it, run on the CPU, every tensor fenced."""
