"""The disk cache: keys, warm starts across processes, concurrency, corruption."""

import hashlib
import importlib.util
import json
import multiprocessing
import pathlib
import tempfile

import ninetoothed
import pytest
from conftest import EXAMPLE_PATHS
from helpers import run_python

from ninetoothed_ascend import cache as cache_module
from ninetoothed_ascend.host import likely_call_device_type
from ninetoothed_ascend.jit.fingerprint import kernel_key

KERNEL_SOURCE = """
import ninetoothed
from ninetoothed import Tensor

SCALE = {scale}


def helper(x):
    return x * SCALE


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile(({tile},)), output.tile(({tile},))


def application(input, output):
    output = {body}  # noqa: F841


tensors = (Tensor({ndim}, other={other}), Tensor({ndim}))
"""


BASE = {
    "scale": 2,
    "tile": "BLOCK_SIZE",
    "body": "helper(input)",
    "ndim": 1,
    "other": None,
}


def key_of(tmp_path, monkeypatch, options=None, **changes):
    fields = BASE | changes
    path = tmp_path / f"kernel_{abs(hash(repr(sorted(fields.items()))))}.py"
    path.write_text(KERNEL_SOURCE.format(**fields))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    # Tensor and block-size names come from process-wide counters and are part of the key.
    monkeypatch.setattr(ninetoothed.Tensor, "num_instances", 0)
    monkeypatch.setattr(ninetoothed.block_size, "_num_block_sizes", 0)
    spec.loader.exec_module(module)
    options = {"kernel_name": None, "num_warps": None, "num_stages": None} | (
        options or {}
    )

    return kernel_key(
        ("make", module.arrangement, module.application, module.tensors, options),
        {"max_num_regs": 65536, "max_shared_mem": 232448},
        (0, 0),
    ), module


def test_key_is_stable_for_an_unchanged_kernel(tmp_path, monkeypatch):
    assert key_of(tmp_path, monkeypatch)[0] == key_of(tmp_path, monkeypatch)[0]


@pytest.mark.parametrize(
    "what, change",
    [
        ("arrangement", {"tile": "BLOCK_SIZE * 2"}),
        ("application", {"body": "helper(input) + 1"}),
        ("tensors", {"ndim": 2}),
        ("tensor options", {"other": 0}),
        ("constant used", {"scale": 3}),
    ],
)
def test_key_changes_when_the_kernel_changes(tmp_path, monkeypatch, what, change):
    assert (
        key_of(tmp_path, monkeypatch)[0] != key_of(tmp_path, monkeypatch, **change)[0]
    ), what


def test_key_changes_when_a_function_used_changes(tmp_path, monkeypatch):
    _, module = key_of(tmp_path, monkeypatch)
    definition = ("make", module.arrangement, module.application, module.tensors, {})
    before = kernel_key(definition, {}, (0, 0))

    module.helper = lambda x: x * 3

    assert kernel_key(definition, {}, (0, 0)) != before


@pytest.mark.parametrize(
    "options",
    [{"num_warps": 4}, {"num_stages": 2}, {"max_num_configs": 2}, {"kernel_name": "k"}],
)
def test_key_changes_with_options(tmp_path, monkeypatch, options):
    assert key_of(tmp_path, monkeypatch)[0] != key_of(tmp_path, monkeypatch, options)[0]


def test_key_changes_with_device_properties_and_counters(tmp_path, monkeypatch):
    _, module = key_of(tmp_path, monkeypatch)
    definition = ("make", module.arrangement, module.application, module.tensors, {})
    base = kernel_key(definition, {"max_num_regs": 65536}, (0, 0))

    assert base != kernel_key(definition, {"max_num_regs": 32768}, (0, 0))
    assert base != kernel_key(definition, {"max_num_regs": 65536}, (0, 1))


MAKE_MATMUL = f"""
    import importlib, importlib.util, json, time
    # The subpackage, not the decorator the package exports under the same name.
    jit = importlib.import_module("ninetoothed_ascend.jit")
    calls = []
    generate = jit.generate_source
    jit.generate_source = lambda *a, **k: calls.append(1) or generate(*a, **k)
    start = time.perf_counter()
    spec = importlib.util.spec_from_file_location("matmul", {str(EXAMPLE_PATHS["matmul"])!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(json.dumps({{"generations": len(calls), "key": module.kernel.key,
                      "npu": module.kernel.source("npu")}}))
"""


