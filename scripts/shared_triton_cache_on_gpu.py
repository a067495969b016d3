"""On a CUDA GPU: Triton's binaries and the autotuners' choices shared through a Redis store, measured.

Starts a ``redis-server`` on the loopback, then runs the same kernels in
new processes, each with empty local caches (``TRITON_CACHE_DIR`` and
``NINETOOTHED_ASCEND_CACHE_DIR``):

* ``cold``: no store (``TRITON_CACHE_MANAGER`` unset): Triton compiles and
  the autotuner benchmarks; the baseline;
* ``A``: the store on, empty: compiles, benchmarks, writes both to the store;
* ``B``: the store on, filled by A: must compile nothing (Triton's cache
  manager writes no file) and benchmark nothing, and pick A's configs;
* ``B-other-toolchain``: as B with a ``bishengir-compile`` of another
  version on ``$PATH``: its binaries are under another key, so it compiles
  (the tuning records are keyed with the toolchain too, so it benchmarks).

Each process launches each kernel's CUDA variant (NineToothed's source)
and its NPU variant emulated on CUDA (the autotuner made at the first
launch by a cached factory), checks the result against torch, and reports
seconds to the first result, files Triton wrote through the cache manager,
benchmarks run and the configs chosen.

    python scripts/shared_triton_cache_on_gpu.py [--redis-server PATH] [--json FILE]

Needs a CUDA GPU, torch, CUDA Triton, ninetoothed and the ``redis`` package
on the path, and a ``redis-server`` executable (``--redis-server``, else
``$PATH``). Exits 1 where a check fails.
"""

import argparse
import json
import os
import pathlib
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

KERNELS = ("examples/elementwise/add.py", "examples/matmul/matmul.py")

MANAGER = "ninetoothed_ascend.cache.triton_binaries:StoreCacheManager"

