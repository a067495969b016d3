"""Rotary position embedding of queries and keys with given cos and sin, as Hugging Face's ``apply_rotary_pos_emb``.

``q_embed = q * cos + rotate_half(q) * sin`` and the same for ``k``, with
``cos`` and ``sin`` of shape ``(batch, seq, head_dim)`` broadcast over heads
(``unsqueeze_dim=1``) and ``rotate_half(x) = cat(-x2, x1)`` of the halves
``x1, x2``. Queries and keys may have different numbers of heads (grouped-query
attention); one program rotates every query head and every key head of one
token.
"""

import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(q, k, cos, sin, q_embed, k_embed):
    half = q.shape[-1] // 2

    def heads_halves(tensor):
        # (batch, 1, seq, 1) tiles of two (heads, half) tiles: every head's
        # first halves, then every head's second halves.
        arranged = tensor.tile((1, -1, 1, half)).tile((1, 1, 1, 2))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 2))

        return arranged

    def table_halves(tensor):
        arranged = tensor.unsqueeze(1).tile((1, 1, 1, half)).tile((1, 1, 1, 2))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1, 2))

        return arranged

    return (
        heads_halves(q),
        heads_halves(k),
        table_halves(cos),
        table_halves(sin),
        heads_halves(q_embed),
        heads_halves(k_embed),
    )


def application(q, k, cos, sin, q_embed, k_embed):
    q_1 = q[0]
    q_2 = q[1]
    q_embed[0] = q_1 * cos[0] - q_2 * sin[0]
    q_embed[1] = q_2 * cos[1] + q_1 * sin[1]
    k_1 = k[0]
    k_2 = k[1]
    k_embed[0] = k_1 * cos[0] - k_2 * sin[0]
    k_embed[1] = k_2 * cos[1] + k_1 * sin[1]


tensors = tuple(
    Tensor(ndim, shape_options={"constexpr": True}) for ndim in (4, 4, 3, 3, 4, 4)
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="apply_rotary_pos_emb"
)


CASES = (
    {"batch": 2, "num_heads": 4, "num_kv_heads": 2, "seq": 5, "head_dim": 32},
    {"batch": 1, "num_heads": 3, "num_kv_heads": 3, "seq": 6, "head_dim": 64},
)


def inputs(
    device,
    dtype=torch.float16,
    batch=2,
    num_heads=4,
    num_kv_heads=2,
    seq=5,
    head_dim=32,
):
    generator = torch.Generator().manual_seed(0)
    q = torch.randn((batch, num_heads, seq, head_dim), generator=generator)
    k = torch.randn((batch, num_kv_heads, seq, head_dim), generator=generator)
    # As Hugging Face's rotary embedding module computes them, for shuffled positions.
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim)
    positions = torch.stack(
        [torch.randperm(seq, generator=generator) for _ in range(batch)]
    ).float()
    freqs = positions[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)

    return tuple(tensor.to(device, dtype) for tensor in (q, k, emb.cos(), emb.sin()))


def launch(kernel, q, k, cos, sin):
    q_embed = torch.empty_like(q)
    k_embed = torch.empty_like(k)
    kernel(q, k, cos, sin, q_embed, k_embed)

    return q_embed, k_embed


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)

    return torch.cat((-x2, x1), dim=-1)


def reference(q, k, cos, sin):
    cos, sin = cos.float().unsqueeze(1), sin.float().unsqueeze(1)

    return tuple(
        (x.float() * cos + rotate_half(x.float()) * sin).to(x.dtype) for x in (q, k)
    )
