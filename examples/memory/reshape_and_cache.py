"""vLLM's ``reshape_and_cache``: write each token's key and value into the paged KV cache at its slot.

``key``, ``value``: ``(num_tokens, num_heads, head_size)``;
``key_cache``, ``value_cache``: ``(num_blocks, block_size, num_heads, head_size)``;
``slot_mapping``: ``(num_tokens,)`` int64, slot ``s`` being row ``s % block_size``
of block ``s // block_size``, and a negative slot marking a padding token
that is not cached. One program copies one token; the caches are seen as
``(num_blocks * block_size, num_heads, head_size)`` and indexed by the slot.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(key, value, key_cache, value_cache, slot_mapping):
    def tokens(tensor):
        arranged = tensor.tile((1, -1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)

        return arranged.squeeze((1, 2))

    key_arranged = tokens(key)
    value_arranged = tokens(value)

    def slots(cache):
        # Every program sees the whole cache as (slots,) tiles of one slot.
        arranged = tokens(cache).tile((-1,))

        return arranged.expand((key_arranged.shape[0],))

    slot_mapping_arranged = slot_mapping.tile((1,))

    return (
        key_arranged,
        value_arranged,
        slots(key_cache),
        slots(value_cache),
        slot_mapping_arranged,
    )


def application(key, value, key_cache, value_cache, slot_mapping):
    slot = slot_mapping[0]

    if slot >= 0:
        key_cache[slot] = key
        value_cache[slot] = value


tensors = (
    Tensor(3, shape_options={"constexpr": True}),
    Tensor(3, shape_options={"constexpr": True}),
    Tensor(3, shape_options={"constexpr": True}),
    Tensor(3, shape_options={"constexpr": True}),
    Tensor(1, dtype=ninetoothed.int64),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="reshape_and_cache"
)


CASES = (
    {
        "num_tokens": 9,
        "num_heads": 2,
        "head_size": 16,
        "num_blocks": 4,
        "block_size": 8,
    },
    {
        "num_tokens": 5,
        "num_heads": 3,
        "head_size": 32,
        "num_blocks": 3,
        "block_size": 4,
    },
)


def inputs(
    device,
    dtype=torch.float16,
    num_tokens=9,
    num_heads=2,
    head_size=16,
    num_blocks=4,
    block_size=8,
):
    generator = torch.Generator().manual_seed(0)
    shape = (num_tokens, num_heads, head_size)
    cache_shape = (num_blocks, block_size, num_heads, head_size)
    key, value = (torch.randn(shape, generator=generator) for _ in range(2))
    key_cache, value_cache = (
        torch.randn(cache_shape, generator=generator) for _ in range(2)
    )
    # Distinct slots anywhere in the cache; the last token is padding.
    slot_mapping = torch.randperm(num_blocks * block_size, generator=generator)
    slot_mapping = slot_mapping[:num_tokens].clone()
    slot_mapping[-1] = -1

    return (
        *(tensor.to(device, dtype) for tensor in (key, value, key_cache, value_cache)),
        slot_mapping.to(device),
    )


def launch(kernel, key, value, key_cache, value_cache, slot_mapping):
    key_cache, value_cache = key_cache.clone(), value_cache.clone()
    num_heads, head_size = key.shape[1:]
    kernel(
        key,
        value,
        key_cache.view(-1, num_heads, head_size),
        value_cache.view(-1, num_heads, head_size),
        slot_mapping,
    )

    return key_cache, value_cache


def reference(key, value, key_cache, value_cache, slot_mapping):
    key_cache, value_cache = key_cache.clone(), value_cache.clone()
    cached = slot_mapping >= 0
    slots = slot_mapping[cached]
    key_cache.flatten(0, 1)[slots] = key[cached]
    value_cache.flatten(0, 1)[slots] = value[cached]

    return key_cache, value_cache
