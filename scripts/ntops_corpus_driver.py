"""Call every ``ntops.torch`` wrapper with small CPU tensors, one round of launches per process.

The driver that ``scripts/ntops_corpus.py record`` runs under
``ninetoothed-ascend record``; not meant to be run by hand, except to debug a case:

    PYTHONPATH=src:../shared/downstream/ntops/src NINETOOTHED_ASCEND=1 \\
        python scripts/ntops_corpus_driver.py --round 0 --modules add,softmax

The cases follow ntops' own tests (``tests/test_*.py`` of the ntops
repository): the same ndims, dtypes and flags, with tensors a few hundred
elements large so that each call takes well under a second on Triton's
interpreter. bfloat16 is added to the tests' float16 and float32. What
matters is the launch (the kernel and the types of its arguments), not the
numbers; nothing is compared with torch.

A manifest holds one call per kernel and device: the recorder notes the
first. A kernel that ntops launches with several argument types (dtypes,
strides, constexpr flags) therefore needs several processes. The driver
wraps ntops' ``_cached_make`` in every ``ntops.torch`` module so that each
kernel is launched for real only with the ROUND-th distinct argument
signature (in case order) it is launched with; every other launch is skipped
(its output stays uninitialized, which no case reads). Round 0 makes every
kernel at its first launch and reports which kernel (cache key) each
``_cached_make`` call makes, since two calls may make the same kernel; later
rounds read that (``--keys``). Run with rounds 0, 1, ... up to the number the
report of round 0 names, every launch is recorded exactly once. Signatures are the types a launch compiles:
each tensor's shape, strides and dtype, and each integer and bool by value
(floats by type only: they are not specialized).

``sort``'s wrapper refuses any device but ``cuda``; its case makes and calls
the kernel exactly as the wrapper does after that check.

Writes a JSON report to ``--report``: the round count, the real launches of
this round, the ntops module of each kernel made (that of its ``premake``;
a kernel's ``origin`` may name another: ``bmm`` uses ``mm``'s application),
and every failure (``make``: NineToothed or ninetoothed-ascend
could not make the kernel; ``launch``: the CPU variant failed on the
interpreter, after its call was recorded; ``case``: the wrapper itself).
"""

import argparse
import importlib
import json
import random
import sys
import time
import traceback

import torch

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
#: Input dtypes of float cases: ntops' tests use float16 and float32.
FLOATS = (F16, BF16, F32)
#: One shape per ndim, a few hundred elements; the 3-D one has a size-1
#: dimension, as ntops' random test shapes often do (an integer equal to 1 is
#: specialized by the launch).
SHAPES = {1: (300,), 2: (12, 25), 3: (4, 1, 60), 4: (2, 3, 4, 10)}
#: Shapes for kernels that run one program per row (reductions, norms,
#: sorting): the interpreter takes about 0.15 s per program, so few rows.
ROWS = {1: (16,), 2: (3, 4), 3: (2, 1, 4), 4: (2, 1, 2, 3)}
INTS = (torch.bool, torch.int8, torch.int16, torch.int32)


