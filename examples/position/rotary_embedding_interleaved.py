"""Rotary position embedding, GPT-J (interleaved pairs) form, with cos/sin looked up by position.

As vLLM's ``rotary_embedding(positions, query, ..., cos_sin_cache, is_neox=False)``:
for token ``t`` at position ``p = positions[t]``, every head and every pair
``i``, ``output[..., 2i] = x[2i] * cos[p, i] - x[2i+1] * sin[p, i]`` and
``output[..., 2i+1] = x[2i+1] * cos[p, i] + x[2i] * sin[p, i]``, where
``cos_sin_cache[p] = cat(cos[p], sin[p])``. The even and odd elements are
two tiles of stride 2 (NineToothed's ``dilation``).
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(positions, input, cos_sin_cache, output):
    half = input.shape[-1] // 2

    def halves(tensor):
        # (tokens, heads, 1) tiles of two (half,) tiles of one head: its even
        # elements, then its odd ones.
        arranged = tensor.tile((1, 1, half), strides=(-1, -1, 1), dilation=(1, 1, 2))
        arranged = arranged.tile((1, 1, 2))
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
    even = input[0]
    odd = input[1]
    output[0] = even * cos - odd * sin
    output[1] = odd * cos + even * sin


tensors = (
    Tensor(1, dtype=ninetoothed.int64),
    Tensor(3, shape_options={"constexpr": True}),
    Tensor(2, shape_options={"constexpr": True}),
    Tensor(3, shape_options={"constexpr": True}),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="rotary_embedding_interleaved"
)


CASES = (
    {"num_tokens": 7, "num_heads": 4, "head_size": 32, "max_position": 64},
    {"num_tokens": 5, "num_heads": 3, "head_size": 16, "max_position": 32},
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
    even, odd = input.float()[..., 0::2], input.float()[..., 1::2]

    return (
        torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1)
        .flatten(-2)
        .to(input.dtype)
    )
