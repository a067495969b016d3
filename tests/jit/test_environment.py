"""The environment a cache key holds: versions, the package digest, its stamp, device properties."""

import hashlib
import importlib
import importlib.metadata
import json
import os
import pathlib
import time
import types

import pytest
from helpers import run_python

from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.jit import environment as jit_environment
from ninetoothed_ascend.jit.environment import (
    Memos,
    environment_stamp,
    package_digest,
)


def _reference_package_digest(root):
    # The key's formula before the digest was read with ``os.scandir``:
    # keys stay those of earlier caches, whose ``__pycache__`` directories
    # held no ``*.py``.
    digest = hashlib.sha256()

    for path in sorted(
        path for path in root.rglob("*.py") if "__pycache__" not in path.parts
    ):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())

    return digest.hexdigest()


def _source_tree(root):
    # Names that sort differently as paths than as strings ("a/..." after
    # "a.py" as text, before it as a path), a hidden file, a symbolic link to
    # a directory, which ``rglob`` does not follow, and bytecode directories,
    # which Python imports no source from.
    for name, text in {
        "a.py": "A = 1\n",
        "a/b.py": "B = 2\n",
        "a/.hidden.py": "H = 3\n",
        "z/c.py": "C = 4\n",
        "notes.txt": "not a source\n",
        "__pycache__/a.cpython-311.pyc": "bytecode\n",
        "a/__pycache__/stray.py": "S = 6\n",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    (root / "linked").symlink_to(root / "z", target_is_directory=True)

    return root


def test_package_digest_is_the_sha256_of_the_sorted_sources(tmp_path):
    tree = _source_tree(tmp_path / "package")

    assert package_digest(tree) == _reference_package_digest(tree)
    assert package_digest() == _reference_package_digest(
        pathlib.Path(jit_environment.__file__).resolve().parent.parent
    )


def test_the_environment_stamp_changes_with_any_source(tmp_path):
    """A source rewritten with its size and modification time kept, or a new source, gives another stamp."""

    tree = _source_tree(tmp_path / "package")
    stamp = environment_stamp(tree)
    assert environment_stamp(tree) == stamp

    path = tree / "a" / "b.py"
    info = path.stat()
    time.sleep(0.01)
    path.write_text("B = 5\n")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size
    rewritten = environment_stamp(tree)
    assert rewritten != stamp

    (tree / "z" / "d.py").write_text("")
    assert environment_stamp(tree) not in (stamp, rewritten)


def test_the_environment_stamp_ignores_bytecode_directories(tmp_path):
    """Python writing bytecode beside the package's sources, in ``__pycache__``, keeps the stamp and the digest."""

    tree = _source_tree(tmp_path / "package")
    stamp, digest = environment_stamp(tree), package_digest(tree)

    (tree / "a" / "__pycache__" / "b.cpython-311.pyc").write_text("bytecode\n")
    (tree / "z" / "__pycache__").mkdir()
    (tree / "z" / "__pycache__" / "c.py").write_text("C = 7\n")

    assert environment_stamp(tree) == stamp
    assert _reference_package_digest(tree) == digest


def test_the_environment_stamp_ignores_directories_it_reads_nothing_from(
    tmp_path, monkeypatch
):
    """A program writing files beside itself (in ``sys.path[0]``) reads the memo its last run stored."""

    script_directory = tmp_path / "project"
    script_directory.mkdir()
    monkeypatch.syspath_prepend(str(script_directory))
    stamp = environment_stamp()

    (script_directory / "log.txt").write_text("run 2\n")
    os.utime(script_directory, ns=(1, 10**18))

    assert environment_stamp() == stamp


def test_the_environment_stamp_changes_with_the_listings_it_reads(
    tmp_path, monkeypatch
):
    """Installing or removing a distribution beside NineToothed, or triton-ascend's backend, gives another stamp."""

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(jit_environment, "_listed_directories", lambda: (str(site),))
    stamp = environment_stamp()

    (site / "ninetoothed-9.9.dist-info").mkdir()
    os.utime(site, ns=(1, 10**18))

    assert environment_stamp() != stamp


def test_a_version_the_listing_does_not_tell_is_not_remembered(tmp_path, monkeypatch):
    """Where the listing beside the package does not settle NineToothed's version, importlib.metadata answers in every process."""

    monkeypatch.setattr(jit_environment, "_environment", None)
    monkeypatch.setattr(jit_environment, "_listed_version", lambda *args: None)
    memos = Memos(Cache(tmp_path / "cache"))
    environment = dict(jit_environment.environment(memos))
    memos.store()

    assert environment["ninetoothed"] == importlib.metadata.version("ninetoothed")
    stored = json.loads(
        Cache(tmp_path / "cache").memo("environment", environment_stamp())
    )
    assert stored["ninetoothed"] is None


def test_a_process_reads_the_environment_a_previous_one_stored(tmp_path):
    """The key of a kernel is the same whether its environment is computed or read from the cache."""

    code = """
        import json, os
        from ninetoothed_ascend.cache import Cache
        from ninetoothed_ascend.jit import environment as jit_environment
        memos = (
            jit_environment.Memos(Cache())
            if os.environ.get("TEST_ENVIRONMENT_CACHED")
            else None
        )
        stored = Cache().memo("environment", jit_environment.environment_stamp())
        environment = jit_environment.environment(memos)
        if memos is not None:
            memos.store()
        print(json.dumps([stored is not None, environment]))
    """
    cache_dir = tmp_path / "cache"
    computed = run_python(code, cache_dir)

    assert computed[0] is False
    assert run_python(code, cache_dir, TEST_ENVIRONMENT_CACHED="1") == computed
    assert run_python(code, cache_dir, TEST_ENVIRONMENT_CACHED="1") == [
        True,
        computed[1],
    ]


def test_the_environment_names_the_installed_versions_importlib_metadata_finds(
    tmp_path,
):
    """NineToothed's version, read from the metadata directory beside its package, is what importlib.metadata reads; ``import triton``'s distribution is the one whose files it imports; Python's version is ``platform``'s."""

    code = """
        import importlib.metadata, json, platform
        from ninetoothed_ascend import host
        from ninetoothed_ascend.jit import environment as jit_environment
        environment = dict(jit_environment.environment())
        print(json.dumps([
            [environment["ninetoothed"], environment["python"]],
            [importlib.metadata.version("ninetoothed"), platform.python_version()],
            sorted(environment),
            host.triton_package_is_ascend(),
        ]))
    """
    read, expected, names, is_ascend = run_python(code, tmp_path / "cache")

    assert read == expected
    assert ("triton-ascend" if is_ascend else "triton") in names


def test_a_version_not_told_by_one_metadata_directory_is_asked_of_importlib(tmp_path):
    site = tmp_path / "site"
    (site / "package").mkdir(parents=True)
    (site / "package" / "__init__.py").write_text("")
    package = types.SimpleNamespace(__file__=str(site / "package" / "__init__.py"))
    (site / "package-1.2.dist-info").mkdir()

    assert jit_environment._installed_version(package, "package") == "1.2"

    # Two versions beside one package: a broken install, which the
    # directory names cannot settle.
    (site / "package-1.3.dist-info").mkdir()

    with pytest.raises(importlib.metadata.PackageNotFoundError):
        jit_environment._installed_version(package, "package")


class _CudaDevice:
    """What ``torch.cuda.get_device_properties`` describes, for a machine without a GPU."""

    def __init__(self, uuid):
        self.name = "NVIDIA H100 80GB HBM3"
        self.major, self.minor = 9, 0
        self.uuid = uuid
        self.total_memory = 85_000_000_000


def _on_a_cuda_device(monkeypatch, uuid, reported):
    # A CUDA device whose Triton driver reports ``reported``; returns the
    # list of driver queries.
    import torch

    queries = []

    def query():
        queries.append(uuid)

        return dict(reported)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda index: _CudaDevice(uuid)
    )
    monkeypatch.setattr(jit_environment.ninetoothed_adapter, "device_properties", query)
    monkeypatch.setattr(jit_environment, "_device_properties", {})

    return queries