class Turns:
    """Decide, per launch, whether it is this round's (see the module docstring).

    :param round_: ``int``, the round.
    :param make: ntops' own ``_cached_make``.
    :param keys: ``dict`` ``repr`` of a ``_cached_make`` call -> the cache
        key of the kernel it made, from round 0's report; ``None`` in round 0,
        which makes every kernel at its first launch to learn its key.
    """

    def __init__(self, round_, make, keys=None):
        self.round = round_
        self.make = make
        self.keys = dict(keys or {})
        self.signatures = {}
        self.kernels = {}
        self.unmade = set()
        self.modules = {}
        self.launched = set()
        self.case = None
        self.launches = []
        self.failures = []

    def kernel(self, tag, premake, args, kwargs):
        """The kernel of a ``_cached_make`` call, made once; ``None`` where making it failed."""

        if tag not in self.kernels and tag not in self.unmade:
            try:
                self.kernels[tag] = self.make(premake, *args, **kwargs)
            except Exception as error:  # noted; the case goes on
                self.unmade.add(tag)
                self.fail("make", error)
            else:
                # Two calls may make one kernel (the same generated source).
                key = getattr(self.kernels[tag], "key", repr(tag))
                self.keys[repr(tag)] = key
                self.modules.setdefault(key, premake.__module__.rsplit(".", 1)[-1])

        return self.kernels.get(tag)

    def cached_make(self, premake, *args, **kwargs):
        tag = (
            premake.__module__,
            premake.__qualname__,
            args,
            tuple(sorted(kwargs.items())),
        )

        def launch(*call_args, **call_kwargs):
            start = time.perf_counter()

            if self.round == 0:
                self.kernel(tag, premake, args, kwargs)

            key = self.keys.get(repr(tag))

            if key is None:  # not made in round 0 (reported there)
                return None

            signature = _signature(call_args) + _signature(sorted(call_kwargs.items()))
            seen = self.signatures.setdefault(key, [])

            if signature not in seen:
                seen.append(signature)

            if seen.index(signature) != self.round:
                return None

            kernel = self.kernel(tag, premake, args, kwargs)

            if kernel is None:
                return None

            made = time.perf_counter()
            # A case may launch a kernel several times alike (stack).
            first = (key, signature) not in self.launched
            self.launched.add((key, signature))

            try:
                return kernel(*call_args, **call_kwargs)
            except Exception as error:  # recorded before it failed
                self.fail("launch", error)
            finally:
                module, case = self.case
                self.launches += [
                    {
                        "module": module,
                        "case": case,
                        "make_s": round(made - start, 3),
                        "call_s": round(time.perf_counter() - made, 3),
                    }
                ] * first

        return launch

    def fail(self, stage, error):
        module, case = self.case
        self.failures.append(
            {"module": module, "case": case, "stage": stage, "error": _one_line(error)}
        )

    def rounds(self):
        return max(map(len, self.signatures.values()), default=0)


def _signature(values):
    signature = []

    for value in values:
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            signature.append(value[0])
            value = value[1]

        if isinstance(value, torch.Tensor):
            signature.append((tuple(value.shape), value.stride(), str(value.dtype)))
        elif isinstance(value, float):
            signature.append(float)
        else:
            signature.append(
                value if isinstance(value, (bool, int, str)) else type(value).__name__
            )

    return tuple(signature)


def _one_line(error):
    text = f"{type(error).__name__}: {error}".strip()

    return text.splitlines()[0] if text else type(error).__name__


def randn(shape, dtype=F32):
    return torch.randn(shape, dtype=torch.float32).to(dtype)


