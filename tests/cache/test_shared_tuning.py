"""Shared tuning on Triton's interpreter: a second process, or machine, reuses the recorded choice without benchmarking.

Each run is a new interpreter (``TRITON_INTERPRET=1``) that launches the
CUDA variant of ``add`` (NineToothed's source, autotuned over 6 configs)
through its handle. The interpreter has no benchmarker and cannot run
NineToothed's source itself ("arange's arguments must be of type
tl.constexpr"), so the program gives the autotuner a counting benchmarker
(its times make the last config, or with ``"order": "up"`` the first, the
fastest) and records the config the launch runs with instead of running it.
The choice itself is Triton's autotuner's, through the variant's launch.
"""

import json

import pytest
import test_remote
from conftest import EXAMPLE_PATHS
from helpers import run_python

from ninetoothed_ascend.cache.shared_tuning import bucket

SECRET = test_remote.SECRET

#: A ``redis-server`` of a test (the fixture of ``test_remote``).
server = test_remote.server

PROGRAM = """
    import importlib.util, json, os, warnings
    import torch
    from triton.runtime.autotuner import Autotuner
    test = json.loads(os.environ["TUNING_TEST"])
    caught = warnings.catch_warnings(record=True)
    seen = caught.__enter__()
    warnings.simplefilter("always")
    spec = importlib.util.spec_from_file_location("add", test["path"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    launch = module.kernel.variant("cuda")
    (tuner,) = [v for v in launch.__globals__.values() if isinstance(v, Autotuner)]
    benchmarks, launched = [], []
    def bench(kernel_call, quantiles):
        benchmarks.append(1)
        t = float(len(benchmarks)) if test["order"] == "up" else 100.0 - len(benchmarks)
        return [t, t, t]
    class Launched:
        def run(self, *args, **kwargs):
            launched.append({k: v for k, v in kwargs.items() if k.startswith("ninetoothed_meta")})
    tuner.do_bench = bench
    tuner.fn = Launched()
    for n in test["sizes"]:
        args = module.inputs("cpu", torch.float32, shape=(n,))
        module.launch(launch, *args)
    print(json.dumps({"benchmarks": len(benchmarks), "launched": launched,
                      "warnings": [str(w.message) for w in seen
                                   if "ninetoothed-ascend" in str(w.message)]}))
"""

SMALLEST = {"ninetoothed_meta_prefix_ninetoothed_BLOCK_SIZE_0": 32}
LARGEST = {"ninetoothed_meta_prefix_ninetoothed_BLOCK_SIZE_0": 1024}


@pytest.fixture(autouse=True)
def no_configuration(monkeypatch):
    for variable in (
        "NINETOOTHED_ASCEND_REMOTE_CACHE",
        "NINETOOTHED_ASCEND_REMOTE_SECRET",
        "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE",
        "NINETOOTHED_ASCEND_SHARED_TUNING",
    ):
        monkeypatch.delenv(variable, raising=False)


def tune(cache_dir, sizes=(4099,), order="down", url=None, secret=SECRET, share=True):
    """Run :data:`PROGRAM` in a new interpreter; return what it printed."""

    environment = {
        "TRITON_INTERPRET": "1",
        "TUNING_TEST": json.dumps(
            {"path": str(EXAMPLE_PATHS["add"]), "sizes": list(sizes), "order": order}
        ),
    }

    if share:
        environment["NINETOOTHED_ASCEND_SHARED_TUNING"] = "1"

    if url is not None:
        environment["NINETOOTHED_ASCEND_REMOTE_CACHE"] = url

    if url is not None and secret is not None:
        environment["NINETOOTHED_ASCEND_REMOTE_SECRET"] = secret

    return run_python(PROGRAM, cache_dir, **environment)


def test_buckets_hold_sizes_within_a_factor_of_two():
    assert bucket(4097) == bucket(5000) == bucket(8192) == ("pow2", 13)
    assert bucket(4096) == ("pow2", 12) != bucket(4097)
    # Unit strides, layout flags and dtypes stay exact.
    assert [bucket(v) for v in (0, 1, True, False, "torch.float16")] == [
        0,
        1,
        True,
        False,
        "torch.float16",
    ]


def test_a_second_process_reuses_the_choice_of_its_bucket(tmp_path):
    first = tune(tmp_path)

    assert first["benchmarks"] == 6 and first["launched"] == [LARGEST]
    assert len(list((tmp_path / "tuning").glob("*.json"))) == 1

    # Would choose the smallest if it benchmarked.
    second = tune(tmp_path, sizes=(4099, 5000, 8192), order="up")

    assert second["benchmarks"] == 0 and second["launched"] == [LARGEST] * 3

    other_bucket = tune(tmp_path, sizes=(2000,), order="up")

    assert other_bucket["benchmarks"] == 6 and other_bucket["launched"] == [SMALLEST]


