"""ntops as a test corpus: record every launch of its kernels, then run the Ascend compile check on them.

ntops (InfiniTensor's operator library written in NineToothed) is read from
``../shared/downstream/ntops`` relative to the repository root, or from
``--ntops-root`` / ``$NTOPS_ROOT``.

    python scripts/ntops_corpus.py record OUT_DIR [--modules add,softmax] [--jobs N]
    python scripts/ntops_corpus.py sweep MANIFEST_DIR [--level 2|3|lowered] [--configs all|extremes]
                                         [--jobs N] [--json OUT] [--timeout S]

``record`` runs ``scripts/ntops_corpus_driver.py`` (every ``ntops.torch``
wrapper called with small CPU tensors, as ntops' tests call them) under
``ninetoothed-ascend record``, once per round, and writes one manifest per
round, ``OUT_DIR/round-NN.json``. A manifest holds one call per kernel, so a
kernel launched with several argument types (dtypes, strides, flags) needs
several manifests; round N holds each kernel's N-th distinct launch (see the
driver's docstring), and each kernel's ntops module is in its ``origin``.
Launches recorded twice (the same kernel and recorded arguments in two
rounds) are kept once. Run it with the CUDA Triton environment (``.venv``):
the calls run the CPU variant on Triton's interpreter. It prints the launches
per module and every call that failed, and writes them to
``OUT_DIR/record.json``.

``sweep`` runs ``ninetoothed-ascend check --manifest ... --json`` in the
triton-ascend environment (``--python``, default ``.venv-ascend/bin/python``
of the repository) over every launch of the manifests, a few launches per
process and ``--jobs`` processes at a time, and prints per ntops module: the
launches, how many pass level 2 (``ttir`` and ``ttadapter``), and with
``--level 3`` the configs that reach BiShengIR's external ``hivmc`` step, that
overflow the Unified Buffer, that fail otherwise or time out, and the longest
compile; then the failures grouped by message. ``--configs all`` compiles
every config the autotuner tries for the recorded launch (``check``'s
default), ``extremes`` only the smallest and the largest of them by the UB
model's bytes (``check --extremes bytes``). A process that fails as a whole
is split until the launch that fails it is found; that launch is reported
with the process's error. ``--json`` writes every launch's results (after
each process, so a long sweep can be read while it runs).

``--level lowered`` runs each launch at the lowered level instead
(``check --run``: the first config's Linalg, lowered to native code, run on
the CPU over the whole grid with every tensor between guard pages; faults
only, since a manifest records no reference) and counts per module the
launches that ran, faulted, differed between the two fenced placements, or
failed to lower or run.

``check --json`` reports each config's ``DiscreteMemAccess`` count (the
``scalar`` column) and the UB model's bytes; at level 3 the sweep asks
BiShengIR for its UB plan too (``check --memory-report``). The summary counts
the launches the NPU variant refuses before anything compiles (``refused``:
its tiles overflow the UB by the model and cannot be split), the UB model's
under-estimates (a config the model fits that BiShengIR overflows) and the
quartiles of the model's bytes over BiShengIR's (planned where it reaches
``hivmc``, required where it overflows).
"""

import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DRIVER = ROOT / "scripts" / "ntops_corpus_driver.py"
# The ``ninetoothed-ascend`` command, run by a chosen interpreter.
CLI = (
    "import sys; sys.argv[0] = 'ninetoothed-ascend'; "
    "from ninetoothed_ascend.cli import main; main()"
)


#: The failures of ntops' corpus that stand, each with its reason: the start
#: of the summary's message group -> (the ntops modules it may come from,
#: why). ``sweep --strict`` fails on any other. None stands now.
KNOWN_FAILURES = {}


def ntops_root(option):
    """The ntops checkout: ``option``, else ``$NTOPS_ROOT``, else ``../shared/downstream/ntops``."""

    return pathlib.Path(
        option
        or os.environ.get("NTOPS_ROOT")
        or ROOT.parent / "shared/downstream/ntops"
    ).resolve()


def kernel_module(kernel, modules=None):
    """The ntops module of a manifest's kernel: from ``modules`` (``record.json``'s key -> module), else from its ``origin`` (``ntops.kernels.add:application`` -> ``add``)."""

    if modules and kernel["key"] in modules:
        return modules[kernel["key"]]

    origin = kernel.get("origin") or {}
    name = origin.get("application") or origin.get("arrangement") or "?"

    return name.split(":")[0].rsplit(".", 1)[-1]