def test_warm_start_skips_code_generation(cache_dir):
    cold = run_python(MAKE_MATMUL, cache_dir)
    warm = run_python(MAKE_MATMUL, cache_dir)

    assert cold["generations"] == 1
    assert warm["generations"] == 0
    assert warm["key"] == cold["key"]
    assert warm["npu"] == cold["npu"]


MAKE_EXAMPLES = f"""
    import importlib.util, json
    keys = {{}}
    for name, path in {[(name, str(EXAMPLE_PATHS[name])) for name in ("softmax", "rms_norm", "add")]!r}:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        keys[name] = module.kernel.key
    print(json.dumps(keys))
"""


def test_a_kernels_key_is_the_same_in_every_process(cache_dir, tmp_path):
    """Whatever its tensors' symbols are (softmax's and rms_norm's sizes are expressions), a kernel's key is the same in another process, with the cache filled or empty."""

    first = run_python(MAKE_EXAMPLES, cache_dir)

    assert run_python(MAKE_EXAMPLES, cache_dir) == first
    assert run_python(MAKE_EXAMPLES, tmp_path / "other") == first


def _make_matmul_in_process(cache_dir, queue):
    import os

    os.environ["NINETOOTHED_ASCEND_CACHE_DIR"] = str(cache_dir)

    try:
        spec = importlib.util.spec_from_file_location("matmul", EXAMPLE_PATHS["matmul"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        # Variants are built at their first use: each process builds all three.
        module.kernel.build()
        queue.put(("ok", module.kernel.key))
    except BaseException as error:
        queue.put(("error", repr(error)))


def test_concurrent_generation_leaves_one_valid_entry(cache_dir):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [
        context.Process(target=_make_matmul_in_process, args=(cache_dir, queue))
        for _ in range(4)
    ]

    for process in processes:
        process.start()

    results = [queue.get(timeout=300) for _ in processes]

    for process in processes:
        process.join(timeout=60)

    assert {status for status, _ in results} == {"ok"}, results
    assert len({key for _, key in results}) == 1

    entries = list((cache_dir / "kernels").glob("*.json"))
    sources = list((cache_dir / "sources").glob("*.py"))

    assert len(entries) == 1
    assert len(sources) == 3
    assert not list(cache_dir.rglob(".*"))  # no temporary file left behind

    for source in sources:
        assert hashlib.sha256(source.read_bytes()).hexdigest() == source.stem


def _stored_source(cache_dir, variant):
    # The one entry's source file of ``variant``.
    entry = json.loads(next((cache_dir / "kernels").glob("*.json")).read_text())

    return cache_dir / "sources" / f"{entry['variants'][variant]['digest']}.py"


def _tamper(path):
    path.write_text(path.read_text() + "\nraise SystemExit('tampered')\n")


@pytest.mark.parametrize("damage", ["source", "entry"])
def test_damaged_cache_is_regenerated(cache_dir, damage):
    cold = run_python(MAKE_MATMUL, cache_dir)

    if damage == "source":
        # NineToothed's source, which ``make`` reads and every other variant
        # is built from (test_a_damaged_variant_is_built_again_from_ninetoothed_source
        # damages another, read where it is first needed).
        _tamper(_stored_source(cache_dir, "cuda"))
    else:
        victim = next((cache_dir / "kernels").glob("*.json"))
        victim.write_text("{ not json")

    again = run_python(MAKE_MATMUL, cache_dir)

    assert again["generations"] == 1
    assert again["npu"] == cold["npu"]

    for source in (cache_dir / "sources").glob("*.py"):
        assert hashlib.sha256(source.read_bytes()).hexdigest() == source.stem

    entry = json.loads(next((cache_dir / "kernels").glob("*.json")).read_text())
    assert entry["format"] == cache_module.FORMAT


SOURCE_OF_MATMUL = f"""
    import importlib, importlib.util, json
    jit = importlib.import_module("ninetoothed_ascend.jit")
    calls = []
    generate = jit.generate_source
    jit.generate_source = lambda *a, **k: calls.append(1) or generate(*a, **k)
    spec = importlib.util.spec_from_file_location("matmul", {str(EXAMPLE_PATHS["matmul"])!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    variant = "{{variant}}"
    module.kernel.variant(variant)  # imported: a tampered source would exit
    print(json.dumps({{"generations": len(calls), "source": module.kernel.source(variant)}}))
"""


def test_a_damaged_variant_is_built_again_from_ninetoothed_source(cache_dir):
    """A stored variant that fails its hash check, read where it is first needed, is built again from NineToothed's source (no generation), imported, and stored whole."""

    # A variant ``make`` does not read: not the likely device's.
    variant = next(name for name in ("npu", "cpu") if name != likely_call_device_type())
    script = SOURCE_OF_MATMUL.replace("{variant}", variant)
    cold = run_python(script, cache_dir)
    victim = _stored_source(cache_dir, variant)
    _tamper(victim)

    again = run_python(script, cache_dir)

    assert cold["generations"] == 1
    assert again["generations"] == 0
    assert again["source"] == cold["source"]
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == victim.stem


def test_directory_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path / "b"))
    assert cache_module.default_directory() == tmp_path / "a"

    monkeypatch.delenv("NINETOOTHED_ASCEND_CACHE_DIR")
    assert cache_module.default_directory() == tmp_path / "b"

    monkeypatch.delenv("NINETOOTHED_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_module.default_directory() == tmp_path / "xdg" / "ninetoothed-ascend"


def test_unwritable_directories_fall_back_with_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NINETOOTHED_ASCEND_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "xdg"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    with pytest.warns(UserWarning, match="no usable cache directory"):
        directory = cache_module.default_directory()

    assert directory.parent == tmp_path / "tmp"


def test_unwritable_cache_keeps_the_kernel_usable(tmp_path, monkeypatch):
    import torch
    from helpers import load_example

    def refuse(self, key, entry):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module.Cache, "store", refuse)

    with pytest.warns(UserWarning, match="could not cache kernel `add`.*No space left"):
        module = load_example("add")

    assert module.kernel.path("cpu") is None
    input, other = module.inputs("cpu", torch.float32)
    torch.testing.assert_close(
        module.launch(module.kernel, input, other), input + other
    )


