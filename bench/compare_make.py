"""Cold and warm ``make`` of two source trees of ninetoothed-ascend, interleaved, on this machine.

``bench/warm_make.py`` measures one tree; on a machine that other work
shares, two of its runs minutes apart differ more than the change between
them. This runs its measurements (``warm_make.measure``: fresh processes,
the same modes) alternately for each tree within every repeat, so that both
see the same load: per repeat and tree, ``ninetoothed.make``, cold ``make``
+ the variant a call needs, and warm ``make`` (first and next) on a cache
that tree filled. Medians over the repeats; the CPU clock by default.

    python bench/compare_make.py BEFORE/src AFTER/src [--repeats 7] [--names add ...]

where each argument is a directory put first on ``PYTHONPATH`` (a tree's
``src``; ``git archive COMMIT src | tar -x -C DIR`` makes one of a commit).
"""

import argparse
import os
import pathlib
import statistics
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import warm_make  # noqa: E402

MODES = ("plain", "variant", "warm", "next")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, type=pathlib.Path)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--names", nargs="+", default=warm_make.NAMES)
    parser.add_argument("--clock", choices=warm_make.CLOCKS, default="cpu")
    arguments = parser.parse_args()
    trees = [tree.resolve() for tree in arguments.trees]

    def measure(tree, path, mode, cache_dir):
        os.environ["PYTHONPATH"] = str(tree)

        return warm_make.measure(path, mode, cache_dir, arguments.clock, False)

    print(
        "| kernel | tree | ninetoothed.make (ms) | make + variant (ms) | ratio "
        "| warm make, first / next (ms) |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: |")

    for name in arguments.names:
        path = warm_make.example_path(name)
        runs = {tree: {mode: [] for mode in MODES} for tree in trees}

        with tempfile.TemporaryDirectory() as warm_caches:
            warm = {tree: f"{warm_caches}/{index}" for index, tree in enumerate(trees)}

            for tree in trees:
                # The kernel, and the kernel a second ``make`` in the process makes.
                measure(tree, path, "variant", warm[tree])
                measure(tree, path, "warm", warm[tree])

            for _ in range(arguments.repeats):
                for tree in trees:
                    for mode in ("plain", "variant"):
                        with tempfile.TemporaryDirectory() as cold_cache:
                            result = measure(tree, path, mode, cold_cache)

                        runs[tree][mode].append(result["seconds"])

                    result = measure(tree, path, "warm", warm[tree])
                    runs[tree]["warm"].append(result["seconds"])
                    runs[tree]["next"].append(result["next"])

        for tree in trees:
            median = {
                mode: statistics.median(values) * 1e3
                for mode, values in runs[tree].items()
            }
            print(
                f"| {name} | {tree} | {median['plain']:.1f} | {median['variant']:.1f} "
                f"| {median['variant'] / median['plain']:.2f}x "
                f"| {median['warm']:.2f} / {median['next']:.2f} |",
                flush=True,
            )

    print(f"\nclock: {arguments.clock}; medians of {arguments.repeats}")


if __name__ == "__main__":
    main()
