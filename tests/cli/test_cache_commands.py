"""The cache commands: record, warm, ls, info, clear, export, import, doctor, and their errors."""

import contextlib
import ctypes
import hashlib
import io
import json
import os
import pathlib
import platform
import signal
import subprocess
import sys
import tarfile
import time

import pytest
from click.testing import CliRunner
from conftest import EXAMPLE_PATHS
from helpers import ROOT

import ninetoothed_ascend
from ninetoothed_ascend import manifest as manifest_module
from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.cli import main

DOWNSTREAM = ROOT / "tests" / "downstream"


#: The package under test, wherever it is imported from.
PACKAGE_SRC = pathlib.Path(ninetoothed_ascend.__file__).resolve().parent.parent


#: Recorded program: five of the fixture's operators, made and run on the CPU.
RECORDED_OPS = ["add", "div", "where_max", "relu_add", "abs_add"]


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(arg) for arg in args], env=env)


def record(cache_dir, manifest, *python_args):
    """``record`` ``python *python_args``, with the downstream operators importable, into ``cache_dir`` and ``manifest``."""

    env = os.environ | {
        "NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir),
        "PYTHONPATH": f"{PACKAGE_SRC}{os.pathsep}{DOWNSTREAM}",
    }
    result = invoke(
        "record", "-o", manifest, "--", sys.executable, *python_args, env=env
    )

    assert result.exit_code == 0, result.output


def tree(directory):
    """Every file of a cache's layout, by relative path, with its bytes."""

    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for sub in ("kernels", "sources")
        for path in sorted((directory / sub).glob("*"))
    }


def parsed(files):
    """``files`` (a :func:`tree`) with each entry parsed (a ``dict``)."""

    return {
        name: json.loads(data) if name.startswith("kernels/") else data
        for name, data in files.items()
    }