@pytest.fixture
def cuda_host(monkeypatch):
    """A host whose calls are most likely CUDA calls: ``make`` builds NineToothed's source only."""

    from ninetoothed_ascend import host

    monkeypatch.setattr(host, "likely_call_device_type", lambda: "cuda")


def test_make_stores_the_cuda_variant_and_builds_the_others_at_first_use(
    cache_dir, cuda_host
):
    import torch
    from helpers import load_example

    module = load_example("add")
    kernel = module.kernel

    assert list(kernel.entry.variants) == ["cuda"]
    assert list(cache_module.Cache(cache_dir).load(kernel.key).variants) == ["cuda"]

    input, other = module.inputs("cpu", torch.float32)
    torch.testing.assert_close(module.launch(kernel, input, other), input + other)

    assert list(kernel.entry.variants) == ["cuda", "cpu"]
    assert list(cache_module.Cache(cache_dir).load(kernel.key).variants) == [
        "cuda",
        "cpu",
    ]

    assert "FoldTrueMask" in dict(kernel.rewrites("npu"))
    stored = cache_module.Cache(cache_dir).load(kernel.key)
    assert stored.digests() == kernel.entry.digests()
    assert set(stored.digests()) == {"cuda", "npu", "cpu"}


@pytest.mark.parametrize("device_type", ["cpu", "npu"])
def test_make_builds_the_variant_of_the_likely_device_in_the_same_cache_write(
    cache_dir, monkeypatch, device_type
):
    import torch
    from helpers import load_example

    from ninetoothed_ascend import host

    monkeypatch.setattr(host, "likely_call_device_type", lambda: device_type)
    stores = []
    store = cache_module.Cache.store

    def counted_store(self, key, entry):
        stores.append(sorted(entry.variants))
        store(self, key, entry)

    monkeypatch.setattr(cache_module.Cache, "store", counted_store)
    module = load_example("add")
    kernel = module.kernel

    assert stores == [sorted({"cuda", device_type})]
    stored = cache_module.Cache(cache_dir).load(kernel.key)
    assert set(stored.variants) == {"cuda", device_type}
    assert stored.digests() == kernel.entry.digests()
    # What the checked variants' launches require is stored with them.
    assert "requirements" in stored.launch

    if device_type == "cpu":
        input, other = module.inputs("cpu", torch.float32)
        torch.testing.assert_close(module.launch(kernel, input, other), input + other)
        # The call found its variant built: no second write.
        assert len(stores) == 1