def cases():
    """Yield ``(module, label, thunk)``: one call of an ``ntops.torch`` wrapper each."""

    import ntops

    t = ntops.torch

    unary = {
        name: getattr(t, name)
        for name in (
            "abs cos cosh exp neg relu rsqrt sigmoid sign signbit silu sin tanh "
            "isinf isnan round"
        ).split()
    }
    binary = {
        name: getattr(t, name)
        for name in "mul eq ne ge gt le lt pow maximum fmax".split()
    }

    # Element-wise, every ndim in float16 and float32 (as the tests), bfloat16 3-D.
    for dtype, ndim in [(d, n) for d in (F16, F32) for n in SHAPES] + [(BF16, 3)]:
        shape, tag = SHAPES[ndim], f"{str(dtype)[6:]} {ndim}-D"

        for name, function in unary.items():
            yield name, tag, lambda f=function, s=shape, d=dtype: f(randn(s, d))

        for name, function in binary.items():
            yield (
                name,
                tag,
                lambda f=function, s=shape, d=dtype: f(randn(s, d), randn(s, d)),
            )

        x = lambda s=shape, d=dtype: randn(s, d)  # noqa: E731
        yield "round", f"{tag} decimals=2", lambda x=x: t.round(x(), decimals=2)
        yield "add", f"{tag} alpha", lambda x=x: t.add(x(), x(), alpha=0.5)
        yield "sub", f"{tag} alpha", lambda x=x: t.sub(x(), x(), alpha=0.5)
        yield "clamp", tag, lambda x=x: t.clamp(x(), x(), x())
        yield "celu", tag, lambda x=x: t.celu(x(), 1.0)
        yield "threshold", tag, lambda x=x: t.threshold(x(), 0.1, 0.5)
        yield "dropout", tag, lambda x=x: t.dropout(x(), p=0.3)
        yield (
            "alpha_dropout",
            tag,
            lambda x=x: t.alpha_dropout(x(), p=0.3, training=True),
        )
        # acosh and atan use the reduction arrangement (a program per row).
        r = lambda s=ROWS[ndim], d=dtype: randn(s, d)  # noqa: E731
        yield "acosh", tag, lambda r=r: t.acosh(1 + r().abs())
        yield "atan", tag, lambda r=r: t.atan(r())

        for approximate in ("none", "tanh"):
            yield (
                "gelu",
                f"{tag} {approximate}",
                lambda x=x, a=approximate: t.gelu(x(), approximate=a),
            )

        for mode in (None, "floor", "trunc"):
            yield (
                "div",
                f"{tag} {mode}",
                lambda x=x, m=mode: t.div(x(), x(), rounding_mode=m),
            )

    # The tests' float64 (boundary values, 1-D), strided input and broadcasting.
    for name in ("acosh", "atan"):
        yield (
            name,
            "float64 1-D",
            lambda f=getattr(t, name): f(1 + randn((6,), F64).abs()),
        )

        for dtype in (F16, F32):
            yield (
                name,
                f"{str(dtype)[6:]} strided input",
                lambda f=getattr(t, name), d=dtype: f(
                    (1 + randn((2, 4, 3), d).abs())[:, ::2, :]
                ),
            )

    for name in ("maximum", "fmax"):
        for dtype in (F16, F32):
            yield (
                name,
                f"{str(dtype)[6:]} broadcast",
                lambda f=getattr(t, name), d=dtype: f(
                    randn((4, 1, 8), d), randn((1, 6, 8), d)
                ),
            )

    for ndim, shape in SHAPES.items():  # complex inputs (the tests' complex64)
        yield (
            "sgn",
            f"complex64 {ndim}-D",
            lambda s=shape: t.sgn(torch.complex(randn(s), randn(s))),
        )

    for dtype, ndim in [(d, n) for d in INTS for n in SHAPES]:
        tag = f"{str(dtype)[6:]} {ndim}-D"

        def integers(s=SHAPES[ndim], d=dtype):
            return (
                torch.randint(-10, 10, s).to(d)
                if d is not torch.bool
                else torch.rand(s) > 0.5
            )

        yield "bitwise_and", tag, lambda i=integers: t.bitwise_and(i(), i())
        yield "bitwise_or", tag, lambda i=integers: t.bitwise_or(i(), i())
        yield "bitwise_not", tag, lambda i=integers: t.bitwise_not(i())

    yield from _reductions(t)
    yield from _normalizations(t)
    yield from _matrix_products(t)
    yield from _pooling(t)
    yield from _others(t)


def _dims(ndim):
    return sorted({0, ndim - 1})


