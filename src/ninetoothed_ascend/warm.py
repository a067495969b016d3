"""Warming a cache ahead of time, from a manifest or from modules (``ninetoothed-ascend warm``).

From a manifest (:mod:`ninetoothed_ascend.manifest`) recorded with the same
Python and NineToothed versions, each kernel is one task:
its NPU and CPU variants are built again from NineToothed's recorded source
through this installation's pass pipelines and stored under the key that this
environment gives the recorded definition. With the same ninetoothed-ascend
as the recording, every variant must come out byte for byte as recorded; a
difference fails the task.

From a module (a ``.py`` file, a directory of them, or a dotted module or
package name), each module is one task, imported in a fresh process: every
kernel it makes while being imported is built and stored. A file is imported
by the name a program imports it by (:func:`import_name`: ``my_kernels.py``
as ``import my_kernels`` with its directory on ``sys.path``), which the key
depends on. NineToothed names tensors from process-wide counters that are
part of the key, so this warms exactly the kernels of a program that imports
that module first; for any other program (and for kernels made at run time),
record the program instead.
"""

import concurrent.futures
import dataclasses
import importlib
import importlib.util
import multiprocessing
import os
import pathlib
import pkgutil
import signal
import sys
import time

#: ``status`` of a :class:`Result`.
BUILT, CACHED, FAILED = "built", "cached", "failed"


@dataclasses.dataclass
class Result:
    """What warming one kernel did.

    :param kernel_name: ``str``.
    :param key: ``str`` (sha256 hex) or ``None`` when the task failed before one was known.
    :param status: :data:`BUILT`, :data:`CACHED` or :data:`FAILED`.
    :param seconds: ``float``, wall time of the task (for a module: of the
        whole import, shared by its kernels).
    :param origin: ``str``, the manifest or module it came from.
    :param detail: ``str``, why it failed.
    :param published: ``int``, the bytes its entry and sources took on a
        remote cache (``warm --remote``; 0 where not published).
    """

    kernel_name: str
    key: str | None
    status: str
    seconds: float
    origin: str
    detail: str = ""
    published: int = 0


@dataclasses.dataclass(frozen=True)
class Task:
    """One unit of work for a worker process: a manifest kernel or a module."""

    kind: str  # "kernel" or "module"
    payload: object
    origin: str


def manifest_tasks(document, path):
    """Return one :class:`Task` per kernel of a manifest read by :func:`ninetoothed_ascend.manifest.read`."""

    from ninetoothed_ascend.manifest import environment_description

    here = environment_description()
    recorded = document.get("environment", {})

    # The recorded source is what this NineToothed on this Python generates;
    # the installed Triton does not enter it (a kernel recorded with CUDA
    # Triton 3.9 and with triton-ascend 3.2 has the same source, docs/cache.md).
    for name in ("python", "ninetoothed"):
        if recorded.get(name) != here[name]:
            raise ValueError(
                f"{path} was recorded with {name} {recorded.get(name)}, this "
                f"environment has {here[name]}: record it again here"
            )

    compare = compared_variants(document)

    return [
        Task("kernel", (kernel, compare), str(path)) for kernel in document["kernels"]
    ]


def compared_variants(document):
    """The variants besides ``cuda`` whose recorded digests this installation must reproduce (``jit.rebuild``'s ``compare``).

    Every variant where the manifest was recorded in an environment like
    this one (the same Python, NineToothed, Triton and ninetoothed-ascend);
    none where its NPU and CPU variants came from other passes or another
    Triton: the CPU pipeline and the NPU target follow the Triton installed
    (a manifest recorded with CUDA Triton and checked where ``triton`` is
    triton-ascend, as ``scripts/ntops-corpus.sh`` does, has other CPU and
    NPU variants, none of them wrong). NineToothed's source is compared
    with its digest either way, every variant is built here from it, and
    its binding to the definition is checked at the kernel's first
    ``make``: the recorded environment relaxes no check of what runs.

    :param document: ``dict``, a manifest read by :func:`ninetoothed_ascend.manifest.read`.
    :return: ``tuple`` of ``str``.
    """

    from ninetoothed_ascend.jit import VARIANTS
    from ninetoothed_ascend.manifest import environment_description

    if document.get("environment") == environment_description():
        return VARIANTS

    return ()