def test_a_likely_variant_that_cannot_be_built_at_make_is_left_to_its_first_use(
    cache_dir, monkeypatch
):
    """What building it raises outside its passes is raised at its first use, as before ``make`` built it; NineToothed's source is stored, with the launch facts read from it."""

    from helpers import load_example

    from ninetoothed_ascend import host
    from ninetoothed_ascend.jit import variants

    def broken(*args, **kwargs):
        raise RuntimeError("pipeline broke")

    working = variants.run_pipeline
    monkeypatch.setattr(host, "likely_call_device_type", lambda: "cpu")
    monkeypatch.setattr(variants, "run_pipeline", broken)
    module = load_example("add")
    kernel = module.kernel

    assert list(kernel.entry.variants) == ["cuda"]
    stored = cache_module.Cache(cache_dir).load(kernel.key)
    assert list(stored.variants) == ["cuda"]
    assert stored.launch["requirements"]["ndims"] == [[0, 1], [1, 1], [2, 1]]

    with pytest.raises(RuntimeError, match="pipeline broke"):
        kernel.variant("cpu")

    monkeypatch.setattr(variants, "run_pipeline", working)
    assert "import triton.runtime.interpreter" in kernel.source("cpu")
    assert set(cache_module.Cache(cache_dir).load(kernel.key).variants) == {
        "cuda",
        "cpu",
    }


