"""Level 1 (AST): TransposeStridedTiles loads a tile with unit-stride rows and strided columns transposed, decided at the launch."""

import ast

import torch
from helpers import TRANSPOSED, launch_flag, launch_keywords, shared_example

from ninetoothed_ascend.compiler.npu.contiguous_flat_access import (
    COLLAPSES,
    ContiguousFlatAccess,
)
from ninetoothed_ascend.compiler.npu.transpose_strided_tiles import (
    FLAG_PREFIX,
    TransposeStridedTiles,
)
from ninetoothed_ascend.compiler.passes import run_pipeline


def rewrite(source):
    return run_pipeline(source, [ContiguousFlatAccess, TransposeStridedTiles])


def test_the_load_gets_a_transposed_branch_chosen_by_a_launch_flag():
    rewritten = rewrite(TRANSPOSED)

    # The load's and the store's (next test).
    assert dict(rewritten.rewrites)["TransposeStridedTiles"] == 2
    (choice,) = [
        node
        for node in _choices(rewritten.source)
        if "tl.store" not in ast.unparse(node)
    ]
    transposed = ast.unparse(choice.body)
    # The rows' fast path, its arange now innermost; the columns outer.
    assert transposed.startswith("tl.trans(tl.load(x_pointer + ")
    assert "(i * BLOCK + tl.arange(0, BLOCK)[None, :]) * x_stride_2" in transposed
    assert "tl.arange(0, N)[:, None] * x_stride_1" in transposed
    assert "//" not in transposed and "[:, None]) //" not in transposed
    assert ast.unparse(choice.orelse).startswith("tl.load(")
    flags = launch_keywords(rewritten.source)
    assert flags[choice.test.id] == (
        f"{COLLAPSES}((x.size(0), x.size(2)), (x.stride(0), x.stride(2)))"
        " and x.stride(2) == 1 and (x.stride(1) != 1)"
    )


def _choices(source):
    return [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.IfExp)
        and isinstance(node.test, ast.Name)
        and node.test.id.startswith(FLAG_PREFIX)
    ]


def test_the_store_gets_a_transposed_branch_chosen_by_a_launch_flag():
    # The store's flag from ContiguousFlatAccess asks for a unit stride on its
    # columns; the transposed store is for the launches whose rows collapse
    # and step 1 while the columns do not (conv2d's NCHW output of batch 1).
    # Its values: tests/test_npu_emulation.py runs conv2d's NPU variant.
    rewritten = rewrite(TRANSPOSED)

    assert dict(rewritten.rewrites)["TransposeStridedTiles"] == 2
    (choice,) = [
        node for node in _choices(rewritten.source) if "tl.store" in ast.unparse(node)
    ]
    transposed = ast.unparse(choice.body)
    assert transposed.startswith("tl.store(y_pointer + ")
    assert "(i * BLOCK + tl.arange(0, BLOCK)[None, :]) * y_stride_2" in transposed
    assert "tl.arange(0, N)[:, None] * y_stride_1" in transposed
    assert "//" not in transposed
    # The value, converted to the output's type, then transposed.
    assert transposed.endswith(", tl.trans(tile.to(y_pointer.dtype.element_ty)))"), (
        transposed
    )
    assert ast.unparse(choice.orelse).startswith("tl.store(y_pointer + ((i * BLOCK")
    flags = launch_keywords(rewritten.source)
    # The collapse test of the store's flag, without its unit-stride test.
    assert flags[choice.test.id] == (
        f"{COLLAPSES}((y.size(0), y.size(2)), (y.stride(0), y.stride(2)))"
        " and y.stride(2) == 1 and (y.stride(1) != 1)"
    )


def test_a_store_whose_rows_collapse_only_within_their_outer_digit_gets_per_image_segments():
    # conv2d's NCHW output of batch >= 2: the flat row index crosses images
    # inside a tile, so the rows do not collapse whole, but within one image
    # they do. Its values: tests/test_npu_emulation.py runs conv2d's NPU
    # variant, batch 1 and 2.
    rewritten = rewrite(TRANSPOSED)
    (choice,) = [
        node
        for node in ast.walk(ast.parse(rewritten.source))
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id.startswith(FLAG_PREFIX)
    ]
    name = choice.test.id
    # The adopted single transposed DMA, untouched, in the ``else``.
    (plain,) = choice.orelse
    (single,) = [
        node for node in _choices(rewritten.source) if "tl.store" in ast.unparse(node)
    ]
    assert ast.unparse(plain) == ast.unparse(single)
    assign, loop = choice.body
    # The value, converted to the output's type, then transposed, once.
    assert ast.unparse(assign) == (
        f"{name}_value = tl.trans(tile.to(y_pointer.dtype.element_ty))"
    )
    # One masked DMA per value of the outer digit the tile's rows reach.
    assert ast.unparse(loop.iter) == (
        "range(i * BLOCK // y_size_2, (i * BLOCK + BLOCK - 1) // y_size_2 + 1)"
    )
    (store,) = loop.body
    index, rows = f"{name}_index", "i * BLOCK + tl.arange(0, BLOCK)[None, :]"
    assert ast.unparse(store) == (
        f"tl.store(y_pointer + (({rows} - {index} * y_size_2) * y_stride_2"
        f" + {index} * y_stride_0) + tl.arange(0, N)[:, None] * y_stride_1,"
        f" {name}_value, mask=({rows} >= {index} * y_size_2)"
        f" & ({rows} < ({index} + 1) * y_size_2))"
    )
    flags = launch_keywords(rewritten.source)
    # The inner digits' collapse test (one digit: always), the whole rows'
    # negated (where they collapse the single DMA is taken), the rows' unit
    # stride, the columns' other stride.
    assert flags[name] == (
        f"{COLLAPSES}((y.size(2),), (y.stride(2),))"
        f" and (not {COLLAPSES}((y.size(0), y.size(2)), (y.stride(0), y.stride(2))))"
        " and (y.stride(2) == 1) and (y.stride(1) != 1)"
    )
    names = {}
    exec(
        ast.unparse(
            [
                node
                for node in ast.parse(rewritten.source).body
                if isinstance(node, ast.FunctionDef) and node.name == COLLAPSES
            ]
        ),
        names,
    )

    def taken(flag, y):
        return eval(flags[flag], names | {"y": y})

    # (rows' outer digit, columns, rows' inner digit)
    batch_2, batch_1 = torch.empty(2, 8, 5), torch.empty(1, 8, 5)
    assert (taken(name, batch_2), taken(single.test.id, batch_2)) == (True, False)
    assert (taken(name, batch_1), taken(single.test.id, batch_1)) == (False, True)
    # Columns innermost (ContiguousFlatAccess's DMA) or rows strided: neither.
    for y in (batch_2.transpose(1, 2).contiguous().transpose(1, 2), batch_2[..., ::2]):
        assert (taken(name, y), taken(single.test.id, y)) == (False, False)


