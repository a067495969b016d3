"""The arrangement every reduction of the library shares: one program per row of the reduced dimension, looping over its tiles."""

import ninetoothed


def arrangement(*tensors, dim, block_size=None):
    """Arrange ``tensors`` (same ndim; 0-dim ones pass through) so each program loops over ``block_size`` tiles of dimension ``dim``."""

    if block_size is None:
        block_size = ninetoothed.block_size()

    ndim = max(tensor.ndim for tensor in tensors)
    dim %= ndim
    kept = tuple(index for index in range(ndim) if index != dim)

    def arrange(tensor):
        arranged = tensor.tile(
            tuple(block_size if i == dim else 1 for i in range(ndim))
        )
        arranged = arranged.tile(tuple(-1 if i == dim else 1 for i in range(ndim)))
        arranged.dtype = arranged.dtype.squeeze(kept)
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze(kept)

        return arranged

    return tuple(arrange(tensor) if tensor.ndim else tensor for tensor in tensors)
