"""A bounded cache: a size limit with least-recently-used eviction, safe under concurrency, and ``clear --stale``."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from helpers import ROOT

from ninetoothed_ascend.cache import SIZE_VARIABLE, Cache, eviction
from ninetoothed_ascend.cli import main

DOWNSTREAM = ROOT / "tests" / "downstream"

#: Every operator of the downstream library, one kernel each (for 2-D float32).
sys.path.insert(0, str(DOWNSTREAM))
from downstream_ops.ops import OPS  # noqa: E402

RUN_OPS = (
    "import sys, ninetoothed_ascend, downstream_ops.ops; "
    "downstream_ops.ops.main(sys.argv[1:])"
)

#: Room for about five of the downstream kernels (an entry and its CUDA and
#: CPU sources: about 22 KB each).
LIMIT = 120 * 2**10


def run_ops(cache_dir, *ops, source=ROOT / "src", wait=True, **env):
    """Run the downstream operators on the CPU against ``cache_dir`` with the package at ``source``."""

    process = subprocess.Popen(
        [sys.executable, "-c", RUN_OPS, *ops],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ
        | {
            "NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir),
            "PYTHONPATH": f"{source}{os.pathsep}{DOWNSTREAM}",
        }
        | env,
    )

    return finish(process) if wait else process


def finish(process):
    stdout, stderr = process.communicate()

    assert process.returncode == 0, stderr

    return json.loads(stdout.strip().splitlines()[-1])


def kernel_names(cache_dir):
    return {
        json.loads(path.read_text())["kernel_name"]
        for path in (cache_dir / "kernels").glob("*.json")
    }


@pytest.mark.parametrize(
    "text, size",
    [("1048576", 2**20), ("512M", 512 * 2**20), ("2g", 2 * 2**30), ("0", None)],
)
def test_the_size_limit_is_read_from_its_variable(monkeypatch, text, size):
    monkeypatch.setenv(SIZE_VARIABLE, text)

    assert eviction.size_limit() == size


def test_a_size_that_is_no_size_is_one_warning_and_the_default(monkeypatch):
    monkeypatch.setenv(SIZE_VARIABLE, "lots")

    with pytest.warns(UserWarning, match="is not a size"):
        assert eviction.size_limit() == eviction.DEFAULT_SIZE


def test_every_store_of_every_process_counts_toward_the_estimate(tmp_path):
    (tmp_path / "locks").mkdir()
    assert eviction.evict(eviction.Layout(tmp_path, ()), 2**20) == (0, 0)

    # A fresh layout per store, as each ``make`` has a cache of its own:
    # the account is the ledger on disk, not anything a process holds.
    over = [
        eviction.account(eviction.Layout(tmp_path, ()), 100 * 2**10, 2**20)
        for _ in range(12)
    ]

    assert over == [False] * 10 + [True] * 2
    assert eviction.evict(eviction.Layout(tmp_path, ()), 2**20) == (0, 0)
    assert (tmp_path / "usage.ledger").stat().st_size == 0


def test_the_cache_stays_under_its_limit_evicting_the_least_recently_used(cache_dir):
    env = {SIZE_VARIABLE: str(LIMIT)}

    assert run_ops(cache_dir, *OPS, **env)["max_abs_error"] == 0.0

    assert Cache(cache_dir).size() <= LIMIT
    kept = kernel_names(cache_dir)
    # The last made are kept, the first evicted.
    assert 2 <= len(kept) < len(OPS) and kept <= set(OPS[-len(kept) :])
    assert OPS[-1] in kept

    # A kernel evicted is made again where it is needed; one used is kept.
    assert run_ops(cache_dir, OPS[0], **env)["max_abs_error"] == 0.0
    assert OPS[0] in kernel_names(cache_dir)
    assert Cache(cache_dir).size() <= LIMIT


def test_eviction_is_safe_under_concurrency(cache_dir):
    env = {SIZE_VARIABLE: str(LIMIT)}
    # Four programs making the same 20 kernels and evicting them at once,
    # in different orders.
    orders = [OPS, OPS[::-1], OPS[::2] + OPS[1::2], OPS[1::2] + OPS[::2]]
    processes = [run_ops(cache_dir, *ops, wait=False, **env) for ops in orders]

    for process in processes:
        assert finish(process)["max_abs_error"] == 0.0

    # Each program evicts when its own writes pass its estimate: what the
    # others wrote since is measured at the next eviction.
    assert Cache(cache_dir).evict(LIMIT) is not None
    assert Cache(cache_dir).size() <= LIMIT

    for key in Cache(cache_dir).keys():
        assert Cache(cache_dir).load(key) is not None

    assert run_ops(cache_dir, *OPS, **env)["max_abs_error"] == 0.0


def test_clear_stale_removes_what_no_installation_reaches_any_more(tmp_path, cache_dir):
    def installation(name):
        source = tmp_path / name / "src"
        shutil.copytree(
            ROOT / "src",
            source,
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
        )

        return source

    def clear_stale():
        result = CliRunner().invoke(
            main, ["clear", "--stale", "--cache-dir", str(cache_dir)]
        )

        assert result.exit_code == 0, result.output

        return result.output

    first = installation("first")
    assert run_ops(cache_dir, "add", source=first)["max_abs_error"] == 0.0
    (before,) = Cache(cache_dir).keys()

    # A package edit: a new environment, a new key for the same kernel.
    with open(first / "ninetoothed_ascend" / "host.py", "a") as file:
        file.write("\n# edited\n")

    assert run_ops(cache_dir, "add", source=first)["max_abs_error"] == 0.0
    (after,) = set(Cache(cache_dir).keys()) - {before}

    # Its sources stay: the edit changed no generated source, which the
    # entry of the new environment names too.
    assert "removed 1 kernels and 0 sources" in clear_stale()
    assert Cache(cache_dir).keys() == [after]

    # Another installation that uses the first environment keeps its entries.
    second = installation("second")
    assert run_ops(cache_dir, "add", source=second)["max_abs_error"] == 0.0
    assert set(Cache(cache_dir).keys()) == {before, after}

    assert "removed 0 kernels" in clear_stale()
    assert set(Cache(cache_dir).keys()) == {before, after}