def _environment(python_path, cache_dir):
    path = [str(ROOT / "src"), *python_path, os.environ.get("PYTHONPATH", "")]

    return os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, path)),
        "NINETOOTHED_ASCEND_CACHE_DIR": os.environ.get(
            "NINETOOTHED_ASCEND_CACHE_DIR", str(cache_dir)
        ),
    }


def record(options):
    source = ntops_root(options.ntops_root) / "src"

    if not (source / "ntops" / "torch").is_dir():
        sys.exit(
            f"record: no ntops sources in {source}; pass --ntops-root or set NTOPS_ROOT"
        )

    out = pathlib.Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    for stale in out.glob("round-*.json"):
        stale.unlink()

    cache = tempfile.TemporaryDirectory(prefix="ntops-corpus-cache-")
    # Kernels go to a cache of this run's own unless the caller names one.
    env = _environment([str(source)], cache.name)
    modules = ["--modules", options.modules] if options.modules else []
    seconds = {}

    def run_round(number):
        manifest = out / f"round-{number:02}.json"
        report = out / f"round-{number:02}.report.json"
        command = [options.python, "-c", CLI, "record", "-o", str(manifest), "--"]
        command += [options.python, str(DRIVER), "--round", str(number)]
        command += ["--report", str(report)]

        if number > 0:
            command += ["--keys", str(out / "round-00.report.json")]

        start = time.perf_counter()
        completed = subprocess.run(
            command + modules, env=env, capture_output=True, text=True, check=False
        )
        seconds[number] = time.perf_counter() - start

        if completed.returncode != 0 or not report.exists():
            sys.exit(f"record: round {number} failed:\n{completed.stderr[-3000:]}")

        return json.loads(report.read_text())

    start = time.perf_counter()
    reports = [run_round(0)]

    with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
        reports += pool.map(run_round, range(1, reports[0]["rounds"]))

    summary = _merge_rounds(out, reports, seconds, time.perf_counter() - start)
    cache.cleanup()
    _print_record_summary(summary)

    return 0


def _merge_rounds(out, reports, seconds, total):
    modules = {key: m for report in reports for key, m in report["modules"].items()}
    seen = set()
    per_module = collections.Counter()
    rounds = []

    for report in reports:
        number = report["round"]
        path = out / f"round-{number:02}.json"
        document = json.loads(path.read_text())
        kept = []

        for kernel in document["kernels"]:
            identity = (
                kernel["definition"],
                json.dumps(kernel["calls"], sort_keys=True),
            )

            if identity not in seen:
                seen.add(identity)
                kept.append(kernel)
                per_module[kernel_module(kernel, modules)] += 1

        document["kernels"] = kept
        path.write_text(json.dumps(document, indent=1) + "\n")
        (out / f"round-{number:02}.report.json").unlink()
        rounds.append(
            {
                "round": number,
                "launches_made": len(report["launches"]),
                "recorded": len(kept),
                "seconds": round(seconds[number], 1),
            }
        )

    failures = collections.defaultdict(list)
    slowest = []

    for report in reports:
        for failure in report["failures"]:
            failures[(failure["module"], failure["stage"], failure["error"])].append(
                failure["case"]
            )

        slowest += report["launches"]

    summary = {
        "seconds": round(total, 1),
        "modules_called": reports[0]["called"],
        "launches": sum(per_module.values()),
        "per_module": dict(sorted(per_module.items())),
        "modules": modules,
        "rounds": rounds,
        "failures": [
            {"module": m, "stage": s, "error": e, "cases": sorted(set(c))}
            for (m, s, e), c in sorted(failures.items())
        ],
        "slowest": sorted(
            slowest, key=lambda launch: -(launch["make_s"] + launch["call_s"])
        )[:10],
    }
    (out / "record.json").write_text(json.dumps(summary, indent=1) + "\n")

    return summary


