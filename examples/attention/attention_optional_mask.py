"""Attention with an optional additive key mask, passed as a ``meta`` placeholder when absent, the way an operator library does it.

``output = softmax(query @ key^T * scale + mask) @ value`` for ``query``,
``key`` and ``value`` of shape ``[batch, heads, seq, head_dim]`` and an
optional additive ``mask`` over the keys, of shape ``[seq_k]`` (``-inf``
hides a key, e.g. padding). ``has_mask`` is a constexpr flag: without a
mask the library passes ``torch.empty(0, device="meta")`` in its place and
the kernel never reads it. Plain NineToothed launches with the placeholder;
under the import the placeholder does not vote on the device (a ``meta``
tensor has no storage), so the call runs the variant of the other tensors'
device (``docs/cache.md``, "The rule").
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
    mask,
    scale,
    has_mask,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=16, upper_bound=32),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=32),
):
    def arrange_query_or_output(input):
        arranged = input.tile((1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))

        return arranged

    query_arranged = arrange_query_or_output(query)

    def arrange_key_or_value(input):
        arranged = (
            input.tile((1, 1, BLOCK_SIZE_N, -1))
            .tile((1, 1, -1, -1))
            .expand((-1, -1, query_arranged.shape[2], -1))
        )
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))

        return arranged

    # The mask's (BLOCK_SIZE_N,) tiles, all of them for every program.
    mask_arranged = mask.tile((BLOCK_SIZE_N,)).tile((-1,))
    mask_arranged = mask_arranged.unsqueeze(0).unsqueeze(0)
    mask_arranged = mask_arranged.expand(
        (query_arranged.shape[0], query_arranged.shape[1], query_arranged.shape[2])
    )

    return (
        query_arranged,
        arrange_key_or_value(key),
        arrange_key_or_value(value),
        mask_arranged,
        scale,
        has_mask,
        arrange_query_or_output(output),
    )


def application(query, key, value, mask, scale, has_mask, output):
    query_scaled = (1.4426950408889634 * scale * query).to(query.dtype)

    accumulator = ntl.zeros((query.shape[-2], query.shape[-1]), dtype=ntl.float32)
    row_sum = ntl.zeros((query.shape[-2],), dtype=ntl.float32)
    row_max = ntl.full((query.shape[-2],), float("-inf"), dtype=ntl.float32)

    for j in range(key.shape[0]):
        scores = ntl.dot(query_scaled, ntl.trans(key[j]))

        if has_mask:
            scores += 1.4426950408889634 * ntl.cast(mask[j], ntl.float32)[None, :]

        scores = ntl.where(
            key[j].offsets(-2)[None, :] < key.source.shape[-2], scores, float("-inf")
        )
        next_max = ntl.maximum(row_max, ntl.max(scores, 1))
        # A row that has seen only hidden keys keeps -inf; exp2(-inf - -inf) is NaN.
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
    # The head dimension is a constexpr: it is tiled whole and fed to ``tl.dot``.
    return Tensor(
        4,
        shape_options=(None, None, None, {"constexpr": True, "upper_bound": 64}),
        other=0,
    )


tensors = (
    _head_tensor(),
    _head_tensor(),
    _head_tensor(),
    Tensor(1, other=0),
    Tensor(0),
    Tensor(0, constexpr=True),
    _head_tensor(),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="attention_optional_mask"
)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-3, 5e-3)}

CASES = (
    {"masked": False},
    {"seq_q": 24, "seq_k": 40, "masked": True},
)


def inputs(
    device,
    dtype=torch.float16,
    batch=1,
    heads=2,
    seq_q=32,
    seq_k=None,
    head_dim=32,
    masked=False,
):
    """``(query, key, value, mask)``; ``mask`` is ``None`` unless ``masked`` (then every third key is hidden)."""

    generator = torch.Generator().manual_seed(0)
    seq_k = seq_q if seq_k is None else seq_k

    def randn(*shape):
        return torch.randn(shape, generator=generator).to(device, dtype)

    mask = None

    if masked:
        mask = torch.zeros(seq_k)
        mask[::3] = float("-inf")
        mask = mask.to(device, dtype)

    return (
        randn(batch, heads, seq_q, head_dim),
        randn(batch, heads, seq_k, head_dim),
        randn(batch, heads, seq_k, head_dim),
        mask,
    )


def launch(kernel, query, key, value, mask=None):
    output = torch.empty_like(query)
    has_mask = mask is not None
    # What an operator library passes for an absent optional input.
    placeholder = torch.empty(0, device="meta")
    kernel(
        query,
        key,
        value,
        mask if has_mask else placeholder,
        query.shape[-1] ** -0.5,
        has_mask,
        output,
    )

    return output


def reference(query, key, value, mask=None):
    output = torch.nn.functional.scaled_dot_product_attention(
        query.float(),
        key.float(),
        value.float(),
        attn_mask=None if mask is None else mask.float()[None, :],
    )

    return output.to(query.dtype)
