"""Rotary position embedding, GPT-NeoX (rotate-half) form, with cos/sin looked up by position.

As vLLM's ``rotary_embedding(positions, query, ..., cos_sin_cache, is_neox=True)``:
for token ``t`` at position ``p = positions[t]`` and every head,
``output[..., :D/2] = x1 * cos[p] - x2 * sin[p]`` and
``output[..., D/2:] = x2 * cos[p] + x1 * sin[p]``, where ``x1, x2`` are the
halves of the head and ``cos_sin_cache[p] = cat(cos[p], sin[p])``.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(positions, input, cos_sin_cache, output):
    half = input.shape[-1] // 2

    def halves(tensor):
        # (tokens, heads, 1) tiles of two (half,) halves of one head.
        arranged = tensor.tile((1, 1, half)).tile((1, 1, 2))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))

        return arranged

    input_arranged = halves(input)
    output_arranged = halves(output)

    # Every program sees the whole table as (positions, 2) tiles of (half,):
    # row ``p`` holds cos[p] then sin[p].
    cache_arranged = cos_sin_cache.tile((1, half))
    cache_arranged.dtype = cache_arranged.dtype.squeeze(0)
    cache_arranged = cache_arranged.tile((-1, -1))
    cache_arranged = cache_arranged.unsqueeze(0).expand(
        (input_arranged.shape[0], input_arranged.shape[1], -1)
    )

    positions_arranged = positions.unsqueeze(1).unsqueeze(2).tile((1, 1, 1))
    positions_arranged = positions_arranged.expand((-1, input_arranged.shape[1], -1))

    return positions_arranged, input_arranged, cache_arranged, output_arranged


def application(positions, input, cos_sin_cache, output):
    position = positions[0, 0, 0]
    cos = cos_sin_cache[position, 0]
    sin = cos_sin_cache[position, 1]
    input_1 = input[0]
    input_2 = input[1]
    output[0] = input_1 * cos - input_2 * sin
    output[1] = input_2 * cos + input_1 * sin


tensors = (
    Tensor(1, dtype=ninetoothed.int64),
    Tensor(3, shape_options={"constexpr": True}),
    Tensor(2, shape_options={"constexpr": True}),
    Tensor(3, shape_options={"constexpr": True}),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="rotary_embedding_neox"
)


CASES = (
    {"num_tokens": 7, "num_heads": 4, "head_size": 32, "max_position": 64},
    {"num_tokens": 16, "num_heads": 2, "head_size": 64, "max_position": 128},
)


def cos_sin_table(max_position, head_size, base=10000.0):
    """``(max_position, head_size)`` fp32: ``cat(cos, sin)`` of ``position * inv_freq``."""

    inv_freq = 1.0 / base ** (torch.arange(0, head_size, 2).float() / head_size)
    freqs = torch.outer(torch.arange(max_position).float(), inv_freq)

    return torch.cat((freqs.cos(), freqs.sin()), dim=-1)


def inputs(
    device,
    dtype=torch.float16,
    num_tokens=7,
    num_heads=4,
    head_size=32,
    max_position=64,
):
    generator = torch.Generator().manual_seed(0)
    positions = torch.randint(0, max_position, (num_tokens,), generator=generator)
    input = torch.randn((num_tokens, num_heads, head_size), generator=generator)

    return (
        positions.to(device),
        input.to(device, dtype),
        cos_sin_table(max_position, head_size).to(device, dtype),
    )


def launch(kernel, positions, input, cos_sin_cache):
    output = torch.empty_like(input)
    kernel(positions, input, cos_sin_cache, output)

    return output


def reference(positions, input, cos_sin_cache):
    cos, sin = cos_sin_cache[positions].float().unsqueeze(1).chunk(2, dim=-1)
    input_1, input_2 = input.float().chunk(2, dim=-1)

    return torch.cat(
        (input_1 * cos - input_2 * sin, input_2 * cos + input_1 * sin), dim=-1
    ).to(input.dtype)
