"""Prefill attention with an online softmax (FlashAttention), optionally causal and with a sliding window.

``output = softmax(query @ key^T * scale + mask) @ value`` for ``query`` of
shape ``[batch, heads, seq_q, head_dim]`` and ``key``, ``value`` of shape
``[batch, kv_heads, seq_k, head_dim]``, where ``heads`` is a multiple of
``kv_heads`` (grouped-query attention: query head ``h`` reads KV head
``h // (heads // kv_heads)``; ``kv_heads == heads`` is multi-head attention).
The launcher views the query as ``[batch, kv_heads, group, seq_q, head_dim]``
and the keys and values as ``[batch, kv_heads, 1, seq_k, head_dim]``, which
the arrangement broadcasts over the group without copying. Each program owns
``BLOCK_SIZE_M`` query rows of one head and walks over the keys in blocks of
``BLOCK_SIZE_N``, keeping a running maximum and sum per row (base-2
exponentials, as InfiniTensor/ntops's ``scaled_dot_product_attention`` does).

Masking, with query row ``i`` at position ``i + seq_k - seq_q`` (queries are
the last ``seq_q`` positions, the lower-right alignment of KV-cached prefill):

* ``is_causal`` (a constexpr): key ``j`` is visible when ``j <= position(i)``;
* ``window`` (a runtime ``int``, ``0`` for none): key ``j`` is visible when
  ``position(i) - j < window``, the last ``window`` positions (Mistral's
  sliding-window attention).
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    query,
    key,
    value,
    scale,
    window,
    is_causal,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=16, upper_bound=32),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=32),
):
    def arrange_query_or_output(input):
        arranged = input.tile((1, 1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2))

        return arranged

    def arrange_key_or_value(input):
        arranged = (
            input.tile((1, 1, 1, BLOCK_SIZE_N, -1))
            .tile((1, 1, 1, -1, -1))
            .expand((-1, -1, query_arranged.shape[2], query_arranged.shape[3], -1))
        )
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2, 4))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1, 2))

        return arranged

    query_arranged = arrange_query_or_output(query)

    return (
        query_arranged,
        arrange_key_or_value(key),
        arrange_key_or_value(value),
        scale,
        window,
        is_causal,
        arrange_query_or_output(output),
    )


def application(query, key, value, scale, window, is_causal, output):
    # log2(e) folded into the scale: exp(x) == exp2(x * log2(e)). NineToothed
    # inlines the application's code, so the constant is written out here.
    query_scaled = (1.4426950408889634 * scale * query).to(query.dtype)
    position = query.offsets(-2) + key.source.shape[-2] - query.source.shape[-2]

    accumulator = ntl.zeros((query.shape[-2], query.shape[-1]), dtype=ntl.float32)
    row_sum = ntl.zeros((query.shape[-2],), dtype=ntl.float32)
    row_max = ntl.full((query.shape[-2],), float("-inf"), dtype=ntl.float32)

    for j in range(key.shape[0]):
        key_position = key[j].offsets(-2)
        scores = ntl.dot(query_scaled, ntl.trans(key[j]))
        visible = key_position[None, :] < key.source.shape[-2]

        if is_causal:
            visible = visible & (key_position[None, :] <= position[:, None])

        visible = visible & (
            (window <= 0) | (position[:, None] - key_position[None, :] < window)
        )
        scores = ntl.where(visible, scores, float("-inf"))

        next_max = ntl.maximum(row_max, ntl.max(scores, 1))
        # A row that has seen only masked keys keeps -inf; exp2(-inf - -inf) is NaN.
        safe_max = ntl.where(next_max == float("-inf"), 0.0, next_max)
        probabilities = ntl.exp2(scores - safe_max[:, None])
        alpha = ntl.where(row_max == float("-inf"), 0.0, ntl.exp2(row_max - safe_max))
        accumulator = accumulator * alpha[:, None] + ntl.dot(
            probabilities.to(value[j].dtype), value[j]
        )
        row_sum = row_sum * alpha + ntl.sum(probabilities, 1)
        row_max = next_max

    output = accumulator / row_sum[:, None]  # noqa: F841


def _head_tensor():
    # ``[batch, kv_heads, group, seq, head_dim]``. The head dimension is a
    # constexpr: it is tiled whole and fed to ``tl.dot``.
    return Tensor(
        5,
        shape_options=(None, None, None, None, {"constexpr": True, "upper_bound": 64}),
        other=0,
    )


tensors = (
    _head_tensor(),
    _head_tensor(),
    _head_tensor(),
    Tensor(0),
    Tensor(0),
    Tensor(0, constexpr=True),
    _head_tensor(),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="flash_attention"
)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-3, 5e-3)}

CASES = (
    {"kv_heads": 2, "is_causal": False, "window": 0},
    {"is_causal": True, "window": 0},
    {"is_causal": True, "window": 20},
    {"seq_q": 40, "seq_k": 72, "heads": 4, "is_causal": True, "window": 0},
)


def inputs(
    device,
    dtype=torch.float16,
    batch=1,
    heads=2,
    kv_heads=1,
    seq_q=64,
    seq_k=None,
    head_dim=32,
    is_causal=False,
    window=0,
):
    """``(query, key, value, is_causal, window)``; ``seq_k`` defaults to ``seq_q``."""

    generator = torch.Generator().manual_seed(0)
    seq_k = seq_q if seq_k is None else seq_k

    def randn(*shape):
        return torch.randn(shape, generator=generator).to(device, dtype)

    return (
        randn(batch, heads, seq_q, head_dim),
        randn(batch, kv_heads, seq_k, head_dim),
        randn(batch, kv_heads, seq_k, head_dim),
        is_causal,
        window,
    )


def launch(kernel, query, key, value, is_causal=False, window=0):
    batch, heads, seq_q, head_dim = query.shape
    kv_heads = key.shape[1]
    grouped = (batch, kv_heads, heads // kv_heads, seq_q, head_dim)
    output = torch.empty_like(query)
    kernel(
        query.view(grouped),
        key.unsqueeze(2),
        value.unsqueeze(2),
        head_dim**-0.5,
        window,
        is_causal,
        output.view(grouped),
    )

    return output


def mask(seq_q, seq_k, is_causal, window, device=None):
    """The boolean ``[seq_q, seq_k]`` mask of visible keys (``True``: attend)."""

    position = torch.arange(seq_q, device=device)[:, None] + seq_k - seq_q
    key_position = torch.arange(seq_k, device=device)[None, :]
    visible = torch.ones((seq_q, seq_k), dtype=torch.bool, device=device)

    if is_causal:
        visible &= key_position <= position

    if window > 0:
        visible &= position - key_position < window

    return visible


def reference(query, key, value, is_causal=False, window=0):
    attn_mask = mask(query.shape[-2], key.shape[-2], is_causal, window, query.device)
    group = query.shape[1] // key.shape[1]
    key, value = (
        tensor.repeat_interleave(group, dim=1).float() for tensor in (key, value)
    )
    output = torch.nn.functional.scaled_dot_product_attention(
        query.float(), key, value, attn_mask=attn_mask
    )

    return output.to(query.dtype)
