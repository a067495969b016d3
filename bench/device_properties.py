"""What the device properties of a ``make``'s key cost: Triton's driver query against the cache's device memo.

NineToothed's generator reads ``max_num_regs`` and ``max_shared_mem`` from
Triton's driver, and so does the key of a ``make``
(``ninetoothed_ascend.jit.fingerprint.device_properties``). Run on a CUDA
machine; in one process, after torch's CUDA state and Triton's driver are
created (untimed, as ``bench/warm_make.py`` does):

* Triton's ``get_device_properties``, each of ``--repeats`` queries;
* torch's description of the device, the first request and the next;
* ``fingerprint.device_properties`` on an empty cache (the driver asked,
  the answer kept and stored), then in a later process, from the memo
  (torch's first description of the device included).

    python bench/device_properties.py [--repeats 5]

Milliseconds, elapsed time. Without a CUDA device it says so and exits 1.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def timed(function):
    start = time.perf_counter()
    result = function()

    return result, (time.perf_counter() - start) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--from-memo", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    os.environ.setdefault("NINETOOTHED_ASCEND_CACHE_DIR", tempfile.mkdtemp())

    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here: nothing to measure")
        sys.exit(1)

    import triton

    driver = triton.runtime.driver.active
    device = driver.get_current_device()

    from ninetoothed_ascend.cache import Cache
    from ninetoothed_ascend.jit import fingerprint

    if arguments.from_memo:  # the later process
        _, milliseconds = timed(
            lambda: fingerprint.device_properties(fingerprint.Memos(Cache()))
        )
        print(f"fingerprint.device_properties, a later process: {milliseconds:.3f}")

        return

    for repeat in range(arguments.repeats):
        _, milliseconds = timed(lambda: driver.utils.get_device_properties(device))
        print(f"Triton get_device_properties, query {repeat + 1}: {milliseconds:.3f}")

    for which in ("first", "next"):
        _, milliseconds = timed(lambda: torch.cuda.get_device_properties(device))
        print(f"torch get_device_properties, {which}: {milliseconds:.3f}")

    memos = fingerprint.Memos(Cache())
    reported, milliseconds = timed(lambda: fingerprint.device_properties(memos))
    print(f"fingerprint.device_properties, empty cache: {milliseconds:.3f} {reported}")
    memos.store()
    subprocess.run([sys.executable, __file__, "--from-memo"], check=True)


if __name__ == "__main__":
    main()