def module_tasks(target):
    """Return one :class:`Task` per module that ``target`` names.

    :param target: ``str``: a ``.py`` file, a directory (every ``.py`` file
        under it but ``__init__.py`` and ``__main__.py``), or a dotted module
        or package name (a package: each of its modules).
    :raises ValueError: ``target`` is none of these (one line).
    """

    path = pathlib.Path(target)

    if path.is_file() and path.suffix == ".py":
        return [Task("module", ("path", str(path.resolve())), _as_import(path))]

    if path.is_dir():
        files = sorted(
            file
            for file in path.rglob("*.py")
            if file.name not in ("__init__.py", "__main__.py")
        )

        if not files:
            raise ValueError(f"{target}: no Python modules under this directory")

        return [
            Task("module", ("path", str(f.resolve())), _as_import(f)) for f in files
        ]

    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        spec = None

    if spec is None:
        raise ValueError(f"{target}: no such file, directory or importable module")

    names = [target]

    if spec.submodule_search_locations is not None:
        names += [
            info.name
            for info in pkgutil.walk_packages(
                spec.submodule_search_locations, prefix=f"{target}."
            )
            if not info.name.endswith(".__main__")
        ]

    return [Task("module", ("name", name), name) for name in names]


def _as_import(path):
    # What ``warm`` reports a file's kernels as: the import they stand for.
    return f"{path} (import {import_name(path)[0]})"


def available_cpus():
    """The CPUs this process may run on (``int`` >= 1): its affinity where the platform says, else ``os.cpu_count()``."""

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def workers(jobs, tasks):
    """The worker processes :func:`run` starts for ``jobs`` (``-j``): at most one per task and per CPU (:func:`available_cpus`), at least one."""

    return max(1, min(jobs, len(tasks), available_cpus()))


class Interrupted(Exception):
    """``warm`` was interrupted (Ctrl-C); its workers were stopped.

    :param done: ``int``, tasks finished, whose kernels are cached.
    :param total: ``int``, tasks in all.
    """

    def __init__(self, done, total):
        super().__init__(f"interrupted after {done} of {total} tasks")
        self.done = done
        self.total = total


#: How often, in seconds, :func:`run` looks for a pending Ctrl-C while it waits.
_SIGNAL_POLL_S = 0.2


def run(tasks, jobs, cache_dir, on_result=None):
    """Run ``tasks`` in ``jobs`` processes; return every :class:`Result`.

    The workers never receive SIGINT (it is blocked in the threads that
    start them, and a process inherits its signal mask): a Ctrl-C reaches
    this process alone, which stops the workers (a stored entry is written
    atomically, so one stopped mid-task leaves nothing half-written) and
    raises :class:`Interrupted`.

    :param tasks: ``list`` of :class:`Task`.
    :param jobs: ``int`` >= 1, worker processes at most (:func:`workers`).
    :param cache_dir: ``pathlib.Path``, the cache to fill.
    :param on_result: called with the ``list`` of results of each finished task.
    :return: ``list`` of :class:`Result`, in task order.
    :raises Interrupted: on ``KeyboardInterrupt``.
    """

    modules = any(task.kind == "module" for task in tasks)
    # A module must be imported with NineToothed's counters at zero: one fresh
    # process per module. Manifest kernels carry their own state; forked
    # workers that keep what they imported serve them fastest.
    if modules or "fork" not in multiprocessing.get_all_start_methods():
        context, per_child = multiprocessing.get_context("spawn"), 1
    else:
        context, per_child = multiprocessing.get_context("fork"), None

    results = [None] * len(tasks)
    before = set(multiprocessing.active_children())
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=workers(jobs, tasks),
        mp_context=context,
        max_tasks_per_child=per_child,
    )

    try:
        # Workers, and the pool's thread that starts their replacements, are
        # started with SIGINT blocked, and inherit it. A Ctrl-C that arrives
        # meanwhile is raised when the mask is restored: inside this ``try``.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

        try:
            futures = {
                pool.submit(_run_task, task, str(cache_dir)): index
                for index, task in enumerate(tasks)
            }
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

        pending = set(futures)

        while pending:
            # Wake up now and then: the kernel may hand the SIGINT to another
            # thread that does not block it (OpenBLAS's, for one), and Python
            # raises it in the main thread only when that thread runs.
            finished, pending = concurrent.futures.wait(
                pending, timeout=_SIGNAL_POLL_S, return_when="FIRST_COMPLETED"
            )

            for future in finished:
                task = tasks[futures[future]]

                try:
                    done = future.result()
                except Exception as error:  # a worker that died
                    done = [
                        Result("?", None, FAILED, 0.0, task.origin, one_line(error))
                    ]

                results[futures[future]] = done

                if on_result is not None:
                    on_result(done)
    except KeyboardInterrupt:
        _stop(pool, before)

        raise Interrupted(
            sum(done is not None for done in results), len(tasks)
        ) from None
    except BaseException:
        _stop(pool, before)
        raise

    pool.shutdown()

    return [result for done in results for result in done]