def _print_record_summary(summary):
    print(f"{'module':<30} launches")

    for module, count in summary["per_module"].items():
        print(f"{module:<30} {count}")

    missing = sorted(set(summary["modules_called"]) - set(summary["per_module"]))
    made = sum(r["launches_made"] for r in summary["rounds"])
    print(
        f"\n{summary['launches']} launches of {len(summary['per_module'])} modules "
        f"recorded in {len(summary['rounds'])} rounds ({made} launches made by the "
        f"driver), {summary['seconds']} s"
        + (f"; called but not recorded: {', '.join(missing)}" if missing else "")
    )

    for failure in summary["failures"]:
        cases = failure["cases"]
        print(
            f"FAILED {failure['module']} ({failure['stage']}, {len(cases)} cases, "
            f"e.g. {cases[0]}): {failure['error'][:300]}"
        )


class Sweep:
    """The launches of a set of manifests through ``check``, a few per process."""

    def __init__(self, options):
        self.options = options
        self.workdir = tempfile.TemporaryDirectory(prefix="ntops-sweep-")
        self.env = _environment([], pathlib.Path(self.workdir.name) / "cache")
        self.lock = threading.Lock()
        self.launches = []
        self.done = 0
        self.start = time.perf_counter()
        self.chunks = 0

    def command(self, manifest):
        options = self.options
        command = [
            options.python,
            "-c",
            CLI,
            "check",
            "--manifest",
            str(manifest),
            "--json",
        ]

        if options.level == "lowered":
            command.append("--run")

            if options.timeout:
                command += ["--timeout", str(options.timeout)]
        elif options.level == 2:
            command.append("--no-bishengir")
        else:
            command.append("--memory-report")

            if options.single_buffered:
                command.append("--single-buffered")

            if options.timeout:
                command += ["--timeout", str(options.timeout)]

        if options.configs == "extremes" and options.level != "lowered":
            command += ["--extremes", "bytes"]

        return command

    def run(self, document, kernels):
        """Check ``kernels`` (of manifest ``document``) in one process; split it where the process fails as a whole."""

        with self.lock:
            self.chunks += 1
            path = pathlib.Path(self.workdir.name) / f"chunk-{self.chunks}.json"

        path.write_text(json.dumps(document | {"kernels": kernels}))
        start = time.perf_counter()
        completed = subprocess.run(
            self.command(path),
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        path.unlink()
        groups = _result_groups(completed.stdout)

        if groups is None or len(groups) != len(kernels):
            if len(kernels) > 1:
                half = len(kernels) // 2
                self.run(document, kernels[:half])
                self.run(document, kernels[half:])
                return

            error = (completed.stderr.strip().splitlines() or ["no output"])[-1]
            groups = [
                [
                    {
                        "kernel": "?",
                        "error": f"check exited with {completed.returncode}: {error}",
                    }
                ]
            ]

        self.finish(document, kernels, groups, time.perf_counter() - start)

    def finish(self, document, kernels, groups, seconds):
        with self.lock:
            for kernel, results in zip(kernels, groups):
                self.launches.append(_launch(document, kernel, results, self.modules))

            self.done += len(kernels)
            elapsed = time.perf_counter() - self.start
            print(
                f"[{self.done}/{self.total} launches, {elapsed:.0f} s] "
                f"{len(kernels)} in {seconds:.0f} s",
                file=sys.stderr,
                flush=True,
            )

            if self.options.json:
                self.write(complete=False)

    def write(self, complete):
        summary = {
            "level": self.options.level,
            "configs": self.options.configs,
            "complete": complete,
            "seconds": round(time.perf_counter() - self.start, 1),
            "launches": self.launches,
        }
        path = pathlib.Path(self.options.json)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(summary, indent=1) + "\n")
        temporary.replace(path)

    def sweep(self, directory):
        summary = pathlib.Path(directory) / "record.json"
        self.modules = (
            json.loads(summary.read_text())["modules"] if summary.exists() else {}
        )
        work = []

        for path in sorted(pathlib.Path(directory).glob("round-*.json")):
            document = json.loads(path.read_text())
            document["source_manifest"] = path.name
            kernels = document["kernels"]

            if self.options.modules:
                wanted = set(self.options.modules.split(","))
                kernels = [
                    k for k in kernels if kernel_module(k, self.modules) in wanted
                ]

            size = self.options.chunk
            work += [
                (document, kernels[i : i + size]) for i in range(0, len(kernels), size)
            ]

        self.total = sum(len(kernels) for _, kernels in work)

        with concurrent.futures.ThreadPoolExecutor(self.options.jobs) as pool:
            for future in [pool.submit(self.run, *item) for item in work]:
                future.result()

        if self.options.json:
            self.write(complete=True)

        self.workdir.cleanup()

        return self.launches