def test_a_store_of_a_value_that_is_not_a_2d_tile_is_left_alone():
    # ``tl.trans`` needs the value's two axes: a scalar, or a tile whose rank
    # a reduction changed, keeps the plain store.
    for value in ("1.0", "tl.sum(tile, 1)[:, None]"):
        rewritten = rewrite(
            TRANSPOSED.replace("y_stride_1, tile)", f"y_stride_1, {value})")
        )

        assert dict(rewritten.rewrites)["TransposeStridedTiles"] == 1
        assert not [
            node
            for node in _choices(rewritten.source)
            if "tl.store" in ast.unparse(node)
        ]


def test_tiles_without_a_flattened_row_group_or_a_strided_column_are_left_alone():
    assert "TransposeStridedTiles" not in dict(
        rewrite(shared_example("softmax").kernel.source("cuda")).rewrites
    )
    assert "TransposeStridedTiles" not in dict(
        rewrite(shared_example("flat_sigmoid").kernel.source("cuda")).rewrites
    )
    # A column term whose scale is not a stride parameter.
    assert "TransposeStridedTiles" not in dict(
        rewrite(
            TRANSPOSED.replace(
                "tl.arange(0, N)[None, :] * x_stride_1)",
                "tl.arange(0, N)[None, :] * 3)",
            ).replace(
                "tl.arange(0, N)[None, :] * y_stride_1,",
                "tl.arange(0, N)[None, :] * 3,",
            )
        ).rewrites
    )


def test_a_reduction_over_dim_0_of_a_contiguous_tensor_takes_the_transposed_load():
    # Its values: tests/compiler/emulation/test_emulation.py runs every case of flat_sum_dim,
    # (512, 64) over dim 0 among them, emulated against torch.
    source = shared_example("flat_sum_dim").kernel.source("npu")
    (flag,) = [
        value
        for name, value in launch_keywords(source, "flat_sum_dim").items()
        if name.startswith(FLAG_PREFIX)
    ]
    taken = launch_flag(source, flag)
    values = torch.empty(512, 64)

    assert taken(values.movedim(0, -1)[None, None]) is True
    assert taken(values.movedim(1, -1)[None, None]) is False
    assert taken(values.t().movedim(0, -1)[None, None]) is False


def test_the_ub_model_bounds_an_undecided_transposed_access_by_the_plain_one():
    # FitUnifiedBuffer does not know the launch's choice; the plain load,
    # strided wherever the transposed one is taken, bounds it (docs/ub.md).
    # Which parameters choose a transposed access is the pass's fact, kept
    # with the variant (Rewritten.facts).
    from ninetoothed_ascend.compiler.facts import LayoutFacts, stored_layout
    from ninetoothed_ascend.compiler.npu.ub.model import footprint
    from ninetoothed_ascend.compiler.syntax import import_aliases

    def peaks(rewritten, layout=None):
        tree = ast.parse(rewritten.source)
        kernel = next(
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == "kernel"
        )
        flags = [arg.arg for arg in kernel.args.args if "flat_affine" in arg.arg]
        layout = layout or stored_layout(rewritten.facts, "kernel")

        return [
            footprint(
                kernel,
                import_aliases(tree),
                {"BLOCK": 64, "N": 32} | dict.fromkeys(flags, fast),
                contiguous=fast,
                layout=layout,
            ).peak
            for fast in (True, False)
        ]

    plain = run_pipeline(TRANSPOSED, [ContiguousFlatAccess])
    transposed = rewrite(TRANSPOSED)

    assert "trans(" in transposed.source
    assert sorted(transposed.facts["kernel"]["transposed"]) == sorted(
        name
        for name in launch_keywords(transposed.source)
        if name.startswith(FLAG_PREFIX)
    )
    assert all(peaks(plain))
    assert peaks(transposed) == peaks(plain)
    # Without the facts, both branches of the choice are counted.
    assert peaks(transposed, LayoutFacts()) != peaks(plain)