def from_outside(files, kind, where):
    """``files`` (a :func:`tree`) as entries from outside are stored: not yet bound to their definitions, and recording where they came from; parsed."""

    origin = {"kind": kind, "from": str(where.resolve())}

    return {
        name: data | {"verified": False, "origin": origin}
        if name.startswith("kernels/")
        else data
        for name, data in parsed(files).items()
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``record`` of the downstream program: its cache directory and manifest."""

    base = tmp_path_factory.mktemp("recorded")
    cache_dir, manifest = base / "cache", base / "manifest.json"
    record(cache_dir, manifest, "-m", "downstream_ops", *RECORDED_OPS)

    return cache_dir, manifest


def test_record_writes_a_versioned_manifest_of_every_kernel(recorded):
    cache_dir, manifest = recorded
    document = json.loads(manifest.read_text())

    assert document["format"] == "ninetoothed-ascend-manifest"
    assert document["version"] == 1
    assert [k["kernel_name"] for k in document["kernels"]] == RECORDED_OPS
    assert sorted(k["key"] for k in document["kernels"]) == Cache(cache_dir).keys()

    first = document["kernels"][0]
    assert first["origin"] == {
        "arrangement": "downstream_ops.kernels:arrangement",
        "application": "downstream_ops.kernels:add",
    }
    assert first["calls"] == [
        {
            "device": "cpu",
            "args": [{"tensor": [3, 100], "stride": [100, 1], "dtype": "float32"}] * 3,
        }
    ]


def test_warm_from_the_manifest_reproduces_every_variant_byte_for_byte(
    recorded, tmp_path
):
    cache_dir, manifest = recorded
    fresh = tmp_path / "fresh"

    result = invoke("warm", manifest, "-j", "2", "--json", "--cache-dir", fresh)

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["counts"] == {"built": 5, "cached": 0, "failed": 0}
    assert parsed(tree(fresh)) == from_outside(tree(cache_dir), "manifest", manifest)
    assert len(tree(fresh)) == 5 * 4  # an entry and three sources per kernel

    again = invoke("warm", manifest, "--cache-dir", fresh)

    assert again.exit_code == 0, again.output
    assert (
        "5 kernels in" in again.output and "0 built, 5 cached, 0 failed" in again.output
    )


def test_warm_from_a_module_path(tmp_path):
    cache_dir = tmp_path / "cache"
    args = ("warm", EXAMPLE_PATHS["add"], "--json", "--cache-dir", cache_dir)

    first = json.loads(invoke(*args).output)
    second = json.loads(invoke(*args).output)

    assert [k["status"] for k in first["kernels"]] == ["built"]
    assert [k["status"] for k in second["kernels"]] == ["cached"]
    assert first["kernels"][0]["kernel_name"] == "add"
    assert Cache(cache_dir).keys() == [first["kernels"][0]["key"]]


MY_KERNELS = """
import ninetoothed
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(x, y, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def application(x, y):
    y = x * 2  # noqa: F841


k = ninetoothed_ascend.make(arrangement, application, (Tensor(1), Tensor(1)), kernel_name="doubled")
"""


def run_python(code, *args, cache_dir, path=()):
    """Run ``python -c code args`` in a fresh process (NineToothed's counters at zero), the package under test first on its path."""

    env = os.environ | {
        "NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir),
        "PYTHONPATH": os.pathsep.join([str(PACKAGE_SRC), *map(str, path)]),
    }

    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


CLI = "import sys; from ninetoothed_ascend.cli import main; main(sys.argv[1:])"


def test_warm_show_and_an_importing_program_share_one_key(tmp_path):
    # ``warm FILE`` and ``show FILE:k`` loaded the file under names of their
    # own (the module name is part of the key): three keys for one kernel,
    # and ``ls`` listed it three times.
    directory = tmp_path / "code"
    directory.mkdir()
    (directory / "my_kernels.py").write_text(MY_KERNELS)
    cache_dir = tmp_path / "cache"

    warmed = invoke(
        "warm", directory / "my_kernels.py", "--json", "--cache-dir", cache_dir
    )
    program = run_python(
        "import my_kernels; print(my_kernels.k.key)",
        cache_dir=cache_dir,
        path=[directory],
    )
    shown = run_python(
        CLI, "show", f"{directory / 'my_kernels.py'}:k", cache_dir=cache_dir
    )

    assert warmed.exit_code == 0, warmed.output
    assert program.returncode == 0, program.stderr
    assert shown.returncode == 0, shown.stderr
    (kernel,) = json.loads(warmed.output)["kernels"]
    assert program.stdout.split() == [kernel["key"]]
    assert (
        f"key {kernel['key'][:12]}, as a program that runs `import my_kernels`"
        in shown.stdout
    )
    listed = json.loads(invoke("ls", "--json", "--cache-dir", cache_dir).output)
    assert [row["key"] for row in listed["kernels"]] == [kernel["key"]]
    assert kernel["origin"].endswith("(import my_kernels)")


def test_a_file_in_a_package_is_warmed_as_the_package_imports_it(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text(MY_KERNELS)
    cache_dir = tmp_path / "cache"

    warmed = invoke("warm", package / "kernels.py", "--json", "--cache-dir", cache_dir)
    (kernel,) = json.loads(warmed.output)["kernels"]
    program = run_python(
        "import pkg.kernels; print(pkg.kernels.k.key)",
        cache_dir=cache_dir,
        path=[tmp_path],
    )

    assert program.stdout.split() == [kernel["key"]]
    assert kernel["origin"].endswith("(import pkg.kernels)")


def test_show_refuses_a_file_whose_import_finds_another_module(tmp_path):
    # ``show json.py``: ``import json`` is the standard library's.
    (tmp_path / "json.py").write_text(MY_KERNELS)

    shown = invoke("show", f"{tmp_path / 'json.py'}:k")

    assert shown.exit_code == 1
    assert "is imported as `import json`, but that finds" in shown.output
    assert "rename the file" in shown.output


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "x = 1\n",
            "is not an example module: it does not define kernel, inputs, launch, "
            "reference",
        ),
        (
            "import my_helpers_that_are_not_on_the_path\n",
            "ModuleNotFoundError: No module named 'my_helpers_that_are_not_on_the_path'; "
            "put the directory that holds it on PYTHONPATH",
        ),
    ],
    ids=["not-an-example", "import-fails"],
)
def test_check_of_a_module_it_cannot_take_is_a_usage_error(tmp_path, text, message):
    # Before: "check failed unexpectedly ... report the traceback".
    (tmp_path / "my_kernels.py").write_text(text)

    result = invoke("check", tmp_path / "my_kernels.py", "--no-bishengir")

    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert message in result.output
    assert "traceback" not in result.output.lower()
    assert "unexpectedly" not in result.output


def test_warm_starts_at_most_one_worker_per_cpu_and_task(tmp_path):
    # Before: ``-j 64`` started 64 workers for 2 kernels.
    result = invoke(
        "warm", EXAMPLE_PATHS["add"], "-j", "64", "--json", "--cache-dir", tmp_path
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["jobs"] == 1


# warm as a terminal's foreground job runs it: SIGINT raises KeyboardInterrupt.
# A process started by a shell script's ``&`` (as CI may run this suite)
# ignores SIGINT, and so do its children, warm included: Python keeps an
# ignored SIGINT ignored.
FOREGROUND_CLI = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); " + CLI
)


