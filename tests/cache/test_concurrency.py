"""Eight real processes warming the same twenty kernels at once."""

import hashlib
import json
import os
import subprocess
import sys
import time

from helpers import ROOT

from ninetoothed_ascend.cache import Cache

DOWNSTREAM = ROOT / "tests" / "downstream"


SRC = ROOT / "src"


PROCESSES = 8


MAKE_ALL = """
import json, warnings
warnings.simplefilter("error")  # a warning (e.g. a failed store) fails the process
import ninetoothed_ascend, torch
from downstream_ops import ops
keys = [ops.kernel(op, 2, torch.float32).key for op in ops.OPS]
print(json.dumps(keys))
"""


def test_eight_processes_warming_twenty_kernels_leave_a_valid_cache(cache_dir):
    env = os.environ | {
        "NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir),
        "PYTHONPATH": f"{SRC}{os.pathsep}{DOWNSTREAM}",
    }
    start = time.perf_counter()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", MAKE_ALL],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    outputs = [process.communicate(timeout=600) for process in processes]
    seconds = time.perf_counter() - start

    for process, (_, stderr) in zip(processes, outputs):
        assert process.returncode == 0, stderr

    keys = [json.loads(stdout.strip().splitlines()[-1]) for stdout, _ in outputs]

    assert all(k == keys[0] for k in keys)  # every process made the same kernels
    assert len(set(keys[0])) == 20

    cache = Cache(cache_dir)
    assert cache.keys() == sorted(keys[0])
    assert not [p for p in cache_dir.rglob(".*")]  # no temporary file left

    for key in keys[0]:
        entry = cache.load(key)
        assert entry is not None
        assert all(v.source is not None for v in entry.variants.values())

    for source in (cache_dir / "sources").glob("*.py"):
        assert hashlib.sha256(source.read_bytes()).hexdigest() == source.stem

    print(f"{PROCESSES} processes x 20 kernels: {seconds:.1f} s")
