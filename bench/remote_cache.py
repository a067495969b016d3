"""A fleet's remote cache against none: the makes of a fresh process with an empty local cache, per example group.

For each group (``examples/<group>/``) a ``redis-server`` of this script's
own (loopback, no persistence, emptied between groups) is filled by one
fleet machine: a process that executes every example module of the group
in turn (each ``make``s its kernels) with the store and its secret set, so
that each kernel it generates is put on the store. Then, per repeat, one
fresh process per mode executes the same modules in the same order (the
keys hold NineToothed's naming counters, which each ``make`` of a process
advances) with an empty cache directory, and times the modules' execution
(the ``make`` calls, and in the store modes the Redis client's import at
the first miss):

* ``cold``: no remote cache; every kernel generated here;
* ``store``: the warm store, read with the secret (entries whose HMAC
  verifies are taken as their writer stored them);
* ``no secret``: the warm store, read without the secret (each entry's
  variants built here and compared, and NineToothed's source generated to
  bind it to its definition).

The modes take turns within each repeat, so that they share the machine's
load. Each process also counts NineToothed's generations and the pass
pipelines it ran and the remote cache's warnings, which the table reports
summed over the repeats of the ``store`` mode (0, 0, 0: nothing was
generated; a fault, such as a command that waited past ``remote.TIMEOUT``
on a loaded machine, makes that process generate its kernels). Bytes on the store per kernel: the stored lengths
of its entry (JSON and ``mac``) and of the sources it names, and Redis's
``MEMORY USAGE`` of those keys, which adds the server's own overhead;
sources shared by two kernels of a group count for each.

    python bench/remote_cache.py [--repeats 3] [--groups elementwise matmul ...]
"""

import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SECRET = "the benchmark's secret"

#: Executes the example modules given, timing them; prints JSON.
PROGRAM = """
import importlib, importlib.util, json, pathlib, sys, time, warnings
import torch
import ninetoothed_ascend
jit = importlib.import_module("ninetoothed_ascend.jit")
variants = importlib.import_module("ninetoothed_ascend.jit.variants")
counts = {"generations": 0, "pipelines": 0, "kernels": 0}
def counted(name, function):
    def call(*args, **kwargs):
        counts[name] += 1
        return function(*args, **kwargs)
    return call
jit.generate_source = counted("generations", jit.generate_source)
variants.run_pipeline = counted("pipelines", variants.run_pipeline)
jit.observe(lambda handle, record: counts.__setitem__("kernels", counts["kernels"] + 1))
modules = []
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location(pathlib.Path(path).stem, path)
    modules.append((spec, importlib.util.module_from_spec(spec)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    start = time.perf_counter()
    for spec, module in modules:
        spec.loader.exec_module(module)
    seconds = time.perf_counter() - start
print(json.dumps(counts | {"seconds": seconds, "warnings": [
    str(w.message) for w in caught if "ninetoothed-ascend" in str(w.message)]}))
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))

        return probe.getsockname()[1]


def start_server(directory):
    server = shutil.which("redis-server")

    if server is None:
        raise SystemExit("redis-server is not installed")

    port = free_port()
    process = subprocess.Popen(
        [
            server,
            *("--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(directory)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    import redis

    client = redis.Redis(port=port, socket_timeout=10)
    deadline = time.monotonic() + 10

    while True:
        try:
            client.ping()

            return process, client, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"redis-server did not start on port {port}") from None

            time.sleep(0.05)


def environment(cache_dir, url=None, secret=None):
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("NINETOOTHED_ASCEND_REMOTE")
    }
    env["NINETOOTHED_ASCEND_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    )

    if url is not None:
        env["NINETOOTHED_ASCEND_REMOTE_CACHE"] = url

    if secret is not None:
        env["NINETOOTHED_ASCEND_REMOTE_SECRET"] = secret

    return env


def measure(paths, cache_dir, url=None, secret=None):
    completed = subprocess.run(
        [sys.executable, "-c", PROGRAM, *map(str, paths)],
        env=environment(cache_dir, url, secret),
        capture_output=True,
        text=True,
        check=False,
    )

    if completed.returncode != 0:
        raise SystemExit(completed.stderr)

    return json.loads(completed.stdout.strip().splitlines()[-1])


def stored_bytes(client):
    # Per kernel on the store: (stored lengths, MEMORY USAGE), each its
    # entry's and its sources'.
    sizes = []

    for name in client.keys("ninetoothed-ascend:kernel:*"):
        record = client.hgetall(name)
        entry = json.loads(record[b"entry"])
        sources = [
            f"ninetoothed-ascend:source:{variant['digest']}"
            for variant in entry["variants"].values()
            if variant["digest"] is not None
        ]
        length = sum(map(len, record.values())) + sum(
            client.strlen(source) for source in sources
        )
        usage = sum(client.memory_usage(key) for key in [name, *sources])
        sizes.append((length, usage))

    return sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", nargs="*", help="example groups (default: all)")
    arguments = parser.parse_args()
    groups = arguments.groups or sorted(
        p.name for p in EXAMPLES.iterdir() if p.is_dir()
    )
    modes = {"cold": {}, "store": {"secret": SECRET}, "no secret": {}}
    rows = []

    with tempfile.TemporaryDirectory() as base:
        base = pathlib.Path(base)
        process, client, url = start_server(base)

        try:
            for group in groups:
                paths = sorted(
                    p
                    for p in (EXAMPLES / group).glob("*.py")
                    if not p.name.startswith("_")
                )
                client.flushdb()
                filled = measure(paths, base / f"{group}-fill", url, SECRET)
                sizes = stored_bytes(client)
                seconds = {mode: [] for mode in modes}
                counts = {mode: [] for mode in modes}

                for repeat in range(arguments.repeats):
                    for mode, options in modes.items():
                        result = measure(
                            paths,
                            base / f"{group}-{mode}-{repeat}",
                            url=None if mode == "cold" else url,
                            **options,
                        )
                        seconds[mode].append(result["seconds"])
                        counts[mode].append(result)

                        for warning in result["warnings"]:
                            print(f"{group}, {mode}: {warning}", file=sys.stderr)

                rows.append((group, filled, sizes, seconds, counts))
                print(
                    group,
                    {m: [round(s, 3) for s in v] for m, v in seconds.items()},
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            process.kill()
            process.wait()

    print(
        "| group | kernels | cold (s) | warm store (s) | cold / store | no secret (s) "
        "| store: generations, pipelines, faults (all repeats) | bytes per kernel (stored) "
        "| MEMORY USAGE per kernel | filling (s) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    for group, filled, sizes, seconds, counts in rows:
        cold, store, unsigned = (statistics.median(seconds[m]) for m in modes)
        lengths = [length for length, _ in sizes]
        usages = [usage for _, usage in sizes]
        store_runs = counts["store"]
        print(
            f"| {group} | {store_runs[0]['kernels']} | {cold:.2f} | {store:.2f} "
            f"| {cold / store:.2f}x | {unsigned:.2f} "
            f"| {sum(r['generations'] for r in store_runs)}, "
            f"{sum(r['pipelines'] for r in store_runs)}, "
            f"{sum(len(r['warnings']) for r in store_runs)} "
            f"| {statistics.mean(lengths):,.0f} | {statistics.mean(usages):,.0f} "
            f"| {filled['seconds']:.2f} |"
        )

    print(f"\nload average at the end: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