def _stop(pool, before):
    # Cancel what has not started and end the workers (the processes started
    # since ``before``), without waiting for their tasks.
    pool.shutdown(wait=False, cancel_futures=True)
    started = set(multiprocessing.active_children()) - before

    for process in started:
        process.terminate()

    for process in started:
        process.join()


def _run_task(task, cache_dir):
    os.environ["NINETOOTHED_ASCEND_CACHE_DIR"] = cache_dir

    if task.kind == "kernel":
        return [_warm_kernel(*task.payload, task.origin, cache_dir)]

    return _warm_module(task.payload, task.origin)


def _warm_kernel(kernel, compare, origin, cache_dir):
    from ninetoothed_ascend.cache import Cache
    from ninetoothed_ascend.jit import GeneratedSource, rebuild

    start = time.perf_counter()

    try:
        handle, built = rebuild(
            kernel["definition"],
            GeneratedSource(
                kernel["source"],
                kernel["kernel_name"],
                kernel["launch_name"],
                kernel.get("max_num_configs"),
            ),
            kernel["counters_delta"],
            kernel["variants"],
            cache=Cache(cache_dir),
            compare=compare,
            origin=os.path.abspath(origin),
        )
    except OSError as error:
        detail = f"not cached: {error}"
    except Exception as error:
        detail = one_line(error)
    else:
        return Result(
            handle.kernel_name,
            handle.key,
            BUILT if built else CACHED,
            time.perf_counter() - start,
            origin,
        )

    return Result(
        kernel["kernel_name"], None, FAILED, time.perf_counter() - start, origin, detail
    )


def _warm_module(payload, origin):
    from ninetoothed_ascend.jit import observe

    kind, target = payload
    made = []
    observe(lambda handle, record: made.append((handle, record)))
    start = time.perf_counter()

    try:
        if kind == "name":
            importlib.import_module(target)
        else:
            _import_path(pathlib.Path(target))

        # ``make`` built NineToothed's source and at most one other variant;
        # warm builds every variant.
        results = [_build_all(handle, record) for handle, record in made]
    except BaseException as error:  # SystemExit of a script counts as a failure too
        return [
            Result(
                "?", None, FAILED, time.perf_counter() - start, origin, one_line(error)
            )
        ]

    seconds = time.perf_counter() - start

    return [
        Result(record["kernel_name"], record["key"], status, seconds, origin, detail)
        for record, status, detail in results
    ]


def _build_all(handle, record):
    try:
        built = handle.build(raise_store_errors=True)
    except OSError as error:
        return record, FAILED, f"not cached: {error}"

    if not record["stored"]:
        return record, FAILED, "built, but could not be written to the cache"

    return record, BUILT if record["built"] or built else CACHED, ""


class ShadowedModuleError(ValueError):
    """``import NAME`` of a file finds another module first (:func:`import_file`)."""


def import_name(path):
    """The module name a program imports the file ``path`` by, and the directory it needs on ``sys.path``.

    A kernel's key holds the module and qualified names of the functions it
    is made from, so a file loaded under any other name makes other keys
    than a program's ``import``. The name is the file's stem, under the
    packages (directories with an ``__init__.py``) that hold it.

    :param path: ``pathlib.Path`` of a ``.py`` file.
    :return: ``(name, root)``: ``str``, e.g. ``"my_kernels"`` or
        ``"pkg.kernels"``, and ``pathlib.Path``, the directory above the
        outermost package (the one ``PYTHONPATH`` names).
    """

    path = pathlib.Path(path).resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    root = path.parent

    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent

    return ".".join(parts), root


def import_file(path):
    """Import the file ``path`` as a program does: ``import NAME`` with its root on ``sys.path`` (:func:`import_name`).

    :param path: ``pathlib.Path`` of a ``.py`` file.
    :return: the module.
    :raises ShadowedModuleError: ``import NAME`` finds another module first
        (a module or package of the same name earlier on ``sys.path``, or
        already imported); the message names both.
    :raises Exception: what importing the module raises.
    """

    path = pathlib.Path(path).resolve()
    name, root = import_name(path)

    if str(root) not in sys.path:
        sys.path.insert(0, str(root))

    module = importlib.import_module(name)
    found = getattr(module, "__file__", None)

    if found is None or pathlib.Path(found).resolve() != path:
        raise ShadowedModuleError(
            f"{path} is imported as `import {name}`, but that finds "
            f"{found or 'a built-in module'} first; rename the file"
        )

    return module


def _import_path(path):
    import_file(path)


def one_line(error):
    """Describe ``error`` in one line: its type and the first line of its message (``str``)."""

    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
