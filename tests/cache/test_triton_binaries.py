"""Triton's binaries on a real ``redis-server``: the key with the toolchain, a group's round trip, refusals, faults.

Most tests hand Triton's cache manager what Triton's ``compile`` hands it
(bytes under Triton's names, then the group that indexes them), through
Triton's own ``get_cache_manager``. CUDA Triton also compiles for a GPU
target it is given without a GPU (down to the cubin, with the ``ptxas`` in
its wheel), so :func:`test_a_second_process_loads_what_the_first_compiled`
compiles for real; launching needs a GPU: ``scripts/shared_triton_cache_on_gpu.py``.
"""

import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings

import pytest
import test_remote

from ninetoothed_ascend.cache import toolchain, triton_binaries
from ninetoothed_ascend.cache.toolchain import Toolchain
from ninetoothed_ascend.cache.triton_binaries import StoreCacheManager, store_key

triton_cache = pytest.importorskip("triton.runtime.cache")

MANAGER = "ninetoothed_ascend.cache.triton_binaries:StoreCacheManager"

#: A compiled kernel's files as Triton 3.9 puts them (names, then bytes).
FILES = {
    "add.ttir": b"module { tt.func @add() }",
    "add.cubin": bytes(range(256)) * 64,
    "add.json": json.dumps({"name": "add", "num_warps": 4}).encode(),
}

SECRET = test_remote.SECRET

#: A ``redis-server`` of a test (the fixture of ``test_remote``).
server = test_remote.server

TRITON_KEY = hashlib.sha256(b"a kernel of a test").hexdigest()


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    for variable in (
        "NINETOOTHED_ASCEND_REMOTE_CACHE",
        "NINETOOTHED_ASCEND_REMOTE_SECRET",
        "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE",
        "ASCEND_HOME_PATH",
        "TRITON_NPU_COMPILER_PATH",
    ):
        monkeypatch.delenv(variable, raising=False)

    monkeypatch.setenv("TRITON_CACHE_MANAGER", MANAGER)
    monkeypatch.setattr(triton_binaries, "_warned_without_secret", False)
    toolchain.current.cache_clear()
    yield
    toolchain.current.cache_clear()


def fake_tool(directory, name, version):
    """An executable ``name`` in ``directory`` that prints ``version`` for ``--version``."""

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)

    return path


def manager(monkeypatch, directory, url, secret=SECRET):
    """Triton's cache manager for :data:`TRITON_KEY` with the local cache ``directory``."""

    monkeypatch.setenv("TRITON_CACHE_DIR", str(directory))
    monkeypatch.setenv("NINETOOTHED_ASCEND_REMOTE_CACHE", url)

    if secret is None:
        monkeypatch.delenv("NINETOOTHED_ASCEND_REMOTE_SECRET", raising=False)
    else:
        monkeypatch.setenv("NINETOOTHED_ASCEND_REMOTE_SECRET", secret)

    made = triton_cache.get_cache_manager(TRITON_KEY)
    assert isinstance(made, StoreCacheManager)

    return made


def compile_into(made):
    """Put :data:`FILES` and their group as Triton's ``compile`` does; return the group."""

    group = {name: made.put(data, name) for name, data in FILES.items()}
    made.put_group("add.json", group)

    return group


def read(paths):
    return {name: open(path, "rb").read() for name, path in paths.items()}


def test_the_key_adds_every_tool_and_the_target():
    chain = Toolchain(
        bishengir_compile="bishengir-compile 1.2.0 (8796a8ac1508)",
        hivmc="hivmc 8.2",
        cann="version.cfg:\nVersion=8.2.RC1",
        triton_adapter_opt="ab" * 32,
        device="GPUTarget(backend='npu', arch='Ascend910B3', warp_size=0)",
        target="cd" * 32,
    )
    key = store_key(TRITON_KEY, chain)

    assert key == store_key(TRITON_KEY, Toolchain(**vars(chain)))

    others = {
        store_key(TRITON_KEY, Toolchain(**(vars(chain) | {field: value})))
        for field, value in (
            ("bishengir_compile", "bishengir-compile 1.2.1 (0123456789ab)"),
            ("hivmc", None),
            ("cann", "version.cfg:\nVersion=8.3.RC1"),
            ("triton_adapter_opt", "ef" * 32),
            ("device", "GPUTarget(backend='npu', arch='Ascend910B4', warp_size=0)"),
            ("target", "01" * 32),
        )
    }
    others.add(store_key(hashlib.sha256(b"another kernel").hexdigest(), chain))

    assert len(others) == 7 and key not in others


