"""Merge autotune configs that differ only in what triton-ascend ignores."""

import ast

from ninetoothed_ascend.compiler.passes import Pass

#: ``triton.Config`` keywords that mean nothing to triton-ascend.
IGNORED_ON_ASCEND = ("num_warps", "num_stages")


class MergeDuplicateConfigs(Pass):
    """Keep one autotune config per set of meta-parameters.

    Constraint: triton-ascend ignores ``num_warps`` and ``num_stages`` (its
    autotune guide; docs/ascend.md, "Autotuning"), so configs
    that differ only in them are the same NPU kernel compiled and timed
    again, each a BiShengIR run of seconds. NineToothed writes the product
    of every block-size config with ``num_warps`` and ``num_stages`` when
    either is a tuple (``ninetoothed.make(..., num_warps=(4, 8))``).

    The first config of each group stays, in order; a config that is not a
    ``triton.Config(...)`` call is kept as written. Measured with
    ``bench/npu_configs.py``.

    :Constraint: triton-ascend ignores `num_warps` and `num_stages`, so configs
        differing only in them are one NPU compile (a BiShengIR run of seconds)
        paid again
    :Source: triton-ascend autotune guide; docs/ascend.md, "Autotuning";
        `bench/npu_configs.py`
    :Rewrites: keeps the first `triton.Config` of each set of meta-parameters
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        for autotuner in self.module.autotuners():
            configs = autotuner.keyword("configs")

            if configs is None or not isinstance(configs.value, ast.List):
                continue

            kept, seen = [], set()

            for config in configs.value.elts:
                meaning = _meaning(config)

                if meaning is not None and meaning in seen:
                    continue

                seen.add(meaning)
                kept.append(config)

            if len(kept) < len(configs.value.elts):
                configs.value.elts = kept
                self.rewrote()

        return node


def _meaning(config):
    """What triton-ascend compiles for ``config``: its text without the ignored keywords, or ``None``."""

    if not isinstance(config, ast.Call):
        return None

    relevant = ast.Call(
        func=config.func,
        args=config.args,
        keywords=[
            keyword_
            for keyword_ in config.keywords
            if keyword_.arg not in IGNORED_ON_ASCEND
        ],
    )

    return ast.dump(relevant)
