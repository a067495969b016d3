"""Trust: an entry is bound to its key, nothing failed is stored, every error is one line.

Each test reproduces one finding of an adversarial run against the cache and
the commands: a manifest or an archive from someone else is not trusted.
"""

import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest
from click.testing import CliRunner
from helpers import run_python
from test_trust import MAKE_ADD

from ninetoothed_ascend import manifest as manifest_module
from ninetoothed_ascend.cache import Cache, archive
from ninetoothed_ascend.cli import main

DOWNSTREAM = pathlib.Path(__file__).resolve().parent / "downstream"
SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
ENV = {"PYTHONPATH": f"{SRC}{os.pathsep}{DOWNSTREAM}"}

#: Two operators with the same signature: a swapped entry would silently run the other.
OPS = ("add", "sub")


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(arg) for arg in args], env=env)


def one_line(result, exit_code=1):
    assert result.exit_code == exit_code, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output

    return result.output


RUN_OPS = (
    "import sys, ninetoothed_ascend, downstream_ops.ops; "
    "downstream_ops.ops.main(sys.argv[1:])"
)


def run_ops(cache_dir, *ops):
    """Run the downstream operators on the CPU against ``cache_dir``; return their report."""

    completed = subprocess.run(
        [sys.executable, "-c", RUN_OPS, *ops],
        capture_output=True,
        text=True,
        env=os.environ | ENV | {"NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir)},
        check=False,
    )

    assert completed.returncode == 0, completed.stderr

    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``record`` of ``add`` and ``sub``: the cache directory and the manifest."""

    base = tmp_path_factory.mktemp("recorded")
    cache_dir, manifest = base / "cache", base / "manifest.json"
    result = invoke(
        "record",
        "-o",
        manifest,
        "--",
        sys.executable,
        "-m",
        "downstream_ops",
        *OPS,
        env=os.environ | ENV | {"NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir)},
    )

    assert result.exit_code == 0, result.output

    return cache_dir, manifest


def layout(directory):
    return sorted(
        path.relative_to(directory).as_posix()
        for sub in ("kernels", "sources")
        for path in (directory / sub).glob("*")
    )


# Finding 1: ``warm`` stored what it reported as failed.


def test_warm_stores_nothing_from_a_manifest_whose_source_was_altered(
    recorded, tmp_path
):
    _, manifest = recorded
    marker = tmp_path / "pwned"
    document = json.loads(manifest.read_text())
    kernel = document["kernels"][0]
    kernel["source"] = (
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        + kernel["source"]
    )
    altered = tmp_path / "altered.json"
    altered.write_text(json.dumps(document))
    fresh = tmp_path / "fresh"

    result = invoke("warm", altered, "--json", "--cache-dir", fresh)

    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["counts"] == {"built": 1, "cached": 0, "failed": 1}
    failed = [k for k in report["kernels"] if k["status"] == "failed"]
    assert "differ from the recorded ones" in failed[0]["detail"]
    assert len(Cache(fresh).keys()) == 1  # only the unaltered kernel
    # The next ordinary run makes the real kernel, and never the altered code.
    assert run_ops(fresh, *OPS)["max_abs_error"] == 0.0
    assert not marker.exists()


# Finding 2: entries were not bound to their key; import overwrote and
# accepted malformed entries.


def test_swapped_entries_are_rebuilt_never_run(recorded, tmp_path):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    first, second = sorted((copy / "kernels").glob("*.json"))
    first_data, second_data = first.read_bytes(), second.read_bytes()
    first.write_bytes(second_data)
    second.write_bytes(first_data)

    assert Cache(copy).load(first.stem) is None
    assert Cache(copy).load(second.stem) is None
    assert run_ops(copy, *OPS)["max_abs_error"] == 0.0
    assert Cache(copy).load(first.stem) is not None  # regenerated in place


def test_an_entry_recording_another_definition_is_not_loaded(recorded, tmp_path):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    key = Cache(copy).keys()[0]
    definition = json.loads(Cache(copy).entry_path(key).read_text())["definition"]

    assert Cache(copy).load(key, definition) is not None
    assert Cache(copy).load(key, "0" * 64) is None


def exported(cache_dir, tmp_path):
    path = tmp_path / "export.tar.gz"
    assert invoke("export", path, "--cache-dir", cache_dir).exit_code == 0

    with tarfile.open(path) as opened:
        return {m.name: opened.extractfile(m).read() for m in opened}


def write_archive(path, members, sizes=None):
    with tarfile.open(path, "w:gz") as written:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            written.addfile(info, io.BytesIO(data))

    return path


def change_entry(members, change):
    name = next(n for n in members if n.startswith("kernels/"))
    stored = json.loads(members[name])
    change(stored)

    return members | {name: json.dumps(stored).encode()}


def test_import_never_replaces_a_different_entry(recorded, tmp_path):
    cache_dir, _ = recorded
    target = tmp_path / "target"
    shutil.copytree(cache_dir, target)
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    members = change_entry(
        exported(cache_dir, tmp_path),
        lambda stored: stored.update(counters_delta=[0, 0]),
    )
    bad = write_archive(tmp_path / "bad.tar.gz", members)

    output = one_line(invoke("import", bad, "--cache-dir", target))

    assert "would replace a different entry" in output
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    # The same content again is not a replacement.
    good = write_archive(tmp_path / "good.tar.gz", exported(cache_dir, tmp_path))
    assert invoke("import", good, "--cache-dir", target).exit_code == 0


def swap_key(stored):
    stored["key"] = "f" * 64


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda stored: stored.update(variants={}), "variants are not exactly"),
        (
            lambda stored: stored["variants"]["cpu"].update(digest=None),
            "variant cpu has neither a sha256 digest nor an error",
        ),
        (
            lambda stored: stored.update(counters_delta=["1", "2"]),
            "counters_delta is not two non-negative integers",
        ),
        (swap_key, "it belongs to another kernel"),
        (
            lambda stored: stored.update(launch_name="x; import os"),
            "launch_name is not an identifier",
        ),
    ],
    ids=["no-variants", "null-digest", "string-counters", "other-key", "bad-name"],
)
def test_import_validates_every_entry_before_writing_anything(
    recorded, tmp_path, change, message
):
    cache_dir, _ = recorded
    target = tmp_path / "target"
    bad = write_archive(
        tmp_path / "bad.tar.gz", change_entry(exported(cache_dir, tmp_path), change)
    )

    output = one_line(invoke("import", bad, "--cache-dir", target))

    assert "is not a valid cache entry" in output and message in output
    assert layout(target) == []


# Finding 3: ``warm`` on a full disk reported kernels as built.

FULL_DISK_WARM = """
import resource, signal, sys
# Any file write past 4 KiB fails with EFBIG, as writes fail on a full disk.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
from ninetoothed_ascend.cli import main
main()
"""


def test_warm_on_a_full_disk_counts_nothing_as_cached_and_fails(recorded, tmp_path):
    _, manifest = recorded
    fresh = tmp_path / "fresh"

    completed = subprocess.run(
        [sys.executable, "-c", FULL_DISK_WARM, "warm", str(manifest), "--json"]
        + ["--cache-dir", str(fresh)],
        capture_output=True,
        text=True,
        env=os.environ | ENV,
        check=False,
    )

    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    assert report["counts"] == {"built": 0, "cached": 0, "failed": len(OPS)}
    assert all("File too large" in k["detail"] for k in report["kernels"])
    assert list((fresh / "kernels").glob("*.json")) == []


# Finding 4: an unwritable home stopped every entry point at NineToothed's import.


def test_a_home_that_cannot_be_written_is_not_fatal(tmp_path, cache_dir):
    # Tests run as root, who ignores permission bits: the home is under a
    # regular file, so nothing can be created in it.
    blocker = tmp_path / "file"
    blocker.write_text("")
    private = tmp_path / "tmp"
    private.mkdir()

    result = run_python(
        MAKE_ADD, cache_dir, HOME=str(blocker / "home"), TMPDIR=str(private)
    )

    assert result["ok"] and result["generations"] == 1
    assert (private / f"ninetoothed-ascend-{os.getuid()}" / "ninetoothed-home").is_dir()

    # The command too.
    completed = subprocess.run(
        [sys.executable, "-c", "from ninetoothed_ascend.cli import main; main()"]
        + ["ls", "--cache-dir", str(cache_dir)],
        capture_output=True,
        text=True,
        env=os.environ | {"HOME": str(blocker / "home"), "TMPDIR": str(private)},
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert "kernels" in completed.stdout


# Finding 5: tracebacks instead of one-line errors; read-only commands created directories.


def test_a_deeply_nested_manifest_is_one_line(tmp_path):
    manifest = tmp_path / "deep.json"
    manifest.write_text("[" * 100_000 + "]" * 100_000)

    output = one_line(invoke("warm", manifest, "--cache-dir", tmp_path / "cache"))

    assert "nested too deeply" in output


def test_show_of_a_file_that_is_not_a_module_is_a_usage_error():
    output = one_line(invoke("show", "/etc/passwd"), exit_code=2)

    assert "no Python file at /etc/passwd; give a .py module" in output


def test_ls_lists_a_dangling_symbolic_link_entry(recorded, tmp_path):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    (copy / "kernels" / f"{'e' * 64}.json").symlink_to(tmp_path / "nowhere")

    result = invoke("ls", "--json", "--cache-dir", copy)

    assert result.exit_code == 0, result.output
    statuses = {k["key"]: k["status"] for k in json.loads(result.output)["kernels"]}
    assert statuses["e" * 64] == "untrusted"
    assert sorted(set(statuses.values())) == ["ok", "untrusted"]


def test_clear_leaves_a_directory_named_like_an_entry(recorded, tmp_path):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    foreign = copy / "kernels" / f"{'d' * 64}.json"
    foreign.mkdir()

    result = invoke("clear", "--cache-dir", copy)

    assert result.exit_code == 0, result.output
    assert f"removed {len(OPS)} kernels" in result.output
    assert foreign.is_dir()


def test_a_garbage_archive_is_one_line(tmp_path):
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(os.urandom(4096))

    output = one_line(invoke("import", garbage, "--cache-dir", tmp_path / "cache"))

    assert "is not a readable archive" in output and "export" in output


@pytest.mark.parametrize("command", [("ls",), ("info", "abc"), ("clear",)])
def test_read_only_commands_create_nothing(tmp_path, command):
    typo = tmp_path / "TYPO" / "cache"

    output = one_line(invoke(*command, "--cache-dir", typo))

    assert "does not exist" in output
    assert not (tmp_path / "TYPO").exists()


def test_an_unexpected_exception_is_still_one_line(monkeypatch, tmp_path):
    def broken(self):
        raise RuntimeError("something no command foresaw\nsecond line")

    monkeypatch.setattr(Cache, "keys", broken)
    (tmp_path / "cache").mkdir()

    output = one_line(invoke("ls", "--cache-dir", tmp_path / "cache"))

    assert "RuntimeError: something no command foresaw" in output
    assert "NINETOOTHED_ASCEND_TRACEBACK=1" in output


# Finding 6: archives were read whole before being refused.


@pytest.fixture
def no_content_read(monkeypatch):
    """Fail the test if any member's content is read."""

    def refuse(self, member):
        raise AssertionError(f"read {member.name} before checking the limits")

    monkeypatch.setattr(tarfile.TarFile, "extractfile", refuse)


def zeros_source(size):
    data = bytes(size)
    return f"sources/{hashlib.sha256(data).hexdigest()}.py", data


def test_an_oversized_member_is_refused_from_its_declared_size(
    tmp_path, no_content_read
):
    # 13 members of 5 MiB (compressed to a few KiB each).
    members = dict(zeros_source(5 * 2**20 + n) for n in range(13))
    path = write_archive(tmp_path / "big.tar.gz", members)

    output = one_line(invoke("import", path, "--cache-dir", tmp_path / "cache"))

    assert "more than the limit of" in output
    assert layout(tmp_path / "cache") == []


@pytest.mark.parametrize("limit", ["MAX_MEMBERS", "MAX_TOTAL_SIZE"])
def test_too_many_members_or_bytes_are_refused_before_reading(
    tmp_path, monkeypatch, no_content_read, limit
):
    monkeypatch.setattr(archive, limit, 3 if limit == "MAX_MEMBERS" else 1000)
    members = dict(zeros_source(300 + n) for n in range(5))
    path = write_archive(tmp_path / "many.tar.gz", members)

    output = one_line(invoke("import", path, "--cache-dir", tmp_path / "cache"))

    assert "export fewer kernels per archive" in output


def test_an_oversized_manifest_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(manifest_module, "MAX_SIZE", 100)
    manifest = tmp_path / "big.json"
    manifest.write_text(" " * 101)
    monkeypatch.setattr(
        manifest_module.json,
        "loads",
        lambda *a, **k: pytest.fail("parsed before checking the size"),
    )

    output = one_line(invoke("warm", manifest, "--cache-dir", tmp_path / "cache"))

    assert "more than the limit of 100" in output


# What enters the cache from outside (a manifest through ``warm`` or
# ``check``, an archive through ``import``) is verified before anything of it
# runs, on one path: NineToothed's recorded source must match its recorded
# digest, every variant is built here from it, and the entry is bound to its
# definition at the first ``make`` that has the definition.


def canary_line(marker):
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"


def altered_manifest(manifest, path, change):
    """Write ``manifest`` with ``change(document)`` applied to ``path``."""

    document = json.loads(manifest.read_text())
    change(document)
    path.write_text(json.dumps(document))

    return path


def test_warm_of_a_manifest_with_a_crafted_mask_comparator_runs_nothing(tmp_path):
    from helpers import FLATTENED, canary_payload

    canary = tmp_path / "canary"
    crafted = FLATTENED.replace(
        "< x_size_0 * x_size_1)",
        f"< x_size_0 * x_size_1 + {canary_payload(canary)} * 0)",
    )
    original = {"cuda": hashlib.sha256(FLATTENED.encode()).hexdigest()}
    consistent = {"cuda": hashlib.sha256(crafted.encode()).hexdigest()}

    for variants in (original, consistent):
        kernel = {
            "definition": "d" * 64,
            "key": "k" * 64,
            "kernel_name": "kernel",
            "launch_name": "launch_kernel",
            "counters_delta": [0, 0],
            "origin": {},
            "source": crafted,
            "variants": variants | {"npu": "e" * 64, "cpu": "f" * 64},
            "calls": [],
        }
        manifest = tmp_path / "crafted.json"
        manifest_module.write(
            manifest,
            {
                "format": manifest_module.FORMAT,
                "version": manifest_module.VERSION,
                "command": [],
                "environment": manifest_module.environment_description(),
                "kernels": [kernel],
            },
        )

        result = invoke("warm", manifest, "--json", "--cache-dir", tmp_path / "cache")

        assert not canary.exists()
        assert result.exit_code == 1, result.output
        (failed,) = json.loads(result.output)["kernels"]
        assert failed["status"] == "failed"
        assert "nothing was cached" in failed["detail"], failed["detail"]
        assert Cache(tmp_path / "cache").keys() == []


def test_check_of_a_manifest_whose_source_gained_a_line_stores_nothing(
    recorded, tmp_path
):
    _, manifest = recorded
    marker = tmp_path / "pwned"

    def change(document):
        kernel = document["kernels"][0]
        kernel["source"] = canary_line(marker) + kernel["source"]

    altered = altered_manifest(manifest, tmp_path / "altered.json", change)
    fresh = tmp_path / "fresh"
    fresh.mkdir()

    result = invoke("check", "--manifest", altered, "--cache-dir", fresh)

    listed = json.loads(invoke("ls", "--json", "--cache-dir", fresh).output)
    assert "add" not in [k["kernel_name"] for k in listed["kernels"]]
    assert not marker.exists()
    assert "differ from the recorded ones" in result.output, result.output
    assert result.exit_code == 1
    # The next ordinary program makes the real kernel.
    assert run_ops(fresh, *OPS)["max_abs_error"] == 0.0
    assert not marker.exists()


def test_the_environment_field_of_a_manifest_is_no_way_around_the_check(
    recorded, tmp_path
):
    _, manifest = recorded
    marker = tmp_path / "pwned"

    def change(document):
        document["environment"]["ninetoothed-ascend"] = "0" * 64
        kernel = document["kernels"][0]
        kernel["source"] = canary_line(marker) + kernel["source"]

    altered = altered_manifest(manifest, tmp_path / "altered.json", change)
    fresh = tmp_path / "fresh"

    result = invoke("warm", altered, "--json", "--cache-dir", fresh)

    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["counts"] == {"built": 1, "cached": 0, "failed": 1}
    assert not marker.exists()
    assert run_ops(fresh, *OPS)["max_abs_error"] == 0.0
    assert not marker.exists()


def swap_fields(members):
    """Swap every field but ``key`` and ``definition`` between the archive's two entries."""

    first, second = sorted(n for n in members if n.startswith("kernels/"))
    a, b = json.loads(members[first]), json.loads(members[second])
    swapped_a = b | {"key": a["key"], "definition": a["definition"]}
    swapped_b = a | {"key": b["key"], "definition": b["definition"]}

    return members | {
        first: json.dumps(swapped_a).encode(),
        second: json.dumps(swapped_b).encode(),
    }


def test_an_archive_whose_entries_swap_every_field_but_key_and_definition_never_runs(
    recorded, tmp_path
):
    cache_dir, _ = recorded
    bad = write_archive(
        tmp_path / "swapped.tar.gz", swap_fields(exported(cache_dir, tmp_path))
    )
    target = tmp_path / "target"
    invoke("import", bad, "--cache-dir", target)

    # add must add, sub subtract: the swapped entries are refused at their
    # first make, which has the definition, and built again.
    assert run_ops(target, *OPS)["max_abs_error"] == 0.0
    assert run_ops(target, *OPS)["max_abs_error"] == 0.0


def fabricate(members, marker):
    """Give the archive's first entry a CUDA source that writes ``marker`` and the CPU variant built from it, every digest self-consistent."""

    from ninetoothed_ascend.jit import GeneratedSource
    from ninetoothed_ascend.jit.variants import build_variant

    name = sorted(n for n in members if n.startswith("kernels/"))[0]
    stored = json.loads(members[name])
    cuda = stored["variants"]["cuda"]
    source = canary_line(marker) + members[f"sources/{cuda['digest']}.py"].decode()
    generated = GeneratedSource(source, stored["kernel_name"], stored["launch_name"])
    members = dict(members)

    for variant in ("cuda", "cpu"):
        built = build_variant(generated, variant)
        members[f"sources/{built.digest}.py"] = built.source.encode()
        stored["variants"][variant]["digest"] = built.digest

    stored["variants"].pop("npu", None)
    members[name] = json.dumps(stored).encode()

    return members


def test_a_fabricated_entry_with_self_consistent_hashes_never_runs(recorded, tmp_path):
    cache_dir, _ = recorded
    marker = tmp_path / "pwned"
    bad = write_archive(
        tmp_path / "fabricated.tar.gz", fabricate(exported(cache_dir, tmp_path), marker)
    )
    target = tmp_path / "target"
    invoke("import", bad, "--cache-dir", target)

    assert run_ops(target, *OPS)["max_abs_error"] == 0.0
    assert not marker.exists()


# An entry that fails at load or at its first call, for a reason of its own,
# is quarantined and built again, once, with a warning; the call succeeds.


def run_ops_warnings(cache_dir, *ops):
    """Like :func:`run_ops`, with the warnings on stderr."""

    completed = subprocess.run(
        [sys.executable, "-W", "always", "-c", RUN_OPS, *ops],
        capture_output=True,
        text=True,
        env=os.environ | ENV | {"NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir)},
        check=False,
    )

    assert completed.returncode == 0, completed.stderr

    report = json.loads(completed.stdout.strip().splitlines()[-1])
    warned = [
        line for line in completed.stderr.splitlines() if "ninetoothed-ascend:" in line
    ]

    return report, warned


def entry_of(cache_dir, kernel_name):
    for path in (cache_dir / "kernels").glob("*.json"):
        stored = json.loads(path.read_text())

        if stored["kernel_name"] == kernel_name:
            return path, stored

    raise AssertionError(f"no entry of {kernel_name}")


def assert_quarantined_and_rebuilt(cache_dir, key):
    report, warned = run_ops_warnings(cache_dir, *OPS)

    assert report["max_abs_error"] == 0.0
    assert len(warned) == 1 and "quarantined" in warned[0], warned
    assert (cache_dir / "quarantine" / f"{key}.json").is_file()
    # Built once: the next program finds a sound entry and warns of nothing.
    report, warned = run_ops_warnings(cache_dir, *OPS)
    assert report["max_abs_error"] == 0.0 and warned == []


def test_an_out_of_range_requirements_index_is_quarantined_and_rebuilt(
    recorded, tmp_path
):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    path, stored = entry_of(copy, "add")
    ndims = stored["launch"]["requirements"]["ndims"]
    ndims[0][0] += 10  # one flipped digit
    path.write_text(json.dumps(stored))

    assert_quarantined_and_rebuilt(copy, path.stem)


def test_variant_digests_swapped_between_entries_are_quarantined_and_rebuilt(
    recorded, tmp_path
):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    add_path, add = entry_of(copy, "add")
    sub_path, sub = entry_of(copy, "sub")
    add["variants"]["cpu"], sub["variants"]["cpu"] = (
        sub["variants"]["cpu"],
        add["variants"]["cpu"],
    )
    add_path.write_text(json.dumps(add))

    assert_quarantined_and_rebuilt(copy, add_path.stem)


def test_a_variant_that_fails_at_its_first_call_is_quarantined_and_rebuilt(
    recorded, tmp_path
):
    cache_dir, _ = recorded
    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    path, stored = entry_of(copy, "add")
    record = stored["variants"]["cpu"]
    source = (copy / "sources" / f"{record['digest']}.py").read_bytes()
    source += b"\nraise RuntimeError('damaged')\n"
    record["digest"] = hashlib.sha256(source).hexdigest()
    (copy / "sources" / f"{record['digest']}.py").write_bytes(source)
    path.write_text(json.dumps(stored))

    assert_quarantined_and_rebuilt(copy, path.stem)


def test_warmed_entries_are_bound_to_their_definitions_at_the_first_make(
    recorded, tmp_path
):
    _, manifest = recorded
    fresh = tmp_path / "fresh"
    assert invoke("warm", manifest, "--cache-dir", fresh).exit_code == 0
    entries = sorted((fresh / "kernels").glob("*.json"))
    sources = sorted((fresh / "sources").glob("*.py"))

    assert [json.loads(p.read_text())["verified"] for p in entries] == [False] * 2
    report, warned = run_ops_warnings(fresh, *OPS)

    assert report["max_abs_error"] == 0.0 and warned == []
    # Generated and compared, not built again: the same entries and sources.
    assert sorted((fresh / "kernels").glob("*.json")) == entries
    assert sorted((fresh / "sources").glob("*.py")) == sources
    assert [json.loads(p.read_text())["verified"] for p in entries] == [True] * 2