def test_the_likely_device_type_follows_what_the_process_can_call_with(monkeypatch):
    import sys

    import torch

    from ninetoothed_ascend import host

    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    monkeypatch.setattr(host, "_torch_npu_installed", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert host.likely_call_device_type() == "cpu"

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert host.likely_call_device_type() == "cuda"

    monkeypatch.setitem(sys.modules, "torch_npu", object())
    assert host.likely_call_device_type() == "npu"

    # Installed, not imported yet: NPU calls, unless torch sees a GPU.
    monkeypatch.delitem(sys.modules, "torch_npu")
    monkeypatch.setattr(host, "_torch_npu_installed", lambda: True)
    assert host.likely_call_device_type() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert host.likely_call_device_type() == "npu"


def test_a_handle_from_a_cache_hit_reads_no_source(cache_dir, monkeypatch):
    import torch
    from helpers import load_example

    from ninetoothed_ascend.compiler import launch
    from ninetoothed_ascend.jit import dispatch
    from ninetoothed_ascend.jit.handle import Handle

    module = load_example("add")
    # As a process that ran it left it: with the CPU variant, and with that
    # what its launches require (Handle.requirements).
    module.kernel.build(("cpu",))
    entry = cache_module.Cache(cache_dir).load(module.kernel.key)

    def refuse(*args, **kwargs):
        raise AssertionError("the source was analysed at run time")

    monkeypatch.setattr(launch, "launch_parameters", refuse)
    monkeypatch.setattr(launch, "requirements", refuse)
    handle = dispatch.new_handle(entry.kernel_name, module.kernel.key, entry)

    assert type(handle).__call__ is not Handle.__call__
    input, other = module.inputs("cpu", torch.float32)
    torch.testing.assert_close(module.launch(handle, input, other), input + other)

    with pytest.raises(ValueError, match=r"kernel `add` \(cpu variant\)"):
        module.launch(handle, input.view(1, -1), other.view(1, -1))


def test_a_checked_variant_reads_the_launch_requirements_from_its_pipelines_parse(
    cache_dir, cuda_host, monkeypatch
):
    """Building the CPU variant parses NineToothed's source once: the pipeline's parse also gives what its launches require."""

    import ast

    from helpers import load_example

    module = load_example("add")
    source = module.kernel.source("cuda")
    parses = []
    parse = ast.parse

    def counting_parse(text, *args, **kwargs):
        parses.append(text == source)

        return parse(text, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    module.kernel.build(("cpu",))

    assert parses.count(True) == 1
    assert cache_module.Cache(cache_dir).load(module.kernel.key).launch["requirements"][
        "ndims"
    ] == [[0, 1], [1, 1], [2, 1]]


def test_launch_requirements_are_read_when_the_kernel_is_made(
    cache_dir, cuda_host, monkeypatch
):
    """A ``make`` that builds only the CUDA variant reads them from one parse of NineToothed's source; a handle made from an entry without them reads them when it is made, never at a launch."""

    import torch
    from helpers import load_example

    from ninetoothed_ascend.compiler import launch
    from ninetoothed_ascend.jit import dispatch

    module = load_example("add")
    cache = cache_module.Cache(cache_dir)
    entry = cache.load(module.kernel.key)

    assert list(entry.variants) == ["cuda"]
    assert entry.launch["requirements"]["ndims"] == [[0, 1], [1, 1], [2, 1]]

    del entry.launch["requirements"]
    fresh = dispatch.new_handle(module.kernel.kernel_name, module.kernel.key, entry)

    assert entry.launch["requirements"]["ndims"] == [[0, 1], [1, 1], [2, 1]]

    def refuse(*args, **kwargs):
        raise AssertionError("the source was analysed at a launch")

    monkeypatch.setattr(launch, "requirements", refuse)
    input, other = module.inputs("cpu", torch.float32)

    with pytest.raises(ValueError, match=r"kernel `add` \(cpu variant\)"):
        module.launch(fresh, input.view(1, -1), other.view(1, -1))


# Lock and path faults: the kernel runs from memory with one warning.


def fault_warnings(result):
    return [w for w in result["warnings"] if "ninetoothed-ascend" in w]


@pytest.mark.parametrize("fault", ["directory", "symlink-loop"])
def test_a_lock_that_cannot_be_taken_runs_the_kernel_from_memory(cache_dir, fault):
    from test_trust import MAKE_ADD

    assert run_python(MAKE_ADD, cache_dir)["generations"] == 1
    # The kernel's lock (the cache's eviction has a lock of its own).
    (lock,) = (cache_dir / "locks").glob(f"{'[0-9a-f]' * 64}.lock")
    lock.unlink()

    if fault == "directory":
        lock.mkdir()
    else:
        lock.symlink_to(lock.name)

    for entry in (cache_dir / "kernels").glob("*.json"):
        entry.unlink()

    result = run_python(MAKE_ADD, cache_dir)

    assert result["ok"] and result["path"] is None
    (warning,) = fault_warnings(result)
    assert "runs from memory" in warning and str(lock) in warning


def test_a_cache_path_too_long_for_its_lock_runs_the_kernel_from_memory(tmp_path):
    from test_trust import MAKE_ADD

    # 4,034 characters: the directory can be made, its locks' paths cannot.
    deep = str(tmp_path)

    while len(deep) < 4034:
        deep += "/" + "d" * min(200, 4034 - len(deep) - 1)

    deep = pathlib.Path(deep)
    assert len(str(deep)) == 4034
    deep.mkdir(parents=True)

    result = run_python(MAKE_ADD, deep)

    assert result["ok"] and result["path"] is None
    (warning,) = fault_warnings(result)
    assert "runs from memory" in warning


def test_a_cache_variable_naming_a_file_falls_back_with_one_warning(tmp_path):
    from test_trust import MAKE_ADD

    blocker = tmp_path / "file"
    blocker.write_text("")
    blocker.chmod(0o700)  # a file we may write and "search"
    private = tmp_path / "tmp"
    private.mkdir()

    result = run_python(
        MAKE_ADD, blocker, TMPDIR=str(private), XDG_CACHE_HOME=str(blocker / "xdg")
    )

    assert result["ok"] and result["generations"] == 1
    (warning,) = fault_warnings(result)
    assert f"{blocker} is not a directory" in warning
    assert result["path"].startswith(str(private))


def test_a_variants_facts_are_stored_with_it_and_checked(cache_dir, caplog):
    """What a variant keeps of its passes' facts comes back from the cache; an entry whose facts are not names is refused (and generated again)."""

    cache = cache_module.Cache(cache_dir)
    facts = {"kernel": {"layout_flags": ["F"], "transposed": ["T"]}}
    entry = cache_module.Entry(
        "kernel",
        "launch",
        {
            "cuda": cache_module.Variant("import torch\n\ndef launch(x):\n    pass\n"),
            "npu": cache_module.Variant(
                "import torch\n\ndef launch(x):\n    return x\n",
                (("Pass", 1),),
                facts=facts,
            ),
        },
        definition="0" * 64,
        launch={"parameters": ["x"], "tensors": [], "requirements": None},
        environment="0" * 64,
    )
    cache.store("key", entry)

    loaded = cache.load("key")

    assert loaded.variants["npu"].facts == facts
    assert loaded.variants["cuda"].facts == {}

    path = cache_dir / "kernels" / "key.json"
    stored = json.loads(path.read_text())
    stored["variants"]["npu"]["facts"] = {"kernel": {"layout_flags": ["F; import os"]}}
    path.write_text(json.dumps(stored))

    assert cache.load("key") is None
    assert "variant npu has malformed facts" in caplog.text
