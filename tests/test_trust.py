"""Trust and faults: the cache is Python that gets executed.

Refused: a cache directory or file that another user owns or can write, a
symbolic link, a directory that others can rename away. Detected and
regenerated: truncated, garbage and wrong-version entries. Survived: an
unwritable home, a full disk.
"""

import json
import os
import shutil
import stat
import tempfile

import pytest
from click.testing import CliRunner
from conftest import EXAMPLE_PATHS
from helpers import run_python

from ninetoothed_ascend import cache as cache_module
from ninetoothed_ascend.cli import main

#: Not root, not the test's user.
NOBODY = 65534

#: Giving a file to another user takes root (CI runs as root).
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="chown needs root")

MAKE_ADD = f"""
    import importlib, importlib.util, json, warnings
    import torch
    jit = importlib.import_module("ninetoothed_ascend.jit")
    calls = []
    generate = jit.generate_source
    jit.generate_source = lambda *a, **k: calls.append(1) or generate(*a, **k)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = importlib.util.spec_from_file_location("add", {str(EXAMPLE_PATHS["add"])!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    x, y = module.inputs("cpu", torch.float32)
    ok = bool(torch.equal(module.launch(module.kernel, x, y), x + y))
    path = module.kernel.path("cpu")
    print(json.dumps({{"generations": len(calls), "ok": ok,
                      "path": str(path) if path else None,
                      "warnings": [str(w.message) for w in caught]}}))
"""


@pytest.fixture(scope="module")
def cold_add_cache(tmp_path_factory):
    """``(directory, result)``: a cache as one cold ``make`` of ``add`` in a new process leaves it, and what that process printed."""

    directory = tmp_path_factory.mktemp("cold") / "cache"

    return directory, run_python(MAKE_ADD, directory)


