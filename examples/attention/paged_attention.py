"""Decode attention over a paged KV cache (vLLM's PagedAttention, one query token per sequence).

Shapes, as in vLLM:

* ``query``: ``[num_seqs, heads, head_dim]``, the new token of each sequence;
* ``key_cache``, ``value_cache``: ``[num_blocks, block_size, kv_heads, head_dim]``,
  a pool of fixed-size blocks of cached keys and values; ``heads`` is a
  multiple of ``kv_heads`` (grouped-query attention: query head ``h`` reads
  KV head ``h // (heads // kv_heads)``);
* ``block_tables``: ``[num_seqs, max_blocks]`` ``int32``, which pool blocks hold
  each sequence's positions ``[i * block_size, (i + 1) * block_size)``;
* ``context_lens``: ``[num_seqs]`` ``int32``, how many positions each sequence has;
* ``output``: ``[num_seqs, heads, head_dim]``.

Each program owns one KV head of one sequence and the ``heads // kv_heads``
query heads that share it (the launcher views ``query`` and ``output`` as
``[num_seqs, kv_heads, group, head_dim]``), so each cache block is loaded
once per group. It walks the sequence's block table; each entry is a runtime index into the cache's block dimension, which
NineToothed turns into a gather (indexing a tiled tensor with a loaded
value). Positions past the context length are masked; the softmax is online,
one cache block at a time.
"""

import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    query, key_cache, value_cache, block_tables, context_lens, scale, output
):
    def arrange_query_or_output(input):
        arranged = input.tile((1, 1, -1, -1)).squeeze((2, 3))
        arranged.dtype = arranged.dtype.squeeze((0, 1))

        return arranged

    def arrange_cache(input):
        arranged = input.tile((1, -1, 1, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 2))
        arranged = arranged.tile((-1, 1, 1, 1))
        arranged.dtype = arranged.dtype.squeeze((1, 2, 3))
        arranged = arranged.squeeze((1, 3)).expand((query_arranged.shape[0], -1))

        return arranged

    query_arranged = arrange_query_or_output(query)
    kv_heads = query_arranged.shape[1]

    block_tables_arranged = block_tables.tile((1, 1)).tile((1, -1))
    block_tables_arranged.dtype = block_tables_arranged.dtype.squeeze(0)
    block_tables_arranged.dtype.dtype = block_tables_arranged.dtype.dtype.squeeze(0)
    block_tables_arranged = block_tables_arranged.expand((-1, kv_heads))

    context_lens_arranged = context_lens.tile((1, 1))
    context_lens_arranged.dtype = context_lens_arranged.dtype.squeeze(0)
    context_lens_arranged = context_lens_arranged.expand((-1, kv_heads))

    return (
        query_arranged,
        arrange_cache(key_cache),
        arrange_cache(value_cache),
        block_tables_arranged,
        context_lens_arranged,
        scale,
        arrange_query_or_output(output),
    )


def application(
    query, key_cache, value_cache, block_tables, context_lens, scale, output
):
    # [group, head_dim]; log2(e) folded into the scale for exp2.
    query_scaled = 1.4426950408889634 * scale * ntl.cast(query, ntl.float32)

    accumulator = ntl.zeros(query.shape, dtype=ntl.float32)
    row_sum = ntl.zeros((query.shape[0],), dtype=ntl.float32)
    row_max = ntl.full((query.shape[0],), float("-inf"), dtype=ntl.float32)

    for j in range(block_tables.shape[0]):
        block = block_tables[j]
        position = j * key_cache.source.shape[1] + key_cache[block].offsets(1)
        # [block_size, head_dim]
        keys = ntl.cast(key_cache[block], ntl.float32)
        # [group, block_size]: too few rows for ``dot`` (which needs 16), so
        # multiply and reduce.
        scores = ntl.sum(query_scaled[:, None, :] * keys[None, :, :], 2)
        scores = ntl.where(position[None, :] < context_lens, scores, float("-inf"))

        next_max = ntl.maximum(row_max, ntl.max(scores, 1))
        # A sequence's padding blocks hold no positions; exp2(-inf - -inf) is NaN.
        safe_max = ntl.where(next_max == float("-inf"), 0.0, next_max)
        probabilities = ntl.exp2(scores - safe_max[:, None])
        alpha = ntl.where(row_max == float("-inf"), 0.0, ntl.exp2(row_max - safe_max))
        values = ntl.cast(value_cache[block], ntl.float32)
        accumulator = accumulator * alpha[:, None] + ntl.sum(
            probabilities[:, :, None] * values[None, :, :], 1
        )
        row_sum = row_sum * alpha + ntl.sum(probabilities, 1)
        row_max = next_max

    output = accumulator / row_sum[:, None]  # noqa: F841