def test_device_properties_are_asked_once_per_device_and_read_back_by_later_processes(
    tmp_path, monkeypatch
):
    cache = Cache(tmp_path / "cache")
    reported = {"max_num_regs": 65536, "max_shared_mem": 232448}
    queries = _on_a_cuda_device(monkeypatch, "GPU-a", reported)
    memos = Memos(cache)

    assert jit_environment.device_properties(memos) == reported
    assert jit_environment.device_properties(memos) == reported
    assert queries == ["GPU-a"]

    memos.store()
    # A later process: nothing in memory, the memo on disk.
    monkeypatch.setattr(jit_environment, "_device_properties", {})

    assert jit_environment.device_properties(Memos(cache)) == reported
    assert queries == ["GPU-a"]

    # Another device is asked for its own.
    other = {"max_num_regs": 65536, "max_shared_mem": 101376}
    queries = _on_a_cuda_device(monkeypatch, "GPU-b", other)

    assert jit_environment.device_properties(Memos(cache)) == other
    assert queries == ["GPU-b"]


def test_a_damaged_device_memo_is_asked_again(tmp_path, monkeypatch):
    cache = Cache(tmp_path / "cache")
    reported = {"max_num_regs": 65536, "max_shared_mem": 232448}
    queries = _on_a_cuda_device(monkeypatch, "GPU-a", reported)
    memos = Memos(cache)
    jit_environment.device_properties(memos)
    memos.store()
    (stored,) = (tmp_path / "cache/memos/device").iterdir()
    cache.remember("device", stored.name, '{"max_num_regs": "many"}')
    monkeypatch.setattr(jit_environment, "_device_properties", {})

    assert jit_environment.device_properties(Memos(cache)) == reported
    assert queries == ["GPU-a", "GPU-a"]


def test_without_a_cuda_device_the_driver_is_asked_and_nothing_is_remembered(
    tmp_path, monkeypatch
):
    import torch

    cache = Cache(tmp_path / "cache")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    memos = Memos(cache)

    assert (
        jit_environment.device_properties(memos)
        == jit_environment.ninetoothed_adapter.device_properties()
    )

    memos.store()

    assert not (tmp_path / "cache/memos/device").exists()