SLEEPY = """
import os, pathlib, time
pathlib.Path(os.environ["MARKERS"], str(os.getpid())).write_text("")
time.sleep(120)
"""


def _interrupt_sleepy_warm(tmp_path, interrupt):
    """Start ``warm -j 2`` on three modules that sleep at import, call
    ``interrupt(pid)`` once both workers are importing, and return warm's
    exit status, its output and the workers still alive."""

    modules, markers = tmp_path / "modules", tmp_path / "markers"
    modules.mkdir()
    markers.mkdir()

    for index in range(3):
        (modules / f"sleepy_{index}.py").write_text(SLEEPY)

    env = os.environ | {
        "MARKERS": str(markers),
        "PYTHONPATH": str(PACKAGE_SRC),
        "NINETOOTHED_ASCEND_CACHE_DIR": str(tmp_path / "cache"),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", FOREGROUND_CLI, "warm", "-j", "2", modules],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started = time.monotonic()

    try:
        # Every worker is importing its module.
        workers = min(2, len(os.sched_getaffinity(0)))

        while (
            len(list(markers.iterdir())) < workers and time.monotonic() - started < 240
        ):
            time.sleep(0.2)

        interrupt(process.pid)
        output, _ = process.communicate(timeout=60)
        alive = [marker.name for marker in markers.iterdir() if _alive(marker.name)]
    finally:
        # Whatever happened, nothing of it is left running.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    return process.returncode, output.splitlines(), alive


INTERRUPTED = [
    "warm interrupted after 0 of 3 tasks (their kernels are cached); run it "
    "again to warm the rest"
]


def test_ctrl_c_ends_warm_with_one_line(tmp_path):
    # Before: each worker printed its KeyboardInterrupt traceback (28 to
    # 112 lines). A terminal's Ctrl-C sends SIGINT to the whole foreground
    # process group: warm and its workers.
    def ctrl_c(pid):
        os.killpg(pid, signal.SIGINT)

    assert _interrupt_sleepy_warm(tmp_path, ctrl_c) == (130, INTERRUPTED, [])


@pytest.mark.skipif(
    platform.machine() != "x86_64" or sys.platform != "linux",
    reason="sends the signal with the x86-64 Linux tgkill system call",
)
def test_ctrl_c_taken_by_another_thread_still_ends_warm(tmp_path):
    # The kernel hands a process's SIGINT to any thread that does not block
    # it; warm's process has such threads besides the main one (OpenBLAS's,
    # started when torch imports numpy). Before: the main thread slept in
    # its wait until a worker finished (the 120-s sleeps of the test above,
    # beside a busy pytest worker). tgkill sends it to that thread.
    tgkill = 234  # x86-64 Linux

    def ctrl_c_in_another_thread(pid):
        others = [
            int(tid)
            for tid in os.listdir(f"/proc/{pid}/task")
            if int(tid) != pid and not _blocks_sigint(pid, tid)
        ]
        assert others, "warm's process has no other thread that takes SIGINT"
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.syscall(tgkill, pid, others[0], signal.SIGINT) == 0

    assert _interrupt_sleepy_warm(tmp_path, ctrl_c_in_another_thread) == (
        130,
        INTERRUPTED,
        [],
    )


def _blocks_sigint(pid, tid):
    status = pathlib.Path(f"/proc/{pid}/task/{tid}/status").read_text()
    blocked = int(status.split("SigBlk:")[1].split()[0], 16)

    return bool(blocked & (1 << (signal.SIGINT - 1)))


def _alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False

    return True


def test_ls_info_and_clear(recorded, tmp_path):
    cache_dir, manifest = recorded
    copy = tmp_path / "copy"
    assert invoke("warm", manifest, "--cache-dir", copy).exit_code == 0
    key = Cache(copy).keys()[0]

    listing = invoke("ls", "--json", "--cache-dir", copy)
    kernels = json.loads(listing.output)["kernels"]
    assert sorted(k["kernel_name"] for k in kernels) == sorted(RECORDED_OPS)
    assert {k["status"] for k in kernels} == {"ok"}

    assert {k["origin"]["kind"] for k in kernels} == {"manifest"}
    assert "  manifest  " in invoke("ls", "--cache-dir", copy).output

    info = invoke("info", key[:10], "--cache-dir", copy)
    assert info.exit_code == 0, info.output
    assert f"key: {key}" in info.output
    assert f"origin: built from the manifest {manifest.resolve()}\n" in info.output
    assert "verified: not yet" in info.output
    assert "npu:" in info.output and "rewrites: FoldTrueMask" in info.output
    assert "npu: precision (LowerFloat64): on fp64 tensors" in info.output

    one = invoke("clear", key[:10], "--cache-dir", copy)
    assert one.exit_code == 0 and "removed 1 kernels and 3 sources" in one.output
    assert key not in Cache(copy).keys() and len(Cache(copy).keys()) == 4

    (copy / "keep.txt").write_text("not ours")
    everything = invoke("clear", "--cache-dir", copy)
    assert everything.exit_code == 0
    assert Cache(copy).keys() == [] and not list(copy.glob("sources/*"))
    assert (copy / "keep.txt").exists()


def test_export_then_import_ships_the_cache(recorded, tmp_path):
    cache_dir, _ = recorded
    archive = tmp_path / "cache.tar.gz"
    target = tmp_path / "target"

    exported = invoke("export", archive, "--cache-dir", cache_dir)
    assert exported.exit_code == 0, exported.output
    assert "exported 5 kernels (15 sources)" in exported.output

    imported = invoke("import", archive, "--cache-dir", target)
    assert imported.exit_code == 0, imported.output
    assert parsed(tree(target)) == from_outside(tree(cache_dir), "archive", archive)

    for key in Cache(target).keys():
        assert Cache(target).load(key) is not None


def rewrite_archive(source, destination, change):
    with tarfile.open(source) as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive}

    members = change(members)

    with tarfile.open(destination, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def tamper_source(members):
    name = next(n for n in members if n.startswith("sources/"))
    return members | {name: members[name] + b"\nimport os\n"}


def drop_source(members):
    name = next(n for n in members if n.startswith("sources/"))
    return {n: d for n, d in members.items() if n != name}


def add_traversal(members):
    data = b"print('pwned')\n"
    return members | {"../escape.py": data}


@pytest.mark.parametrize(
    "change, message",
    [
        (tamper_source, "does not match its sha256"),
        (drop_source, "which is missing"),
        (add_traversal, "unexpected member '../escape.py'"),
    ],
    ids=["tampered", "incomplete", "path-traversal"],
)
def test_a_bad_archive_is_refused_and_nothing_is_written(
    recorded, tmp_path, change, message
):
    cache_dir, _ = recorded
    good, bad = tmp_path / "good.tar.gz", tmp_path / "bad.tar.gz"
    target = tmp_path / "target"
    assert invoke("export", good, "--cache-dir", cache_dir).exit_code == 0
    rewrite_archive(good, bad, change)

    result = invoke("import", bad, "--cache-dir", target)

    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert tree(target) == {}
    assert not (tmp_path / "escape.py").exists()


def write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "manifest, message",
    [
        (lambda d: d / "missing.json", "cannot read manifest"),
        (lambda d: write(d / "garbage.json", "{ nope"), "is not JSON"),
        (
            lambda d: write(d / "other.json", '{"a": 1}'),
            "is not a ninetoothed-ascend manifest",
        ),
        (
            lambda d: write(
                d / "future.json",
                '{"format": "ninetoothed-ascend-manifest", "version": 2, "kernels": []}',
            ),
            "is manifest version 2",
        ),
        (
            lambda d: write(
                d / "partial.json",
                '{"format": "ninetoothed-ascend-manifest", "version": 1, '
                '"environment": {}, "kernels": [{"key": "x"}]}',
            ),
            "kernel 0 has no valid 'definition' field",
        ),
        (
            lambda d: write(
                d / "old-ninetoothed.json",
                '{"format": "ninetoothed-ascend-manifest", "version": 1, '
                '"environment": {"python": "3.11.7", "ninetoothed": "0.1.0"}, "kernels": []}',
            ),
            "was recorded with",
        ),
    ],
    ids=[
        "missing",
        "garbage",
        "not-a-manifest",
        "other-version",
        "partial",
        "other-ninetoothed",
    ],
)
def test_bad_manifest_is_one_clear_line(tmp_path, manifest, message):
    cache_dir = tmp_path / "cache"

    result = invoke("warm", manifest(tmp_path), "--cache-dir", cache_dir)

    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not list(cache_dir.rglob("*.json"))