def _result_groups(stdout):
    # ``check --json`` reports a kernel's configs one after another, under one
    # label, in the manifest's order.
    try:
        results = json.loads(stdout)["results"]
    except (ValueError, KeyError, TypeError):
        return None

    groups = []

    for result in results:
        if groups and groups[-1][0]["kernel"] == result["kernel"]:
            groups[-1].append(result)
        else:
            groups.append([result])

    return groups


def _launch(document, kernel, results, modules):
    # ``check`` reports a kernel it could not check as ``error``, or, one it
    # could not build from the manifest, as ``failed`` or ``skipped``; a
    # launch the NPU variant refuses before compiling, as ``refused``.
    lowered = next((r for r in results if "outcome" in r), None)
    unchecked = [r for r in results if "config" not in r and "outcome" not in r]
    refused = next((r["refused"] for r in unchecked if "refused" in r), None)
    error = next(
        (
            r.get("error") or r.get("failed") or r.get("skipped")
            for r in unchecked
            if "refused" not in r
        ),
        None,
    )
    call = kernel["calls"][0]

    return {
        "manifest": document.get("source_manifest"),
        "module": kernel_module(kernel, modules),
        "key": kernel["key"],
        "label": results[0]["kernel"],
        "args": [
            a.get("dtype", a.get("value", a.get("unsupported")))
            if "tensor" not in a
            else f"{a['dtype']}{a['tensor']}/{a['stride']}"
            for a in call["args"]
        ],
        "error": error,
        "refused": refused,
        "lowered": lowered
        and {k: lowered[k] for k in ("outcome", "detail", "seconds")},
        "configs": []
        if error or refused or lowered
        else [
            {
                "config": r["config"],
                "seconds": r["seconds"],
                "bishengir": r["bishengir"],
                "discrete_mem_access": r.get("discrete_mem_access"),
                "ub_model_bytes": r.get("ub_model_bytes"),
            }
            for r in results
        ],
    }


def _message_group(message):
    # A compile error names the stage first and the cause last (a Triton
    # CompilationError quotes the source in between); generated names and
    # positions differ from kernel to kernel, the cause does not.
    lines = message.strip().splitlines() or [""]
    stage = re.match(r"\[\w+\] ", lines[0])
    cause = re.sub(r"(?<=_)\d+", "N", lines[-1].strip())

    return ((stage.group(0) if stage and len(lines) > 1 else "") + cause)[:200]


def print_lowered_summary(launches):
    """Per module, the launches run lowered and their outcomes; return the failures (message group -> modules)."""

    rows = collections.defaultdict(collections.Counter)
    failures = collections.defaultdict(list)

    for launch in launches:
        row = rows[launch["module"]]
        row["launches"] += 1
        run = launch.get("lowered") or {
            "outcome": "error",
            "detail": launch.get("error") or launch.get("refused") or "no result",
        }
        row[run["outcome"]] += 1

        if run["outcome"] != "ran":
            # A fault names bytes, a program and the lowered module's path
            # and line, which differ from launch to launch; its kind does not.
            kind = re.sub(r"\d+", "N", run["detail"].split(", at line ")[0])
            failures[f"[lowered {run['outcome']}] " + _message_group(kind)].append(
                launch["module"]
            )

    columns = ["launches", "ran", "fault", "differ", "error"]
    print(f"{'module':<30}" + "".join(f"{c:>12}" for c in columns))
    total = collections.Counter()

    for module in sorted(rows):
        total.update(rows[module])
        print(f"{module:<30}" + "".join(f"{rows[module][c]:>12}" for c in columns))

    print(f"{'total':<30}" + "".join(f"{total[c]:>12}" for c in columns))
    _print_failures(failures)
    print(
        "\nran: the first config run over the whole grid, every tensor fenced, "
        "without a fault (not compared: a manifest records no reference).\n"
        "fault: an access outside every tensor; differ: the end- and "
        "start-fenced runs leave different bytes."
    )

    return failures


def _print_failures(failures):
    for message, modules in sorted(failures.items(), key=lambda item: -len(item[1])):
        counts = ", ".join(
            f"{m} {n}" for m, n in sorted(collections.Counter(modules).items())
        )
        print(f"{len(modules):>5}  {message}\n       ({counts})")