def test_the_toolchain_is_found_as_triton_ascend_finds_it(monkeypatch, tmp_path):
    bin_directory = tmp_path / "bin"
    fake_tool(bin_directory, "bishengir-compile", "bishengir-compile 1.2.0 (aaaa)")
    monkeypatch.setenv("PATH", f"{bin_directory}{os.pathsep}{os.environ['PATH']}")
    cann = tmp_path / "cann"
    (cann / "compiler").mkdir(parents=True)
    (cann / "compiler" / "version.info").write_text("Version=8.2.RC1\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(cann))

    first = Toolchain.from_environment()

    assert first.bishengir_compile == "bishengir-compile 1.2.0 (aaaa)"
    assert first.cann == "compiler/version.info:\nVersion=8.2.RC1"
    # Absent tools are recorded as absent (this machine has no CANN, and
    # CUDA Triton has no Ascend backend).
    assert first.hivmc is None
    assert first == Toolchain.from_environment()

    fake_tool(bin_directory, "hivmc", "hivmc 8.2.RC1")
    with_hivmc = Toolchain.from_environment()
    fake_tool(bin_directory, "bishengir-compile", "bishengir-compile 1.2.1 (bbbb)")
    newer = Toolchain.from_environment()

    assert with_hivmc.hivmc == "hivmc 8.2.RC1"
    assert len({first.digest(), with_hivmc.digest(), newer.digest()}) == 3

    # A SoC the plugin generates for is part of the Target, so of the key.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(256 * 1024))

    assert Toolchain.from_environment().target != newer.target


def test_a_group_round_trips_between_two_local_caches(monkeypatch, tmp_path, server):
    written = compile_into(manager(monkeypatch, tmp_path / "a", server.url))

    assert read(written) == FILES
    assert server.client.keys("ninetoothed-ascend:triton:group:*")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader = manager(monkeypatch, tmp_path / "b", server.url)
        paths = reader.get_group("add.json")

    assert paths is not None and read(paths) == FILES
    assert all(str(tmp_path / "b") in path for path in paths.values())
    # Written where Triton loads it: the local cache alone serves it now.
    monkeypatch.setenv("NINETOOTHED_ASCEND_REMOTE_CACHE", "")
    local = triton_cache.FileCacheManager(reader.key).get_group("add.json")

    assert read(local) == FILES

    # A launcher is one file, read with ``get_file``.
    manager(monkeypatch, tmp_path / "a", server.url).put(b"\x7fELF launcher", "main.so")

    launcher = manager(monkeypatch, tmp_path / "c", server.url).get_file("main.so")

    assert open(launcher, "rb").read() == b"\x7fELF launcher"

    # triton-ascend's precompiled header stays where its .gch is compiled.
    manager(monkeypatch, tmp_path / "a", server.url).put(
        "#include <x>", "precompiled.h"
    )

    assert (
        manager(monkeypatch, tmp_path / "d", server.url).get_file("precompiled.h")
        is None
    )


def test_another_toolchain_misses(monkeypatch, tmp_path, server):
    bin_directory = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_directory}{os.pathsep}{os.environ['PATH']}")
    fake_tool(bin_directory, "bishengir-compile", "bishengir-compile 1.2.0 (aaaa)")
    compile_into(manager(monkeypatch, tmp_path / "a", server.url))

    fake_tool(bin_directory, "bishengir-compile", "bishengir-compile 1.2.1 (bbbb)")
    toolchain.current.cache_clear()

    assert (
        manager(monkeypatch, tmp_path / "b", server.url).get_group("add.json") is None
    )

    fake_tool(bin_directory, "bishengir-compile", "bishengir-compile 1.2.0 (aaaa)")
    toolchain.current.cache_clear()

    assert manager(monkeypatch, tmp_path / "c", server.url).get_group("add.json")


def tamper_blob(server):
    # A binary's bytes replaced under its digest; the group and its mac kept.
    digest = hashlib.sha256(FILES["add.cubin"]).hexdigest()
    server.client.set(f"ninetoothed-ascend:triton:blob:{digest}", b"\xcc" * 16)


def tamper_group(server):
    # The group made to name another blob, the mac kept.
    (name,) = server.client.keys("ninetoothed-ascend:triton:group:*")
    files = json.loads(server.client.hget(name, "files"))
    files["add.cubin"] = hashlib.sha256(b"\xcc" * 16).hexdigest()
    server.client.set(
        f"ninetoothed-ascend:triton:blob:{files['add.cubin']}", b"\xcc" * 16
    )
    server.client.hset(name, "files", json.dumps(files, sort_keys=True))