@pytest.mark.parametrize(
    "args, message",
    [
        (("info", "0123abc"), "no cached kernel has a key starting with '0123abc'"),
        (("clear", "0123abc"), "no cached kernel has a key starting with '0123abc'"),
        (
            ("warm", "no_such_module_anywhere"),
            "no such file, directory or importable module",
        ),
        (
            ("export", "--key", "feed"),
            "no cached kernel has a key starting with 'feed'",
        ),
        (
            ("check", "examples/no_such.py"),
            "no such file or directory, and not a cache key",
        ),
        (("check", "beef"), "no cached kernel has a key starting with 'beef'"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, args, message):
    (tmp_path / "cache").mkdir()  # read-only commands need one that exists

    result = invoke(*args, "--cache-dir", tmp_path / "cache")

    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_record_of_a_command_that_cannot_run(tmp_path):
    manifest = tmp_path / "m.json"

    result = invoke("record", "-o", manifest, "--", "/no/such/program")

    assert result.exit_code == 1
    assert "cannot run /no/such/program" in result.output
    assert not manifest.exists()


def test_doctor_reports_the_toolchain_and_cache(cache_dir):
    import triton

    result = invoke("doctor")

    assert result.exit_code == 0, result.output
    assert f"triton {triton.__version__}" in result.output
    assert f"cache dir:            {cache_dir}" in result.output
    assert "npu devices:" in result.output


def test_sources_in_the_cache_match_their_names(recorded):
    cache_dir, _ = recorded

    for source in (cache_dir / "sources").glob("*.py"):
        assert hashlib.sha256(source.read_bytes()).hexdigest() == source.stem


CALL_TWO_KERNELS = """
import torch
import ninetoothed_ascend
from downstream_ops import ops
x, y = torch.randn(4, 64), torch.rand(4, 64) + 0.5
for op in ("add", "where_max"):
    try:
        ops.run(op, x, y)
    except Exception:  # triton-ascend's interpreter need not run them: the types are recorded
        pass
"""


@pytest.mark.ascend
def test_check_compiles_recorded_kernels_by_manifest_and_by_key(tmp_path):
    cache_dir, manifest = tmp_path / "cache", tmp_path / "m.json"
    record(cache_dir, manifest, "-c", CALL_TWO_KERNELS)

    # The recorded calls are what this is about; BiShengIR's verdict on the
    # kernels is tests/check/test_bishengir.py's (at 8192 lanes these overflow UB).
    every = invoke(
        "check", "--manifest", manifest, "--cache-dir", cache_dir, "--no-bishengir"
    )

    assert every.exit_code == 0, every.output
    assert "2 kernels, 0 failures" in every.output
    assert every.output.count("passed ttir and ttadapter") == 2

    key = Cache(cache_dir).keys()[0]
    one = invoke(
        "check",
        key[:10],
        "--manifest",
        manifest,
        "--cache-dir",
        cache_dir,
        "--no-bishengir",
    )

    assert one.exit_code == 0, one.output
    assert "1 kernels, 0 failures" in one.output

    no_calls = invoke("check", key[:10], "--cache-dir", cache_dir)

    assert no_calls.exit_code == 1
    assert "has no recorded call" in no_calls.output


@pytest.mark.parametrize(
    "directory, message",
    [
        ("", "an empty path is no cache directory"),
        ("/", "refusing cache directory /: a system directory"),
        ("/usr", "refusing cache directory /usr: a system directory"),
        (
            "/proc/ninetoothed-ascend",
            "refusing cache directory /proc/ninetoothed-ascend: a system directory",
        ),
    ],
)
@pytest.mark.parametrize("command", [("ls",), ("warm", "x.json")])
def test_a_bad_cache_path_is_one_line(command, directory, message):
    result = invoke(*command, "--cache-dir", directory)

    assert result.exit_code in (1, 2), result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_empty_cache_variable_is_unset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NINETOOTHED_ASCEND_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    result = invoke("ls")

    assert result.exit_code == 0, result.output
    assert f"cache: {tmp_path / 'xdg' / 'ninetoothed-ascend'}" in result.output
    assert list(tmp_path.iterdir()) == [tmp_path / "xdg"]


#: Three kernels: rms_norm called with its block size as a keyword, add made
#: and never called, mul called.
CALL_WITH_KEYWORDS = """
import sys
import torch
sys.path[:0] = sys.argv[1:]
import add, mul, rms_norm
x = torch.randn(4, 64)
calls = (
    lambda: rms_norm.launch(rms_norm.kernel, x, torch.rand(64)),
    lambda: mul.launch(mul.kernel, x, x),
)
for call in calls:
    try:
        call()
    except Exception:  # triton-ascend's interpreter need not run them: the types are recorded
        pass
"""


def record_three_kernels(tmp_path):
    cache_dir, manifest = tmp_path / "cache", tmp_path / "m.json"
    record(
        cache_dir,
        manifest,
        "-c",
        CALL_WITH_KEYWORDS,
        ROOT / "examples" / "normalization",
        ROOT / "examples" / "elementwise",
    )

    return cache_dir, manifest


def test_record_notes_keyword_arguments(tmp_path):
    # ``rms_norm.launch`` passes ``BLOCK_SIZE=next_power_of_2(64)``.
    _, manifest = record_three_kernels(tmp_path)
    kernels = {k["kernel_name"]: k for k in json.loads(manifest.read_text())["kernels"]}
    (call,) = kernels["rms_norm"]["calls"]

    assert call["kwargs"] == {"BLOCK_SIZE": {"value": 64}}
    assert kernels["add"]["calls"] == []
    assert "kwargs" not in kernels["mul"]["calls"][0]

    args, kwargs = manifest_module.call_inputs(call)

    assert kwargs == {"BLOCK_SIZE": 64}
    assert [tuple(a.shape) for a in args if hasattr(a, "shape")] == [
        (4, 64),
        (1, 64),
        (4, 64),
    ]


@pytest.mark.ascend
def test_check_of_a_manifest_reports_every_kernel(tmp_path):
    # Before: the keyword block size was not recorded (``launch_rms_norm()
    # missing 1 required positional argument``), and one kernel without a
    # call, or one that failed, aborted the check of every other.
    cache_dir, manifest = record_three_kernels(tmp_path)
    document = json.loads(manifest.read_text())
    (mul,) = [k for k in document["kernels"] if k["kernel_name"] == "mul"]
    mul["calls"][0]["args"][0] = {"unsupported": "ndarray"}
    manifest.write_text(json.dumps(document))

    result = invoke(
        "check", "--manifest", manifest, "--cache-dir", cache_dir, "--no-bishengir"
    )
    lines = result.output.strip().splitlines()

    assert result.exit_code == 1, result.output
    assert any(
        line.startswith("rms_norm ") and "passed ttir and ttadapter" in line
        for line in lines
    ), result.output
    assert any(
        line.startswith("add ") and "SKIPPED has no recorded call" in line
        for line in lines
    ), result.output
    assert any(
        line.startswith("mul ")
        and "FAILED ManifestError: an argument of type ndarray was not recorded" in line
        for line in lines
    ), result.output
    assert lines[-1] == "3 kernels, 1 failures, 1 skipped (no recorded call)"


@pytest.mark.parametrize(
    "environment, message",
    [
        (
            {"NINETOOTHED_ASCEND_REMOTE_CACHE": "redis://127.0.0.1:1/0"},
            "Error: warm --remote: writing to a remote cache needs its secret: set "
            "NINETOOTHED_ASCEND_REMOTE_SECRET or NINETOOTHED_ASCEND_REMOTE_SECRET_FILE\n",
        ),
        (
            {
                "NINETOOTHED_ASCEND_REMOTE_CACHE": "redis://127.0.0.1:1/0",
                "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE": "/nonexistent/secret",
            },
            "Error: warm --remote: cannot read the secret file /nonexistent/secret of "
            "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE (No such file or directory)\n",
        ),
        (
            {},
            "Error: --remote needs a URL, or $NINETOOTHED_ASCEND_REMOTE_CACHE set (",
        ),
    ],
    ids=["no-secret", "unreadable-secret-file", "no-url"],
)
def test_warm_remote_refuses_in_one_line_before_any_work(
    tmp_path, monkeypatch, environment, message
):
    for variable in (
        "NINETOOTHED_ASCEND_REMOTE_CACHE",
        "NINETOOTHED_ASCEND_REMOTE_SECRET",
        "NINETOOTHED_ASCEND_REMOTE_SECRET_FILE",
    ):
        monkeypatch.delenv(variable, raising=False)

    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)

    result = invoke("warm", EXAMPLE_PATHS["add"], "--remote", "--cache-dir", tmp_path)

    # One line; a usage error (exit status 2) adds where the help is.
    assert result.exit_code == (2 if "--remote needs a URL" in message else 1)
    assert result.output.count("\n") == 1
    assert result.output.startswith(message.rstrip("\n"))
    assert not (tmp_path / "kernels").exists(), "it warmed before refusing"