def print_sweep_summary(launches, level):
    rows = collections.defaultdict(collections.Counter)
    longest = collections.defaultdict(float)
    needed = collections.Counter()
    failures = collections.defaultdict(list)
    ratios = []

    for launch in launches:
        row = rows[launch["module"]]
        row["launches"] += 1

        if launch.get("refused"):
            row["refused"] += 1
            failures["[refused] " + _message_group(launch["refused"])].append(
                launch["module"]
            )
            continue

        if launch["error"]:
            row["L2 fail"] += 1
            failures[_message_group(launch["error"])].append(launch["module"])
            continue

        row["L2 pass"] += 1
        row["scalar"] += any(
            config.get("discrete_mem_access") for config in launch["configs"]
        )

        for config in launch["configs"]:
            seconds = config["seconds"]
            stage = "bishengir" if level == 3 else None
            longest[launch["module"]] = max(
                longest[launch["module"]],
                seconds.get(stage, 0.0)
                if stage
                else seconds["ttir"] + seconds["ttadapter"],
            )

            if level == 3:
                compiled = config["bishengir"] or {}
                outcome = compiled.get("outcome", "none")
                row["configs"] += 1
                row[outcome] += 1
                row["crashed"] += bool(compiled.get("crashes"))
                row["unreported"] += bool(compiled.get("report_error"))
                required = compiled.get("ub_required_bytes") or 0
                needed[launch["module"]] = max(needed[launch["module"]], required)
                model = config.get("ub_model_bytes")
                planned = required or compiled.get("planned_ub_bytes")

                if model is None:
                    row["unsized"] += 1
                elif planned:
                    ratios.append(model / planned)

                if outcome == "ub_overflow" and (
                    model is None or model <= compiled.get("ub_available_bytes")
                ):
                    row["under"] += 1

                # A UB overflow is a failure too: the model let the config
                # through (``sweep --strict`` fails on it).
                if outcome in ("error", "timeout", "ub_overflow"):
                    message = config["bishengir"]["message"] or outcome
                    failures[
                        f"[bishengir {outcome}] " + _message_group(message)
                    ].append(launch["module"])

    columns = ["launches", "refused", "L2 pass", "L2 fail", "scalar"]

    if level == 3:
        columns += ["configs", "hivmc", "ub_overflow", "under", "error", "timeout"]

    title = "longest BiShengIR s" if level == 3 else "longest ttir+ttadapter s"
    title += "  largest UB overflow B" if level == 3 else ""
    print(f"{'module':<30}" + "".join(f"{c:>12}" for c in columns) + f"  {title}")
    total = collections.Counter()

    for module in sorted(rows):
        total.update(rows[module])
        print(
            f"{module:<30}"
            + "".join(f"{rows[module][c]:>12}" for c in columns)
            + f"  {longest[module]:19.2f}"
            + (f"  {needed[module] or '':>22}" if level == 3 else "")
        )

    print(f"{'total':<30}" + "".join(f"{total[c]:>12}" for c in columns))
    print(
        f"\nL2: {total['L2 pass']}/{total['launches']} launches pass ttir and "
        f"ttadapter; {total['refused']} refused before compiling"
    )

    if level == 3:
        print(_ratio_line(ratios, total["unsized"]))
        print(
            f"bishengir-compile crashed on {total['crashed']} configs and was run "
            "again (check.bishengir.CRASH_RUNS)"
        )
        print(
            f"its run with --enable-memory-display failed on {total['unreported']} "
            "configs, whose outcome the launch's own command decided (no plan)"
        )

    _print_failures(failures)

    if level == 3:
        print(
            "\nunder: configs BiShengIR overflows whose UB model bytes fit "
            "(or that the model cannot size)."
        )

    print(
        "refused: launches the NPU variant refuses before anything compiles "
        "(UnifiedBufferOverflowError).\n"
        "scalar: launches with an access triton-adapter lowers to a scalar loop "
        "(DiscreteMemAccess) in some config; `ninetoothed-ascend show` names them."
    )

    return failures


