"""Causal softmax of attention scores, as LLM stacks' ``CausalSoftmax``.

``input`` is ``(heads, seq_q, seq_k)``; query ``i`` sees keys
``j <= i + (seq_k - seq_q)`` (the queries are the last ``seq_q`` positions),
the rest are masked to ``-inf`` before a softmax over the last dimension,
computed in fp32. One row per program.
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def arrangement(input, output, BLOCK_SIZE=BLOCK_SIZE):
    return input.tile((1, 1, BLOCK_SIZE)), output.tile((1, 1, BLOCK_SIZE))


def application(input, output):
    visible = input.offsets(2) <= input.offsets(1) + (
        input.source.shape[2] - input.source.shape[1]
    )
    scores = ntl.where(visible, ntl.cast(input, ntl.float32), float("-inf"))
    numerator = ntl.exp(scores - ntl.max(scores))
    output = numerator / ntl.sum(numerator)  # noqa: F841


tensors = (Tensor(3, other=float("-inf")), Tensor(3))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="causal_softmax"
)


CASES = (
    {"heads": 1, "seq_q": 19, "seq_k": 19},
    {"heads": 2, "seq_q": 5, "seq_k": 70},
)

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"heads": 16, "seq_q": 2048, "seq_k": 2048},)


def inputs(device, dtype=torch.float16, heads=1, seq_q=19, seq_k=19):
    generator = torch.Generator().manual_seed(0)

    return (torch.randn((heads, seq_q, seq_k), generator=generator).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input)
    kernel(input, output, BLOCK_SIZE=triton.next_power_of_2(input.shape[-1]))

    return output


def reference(input):
    seq_q, seq_k = input.shape[-2:]
    visible = torch.ones((seq_q, seq_k), dtype=torch.bool).tril(seq_k - seq_q)
    scores = input.float().masked_fill(~visible.to(input.device), float("-inf"))

    return torch.softmax(scores, dim=-1).to(input.dtype)