@pytest.fixture
def cold(cache_dir, cold_add_cache):
    """What a cold ``make`` of ``add`` printed, its cache copied into ``cache_dir`` (files, modes and times as it left them); ``path`` is the copy's."""

    directory, result = cold_add_cache
    shutil.copytree(directory, cache_dir)

    return result | {
        "path": str(cache_dir / os.path.relpath(result["path"], directory))
    }


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The system temporary directory, where the private fallback goes; no usable user cache directory."""

    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "xdg"))

    return directory


def only_private_fallback(directory, private_tmp):
    assert directory.parent == private_tmp
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "make_untrusted, reason",
    [
        (lambda path: path.chmod(0o777), "writable by other users"),
        (lambda path: path.chmod(0o770), "writable by other users"),
        pytest.param(
            lambda path: os.chown(path, NOBODY, NOBODY),
            f"owned by uid {NOBODY}",
            marks=needs_root,
        ),
    ],
    ids=["world-writable", "group-writable", "other-owner"],
)
def test_untrusted_directory_is_refused_with_a_reason(
    cache_dir, private_tmp, make_untrusted, reason
):
    cache_dir.mkdir(mode=0o700)
    make_untrusted(cache_dir)

    with pytest.warns(UserWarning, match=reason) as caught:
        directory = cache_module.default_directory()

    assert "only you can write" in str(caught[0].message)
    only_private_fallback(directory, private_tmp)


def test_directory_inside_a_directory_others_can_rename_is_refused(
    tmp_path, private_tmp, monkeypatch
):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit
    monkeypatch.setenv("NINETOOTHED_ASCEND_CACHE_DIR", str(shared / "cache"))

    with pytest.warns(UserWarning, match="which other users can write"):
        directory = cache_module.default_directory()

    only_private_fallback(directory, private_tmp)

    shared.chmod(0o1777)  # sticky, like /tmp: others cannot rename our entries
    assert cache_module.default_directory() == shared / "cache"


def test_explicit_untrusted_cache_falls_back(cache_dir, private_tmp):
    cache_dir.mkdir()
    cache_dir.chmod(0o777)

    with pytest.warns(UserWarning, match="not using cache directory"):
        cache = cache_module.Cache(cache_dir)

    only_private_fallback(cache.directory, private_tmp)


@needs_root
def test_a_private_fallback_someone_else_made_is_not_used(private_tmp):
    squatted = private_tmp / f"ninetoothed-ascend-{os.getuid()}"
    squatted.mkdir()
    os.chown(squatted, NOBODY, NOBODY)

    directory = cache_module.private_directory()

    assert directory != squatted
    only_private_fallback(directory, private_tmp)


def test_cache_files_are_written_private(cache_dir):
    result = run_python(MAKE_ADD, cache_dir)

    assert result["ok"] and result["generations"] == 1

    for path in [cache_dir, *cache_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert not mode & 0o022, (path, oct(mode))


@pytest.mark.parametrize(
    "tamper",
    [
        lambda path: path.chmod(0o666),
        pytest.param(lambda path: os.chown(path, NOBODY, NOBODY), marks=needs_root),
        lambda path: (
            path.rename(path.with_suffix(".real")),
            path.symlink_to(path.with_suffix(".real")),
        ),
    ],
    ids=["world-writable", "other-owner", "symlink"],
)
@pytest.mark.parametrize("which", ["source", "entry"])
def test_untrusted_file_is_not_executed_and_is_replaced(cache_dir, cold, tamper, which):
    victim = (
        cache_dir / "sources" / os.path.basename(cold["path"])
        if which == "source"
        else next((cache_dir / "kernels").glob("*.json"))
    )
    tamper(victim)

    again = run_python(MAKE_ADD, cache_dir)

    assert again["generations"] == 1
    assert again["ok"]
    assert any("not executing cached code" in w for w in again["warnings"])
    assert not victim.is_symlink()
    # Replaced by a file of ours that the next process will trust.
    info = victim.lstat()
    assert info.st_uid == os.getuid() and not info.st_mode & 0o022
    assert cache_module.trust_problem(victim) is None


@pytest.mark.parametrize(
    "damage",
    [
        ("entry", lambda data: data[: len(data) // 2]),
        ("entry", lambda data: b"\x00\xff garbage"),
        (
            "entry",
            lambda data: json.dumps(json.loads(data) | {"format": 0}).encode(),
        ),
        ("source", lambda data: data[: len(data) // 2]),
        ("source", lambda data: os.urandom(64)),
    ],
    ids=[
        "truncated-entry",
        "garbage-entry",
        "wrong-version",
        "truncated-source",
        "garbage-source",
    ],
)
def test_damaged_entries_are_detected_and_regenerated(cache_dir, cold, damage):
    which, change = damage
    victims = (
        list((cache_dir / "sources").glob("*.py"))
        if which == "source"
        else list((cache_dir / "kernels").glob("*.json"))
    )

    for victim in victims:
        victim.write_bytes(change(victim.read_bytes()))

    again = run_python(MAKE_ADD, cache_dir)

    assert again["generations"] == 1 and again["ok"]
    assert again["path"] == cold["path"]
    assert run_python(MAKE_ADD, cache_dir)["generations"] == 0


def test_unwritable_home_falls_back_to_a_private_directory(tmp_path):
    # The user cache directory cannot be created: ``~/.cache`` is a regular
    # file. (Root, who runs CI, ignores permission bits, so a chmod'ed home
    # would not do.) NineToothed 0.26 itself creates ``~/.ninetoothed`` when
    # imported and fails without it; that one exists, as on any machine where
    # NineToothed has run.
    home = tmp_path / "home"
    (home / ".ninetoothed").mkdir(parents=True)
    (home / ".cache").write_text("")
    private = tmp_path / "tmp"
    private.mkdir()
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(private),
    }

    result = run_python(
        MAKE_ADD.replace(
            "import torch",
            "import os, torch\n    del os.environ['NINETOOTHED_ASCEND_CACHE_DIR']",
        ),
        private / "unused",
        **env,
    )

    assert result["ok"] and result["generations"] == 1
    assert any("no usable cache directory" in w for w in result["warnings"])
    assert result["path"].startswith(str(private / f"ninetoothed-ascend-{os.getuid()}"))


FULL_DISK = """
    import resource, signal
    # Any file write past 4 KiB fails with EFBIG, as writes fail on a full disk.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
"""


def test_full_disk_fails_cleanly_and_the_kernel_runs_from_memory(cache_dir):
    result = run_python(FULL_DISK + MAKE_ADD, cache_dir)

    assert result["ok"]
    assert result["path"] is None  # held in memory only
    assert any(
        "could not cache kernel `add`" in w and "File too large" in w
        for w in result["warnings"]
    )
    assert not list(cache_dir.rglob(".*"))  # no partial temporary file
    assert not list(cache_dir.glob("kernels/*.json"))  # no entry naming a missing file

    for source in cache_dir.glob("sources/*.py"):  # whole files or none
        import hashlib

        assert hashlib.sha256(source.read_bytes()).hexdigest() == source.stem


def test_cli_refuses_an_untrusted_or_unwritable_cache_dir(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    blocker = tmp_path / "file"
    blocker.write_text("")

    for args, message in [
        (["ls", "--cache-dir", str(shared)], "refusing cache directory: "),
        # A command that writes; read-only ones say it does not exist.
        (["warm", "x.json", "--cache-dir", str(blocker / "cache")], "is not writable"),
    ]:
        result = CliRunner().invoke(main, args)

        assert result.exit_code == 1
        assert message in result.output
        assert len(result.output.strip().splitlines()) == 1