def _reductions(t):
    for dtype in FLOATS:
        d = str(dtype)[6:]

        for ndim, shape in ROWS.items():
            x = lambda s=shape, dt=dtype: randn(s, dt)  # noqa: E731

            for dim in _dims(ndim):
                tag = f"{d} {ndim}-D dim={dim}"
                yield "softmax", tag, lambda x=x, dim=dim: t.softmax(x(), dim)
                yield "logsumexp", tag, lambda x=x, dim=dim: t.logsumexp(x(), dim)
                yield "max", tag, lambda x=x, dim=dim: t.max(x(), dim=dim)
                yield "mean", tag, lambda x=x, dim=dim: t.mean(x(), dim=dim)

            yield "max", f"{d} {ndim}-D all", lambda x=x: t.max(x())
            yield "mean", f"{d} {ndim}-D all", lambda x=x: t.mean(x())
            yield "msort", f"{d} {ndim}-D", lambda x=x: t.msort(x())

        x2 = lambda dt=dtype: randn(ROWS[2], dt)  # noqa: E731
        yield (
            "logsumexp",
            f"{d} 2-D dim=-1",
            lambda x2=x2: t.logsumexp(x2(), -1, keepdim=True),
        )

        # Sorting-like kernels: 1- to 3-D, the sorted dimension at most 128 long.
        for ndim, shape in ((n, ROWS[n]) for n in (1, 2, 3)):
            x = lambda s=shape, dt=dtype: randn(s, dt)  # noqa: E731

            for dim in _dims(ndim):
                tag = f"{d} {ndim}-D dim={dim}"
                yield "median", tag, lambda x=x, dim=dim: t.median(x(), dim=dim)

                for descending in (False, True):
                    tag_ = f"{tag} descending={descending}"
                    yield (
                        "argsort",
                        tag_,
                        lambda x=x, dim=dim, de=descending: t.argsort(
                            x(), dim=dim, descending=de
                        ),
                    )
                    yield (
                        "sort",
                        tag_,
                        lambda x=x, dim=dim, de=descending: _sort(x(), dim, de),
                    )

    for interpolation in ("linear", "lower", "higher", "nearest", "midpoint"):
        yield (
            "quantile",
            f"float32 2-D dim=1 {interpolation}",
            lambda i=interpolation: t.quantile(
                randn(ROWS[2]), randn((3,)).sigmoid(), dim=1, interpolation=i
            ),
        )

    for ndim, shape in ROWS.items():
        for dim, keepdim in ((None, False), (ndim - 1, True)):
            yield (
                "quantile",
                f"float32 {ndim}-D dim={dim} keepdim={keepdim}",
                lambda s=shape, di=dim, k=keepdim: t.quantile(
                    randn(s), 0.25, dim=di, keepdim=k
                ),
            )

    # The tests' mixed dtypes: softmax into a wider dtype, mean of integers.
    yield (
        "softmax",
        "float16 -> float32 2-D dim=1",
        lambda: t.softmax(randn(ROWS[2], F16), 1, F32),
    )
    yield (
        "softmax",
        "float32 -> float64 2-D dim=1",
        lambda: t.softmax(randn(ROWS[2]), 1, F64),
    )
    yield (
        "mean",
        "int32 2-D all",
        lambda: t.mean(torch.randint(0, 10, (4, 10), dtype=torch.int32)),
    )


def _sort(input, dim, descending):
    # ntops.torch.sort after its `input.device.type == "cuda"` check, unchanged.
    import ntops

    module = importlib.import_module("ntops.torch.sort")
    dim = dim + input.ndim if dim < 0 else dim
    values = torch.empty_like(input)
    indices = torch.empty_like(input, dtype=torch.int64)
    kernel = module._cached_make(
        ntops.kernels.sort.premake,
        input.ndim,
        dim,
        sort_size=input.shape[dim],
        descending=descending,
    )
    kernel(input, values, indices, input.shape[dim], descending)

    return values, indices


def _normalizations(t):
    for dtype in FLOATS:
        d = str(dtype)[6:]

        for ndim, shape in ROWS.items():
            x = lambda s=shape, dt=dtype: randn(s, dt)  # noqa: E731

            for k in sorted({1, ndim}):
                normalized = shape[-k:]
                tag = f"{d} {ndim}-D normalized {normalized}"
                yield "layer_norm", tag, lambda x=x, n=normalized: t.layer_norm(x(), n)
                yield "rms_norm", tag, lambda x=x, n=normalized: t.rms_norm(x(), n)

            normalized = shape[-1:]
            yield (
                "layer_norm",
                f"{d} {ndim}-D weight, bias",
                lambda x=x, n=normalized, dt=dtype: t.layer_norm(
                    x(), n, weight=randn(n, dt), bias=randn(n, dt)
                ),
            )
            yield (
                "rms_norm",
                f"{d} {ndim}-D weight",
                lambda x=x, n=normalized, dt=dtype: t.rms_norm(
                    x(), n, weight=randn(n, dt), eps=1e-5
                ),
            )

            if ndim >= 2:
                yield "batch_norm", f"{d} {ndim}-D", lambda x=x: t.batch_norm(x())

            if ndim >= 3:
                channels = shape[1]

                for stats in (True, False):
                    yield (
                        "instance_norm",
                        f"{d} {ndim}-D use_input_stats={stats}",
                        lambda x=x, st=stats, c=channels, dt=dtype: t.instance_norm(
                            x(),
                            running_mean=randn((c,), dt),
                            running_var=randn((c,), dt).abs(),
                            use_input_stats=st,
                        ),
                    )


