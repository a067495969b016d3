"""The cache key tells apart kernels whose generated code differs.

Two kernels with one key share one cache entry: the second would run the
first one's code, in the same process or in any process sharing the cache
(xdist workers). Each test builds two definitions that NineToothed turns
into different code and asserts different keys.
"""

import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import linecache
import os
import pathlib
import sys
import textwrap
import time
import types

import pytest
from helpers import ROOT, run_python

from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.jit import fingerprint
from ninetoothed_ascend.jit.fingerprint import (
    Memos,
    definition_digest,
    environment_stamp,
    function_source,
    package_digest,
)


def _module(name, source):
    module = types.ModuleType(name)
    exec(textwrap.dedent(source), module.__dict__)

    return module


def _application(helpers):
    """The same application source, reading ``helpers.scale`` through a module global bound to ``helpers``."""

    namespace = {"helpers": helpers}
    exec(
        textwrap.dedent(
            """
            def application(input, output):
                output = helpers.scale(input)  # noqa: F841
            """
        ),
        namespace,
    )

    return namespace["application"]


def test_a_function_read_through_a_module_global_is_in_the_key():
    """NineToothed inlines ``helpers.scale``; two versions of it are two kernels (two processes, or a reloaded module)."""

    twice = _module("helpers", "def scale(x):\n    return x * 2\n")
    thrice = _module("helpers", "def scale(x):\n    return x * 3\n")

    assert definition_digest(_application(twice)) != definition_digest(
        _application(thrice)
    )


def test_a_constant_read_through_a_module_global_is_in_the_key():
    small = _module("sizes", "BLOCK = 32\n")
    large = _module("sizes", "BLOCK = 64\n")

    def arrangement_for(sizes):
        namespace = {"sizes": sizes}
        exec("def arrangement(x):\n    return x.tile((sizes.BLOCK,))\n", namespace)

        return namespace["arrangement"]

    assert definition_digest(arrangement_for(small)) != definition_digest(
        arrangement_for(large)
    )


def test_a_module_global_holding_itself_terminates():
    module = _module("loop", "def scale(x):\n    return x\n")
    module.loop = module

    namespace = {"loop": module}
    exec("def application(x):\n    return loop.loop.scale(x)\n", namespace)

    assert definition_digest(namespace["application"])


def test_objects_with_default_reprs_are_told_apart_by_their_attributes():
    """An object whose ``repr`` holds an address used to be hashed as an empty text."""

    class Config:
        def __init__(self, block):
            self.block = block

    def arrangement(x, config):
        return x.tile((config.block,))

    assert definition_digest(
        functools.partial(arrangement, config=Config(32))
    ) != definition_digest(functools.partial(arrangement, config=Config(64)))
    assert definition_digest(
        functools.partial(arrangement, config=Config(32))
    ) == definition_digest(functools.partial(arrangement, config=Config(32)))


def test_objects_without_attributes_or_a_stable_repr_never_share_a_key():
    """Nothing describes them: each gets a key of its own rather than one shared with any other."""

    class Opaque:
        __slots__ = ()

    first, second = Opaque(), Opaque()

    assert definition_digest(first) != definition_digest(second)
    assert definition_digest(first) == definition_digest(first)


def test_installed_packages_are_still_described_by_name():
    """Their behaviour is covered by their versions in the environment."""

    import ninetoothed.language as ntl

    namespace = {"ntl": ntl}
    exec("def application(x):\n    return ntl.sqrt(x)\n", namespace)

    assert definition_digest(namespace["application"])
    assert "ninetoothed.language" in sys.modules


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
        pathlib.Path(fingerprint.__file__).resolve().parent.parent
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
    monkeypatch.setattr(fingerprint, "_listed_directories", lambda: (str(site),))
    stamp = environment_stamp()

    (site / "ninetoothed-9.9.dist-info").mkdir()
    os.utime(site, ns=(1, 10**18))

    assert environment_stamp() != stamp


def test_a_version_the_listing_does_not_tell_is_not_remembered(tmp_path, monkeypatch):
    """Where the listing beside the package does not settle NineToothed's version, importlib.metadata answers in every process."""

    monkeypatch.setattr(fingerprint, "_environment", None)
    monkeypatch.setattr(fingerprint, "_listed_version", lambda *args: None)
    memos = Memos(Cache(tmp_path / "cache"))
    environment = dict(fingerprint.environment(memos))
    memos.store()

    assert environment["ninetoothed"] == importlib.metadata.version("ninetoothed")
    stored = json.loads(
        Cache(tmp_path / "cache").memo("environment", environment_stamp())
    )
    assert stored["ninetoothed"] is None


def test_memos_are_read_back_as_stored_and_removed_with_the_cache(tmp_path):
    cache = Cache(tmp_path / "cache")
    stamp = "0" * 64

    assert cache.memo("function", stamp) is None
    cache.remember("function", stamp, "def f():\n    pass\n")
    assert cache.memo("function", stamp) == "def f():\n    pass\n"
    assert cache.memo("environment", stamp) is None

    cache.remove()
    assert cache.memo("function", stamp) is None


