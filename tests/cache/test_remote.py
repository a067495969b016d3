"""The remote tier on a real ``redis-server``: read-through, authenticated writes, refusals, faults, load.

Each test starts its own server on the loopback (no persistence) and stops
it at the end. Every kernel is made in a new interpreter, as a machine of
a fleet would, each with a cache directory of its own.
"""

import contextlib
import hashlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest
from click.testing import CliRunner
from conftest import EXAMPLE_PATHS
from helpers import run_python

from ninetoothed_ascend.cache import Cache, remote
from ninetoothed_ascend.cache.remote import mac
from ninetoothed_ascend.cli import main

redis = pytest.importorskip(
    "redis", reason="the redis package (the `remote` extra) is not installed"
)

REDIS_SERVER = shutil.which("redis-server")

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None, reason="redis-server is not installed"
)

SECRET = "a fleet's shared secret"

#: Makes the examples that ``$REMOTE_TEST`` names in order (``"kill"`` stops
#: the server there), checks each result against its reference, and prints
#: NineToothed's generations, the pass pipelines run, what ``make`` built,
#: the results, the warnings, the seconds the makes took and the seconds they
#: spent in the remote store's fetches and publishes.
PROGRAM = """
    import importlib, importlib.util, json, os, signal, time, warnings
    import torch
    jit = importlib.import_module("ninetoothed_ascend.jit")
    test = json.loads(os.environ["REMOTE_TEST"])
    calls, built, ok = [], [], {}
    generate = jit.generate_source
    jit.generate_source = lambda *a, **k: calls.append(1) or generate(*a, **k)
    variants, pipelines = importlib.import_module("ninetoothed_ascend.jit.variants"), []
    run_pipeline = variants.run_pipeline
    variants.run_pipeline = lambda *a, **k: pipelines.append(1) or run_pipeline(*a, **k)
    jit.observe(lambda handle, record: built.append(record["built"]))
    remote = importlib.import_module("ninetoothed_ascend.cache.remote")
    waited = []
    def timed(method):
        def call(*args, **kwargs):
            start = time.monotonic()
            try:
                return method(*args, **kwargs)
            finally:
                waited.append(time.monotonic() - start)
        return call
    remote.RemoteStore.fetch = timed(remote.RemoteStore.fetch)
    remote.RemoteStore.publish = timed(remote.RemoteStore.publish)
    seconds = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in test["names"]:
            if name == "kill":
                os.kill(test["pid"], signal.SIGKILL)
                time.sleep(0.5)
                continue
            spec = importlib.util.spec_from_file_location(name, test["paths"][name])
            module = importlib.util.module_from_spec(spec)
            start = time.monotonic()
            spec.loader.exec_module(module)
            seconds += time.monotonic() - start
            args = module.inputs("cpu", torch.float32)
            expected = module.reference(*args)
            ok[name] = bool(torch.allclose(module.launch(module.kernel, *args), expected))
    print(json.dumps({"generations": len(calls), "pipelines": len(pipelines),
                      "built": built, "ok": ok,
                      "seconds": seconds, "remote_seconds": sum(waited),
                      "warnings": [str(w.message) for w in caught
                                   if "ninetoothed-ascend" in str(w.message)]}))
"""