def test_off_unless_asked(tmp_path):
    tune(tmp_path)
    unshared = tune(tmp_path, order="up", share=False)

    assert unshared["benchmarks"] == 6 and unshared["launched"] == [SMALLEST]


def test_a_machine_reuses_the_choice_of_another_through_the_store(server, tmp_path):
    first = tune(tmp_path / "a", url=server.url)

    assert first["benchmarks"] == 6 and first["warnings"] == []
    assert len(server.client.keys("ninetoothed-ascend:tuning:*")) == 1

    second = tune(tmp_path / "b", order="up", url=server.url)
    # Without the secret: reads, and writes nothing.
    reader = tune(tmp_path / "c", order="up", url=server.url, secret=None)

    assert second["benchmarks"] == 0 and second["launched"] == [LARGEST]
    assert reader["benchmarks"] == 0 and reader["launched"] == [LARGEST]

    tune(tmp_path / "d", sizes=(2000,), url=server.url, secret=None)

    assert len(server.client.keys("ninetoothed-ascend:tuning:*")) == 1


def forge(server, record, mac=None):
    (name,) = server.client.keys("ninetoothed-ascend:tuning:*")
    server.client.hset(name, "record", json.dumps(record))

    if mac is not None:
        server.client.hset(name, "mac", mac)


@pytest.mark.parametrize("secret", [SECRET, None], ids=["with-secret", "reader"])
def test_a_record_naming_no_config_of_the_kernel_is_ignored(server, tmp_path, secret):
    tune(tmp_path / "a", url=server.url)
    # A block size the kernel does not state, under a config's index.
    forge(server, {"index": 0, "config": {**SMALLEST, "num_warps": 64}})
    forged = tune(tmp_path / "b", order="up", url=server.url, secret=secret)

    assert forged["benchmarks"] == 6 and forged["launched"] == [SMALLEST]
    assert any("no valid HMAC" in message for message in forged["warnings"]) == (
        secret is not None
    )


def test_a_record_without_a_valid_mac_is_ignored_with_the_secret(server, tmp_path):
    first = tune(tmp_path / "a", url=server.url)
    (name,) = server.client.keys("ninetoothed-ascend:tuning:*")
    record = json.loads(server.client.hget(name, "record"))
    # A real config of the kernel, the smallest, but not written with the secret.
    forge(server, {"index": 0, "config": {**record["config"], **SMALLEST}}, "0" * 64)
    forged = tune(tmp_path / "b", url=server.url)

    assert first["launched"] == forged["launched"] == [LARGEST]
    assert forged["benchmarks"] == 6
    assert len(forged["warnings"]) == 1 and "no valid HMAC" in forged["warnings"][0]


def test_a_server_that_is_down_leaves_local_records(server, tmp_path):
    server.process.kill()
    server.process.wait()
    first = tune(tmp_path, url=server.url)
    second = tune(tmp_path, order="up", url=server.url)

    assert first["benchmarks"] == 6 and second["benchmarks"] == 0
    assert len(first["warnings"]) == 1 and "is unreachable" in first["warnings"][0]


#: A module as the NPU variant has it: the autotuner made by a cached factory
#: at the first launch (DeferAutotune).
FACTORY_MODULE = """
import functools
import triton
import triton.language as tl

@triton.jit
def kernel(x, n, BLOCK: tl.constexpr):
    pass

@functools.cache
def kernel_with_auto_tuning():
    return triton.autotune(
        configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
        key=["n"],
    )(kernel)

def launch_kernel(x, n):
    return kernel_with_auto_tuning()
"""


def test_an_autotuner_made_by_a_factory_at_the_first_launch_is_shared(tmp_path):
    from ninetoothed_ascend.cache import shared_tuning

    path = tmp_path / "variant.py"
    path.write_text(FACTORY_MODULE)
    namespace = {"__name__": "variant", "__file__": str(path)}
    exec(compile(FACTORY_MODULE, str(path), "exec"), namespace)
    factory = namespace["kernel_with_auto_tuning"]

    launch = shared_tuning.share(namespace["launch_kernel"], "0" * 64, "npu", tmp_path)

    assert namespace["kernel_with_auto_tuning"] is not factory
    tuner = launch(None, 4099)
    assert isinstance(tuner.cache, shared_tuning.Choices)
    assert launch(None, 4099) is tuner

    # The choice a benchmark makes is recorded and found for the bucket.
    tuner.cache[(4099, "torch.float16")] = tuner.configs[1]
    other = shared_tuning.Choices(
        tuner,
        shared_tuning.Records(tmp_path),
        ("0" * 64, "npu", "kernel_with_auto_tuning"),
    )

    assert (5000, "torch.float16") in other and other[
        (5000, "torch.float16")
    ] is tuner.configs[1]
    assert (4096, "torch.float16") not in other

    # Sharing again changes nothing.
    shared = namespace["kernel_with_auto_tuning"]
    shared_tuning.share(launch, "0" * 64, "npu", tmp_path)

    assert namespace["kernel_with_auto_tuning"] is shared