def test_a_process_reads_the_environment_a_previous_one_stored(tmp_path):
    """The key of a kernel is the same whether its environment is computed or read from the cache."""

    code = """
        import json, os
        from ninetoothed_ascend.cache import Cache
        from ninetoothed_ascend.jit import fingerprint
        memos = (
            fingerprint.Memos(Cache())
            if os.environ.get("TEST_ENVIRONMENT_CACHED")
            else None
        )
        stored = Cache().memo("environment", fingerprint.environment_stamp())
        environment = fingerprint.environment(memos)
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
        from ninetoothed_ascend.jit import fingerprint
        environment = dict(fingerprint.environment())
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

    assert fingerprint._installed_version(package, "package") == "1.2"

    # Two versions beside one package: a broken install, which the
    # directory names cannot settle.
    (site / "package-1.3.dist-info").mkdir()

    with pytest.raises(importlib.metadata.PackageNotFoundError):
        fingerprint._installed_version(package, "package")


def test_function_source_follows_its_file_as_inspect_does(tmp_path, monkeypatch):
    """A function's text is read again when its file changes on disk, as ``inspect.getsource`` (and NineToothed) would."""

    path = tmp_path / "edited_kernel.py"
    path.write_text("def application(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_kernel")

    assert function_source(module.application) == inspect.getsource(module.application)
    assert "x * 2" in function_source(module.application)

    time.sleep(0.01)
    path.write_text("def application(x):\n    return x * 3  # edited\n")

    assert "x * 3  # edited" in function_source(module.application)
    assert function_source(module.application) == inspect.getsource(module.application)


def test_function_source_from_the_cache_is_what_inspect_reads(tmp_path, monkeypatch):
    """A function's text kept in the cache is used only while its file is unchanged; a rewrite that keeps size and modification time is seen."""

    path = tmp_path / "cached_kernel.py"
    path.write_text("def application(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("cached_kernel")
    cache = Cache(tmp_path / "cache")

    def read():
        # A new process: nothing of the file in ``linecache``.
        linecache.clearcache()
        memos = Memos(cache)
        source = function_source(module.application, memos)
        memos.store()

        return source

    assert read() == inspect.getsource(module.application)
    assert len(list((tmp_path / "cache" / "memos" / "function").iterdir())) == 1
    assert read() == "def application(x):\n    return x * 2\n"

    info = path.stat()
    time.sleep(0.01)
    path.write_text("def application(x):\n    return x * 3\n")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))

    assert read() == "def application(x):\n    return x * 3\n"
    linecache.clearcache()
    assert read() == inspect.getsource(module.application)


def test_memos_are_stored_only_by_a_make_that_finds_its_kernel(tmp_path):
    """A make that generates writes no memo; the next process, which finds the kernel, does."""

    example = ROOT / "examples/elementwise/add.py"
    code = f"""
        import json, pathlib, runpy
        from ninetoothed_ascend.cache import Cache
        runpy.run_path({str(example)!r})
        memos = Cache().directory / "memos"
        print(json.dumps(sorted(p.parent.name for p in memos.rglob("*") if p.is_file())))
    """
    cache_dir = tmp_path / "cache"

    assert run_python(code, cache_dir) == []
    stored = run_python(code, cache_dir)
    assert "environment" in stored and "function" in stored
    assert run_python(code, cache_dir) == stored


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
    monkeypatch.setattr(fingerprint.ninetoothed_adapter, "device_properties", query)
    monkeypatch.setattr(fingerprint, "_device_properties", {})

    return queries


def test_device_properties_are_asked_once_per_device_and_read_back_by_later_processes(
    tmp_path, monkeypatch
):
    cache = Cache(tmp_path / "cache")
    reported = {"max_num_regs": 65536, "max_shared_mem": 232448}
    queries = _on_a_cuda_device(monkeypatch, "GPU-a", reported)
    memos = Memos(cache)

    assert fingerprint.device_properties(memos) == reported
    assert fingerprint.device_properties(memos) == reported
    assert queries == ["GPU-a"]

    memos.store()
    # A later process: nothing in memory, the memo on disk.
    monkeypatch.setattr(fingerprint, "_device_properties", {})

    assert fingerprint.device_properties(Memos(cache)) == reported
    assert queries == ["GPU-a"]

    # Another device is asked for its own.
    other = {"max_num_regs": 65536, "max_shared_mem": 101376}
    queries = _on_a_cuda_device(monkeypatch, "GPU-b", other)

    assert fingerprint.device_properties(Memos(cache)) == other
    assert queries == ["GPU-b"]


def test_a_damaged_device_memo_is_asked_again(tmp_path, monkeypatch):
    cache = Cache(tmp_path / "cache")
    reported = {"max_num_regs": 65536, "max_shared_mem": 232448}
    queries = _on_a_cuda_device(monkeypatch, "GPU-a", reported)
    memos = Memos(cache)
    fingerprint.device_properties(memos)
    memos.store()
    (stored,) = (tmp_path / "cache/memos/device").iterdir()
    cache.remember("device", stored.name, '{"max_num_regs": "many"}')
    monkeypatch.setattr(fingerprint, "_device_properties", {})

    assert fingerprint.device_properties(Memos(cache)) == reported
    assert queries == ["GPU-a", "GPU-a"]


def test_without_a_cuda_device_the_driver_is_asked_and_nothing_is_remembered(
    tmp_path, monkeypatch
):
    import torch

    cache = Cache(tmp_path / "cache")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    memos = Memos(cache)

    assert (
        fingerprint.device_properties(memos)
        == fingerprint.ninetoothed_adapter.device_properties()
    )

    memos.store()

    assert not (tmp_path / "cache/memos/device").exists()