class Server:
    """A ``redis-server`` of a test: its URL, a client of it and its process."""

    def __init__(self, port, process):
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process = process
        self.client = redis.Redis(port=port, socket_timeout=10)

    def kernels(self):
        """The store's entries: ``{key: {"entry": bytes, "mac": bytes}}``."""

        return {
            name.decode().rsplit(":", 1)[1]: {
                field.decode(): value
                for field, value in self.client.hgetall(name).items()
            }
            for name in self.client.keys("ninetoothed-ascend:kernel:*")
        }


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))

        return probe.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """A ``redis-server`` on a free loopback port, without persistence, stopped at the end."""

    port = free_port()
    process = subprocess.Popen(
        [
            REDIS_SERVER,
            *("--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(tmp_path)),
            *("--enable-debug-command", "yes"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = Server(port, process)
    deadline = time.monotonic() + 10

    while True:
        try:
            started.client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)

    yield started

    process.kill()
    process.wait()


@pytest.fixture(autouse=True)
def no_remote_configuration(monkeypatch):
    for variable in (
        "NINETOOTHED_ASCEND_REMOTE_CACHE",
        "NINETOOTHED_ASCEND_REMOTE_SECRET",
        "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE",
    ):
        monkeypatch.delenv(variable, raising=False)


def make(cache_dir, url, names=("add",), secret=SECRET, **test):
    """Run :data:`PROGRAM` in a new interpreter; return what it printed."""

    environment = {
        "NINETOOTHED_ASCEND_REMOTE_CACHE": url,
        "REMOTE_TEST": json.dumps(
            {
                "names": list(names),
                "paths": {name: str(EXAMPLE_PATHS[name]) for name in EXAMPLE_PATHS},
                **test,
            }
        ),
    }

    if secret is not None:
        environment["NINETOOTHED_ASCEND_REMOTE_SECRET"] = secret

    return run_python(PROGRAM, cache_dir, **environment)


def test_read_through_across_two_caches(server, tmp_path):
    first = make(tmp_path / "a", server.url)

    assert first["ok"] == {"add": True} and first["built"] == [True]
    assert first["warnings"] == []
    (key,) = server.kernels()

    # An empty cache: the entry comes from the store, its HMAC verifies with
    # the secret, so it is taken as its writer stored it (generated from its
    # definition there): nothing is generated or built here.
    second = make(tmp_path / "b", server.url)

    assert second["ok"] == {"add": True} and second["built"] == [False]
    assert second["generations"] == 0 and second["pipelines"] == 0
    assert second["warnings"] == []
    local = json.loads((tmp_path / "b" / "kernels" / f"{key}.json").read_text())
    assert local["verified"] is True
    assert local["origin"] == {"kind": "remote", "from": server.url}

    # Verified once, it is a local entry like any other.
    third = make(tmp_path / "b", server.url)

    assert third["ok"] == {"add": True} and third["generations"] == 0


def test_a_client_without_the_secret_only_reads(server, tmp_path):
    reader = make(tmp_path / "a", server.url, secret=None)

    assert reader["ok"] == {"add": True} and reader["built"] == [True]
    assert server.client.dbsize() == 0, "a client without the secret wrote"

    make(tmp_path / "b", server.url)
    read = make(tmp_path / "c", server.url, secret=None)

    assert read["ok"] == {"add": True} and read["built"] == [False]
    assert read["warnings"] == []
    # It cannot check the HMAC: every variant of the entry is built here and
    # compared, and NineToothed's source generated to bind it.
    assert read["generations"] == 1 and read["pipelines"] >= 2


def test_an_entry_a_holder_of_the_secret_did_not_verify_is_bound_once_for_the_fleet(
    server, tmp_path
):
    # As `warm --remote` of a manifest publishes it: written with the secret,
    # but never compared with its definition ("verified": false).
    make(tmp_path / "a", server.url)
    (key,) = server.kernels()
    entry = json.loads(server.kernels()[key]["entry"])
    entry["verified"] = False
    data = json.dumps(entry).encode()
    digests = [r["digest"] for r in entry["variants"].values() if r["digest"]]
    server.client.hset(
        f"ninetoothed-ascend:kernel:{key}",
        mapping={"entry": data, "mac": mac(SECRET.encode(), key, data, digests)},
    )

    # The first reader takes its variants as they are, generates NineToothed's
    # source to compare, and puts the entry back verified.
    first = make(tmp_path / "b", server.url)

    assert first["ok"] == {"add": True} and first["built"] == [False]
    assert first["generations"] == 1 and first["pipelines"] == 0
    assert json.loads(server.kernels()[key]["entry"])["verified"] is True

    second = make(tmp_path / "c", server.url)

    assert second["ok"] == {"add": True}
    assert second["generations"] == 0 and second["pipelines"] == 0


def test_an_entry_goes_on_the_store_without_the_path_it_came_from_here(
    server, tmp_path, monkeypatch
):
    make(tmp_path / "a", server.url)
    (key,) = server.kernels()
    server.client.flushdb()
    # As `warm` of a manifest records it: the manifest's path on this machine.
    path = tmp_path / "a" / "kernels" / f"{key}.json"
    local = json.loads(path.read_text())
    local["origin"] = {"kind": "manifest", "from": "/home/alice/private/ops.json"}
    path.write_text(json.dumps(local))
    monkeypatch.setenv("NINETOOTHED_ASCEND_REMOTE_SECRET", SECRET)
    cache = Cache(tmp_path / "a")
    entry = cache.load(key)

    assert entry.origin == local["origin"]
    assert remote.writer(server.url).publish(cache, key, entry, raise_errors=True)

    published = json.loads(server.kernels()[key]["entry"])

    assert published["origin"] == {"kind": "manifest", "from": None}
    assert published | {"origin": local["origin"]} == local


def malicious(source, marker):
    """``source`` that first writes ``marker`` when it is executed."""

    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + source


def put_source(server, text):
    data = text.encode()
    digest = hashlib.sha256(data).hexdigest()
    server.client.set(f"ninetoothed-ascend:source:{digest}", data)

    return digest


def poison_source_kept_mac(server, key, marker):
    # A source replaced and the entry rewritten to name it; the HMAC kept.
    record = server.kernels()[key]
    entry = json.loads(record["entry"])
    source = server.client.get(
        f"ninetoothed-ascend:source:{entry['variants']['cuda']['digest']}"
    ).decode()
    entry["variants"] = {"cuda": entry["variants"]["cuda"]}
    entry["variants"]["cuda"]["digest"] = put_source(server, malicious(source, marker))
    server.client.hset(
        f"ninetoothed-ascend:kernel:{key}", "entry", json.dumps(entry).encode()
    )


def poison_source_bytes(server, key, marker):
    # A source's bytes replaced under its digest: the entry and HMAC untouched.
    entry = json.loads(server.kernels()[key]["entry"])
    name = f"ninetoothed-ascend:source:{entry['variants']['cuda']['digest']}"
    server.client.set(name, malicious(server.client.get(name).decode(), marker))


def poison_other_secret(server, key, marker):
    # The same rewrite, its HMAC computed with another secret.
    poison_source_kept_mac(server, key, marker)
    entry = server.kernels()[key]["entry"]
    digests = [
        record["digest"]
        for record in json.loads(entry)["variants"].values()
        if record["digest"]
    ]
    server.client.hset(
        f"ninetoothed-ascend:kernel:{key}",
        "mac",
        mac(b"another secret", key, entry, digests),
    )


@pytest.mark.parametrize(
    "poison",
    [poison_source_kept_mac, poison_source_bytes, poison_other_secret],
    ids=["source-changed-mac-kept", "source-bytes-swapped", "mac-of-another-secret"],
)
def test_a_tampered_entry_never_runs(server, tmp_path, poison):
    make(tmp_path / "a", server.url)
    (key,) = server.kernels()
    marker = tmp_path / "ran"
    poison(server, key, marker)

    result = make(tmp_path / "b", server.url)

    assert not marker.exists()
    assert result["ok"] == {"add": True} and result["built"] == [True]
    assert len(result["warnings"]) == 1
    assert f"refused the entry of kernel {key[:12]}" in result["warnings"][0]


def test_swapped_entries_are_refused(server, tmp_path):
    make(tmp_path / "a", server.url, names=("add", "mul"))
    kernels = server.kernels()
    first, second = sorted(kernels)

    for key, other in ((first, second), (second, first)):
        server.client.hset(f"ninetoothed-ascend:kernel:{key}", mapping=kernels[other])

    result = make(tmp_path / "b", server.url, names=("add", "mul"))

    assert result["ok"] == {"add": True, "mul": True}
    assert result["built"] == [True, True]
    # One warning per process for the refusals, however many.
    assert len(result["warnings"]) == 1
    assert "refused the entry" in result["warnings"][0]


def test_a_forged_entry_read_without_the_secret_never_runs(server, tmp_path):
    # Without the secret a reader cannot check the HMAC: a forged entry that
    # passes the archive checks is still compared with what its definition
    # generates before anything of it runs.
    make(tmp_path / "a", server.url)
    (key,) = server.kernels()
    marker = tmp_path / "ran"
    poison_source_kept_mac(server, key, marker)

    result = make(tmp_path / "b", server.url, secret=None)

    assert not marker.exists()
    assert result["ok"] == {"add": True} and result["built"] == [True]
    assert any("is not what the definition" in w for w in result["warnings"])


def fault_warnings(result):
    return [w for w in result["warnings"] if "the remote cache" in w]


def test_a_server_that_is_down(tmp_path):
    result = make(
        tmp_path / "a",
        f"redis://127.0.0.1:{free_port()}/0",
        names=("add", "softmax"),
    )

    assert result["ok"] == {"add": True, "softmax": True}
    (warning,) = fault_warnings(result)
    assert "is unreachable" in warning


def test_a_server_killed_mid_run(server, tmp_path):
    result = make(
        tmp_path / "a",
        server.url,
        names=("add", "kill", "softmax", "mul"),
        pid=server.process.pid,
    )

    assert result["ok"] == {"add": True, "softmax": True, "mul": True}
    assert result["built"] == [True, True, True]
    (warning,) = fault_warnings(result)
    assert "is unreachable" in warning


def test_a_full_server(server, tmp_path):
    server.client.config_set("maxmemory-policy", "noeviction")
    server.client.config_set("maxmemory", 1)

    result = make(tmp_path / "a", server.url, names=("add", "softmax"))

    assert result["ok"] == {"add": True, "softmax": True}
    (warning,) = fault_warnings(result)
    assert "is full" in warning
    assert server.client.dbsize() == 0


def test_a_slow_server_stalls_no_make_for_long(server, tmp_path):
    from ninetoothed_ascend.cache.remote import TIMEOUT

    def block():
        # Answered when the test has ended and the server is stopped.
        with contextlib.suppress(redis.RedisError):
            redis.Redis.from_url(server.url).execute_command("DEBUG", "SLEEP", 60)

    blocked = threading.Thread(target=block, daemon=True)
    blocked.start()
    time.sleep(0.2)

    names = ("add", "softmax", "mul")
    result = make(tmp_path / "b", server.url, names=names)

    assert result["ok"] == dict.fromkeys(names, True)
    (warning,) = fault_warnings(result)
    assert "did not answer" in warning
    # The first command waits TIMEOUT and the store is then left alone: a
    # wait per kernel would be 2 * TIMEOUT each (a fetch and a publish).
    assert TIMEOUT <= result["remote_seconds"] < 2 * TIMEOUT


#: Makes the kernels ``$LOAD_TEST`` names, in order: each is ``output = input
#: * n + 1`` for its ``n``, from a module of its own in ``$LOAD_TEST``'s
#: directory, with one arrangement. A kernel's key holds NineToothed's naming
#: counters, which each make advances, so processes share a kernel where they
#: make the same kernels in the same order, as copies of one program do.
#: Checks each result against torch and prints which makes generated, the
#: results and the warnings.
LOAD_PROGRAM = """
    import importlib, importlib.util, json, os, warnings
    import ninetoothed, torch
    from ninetoothed import Tensor
    import ninetoothed_ascend
    jit = importlib.import_module("ninetoothed_ascend.jit")
    test = json.loads(os.environ["LOAD_TEST"])
    def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
        return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))
    built, ok = [], []
    jit.observe(lambda handle, record: built.append(record["built"]))
    input = torch.arange(100, dtype=torch.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(test["kernels"]):
            path = os.path.join(test["directory"], f"scale_{n}.py")
            spec = importlib.util.spec_from_file_location(f"scale_{n}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            kernel = ninetoothed_ascend.make(
                arrangement, module.application, (Tensor(1), Tensor(1))
            )
            output = torch.empty_like(input)
            kernel(input, output)
            ok.append(bool(torch.equal(output, input * n + 1)))
    print(json.dumps({"built": built, "ok": ok,
                      "warnings": [str(w.message) for w in caught
                                   if "ninetoothed-ascend" in str(w.message)]}))
"""

#: The load: processes at once, the kernels they make in all, the kernels
#: one machine put on the store before them, the distinct kernels.
PROCESSES, MAKES, WARMED, KERNELS = 32, 200, 4, 7


def test_32_processes_make_200_kernels_against_one_server(server, tmp_path):
    for n in range(KERNELS):
        (tmp_path / f"scale_{n}.py").write_text(
            f"def application(input, output):\n    output = input * {n} + 1  # noqa: F841\n"
        )

    def started(kernels, name):
        return subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(LOAD_PROGRAM)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ
            | {
                "NINETOOTHED_ASCEND_REMOTE_CACHE": server.url,
                "NINETOOTHED_ASCEND_REMOTE_SECRET": SECRET,
                "NINETOOTHED_ASCEND_CACHE_DIR": str(tmp_path / name),
                "LOAD_TEST": json.dumps(
                    {"kernels": kernels, "directory": str(tmp_path)}
                ),
            },
        )

    def result(process, timeout):
        stdout, stderr = process.communicate(timeout=timeout)
        assert process.returncode == 0, stderr

        return json.loads(stdout.strip().splitlines()[-1])

    # One machine makes the first kernels; then 32 copies of the program
    # make them and the others at once (200 makes: 8 processes 7 kernels,
    # 24 processes 6).
    first = result(started(WARMED, "first"), 300)
    assert first["built"] == [True] * WARMED and all(first["ok"]), first
    counts = [
        MAKES // PROCESSES + (index < MAKES % PROCESSES) for index in range(PROCESSES)
    ]
    start = time.monotonic()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    processes = [started(count, f"cache_{index}") for index, count in enumerate(counts)]
    results = [result(process, 600) for process in processes]
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime

    for count, outcome in zip(counts, results):
        assert outcome["ok"] == [True] * count, outcome
        assert outcome["warnings"] == [], outcome["warnings"]
        # What the store held before is read, never generated again.
        assert outcome["built"][:WARMED] == [False] * WARMED, outcome

    generated = sum(sum(outcome["built"]) for outcome in results)
    assert sum(len(outcome["built"]) for outcome in results) == MAKES
    # One entry per kernel. The kernels not on the store are generated at
    # least once, and at most once by each process that missed them.
    assert len(server.kernels()) == KERNELS
    assert KERNELS - WARMED <= generated <= sum(count - WARMED for count in counts)
    # 2-core CI, loaded: a bound that a hang or a retry storm breaks.
    assert elapsed < 400, elapsed
    print(
        f"{PROCESSES} processes making {MAKES} kernels against one server: "
        f"{elapsed:.1f} s ({cpu:.1f} CPU s), {generated} generated, the other "
        f"{MAKES - generated} read from the store"
    )


def test_an_evicted_source_is_a_miss_not_a_refusal(server, tmp_path):
    make(tmp_path / "a", server.url)
    (key,) = server.kernels()
    server.client.delete(*server.client.keys("ninetoothed-ascend:source:*"))

    result = make(tmp_path / "b", server.url)

    assert result["ok"] == {"add": True} and result["built"] == [True]
    assert result["warnings"] == []


def test_the_secret_comes_from_the_environment_or_a_file(tmp_path, monkeypatch):
    url = f"redis://127.0.0.1:{free_port()}/3"
    monkeypatch.setenv(remote.REMOTE_VARIABLE, url)
    path = tmp_path / "secret"
    path.write_text("from a file\nignored\n")
    monkeypatch.setenv(remote.SECRET_FILE_VARIABLE, str(path))

    assert remote.store_from_environment().secret == b"from a file"
    assert remote.store_from_environment().name == url

    monkeypatch.setenv(remote.SECRET_VARIABLE, "from the environment")

    assert remote.store_from_environment().secret == b"from the environment"

    monkeypatch.delenv(remote.SECRET_VARIABLE)
    monkeypatch.setenv(remote.SECRET_FILE_VARIABLE, str(tmp_path / "missing"))

    with pytest.warns(UserWarning, match="cannot read the secret file .*missing"):
        assert remote.store_from_environment() is None

    monkeypatch.delenv(remote.REMOTE_VARIABLE)

    assert remote.store_from_environment() is None


def test_the_mac_covers_the_key_the_entry_and_its_sources():
    key, other = "a" * 64, "b" * 64
    reference = mac(b"secret", key, b"{}", ["c" * 64])

    assert mac(b"secret", key, b"{}", ["c" * 64]) == reference
    assert mac(b"other", key, b"{}", ["c" * 64]) != reference
    assert mac(b"secret", other, b"{}", ["c" * 64]) != reference
    assert mac(b"secret", key, b"{ }", ["c" * 64]) != reference
    assert mac(b"secret", key, b"{}", ["d" * 64]) != reference


def test_without_the_redis_package_the_cache_is_local_with_one_warning(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, "redis", None)  # ``import redis`` fails
    monkeypatch.setenv(remote.REMOTE_VARIABLE, f"redis://127.0.0.1:{free_port()}/1")

    with pytest.warns(UserWarning, match=r"pip install 'ninetoothed-ascend\[remote\]'"):
        assert remote.store_from_environment() is None

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert remote.store_from_environment() is None


def warm_remote(cache_dir, url, *targets):
    result = CliRunner().invoke(
        main,
        ["warm", *map(str, targets), "--remote", url, "--json"]
        + ["--cache-dir", str(cache_dir)],
    )

    assert result.exit_code == 0, result.output

    return json.loads(result.stdout)


def test_warm_remote_fills_the_store_for_a_fleet(server, tmp_path, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_REMOTE_SECRET", SECRET)
    paths = [EXAMPLE_PATHS["add"], EXAMPLE_PATHS["mul"]]
    report = warm_remote(tmp_path / "warm", server.url, *paths)

    assert [k["status"] for k in report["kernels"]] == ["built", "built"]
    assert all(k["published"] > 0 for k in report["kernels"])
    keys = {k["key"] for k in report["kernels"]}
    assert set(server.kernels()) == keys

    # Kernels found in the local cache are published too.
    server.client.flushdb()
    again = warm_remote(tmp_path / "warm", server.url, *paths)

    assert [k["status"] for k in again["kernels"]] == ["cached", "cached"]
    assert set(server.kernels()) == keys

    # A fresh cache takes every kernel from the store: no generation of
    # NineToothed's source, no pass pipeline. Each module made first in its
    # process, as `warm` imported it (the keys hold NineToothed's counters).
    monkeypatch.delenv("NINETOOTHED_ASCEND_REMOTE_SECRET")

    for name in ("add", "mul"):
        reader = make(tmp_path / "reader", server.url, names=(name,))

        assert reader["ok"] == {name: True}
        assert reader["built"] == [False] and reader["warnings"] == []
        assert reader["generations"] == 0 and reader["pipelines"] == 0

    # `ls` and `info` say where each entry came from.
    invoke = CliRunner().invoke
    listed = json.loads(
        invoke(main, ["ls", "--json", "--cache-dir", str(tmp_path / "reader")]).stdout
    )

    assert {row["key"]: row["origin"] for row in listed["kernels"]} == {
        key: {"kind": "remote", "from": server.url} for key in keys
    }
    assert (
        "  remote  "
        in invoke(main, ["ls", "--cache-dir", str(tmp_path / "reader")]).stdout
    )
    key = sorted(keys)[0]
    info = invoke(main, ["info", key[:12], "--cache-dir", str(tmp_path / "reader")])

    assert f"origin: read from the remote cache {server.url}\n" in info.stdout
    warmed = invoke(main, ["info", key[:12], "--cache-dir", str(tmp_path / "warm")])

    assert "origin: generated here from its definition\n" in warmed.stdout


def test_warm_remote_of_an_unreachable_server_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_REMOTE_SECRET", SECRET)
    url = f"redis://127.0.0.1:{free_port()}/0"
    result = CliRunner().invoke(
        main,
        ["warm", str(EXAMPLE_PATHS["add"]), "--remote", url]
        + ["--cache-dir", str(tmp_path / "c")],
    )

    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert result.output.startswith(
        f"Error: warm --remote: the remote cache {url} is unreachable ("
    )
    assert not (tmp_path / "c" / "kernels").exists(), "it warmed before checking"