def _matrix_products(t):
    m, n, k, b = 20, 24, 36, 3

    for dtype in FLOATS:
        d = str(dtype)[6:]
        yield "mm", d, lambda dt=dtype: t.mm(randn((m, k), dt), randn((k, n), dt))
        yield (
            "bmm",
            d,
            lambda dt=dtype: t.bmm(randn((b, m, k), dt), randn((b, k, n), dt)),
        )
        yield (
            "addmm",
            d,
            lambda dt=dtype: t.addmm(
                randn((m, n), dt),
                randn((m, k), dt),
                randn((k, n), dt),
                beta=0.5,
                alpha=2.0,
            ),
        )
        yield (
            "addmv",
            d,
            lambda dt=dtype: t.addmv(
                randn((m,), dt), randn((m, k), dt), randn((k,), dt)
            ),
        )
        yield (
            "bmm",
            f"{d} matmul 2-D @ 3-D",
            lambda dt=dtype: t.matmul(randn((m, k), dt), randn((b, k, n), dt)),
        )

    # float32 with TF32 allowed (`torch.set_float32_matmul_precision("high")`):
    # the other input-precision constexpr.
    def tf32(function, *shapes):
        previous = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")

        try:
            return function(*map(randn, shapes))
        finally:
            torch.set_float32_matmul_precision(previous)

    yield "mm", "float32 tf32", lambda: tf32(t.mm, (m, k), (k, n))
    yield "bmm", "float32 tf32", lambda: tf32(t.bmm, (b, m, k), (b, k, n))
    yield "addmm", "float32 tf32", lambda: tf32(t.addmm, (m, n), (m, k), (k, n))
    yield "addmv", "float32 tf32", lambda: tf32(t.addmv, (m,), (m, k), (k,))


def _pooling(t):
    for dtype in FLOATS:
        d = str(dtype)[6:]
        image = lambda dt=dtype: randn((1, 2, 7, 7), dt)  # noqa: E731

        for (r, s), stride, padding, dilation in (
            ((3, 3), 1, 0, 1),
            ((1, 1), 1, 0, 1),
            ((3, 3), 2, 1, 2),
            ((3, 3), (2, 3), (2, 3), (2, 3)),
        ):
            tag = f"{d} {r}x{s} stride={stride} padding={padding} dilation={dilation}"
            yield (
                "conv2d",
                tag,
                lambda image=image, r=r, s=s, st=stride, p=padding, di=dilation, dt=dtype: (
                    t.conv2d(
                        image(),
                        randn((3, 2, r, s), dt),
                        randn((3,), dt),
                        stride=st,
                        padding=p,
                        dilation=di,
                    )
                ),
            )

        for kernel_size, stride, padding in (
            ((3, 3), None, 0),
            ((3, 3), 1, 1),
            ((1, 1), (2, 3), 0),
        ):
            tag = f"{d} {kernel_size} stride={stride} padding={padding}"
            yield (
                "avg_pool2d",
                tag,
                lambda image=image, ks=kernel_size, st=stride, p=padding: t.avg_pool2d(
                    image(), ks, stride=st, padding=p
                ),
            )
            yield (
                "max_pool2d",
                tag,
                lambda image=image, ks=kernel_size, st=stride, p=padding: t.max_pool2d(
                    image(), ks, stride=st, padding=p
                ),
            )

        yield (
            "max_pool2d",
            f"{d} (3, 3) dilation=(2, 3)",
            lambda image=image: t.max_pool2d(
                image(), (3, 3), stride=1, dilation=(2, 3)
            ),
        )

        for size in ((1, 1), (2, 2), (4, 4)):
            yield (
                "adaptive_avg_pool2d",
                f"{d} {size}",
                lambda sz=size, dt=dtype: t.adaptive_avg_pool2d(
                    randn((1, 2, 4, 4), dt), sz
                ),
            )

    for dtype in (F16, F32):
        d = str(dtype)[6:]

        for (kernel, stride), ceil_mode in [
            (ks, c) for ks in ((2, 2), (3, 2), (3, 1)) for c in (False, True)
        ]:
            yield (
                "max_pool1d",
                f"{d} kernel={kernel} stride={stride} ceil_mode={ceil_mode}",
                lambda k=kernel, s=stride, c=ceil_mode, dt=dtype: t.max_pool1d(
                    randn((1, 1, 9), dt), k, stride=s, padding=1, ceil_mode=c
                ),
            )

        for kernel, stride, ceil_mode in ((2, None, False), (3, 2, True)):
            tag = f"{d} kernel={kernel} stride={stride} ceil_mode={ceil_mode}"
            yield (
                "max_pool3d",
                tag,
                lambda k=kernel, s=stride, c=ceil_mode, dt=dtype: t.max_pool3d(
                    randn((1, 1, 5, 4, 4), dt),
                    k,
                    stride=s,
                    padding=1 if c else 0,
                    ceil_mode=c,
                ),
            )
            yield (
                "lp_pool1d",
                tag,
                lambda k=kernel, s=stride, c=ceil_mode, dt=dtype: t.lp_pool1d(
                    randn((1, 1, 9), dt), 2.0, k, stride=s, ceil_mode=c
                ),
            )
            yield (
                "lp_pool2d",
                tag,
                lambda k=kernel, s=stride, c=ceil_mode, dt=dtype: t.lp_pool2d(
                    randn((1, 1, 6, 5), dt), 2.0, (k, k - 1), stride=s, ceil_mode=c
                ),
            )
            yield (
                "lp_pool3d",
                tag,
                lambda k=kernel, s=stride, c=ceil_mode, dt=dtype: t.lp_pool3d(
                    randn((1, 1, 5, 4, 4), dt), 3.0, k, stride=s, ceil_mode=c
                ),
            )

    for size in ((1, 1), (2, 2), (3, 3), (5, 7)):  # the tests' float32 only
        yield (
            "adaptive_max_pool2d",
            f"float32 {size}",
            lambda sz=size: t.adaptive_max_pool2d(
                randn((1, 2, 2 * sz[0], 2 * sz[1])), sz
            ),
        )


