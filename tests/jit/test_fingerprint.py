"""The cache key tells apart kernels whose generated code differs.

Two kernels with one key share one cache entry: the second would run the
first one's code, in the same process or in any process sharing the cache
(xdist workers). Each test builds two definitions that NineToothed turns
into different code and asserts different keys.
"""

import functools
import importlib
import importlib.metadata
import inspect
import linecache
import os
import sys
import textwrap
import time
import types

from helpers import ROOT, run_python

from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.jit.environment import Memos
from ninetoothed_ascend.jit.fingerprint import (
    definition_digest,
    function_source,
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


def test_memos_are_read_back_as_stored_and_removed_with_the_cache(tmp_path):
    cache = Cache(tmp_path / "cache")
    stamp = "0" * 64

    assert cache.memo("function", stamp) is None
    cache.remember("function", stamp, "def f():\n    pass\n")
    assert cache.memo("function", stamp) == "def f():\n    pass\n"
    assert cache.memo("environment", stamp) is None

    cache.remove()
    assert cache.memo("function", stamp) is None


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
