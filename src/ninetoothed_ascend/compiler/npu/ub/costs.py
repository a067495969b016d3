"""What each kind of tile costs in the Unified Buffer, as the UB model (:mod:`~ninetoothed_ascend.compiler.npu.ub.model`) counts it.

Element sizes by dtype, and the measured per-element costs of what
BiShengIR lowers to more than the tile itself (scalar gathers, selects,
reductions, math functions' temporaries); each constant names its source.
"""

#: Bytes of one element of each Triton dtype, by the name ``triton.language`` gives it.
DTYPE_BYTES = {
    "int1": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
}


#: Element size assumed for a tensor whose dtype is unknown (bounds 16- and 32-bit dtypes).
DEFAULT_ELEM_BYTES = 4


#: Bytes of one UB block: every UB buffer's innermost axis is padded to whole
#: blocks ("32-byte alignment for vector code", triton-ascend 3.2.0's
#: programming guide). Measured (ascendnpu-ir 1.2.0, ``--enable-memory-display``):
#: ntops' ``max_pool1d`` with ``block_size=1024`` and a window of 2, fp32,
#: plans its ``(1024, 1)`` row digits as ``memref<1024x8x1xi32>``, its row
#: masks as ``memref<1024x256x1xi1>`` and its ``(1024, 2)`` windows as
#: ``memref<1024x8xi32>``: 32 bytes per row each, whatever the dtype.
UB_BLOCK_BYTES = 32


#: UB bytes per element of a strided or gather-like access: one 32-byte block
#: each, single-buffered (docs/ascend.md, "BiShengIR without an NPU"; ``examples/elementwise/add.py`` fp32 compiled with its
#: strides not specialized: two ``4096x8xf32`` buffers, 262,144 bytes, at
#: 4096 lanes; ``bench/ub_model_vs_bishengir.py``).
DISCRETE_ELEM_BYTES = 32


#: Bytes per element of an index vector (``tl.arange`` and integer arithmetic
#: on it) that is computed lane by lane rather than folded into a strided
#: copy: ``i32``, as BiShengIR's plans show (``instance_norm``'s
#: ``offsets < length`` and the digits of a flattened gather:
#: ``memref<8192xi32>``, ``memref<2048xi32>`` buffers;
#: ``bench/ub_model_vs_bishengir.py``).
INDEX_ELEM_BYTES = 4


#: Bytes per lane of a gather's index vectors, held from the start of its
#: statement to its end on top of its 32-byte blocks: an address computed
#: with a vector ``//`` or ``%`` (the digits of a flattened tensor whose
#: strides do not collapse, ``ContiguousFlatAccess``'s flag False).
#: BiShengIR computes the digits and their mask bounds of every gather of
#: the statement first, in ``i32``/``i1`` buffers that live to its end.
#: Measured (single-buffered plans, ``bench/ub_model_vs_bishengir.py``
#: ``--raw``, non-contiguous inputs): ``flat_cast`` (one gather) 48 bytes
#: per lane at 4096 lanes (196,608), ``flat_mul``/``flat_lt`` (two) 64 at
#: 2048 (131,072) and 62 at 4096 (253,952, an overflow). With 16 the model
#: gives 52 and 72.
GATHER_INDEX_BYTES = 16


#: Bytes per lane BiShengIR adds to a masked load padded with a value other
#: than 0: the ``select`` of the padding (an fp32 tile) and two ``i1`` masks.
#: Measured on ``logsumexp`` (``other=-inf``), fp32, 8192 lanes: two
#: ``1x8192xi1`` and one more ``1x8192xf32`` buffer per load
#: (``bench/ub_model_vs_bishengir.py``); ``add`` (``other=0``) has none.
#: Set to 10, not 6: with 6 the model gives ``logsumexp`` 22 bytes per lane at
#: 8192 lanes (180,224) where BiShengIR requires 24.25 (198,688, fp32), the
#: select and masks of its two loops being live at once in BiShengIR's plan;
#: with 8 exactly 196,608 bytes, which the model accepts.
SELECT_BYTES = 10


#: Bytes per lane BiShengIR adds to a ``where`` while it selects: the
#: condition widened to ``i16`` and then ``f16`` for the vector select.
#: Measured (``--enable-memory-display``, ascendnpu-ir 1.2.0) on ntops'
#: bincount, a ``(128, 128)`` block: one ``128x128xi16`` and one
#: ``128x128xf16`` buffer for each of its two ``where``; BiShengIR needs
#: 198,656 to 235,552 B, the model without them 168,992.
WHERE_CONDITION_BYTES = 4


#: Bytes per lane of a reduction's scratch buffer: fp32, half the lanes
#: (``logsumexp`` fp32: a ``4096xf32`` temporary buffer at 8192 lanes, a
#: ``2048xf32`` one at 4096).
REDUCTION_SCRATCH = 2


#: Temporaries BiShengIR adds for a math function, in fp32 tiles of the
#: result's shape, on top of the result. Measured with
#: ``bench/ub_model_vs_bishengir.py`` (ascendnpu-ir 1.2.0, Ascend910B1) from
#: the bytes BiShengIR requires once it has dropped multi-buffering ("ub
#: overflow, requires N bits"), per fp32 lane: ``math_sin`` 20 (a load, the
#: result and 3 tiles), ``math_pow`` 36 (two loads, the result and 6 tiles);
#: ``math_exp``/``math_log`` fit 16384 lanes in 8 bytes per lane (none).
#: ``rand``/``randint`` are Philox (counters, keys and rounds in uint32
#: tiles): ``dropout`` needs 44 bytes per lane at 8192 lanes (360,480 bytes),
#: a load, the random tile and 8 tiles. ``sin`` takes 4 rather than the
#: measured 3 because fp16 inputs cost BiShengIR 2 bytes per lane more
#: (``math_sin`` fp16: 22 bytes per lane).
MATH_TEMPORARIES = {
    "sin": 4,
    "cos": 4,
    "tan": 4,
    "pow": 6,
    "erf": 3,
    "tanh": 3,
    "log1p": 2,
    "expm1": 2,
    "atan": 4,
    "atan2": 5,
    "asin": 4,
    "acos": 4,
    "sinh": 3,
    "cosh": 3,
    "rand": 8,
    "randn": 10,
    "randint": 8,
    "randint4x": 8,
}