def _cache_tensor():
    # Block size and head dimension are tiled whole, so they are constexprs.
    return Tensor(
        4,
        shape_options=(
            None,
            {"constexpr": True, "upper_bound": 32},
            None,
            {"constexpr": True, "upper_bound": 64},
        ),
        other=0,
    )


def _head_tensor():
    # ``[num_seqs, kv_heads, group, head_dim]``; group and head dimension are tiled whole.
    return Tensor(
        4,
        shape_options=(
            None,
            None,
            {"constexpr": True, "upper_bound": 8},
            {"constexpr": True, "upper_bound": 64},
        ),
        other=0,
    )


tensors = (
    _head_tensor(),
    _cache_tensor(),
    _cache_tensor(),
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(0),
    _head_tensor(),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="paged_attention"
)

CASES = (
    {},
    {
        "context_lens": (1, 17, 30),
        "heads": 2,
        "kv_heads": 2,
        "block_size": 8,
        "head_dim": 16,
    },
)


def inputs(
    device,
    dtype=torch.float16,
    context_lens=(20, 45),
    heads=4,
    kv_heads=2,
    head_dim=32,
    block_size=16,
    num_blocks=24,
):
    """``(query, key_cache, value_cache, block_tables, context_lens)``.

    Each sequence gets the blocks it needs from a random permutation of the
    pool, so blocks are scattered and not in sequence order; unused table
    entries are ``0``.
    """

    generator = torch.Generator().manual_seed(0)
    num_seqs = len(context_lens)
    blocks_needed = [-(-length // block_size) for length in context_lens]
    max_blocks = max(blocks_needed)
    permutation = torch.randperm(num_blocks, generator=generator)
    block_tables = torch.zeros((num_seqs, max_blocks), dtype=torch.int32)
    start = 0

    for seq, needed in enumerate(blocks_needed):
        block_tables[seq, :needed] = permutation[start : start + needed]
        start += needed

    def randn(*shape):
        return torch.randn(shape, generator=generator).to(device, dtype)

    return (
        randn(num_seqs, heads, head_dim),
        randn(num_blocks, block_size, kv_heads, head_dim),
        randn(num_blocks, block_size, kv_heads, head_dim),
        block_tables.to(device),
        torch.tensor(context_lens, dtype=torch.int32, device=device),
    )


def launch(kernel, query, key_cache, value_cache, block_tables, context_lens):
    num_seqs, heads, head_dim = query.shape
    kv_heads = key_cache.shape[2]
    grouped = (num_seqs, kv_heads, heads // kv_heads, head_dim)
    output = torch.empty_like(query)
    # Query heads grouped by the KV head they read: views, no copies. The
    # lengths as a column, so that each tiles like its block table row.
    kernel(
        query.view(grouped),
        key_cache,
        value_cache,
        block_tables,
        context_lens[:, None],
        head_dim**-0.5,
        output.view(grouped),
    )

    return output


def reference(query, key_cache, value_cache, block_tables, context_lens):
    """Gather each sequence's keys and values from its blocks, then attend."""

    outputs = []
    block_size = key_cache.shape[1]
    group = query.shape[1] // key_cache.shape[2]

    for seq, length in enumerate(context_lens.tolist()):
        blocks = block_tables[seq, : -(-length // block_size)].long()
        # [blocks, block_size, kv_heads, head_dim] -> [heads, positions, head_dim]
        keys, values = (
            cache[blocks]
            .flatten(0, 1)[:length]
            .transpose(0, 1)
            .repeat_interleave(group, dim=0)
            .float()
            for cache in (key_cache, value_cache)
        )
        outputs.append(
            torch.nn.functional.scaled_dot_product_attention(
                query[seq, :, None].float(), keys, values
            )[:, 0]
        )

    return torch.stack(outputs).to(query.dtype)