def _attention(t, dtype, kv_cache, mask, causal, variant):
    from ntops.kernels.scaled_dot_product_attention import CausalVariant

    batch, heads_q, heads_kv, seq_q, seq_kv, head_dim = 1, 2, 1, 16, 24, 32
    query = randn((batch, heads_q, seq_q, head_dim), dtype)
    key = randn((batch, heads_kv, seq_kv, head_dim), dtype)
    value = randn((batch, heads_kv, seq_kv, head_dim), dtype)
    attn_mask = None

    if mask is not None:
        attn_mask = torch.rand((seq_q, seq_kv)) > 0.5

        if mask is not torch.bool:
            attn_mask = torch.where(attn_mask, 0, float("-inf")).to(dtype)

    present = {}

    if kv_cache:  # the tests' present key and value, written into the last slot
        for name, tensor in (("key", key), ("value", value)):
            present[f"present_{name}"] = tensor[:, :, -1:, :].clone()
            present[f"present_{name}_slot"] = tensor[:, :, -1:, :]

    return t.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attn_mask,
        is_causal=causal,
        enable_gqa=True,
        causal_variant=getattr(CausalVariant, variant),
        **present,
    )


def _others(t):
    for dtype in FLOATS:
        d = str(dtype)[6:]

        for kv_cache in (False, True):
            for mask, causal, variant in (
                (None, False, "UPPER_LEFT"),
                (None, True, "UPPER_LEFT"),
                (None, True, "LOWER_RIGHT"),
                (torch.float32, False, "UPPER_LEFT"),
            ):
                tag = f"{d} kv_cache={kv_cache} mask={mask} causal={causal} {variant}"
                yield (
                    "scaled_dot_product_attention",
                    tag,
                    lambda a=(dtype, kv_cache, mask, causal, variant): _attention(
                        t, *a
                    ),
                )

        for interleaved in (False, True):
            yield (
                "rotary_position_embedding",
                f"{d} interleaved={interleaved}",
                lambda i=interleaved, dt=dtype: t.rotary_position_embedding(
                    randn((1, 2, 2, 32), dt),
                    randn((2, 16), dt),
                    randn((2, 16), dt),
                    interleaved=i,
                ),
            )

        for ndim, shape in SHAPES.items():
            for dim in _dims(ndim):
                yield (
                    "select_copy",
                    f"{d} {ndim}-D dim={dim}",
                    lambda s=shape, di=dim, dt=dtype: t.select_copy(
                        randn(s, dt), di, s[di] // 2
                    ),
                )

        for n, diagonal in ((5, 0), (5, 1), (5, -3)):
            yield (
                "diag",
                f"{d} 1-D n={n} diagonal={diagonal}",
                lambda n=n, di=diagonal, dt=dtype: t.diag(randn((n,), dt), di),
            )

        for shape, diagonal in (((5, 5), 0), ((3, 5), 1), ((5, 3), -1)):
            yield (
                "diag",
                f"{d} 2-D {shape} diagonal={diagonal}",
                lambda s=shape, di=diagonal, dt=dtype: t.diag(randn(s, dt), di),
            )

        for ndim, k, dims in (
            (2, 1, (0, 1)),
            (2, 2, (0, 1)),
            (3, 3, (0, 2)),
            (4, 1, (1, 3)),
        ):
            yield (
                "rot90",
                f"{d} {ndim}-D k={k} dims={dims}",
                lambda s=ROWS[ndim], k=k, di=dims, dt=dtype: t.rot90(
                    randn(s, dt), k=k, dims=di
                ),
            )

    for dtype in (F16, F32):
        for dim in (0, 1, 2):
            yield (
                "stack",
                f"{str(dtype)[6:]} 3-D dim={dim}",
                lambda di=dim, dt=dtype: t.stack(
                    [randn((2, 3, 8), dt) for _ in range(3)], dim=di
                ),
            )

    for size, weights, minlength in (
        (100, False, 0),
        (100, True, 0),
        (50, True, 10),
        (60, False, 200),
    ):
        yield (
            "bincount",
            f"int32 n={size} weights={weights} minlength={minlength}",
            lambda n=size, w=weights, m=minlength: t.bincount(
                torch.randint(0, n, (n,), dtype=torch.int32),
                weights=randn((n,)) if w else None,
                minlength=m,
            ),
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--round",
        type=int,
        default=0,
        help="which launch of each kernel to make (default 0)",
    )
    parser.add_argument(
        "--modules", help="comma-separated ntops.torch modules to call (default: all)"
    )
    parser.add_argument("--report", help="write the JSON report here (default: stdout)")
    parser.add_argument(
        "--keys", help="round 0's report: the kernel each call makes (rounds after 0)"
    )
    options = parser.parse_args(argv)
    keys = None

    if options.keys:
        with open(options.keys) as file:
            keys = json.load(file)["keys"]

    import ntops
    import ntops.torch.utils

    # As ntops' tests/conftest.py does for its whole suite.
    ntops.torch.utils.set_default_max_num_configs(3)
    turns = Turns(options.round, ntops.torch.utils._cached_make, keys)

    for name, module in list(sys.modules.items()):
        if name.startswith("ntops.torch.") and hasattr(module, "_cached_make"):
            module._cached_make = turns.cached_make

    wanted = set(options.modules.split(",")) if options.modules else None
    ran = []

    for index, (module, label, thunk) in enumerate(cases()):
        if wanted is not None and module not in wanted:
            continue

        # The same values every round: shapes may depend on them (bincount).
        random.seed(index)
        torch.manual_seed(index)
        turns.case = (module, label)
        ran.append(module)

        try:
            thunk()
        except Exception as error:
            turns.fail("case", error)

            if options.report is None:
                traceback.print_exc()

    report = {
        "round": options.round,
        "rounds": turns.rounds(),
        "cases": len(ran),
        "called": sorted(set(ran)),
        "launches": turns.launches,
        "failures": turns.failures,
        "keys": turns.keys,
        "modules": turns.modules,
    }
    text = json.dumps(report, indent=1)

    if options.report:
        with open(options.report, "w") as file:
            file.write(text + "\n")
    else:
        print(text)

    return 0


if __name__ == "__main__":
    sys.exit(main())