PROGRAM = """
    import functools, importlib.util, json, os, sys, time
    import torch
    from triton.runtime.autotuner import Autotuner
    from ninetoothed_ascend.cache import triton_binaries

    written = []
    put = triton_binaries.StoreCacheManager.put
    def counted_put(self, data, filename, binary=True):
        # A group's index is also written when a group is read from the store.
        if not filename.startswith("__grp__"):
            written.append(filename)
        return put(self, data, filename, binary=binary)
    triton_binaries.StoreCacheManager.put = counted_put

    def autotuners(launch):
        found = []
        for value in launch.__globals__.values():
            if isinstance(value, Autotuner):
                found.append(value)
            elif callable(getattr(value, "cache_info", None)):
                # The NPU variant's factory takes no arguments; other cached
                # functions of the module do.
                try:
                    made = value()
                except TypeError:
                    continue
                if isinstance(made, Autotuner):
                    found.append(made)
        return found

    report = []
    for path in json.loads(os.environ["GPU_TEST_KERNELS"]):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        start = time.perf_counter()
        spec.loader.exec_module(module)
        made = time.perf_counter() - start
        handle = module.kernel
        for variant, launch in (("cuda", handle.variant("cuda")),
                                ("npu emulated", handle.emulated("cuda"))):
            tuners = autotuners(launch)
            benchmarks = []
            for tuner in tuners:
                real = tuner.do_bench
                def counted(kernel_call, quantiles, real=real):
                    benchmarks.append(1)
                    return real(kernel_call, quantiles=quantiles)
                tuner.do_bench = counted
            before = len(written)
            args = module.inputs("cuda", torch.float16)
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = module.launch(launch, *args)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            expected = module.reference(*args)
            report.append({
                "kernel": handle.kernel_name, "variant": variant,
                "ok": bool(torch.allclose(result.float(), expected.float(), atol=2e-2, rtol=2e-2)),
                "seconds": seconds, "make_seconds": made,
                "files_written": len(written) - before,
                "benchmarks": len(benchmarks),
                "configs": [str(t.best_config) for t in tuners],
            })
    print(json.dumps(report))
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))

        return probe.getsockname()[1]


def start_server(executable, directory):
    import redis

    port = free_port()
    process = subprocess.Popen(
        [
            executable,
            *("--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(directory)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_timeout=10)
    deadline = time.monotonic() + 10

    while True:
        try:
            client.ping()

            return process, client, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                sys.exit(f"redis-server ({executable}) did not start on port {port}")

            time.sleep(0.05)


def run(name, work, environment):
    directory = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work))
    env = os.environ | environment
    env |= {
        "TRITON_CACHE_DIR": str(directory / "triton"),
        "NINETOOTHED_ASCEND_CACHE_DIR": str(directory / "ninetoothed"),
        "PYTHONPATH": os.pathsep.join(
            filter(None, (str(ROOT / "src"), os.environ.get("PYTHONPATH")))
        ),
        "GPU_TEST_KERNELS": json.dumps([str(ROOT / k) for k in KERNELS]),
    }
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    wall = time.perf_counter() - start

    if completed.returncode != 0:
        sys.exit(f"process {name} failed:\n{completed.stderr}")

    return {
        "name": name,
        "wall_seconds": wall,
        "rows": json.loads(completed.stdout.strip().splitlines()[-1]),
    }


def fake_compiler(directory, version):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bishengir-compile"
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)

    return directory


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    parser.add_argument("--json", help="write the measurements to this file")
    options = parser.parse_args()

    if options.redis_server is None:
        sys.exit("no redis-server: pass --redis-server PATH")

    import torch
    import triton

    print(
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"triton {triton.__version__}"
    )
    work = pathlib.Path(tempfile.mkdtemp(prefix="shared-triton-cache-"))
    server, client, url = start_server(options.redis_server, work)

    try:
        shared = {
            "TRITON_CACHE_MANAGER": MANAGER,
            "NINETOOTHED_ASCEND_REMOTE_CACHE": url,
            "NINETOOTHED_ASCEND_REMOTE_SECRET": secrets.token_hex(16),
            "NINETOOTHED_ASCEND_SHARED_TUNING": "1",
        }
        other = fake_compiler(work / "bin", "bishengir-compile 0.0.0 (another build)")
        runs = [
            run("cold", work, {}),
            run("A", work, shared),
            run("B", work, shared),
            run(
                "B-other-toolchain",
                work,
                shared | {"PATH": f"{other}{os.pathsep}{os.environ['PATH']}"},
            ),
        ]
        store_bytes = sum(
            client.memory_usage(name) or 0
            for name in client.scan_iter("ninetoothed-ascend:triton:*")
        )
    finally:
        server.kill()
        server.wait()

    print(
        "| process | kernel | variant | ok | s to first result | files compiled | benchmarks | configs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")

    for measured in runs:
        for row in measured["rows"]:
            print(
                f"| {measured['name']} | {row['kernel']} | {row['variant']} | {row['ok']} "
                f"| {row['seconds']:.2f} | {row['files_written']} | {row['benchmarks']} "
                f"| {'; '.join(row['configs'])} |"
            )

    print(f"Triton's files on the store: {store_bytes / 2**20:.1f} MiB")
    by_name = {measured["name"]: measured["rows"] for measured in runs}
    failures = []

    for index, row in enumerate(by_name["B"]):
        first = by_name["A"][index]
        label = f"{row['kernel']} ({row['variant']})"

        if not (row["ok"] and first["ok"] and by_name["cold"][index]["ok"]):
            failures.append(f"{label}: a result differs from torch")

        if row["files_written"] != 0:
            failures.append(f"{label}: B compiled {row['files_written']} files")

        if row["benchmarks"] != 0 or row["configs"] != first["configs"]:
            failures.append(f"{label}: B benchmarked or chose other configs than A")

        if first["files_written"] == 0 or first["benchmarks"] == 0:
            failures.append(f"{label}: A neither compiled nor benchmarked")

        if by_name["B-other-toolchain"][index]["files_written"] == 0:
            failures.append(f"{label}: another toolchain loaded A's binaries")

    if options.json:
        pathlib.Path(options.json).write_text(json.dumps(runs, indent=1))

    for failure in failures:
        print(f"FAIL {failure}")

    print("OK" if not failures else f"{len(failures)} failures")

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