@pytest.mark.parametrize(
    "tamper, secret",
    [(tamper_blob, SECRET), (tamper_group, SECRET), (None, "another fleet's secret")],
    ids=["blob", "group", "other-secret"],
)
def test_a_tampered_binary_is_refused(monkeypatch, tmp_path, server, tamper, secret):
    compile_into(manager(monkeypatch, tmp_path / "a", server.url))

    if tamper is not None:
        tamper(server)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = manager(monkeypatch, tmp_path / "b", server.url, secret=secret)

        assert reader.get_group("add.json") is None
        assert reader.get_group("add.json") is None

    messages = [str(w.message) for w in caught]

    assert len(messages) == 1 and "refused Triton's" in messages[0], messages
    # Nothing of it reached where Triton loads binaries.
    assert not list((tmp_path / "b").rglob("*.cubin"))


def test_a_reader_without_the_secret_reads_and_writes_nothing(
    monkeypatch,
    tmp_path,
    server,
):
    compile_into(manager(monkeypatch, tmp_path / "a", server.url))
    stored = server.client.dbsize()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = manager(monkeypatch, tmp_path / "b", server.url, secret=None)

        assert reader.get_group("add.json") is None
        compile_into(reader)
        compile_into(manager(monkeypatch, tmp_path / "c", server.url, secret=None))

    assert server.client.dbsize() == stored
    assert [str(w.message) for w in caught] == [
        "ninetoothed-ascend: NINETOOTHED_ASCEND_REMOTE_SECRET is unset: Triton's "
        "binaries are neither read from nor written to the remote cache (a binary "
        "cannot be checked without the secret); they are cached locally only."
    ]


def test_a_server_that_is_down_leaves_the_local_cache_working(
    monkeypatch,
    tmp_path,
    server,
):
    server.process.kill()
    server.process.wait()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer = manager(monkeypatch, tmp_path / "a", server.url)
        written = compile_into(writer)
        again = manager(monkeypatch, tmp_path / "a", server.url).get_group("add.json")
        missing = manager(monkeypatch, tmp_path / "b", server.url).get_group("add.json")

    assert read(written) == FILES and read(again) == FILES and missing is None
    messages = [str(w.message) for w in caught]

    assert len(messages) == 1 and "is unreachable" in messages[0], messages


#: Compiles a kernel for an sm_90 target with ``triton.compile`` (no GPU
#: needed) and prints the seconds it took, the files Triton wrote through the
#: cache manager, and the cubin's sha256.
COMPILE = """
    import hashlib, json, time, warnings
    warnings.simplefilter("ignore")
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from ninetoothed_ascend.cache import triton_binaries
    written = []
    put = triton_binaries.StoreCacheManager.put
    def counted(self, data, filename, binary=True):
        if not filename.startswith("__grp__"):
            written.append(filename)
        return put(self, data, filename, binary=binary)
    triton_binaries.StoreCacheManager.put = counted
    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)
    signature = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    start = time.perf_counter()
    kernel = triton.compile(ASTSource(add, signature, {"BLOCK": 128}), target=GPUTarget("cuda", 90, 32))
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "written": written,
                      "cubin": hashlib.sha256(kernel.asm["cubin"]).hexdigest()}))
"""


def compile_in_new_process(directory, url, secret=SECRET, path=None):
    environment = {
        "TRITON_CACHE_MANAGER": MANAGER,
        "TRITON_CACHE_DIR": str(directory),
        "NINETOOTHED_ASCEND_REMOTE_CACHE": url,
        "TRITON_DEFAULT_FP_FUSION": "1",
    }

    if secret is not None:
        environment["NINETOOTHED_ASCEND_REMOTE_SECRET"] = secret

    if path is not None:
        environment["PATH"] = f"{path}{os.pathsep}{os.environ['PATH']}"

    # Triton reads a kernel's source from its file.
    program = directory.parent / "compile.py"
    program.write_text(textwrap.dedent(COMPILE))
    completed = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        env=os.environ | environment,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr

    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_what_the_first_compiled(tmp_path, server):
    first = compile_in_new_process(tmp_path / "a", server.url)

    assert {"add.ttir", "add.ptx", "add.cubin", "add.json"} <= set(first["written"])

    # Another machine, an empty local cache: every stage's file from the store.
    second = compile_in_new_process(tmp_path / "b", server.url)

    assert second["written"] == [] and second["cubin"] == first["cubin"]
    assert list((tmp_path / "b").rglob("add.cubin"))

    # Another bishengir-compile: another key, so Triton compiles.
    other = fake_tool(tmp_path / "bin", "bishengir-compile", "bishengir-compile 0.0.0")
    third = compile_in_new_process(tmp_path / "c", server.url, path=other.parent)

    assert "add.cubin" in third["written"]

    # Without the secret nothing is read: Triton compiles.
    fourth = compile_in_new_process(tmp_path / "d", server.url, secret=None)

    assert "add.cubin" in fourth["written"]