def unknown_failures(failures):
    """The failures (message group -> modules, as :func:`print_sweep_summary` returns them) that :data:`KNOWN_FAILURES` does not name, module by module."""

    return {
        message: unknown
        for message, modules in failures.items()
        if (
            unknown := [
                module
                for module in modules
                if not any(
                    message.startswith(known) and module in known_modules
                    for known, (known_modules, _) in KNOWN_FAILURES.items()
                )
            ]
        )
    }


def _ratio_line(ratios, unsized):
    if not ratios:
        return f"UB model / BiShengIR: no config with both; {unsized} the model cannot size"

    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3

    return (
        f"UB model / BiShengIR (planned, or required on an overflow) over "
        f"{len(ratios)} configs: min {min(ratios):.2f}, quartiles "
        + ", ".join(f"{q:.2f}" for q in quartiles)
        + f", max {max(ratios):.2f}; {unsized} configs the model cannot size"
    )


def sweep(options):
    if not shutil.which(options.python) and not pathlib.Path(options.python).exists():
        sys.exit(
            f"sweep: no Python {options.python} (the triton-ascend environment); pass --python"
        )

    options.chunk = options.chunk or (16 if options.level == 2 else 4)
    launches = Sweep(options).sweep(options.manifest_dir)

    if not launches:
        sys.exit(f"sweep: no launches in {options.manifest_dir}/round-*.json")

    if options.level == "lowered":
        failures = print_lowered_summary(launches)
    else:
        failures = print_sweep_summary(launches, options.level)

    if not options.strict:
        return 0

    unknown = unknown_failures(failures)

    for message, modules in unknown.items():
        print(f"UNKNOWN {len(modules)}  {message} ({', '.join(sorted(set(modules)))})")

    return 1 if unknown else 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    commands = parser.add_subparsers(dest="command", required=True)

    recording = commands.add_parser("record", help="record every launch into OUT_DIR")
    recording.add_argument("out_dir")
    recording.add_argument(
        "--ntops-root",
        help="the ntops checkout (default: $NTOPS_ROOT, then ../shared/downstream/ntops)",
    )
    recording.add_argument(
        "--modules", help="comma-separated ntops.torch modules (default: all)"
    )
    recording.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="rounds recorded at once after the first (default 1)",
    )
    recording.add_argument(
        "--python",
        default=sys.executable,
        help="the CUDA Triton environment's Python (default: this one)",
    )
    recording.set_defaults(run=record)

    sweeping = commands.add_parser(
        "sweep", help="run the Ascend compile check over MANIFEST_DIR"
    )
    sweeping.add_argument("manifest_dir")
    sweeping.add_argument(
        "--level",
        type=lambda value: value if value == "lowered" else int(value),
        choices=(2, 3, "lowered"),
        default=2,
        help="2: ttir and ttadapter; 3: and BiShengIR; lowered: each launch's "
        "first config run on the CPU as triton-ascend lowers it, every tensor "
        "fenced (check --run; faults only) (default 2)",
    )
    sweeping.add_argument(
        "--configs",
        choices=("all", "extremes"),
        default="all",
        help="every config tried for the launch, or the smallest and largest (default all)",
    )
    sweeping.add_argument(
        "--jobs", type=int, default=1, help="check processes at once (default 1)"
    )
    sweeping.add_argument(
        "--chunk",
        type=int,
        help="launches per check process (default 16 at level 2, 4 at level 3)",
    )
    sweeping.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds a BiShengIR compile (lowered: a lowering step or a run) "
        "may take (default 600)",
    )
    sweeping.add_argument(
        "--modules", help="comma-separated ntops modules to check (default: all)"
    )
    sweeping.add_argument(
        "--single-buffered",
        action="store_true",
        help="level 3: compile with multi-buffering off (check --single-buffered), "
        "the plan the UB model estimates; not what a launch compiles",
    )
    sweeping.add_argument("--json", help="write every launch's results here")
    sweeping.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 on any failure or refusal that KNOWN_FAILURES does not name",
    )
    sweeping.add_argument(
        "--python",
        default=os.environ.get(
            "NINETOOTHED_ASCEND_PYTHON", str(ROOT / ".venv-ascend/bin/python")
        ),
        help="the triton-ascend environment's Python (default: $NINETOOTHED_ASCEND_PYTHON, then .venv-ascend/bin/python)",
    )
    sweeping.set_defaults(run=sweep)

    options = parser.parse_args(argv)

    return options.run(options)


if __name__ == "__main__":
    sys.exit(main())
