"""Shared by the UB tests: small autotuned and strided modules, and recording a launch."""

from ninetoothed_ascend.compiler.facts import FLAT_ACCESS_FLAGS
from ninetoothed_ascend.compiler.npu.contiguous_flat_access import FlatAccessFlag

AUTOTUNED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, B: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + pid * B + triton.language.arange(0, B))
    triton.language.store(q + pid * B + triton.language.arange(0, B), x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.size(0) + meta['B'] - 1) // meta['B'],)](p, q, p.size(0))
"""


STRIDED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, s, t, B: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + (pid * B + triton.language.arange(0, B)) * s)
    triton.language.store(q + (pid * B + triton.language.arange(0, B)) * t, x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.size(0) + meta['B'] - 1) // meta['B'],)](p, q, p.size(0), p.stride(0), q.stride(0))
"""


FLATTENED = """
import triton
import triton.language

@triton.jit
def kernel(p, q, n, m, s0, s1, B: triton.language.constexpr, F: triton.language.constexpr):
    pid = triton.language.program_id(0)
    x = triton.language.load(p + ((pid * B + triton.language.arange(0, B)) * s1 if F else (pid * B + triton.language.arange(0, B)) // m * s0 + (pid * B + triton.language.arange(0, B)) % m * s1))
    triton.language.store(q + pid * B + triton.language.arange(0, B), x + 1)

tuned = triton.autotune(configs=[triton.Config({'B': 32}, num_warps=8), triton.Config({'B': 1024}, num_warps=8)], key=['n'])(kernel)

def launch(p, q):
    tuned[lambda meta: ((p.numel() + meta['B'] - 1) // meta['B'],)](p, q, p.numel(), p.size(1), p.stride(0), p.stride(1), F=p.stride(0) == p.size(1) * p.stride(1))
"""

#: What ``ContiguousFlatAccess`` publishes for :data:`FLATTENED`'s flag
#: ``F``, written by hand as its output: which parameter chooses the
#: address form (the UB model reads no other field).
FLATTENED_FACTS = {
    FLAT_ACCESS_FLAGS: {"F": FlatAccessFlag("kernel", "F", None, None, ())}
}


def record_launch(module, inputs, variant="npu"):
    """Call a variant's launch function with the kernel replaced; return ``(grid, args, kwargs)``."""

    npu = module.kernel.module(variant)
    name = module.kernel.kernel_name
    launched = (
        f"{name}_with_auto_tuning" if f"{name}_with_auto_tuning" in vars(npu) else name
    )
    saved = vars(npu)[launched]
    calls = []

    class Recorder:
        def __call__(self):
            return self

        def __getitem__(self, grid):
            return lambda *args, **kwargs: calls.append((grid, args, kwargs))

    vars(npu)[launched] = Recorder()

    try:
        module.launch(getattr(npu, module.kernel.launch_name), *inputs)
    finally:
        vars(npu)[launched] = saved

    return calls[0]
