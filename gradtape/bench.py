"""``python -m gradtape bench``: the benchmark suite, gradtape side by side with its peers.

Every case of ``benchmarks/cases`` (op chain, MLP and CNN training steps, Jacobian,
Hessian-vector product, second-order gradient, memory) runs in each implementation: the same
computation written by hand in NumPy (the floor every ratio is taken against), gradtape and
each installed peer (PyTorch, JAX eager and jit, TensorFlow eager, HIPS autograd). Each
implementation lives in its own long-lived worker process, so no two thread pools fight over
the cores; only one worker works at a time. Before a case is timed, every implementation's
outputs are compared with the floor's from the same inputs, and a disagreement stops the run.
Rounds are interleaved (every implementation once per round, in a rotating order), so machine
noise hits all alike; each ratio is the median over rounds of the ratio measured within a
round.

Writes ``benchmarks/results/run-<time>.json`` and ``.md`` and, for a full run, copies them
to ``latest.json``/``latest.md`` with two charts (``latest_ratios.png``,
``latest_scaling.png``). The suite lives in the source tree: run it from a checkout.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"

#: Column titles of the known implementations (a plug-in shows its registry name).
SHORT = {"numpy": "NumPy by hand", "gradtape": "gradtape", "torch": "PyTorch",
         "jax": "JAX eager", "jax-jit": "JAX jit", "tensorflow": "TF eager",
         "autograd": "autograd"}

#: Settings of a full run and of ``--quick``.
PROFILES = {
    # (21 short rounds rather than 11 long ones: on a shared machine bursts of load last
    # milliseconds and hit single batches; more, shorter rounds make the median steadier)
    "full": {"rounds": 21, "target_s": 0.03, "warmup_s": 0.2},
    "quick": {"rounds": 5, "target_s": 0.01, "warmup_s": 0.0, "sizes": ("standard",)},
}

EXIT_DISAGREE = 3

_SIGSTOP = getattr(signal, "SIGSTOP", None)
_SIGCONT = getattr(signal, "SIGCONT", None)


class BenchError(RuntimeError):
    """The suite cannot run (no source tree, no floor)."""


# --- options --------------------------------------------------------------------------------------

def build_parser(prog: str = "python -m gradtape bench") -> argparse.ArgumentParser:
    """The command-line options shared by ``python -m gradtape bench`` and the scripts."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the suite's options to ``p``."""
    p.add_argument("--quick", action="store_true",
                   help="fewer and shorter rounds (about two minutes on 2 cores)")
    p.add_argument("--device", default="cpu", help="cpu (default) or gpu[:N]")
    p.add_argument("--impls", default=None,
                   help="comma-separated implementations (default: all; names: "
                        "numpy, gradtape, torch, jax, jax-jit, tensorflow, autograd, or a "
                        "plug-in package.module:Class); numpy, the floor, is always run")
    p.add_argument("--cases", default=None,
                   help="comma-separated cases (default: all: opchain, mlp, cnn, jacobian, "
                        "hvp, secondorder)")
    p.add_argument("--sizes", default=None,
                   help="comma-separated sizes among tiny, small, medium, large, or 'standard' "
                        "(default: all four)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per cell")
    p.add_argument("--target-ms", type=float, default=None,
                   help="least time of one timed batch, in milliseconds")
    p.add_argument("--threads", type=int, default=None,
                   help="limit the intra-op threads of NumPy's BLAS, PyTorch and TensorFlow")
    p.add_argument("--out", default=None, help=f"results folder (default {RESULTS})")
    p.add_argument("--latest", dest="latest", action="store_true", default=None,
                   help="replace latest.json / latest.md / the charts (the default for a full "
                        "run; a --quick run writes only its own run-<time> files)")
    p.add_argument("--no-latest", dest="latest", action="store_false",
                   help="leave latest.json / latest.md / the charts alone")
    p.add_argument("--no-plots", dest="plots", action="store_false", help="draw no charts")
    p.add_argument("--no-memory", dest="memory", action="store_false",
                   help="skip the tracemalloc memory figures")
    p.add_argument("--keep-going", action="store_true",
                   help="on a disagreement with the floor, drop that cell and go on "
                        "(exit status 3 at the end) instead of stopping")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds one worker request may take before the worker is stopped")


def complete_options(args) -> argparse.Namespace:
    """``args`` with every option present (``python -m gradtape bench`` passes only some)."""
    defaults = build_parser().parse_args([])
    merged = vars(defaults)
    merged.update({k: v for k, v in vars(args).items() if k in merged and v is not None})
    if merged["latest"] is None:
        merged["latest"] = not merged["quick"]
    return argparse.Namespace(**merged)


def _suite():
    """Import ``benchmarks.cases`` from the source tree."""
    if not (REPO / "benchmarks" / "cases" / "spec.py").is_file():
        raise BenchError(f"the benchmark suite is not here ({REPO / 'benchmarks' / 'cases'}); "
                         "it ships with the source tree: run the command from a checkout")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import benchmarks.cases as cases
    from benchmarks.cases import spec
    return cases, spec


def _split(value):
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


# --- workers ----------------------------------------------------------------------------------------

class WorkerProcess:
    """One implementation's worker process, spoken to one JSON line at a time.

    Between requests the process is stopped (SIGSTOP, where the system has it): a thread
    pool that spins for a while after its last task (OpenBLAS, OpenMP) would otherwise keep a
    core busy while the next implementation is being timed.
    """

    def __init__(self, impl: str, device: str, env: dict, log_dir: str):
        self.impl = impl
        self.log_path = os.path.join(log_dir, f"{impl.replace(':', '_').replace('/', '_')}.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.cases.worker", impl, device],
            cwd=str(REPO), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.info: dict = {}
        self.dead = False
        self.stopped = False

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def log_tail(self, n: int = 25) -> str:
        """The last lines the worker wrote to standard error."""
        self._log.flush()
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def receive(self, timeout: float) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            return {"ok": False, "error": f"no answer within {timeout:.0f} s; worker stopped"}
        if line is None:
            self.dead = True
            return {"ok": False, "error": "the worker exited:\n" + self.log_tail()}
        return json.loads(line)

    def request(self, obj: dict, timeout: float, pause: bool = True) -> dict:
        """Send ``obj``, wait for the answer, then (``pause``) stop the process until the next
        request."""
        if self.dead:
            return {"ok": False, "error": "the worker is no longer running"}
        self.resume()
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.dead = True
            return {"ok": False, "error": "the worker exited:\n" + self.log_tail()}
        answer = self.receive(timeout)
        if pause:
            self.pause()
        return answer

    def pause(self):
        """Stop the process (its threads use no CPU until :meth:`resume`)."""
        if _SIGSTOP is not None and not self.dead and self.proc.poll() is None:
            os.kill(self.proc.pid, _SIGSTOP)
            self.stopped = True

    def resume(self):
        if self.stopped and self.proc.poll() is None:
            os.kill(self.proc.pid, _SIGCONT)
        self.stopped = False

    def kill(self):
        self.dead = True
        if self.proc.poll() is None:
            self.resume()
            self.proc.kill()

    def close(self):
        self.resume()
        if not self.dead and self.proc.poll() is None:
            try:
                self.request({"op": "quit"}, timeout=10, pause=False)
            except Exception:  # noqa: BLE001 - closing anyway
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self._log.close()


def _worker_env(opts) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if opts.device == "cpu":
        env.setdefault("JAX_PLATFORMS", "cpu")
    if opts.threads:
        n = str(opts.threads)
        for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "GRADTAPE_BENCH_THREADS"):
            env[key] = n
    return env


# --- statistics -------------------------------------------------------------------------------------

def _quartiles(values):
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def summarize(values) -> tuple[float, float]:
    """Median and spread (half the interquartile range) of ``values``."""
    lo, mid, hi = _quartiles(list(values))
    return mid, (hi - lo) / 2


# --- the run ----------------------------------------------------------------------------------------

def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def run(opts) -> tuple[dict, int]:
    """Run the suite with options ``opts``; returns the results and the exit status."""
    cases_pkg, spec = _suite()
    floor = cases_pkg.FLOOR
    profile = dict(PROFILES["quick" if opts.quick else "full"])
    if opts.rounds:
        profile["rounds"] = opts.rounds
    if opts.target_ms:
        profile["target_s"] = opts.target_ms / 1e3
    impls = _split(opts.impls) or list(cases_pkg.IMPLEMENTATIONS)
    impls = [floor] + [i for i in dict.fromkeys(impls) if i != floor]
    case_names = _split(opts.cases) or list(spec.CASES)
    unknown = [c for c in case_names if c not in spec.CASES]
    if unknown:
        raise BenchError(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(spec.CASES)}")
    sizes_opt = _split(opts.sizes) or list(profile.get("sizes", spec.SIZES))
    bad = [s for s in sizes_opt if s not in spec.SIZES and s != "standard"]
    if bad:
        raise BenchError(f"unknown size(s) {', '.join(bad)}; known: {', '.join(spec.SIZES)}, "
                         "standard")

    def sizes_of(case):
        c = spec.CASES[case]
        return [s for s in spec.SIZES if s in sizes_opt or (s == c.standard and
                                                             "standard" in sizes_opt)]

    started = time.perf_counter()
    log_dir = tempfile.mkdtemp(prefix="gradtape-bench-")
    env = _worker_env(opts)
    workers = {name: WorkerProcess(name, opts.device, env, log_dir) for name in impls}
    results = {
        "schema": 1,
        "floor": floor,
        "meta": _meta(opts, profile),
        "implementations": {},
        "skipped_implementations": {},
        "cases": {name: {"title": spec.CASES[name].title, "standard": spec.CASES[name].standard,
                         "sizes": {s: spec.CASES[name].describe(s) for s in spec.SIZES}}
                  for name in case_names},
        "results": [],
        "memory": [],
    }
    status = 0
    try:
        for name, w in workers.items():
            hello = w.receive(timeout=opts.timeout)
            if hello.get("ready"):
                w.pause()
                w.info = hello
                results["implementations"][name] = {
                    k: hello.get(k) for k in ("label", "version", "threads", "traced_memory")}
                _log(f"worker {name}: {hello.get('label')} ready")
            else:
                reason = hello.get("reason") or hello.get("error") or "did not start"
                results["skipped_implementations"][name] = reason.strip().splitlines()[-1]
                _log(f"worker {name}: not available ({reason.strip().splitlines()[-1]})")
                w.kill()
        if floor not in results["implementations"]:
            raise BenchError(f"the floor ({floor}) did not start:\n" + workers[floor].log_tail())
        live = [n for n in impls if n in results["implementations"]]
        order_rng = random.Random(0)
        for case in case_names:
            for size in sizes_of(case):
                code = _run_cell(case, size, live, workers, results, profile, opts, spec,
                                 floor, order_rng)
                if code:
                    status = code
                    if not opts.keep_going:
                        return results, status
        if opts.memory and opts.device == "cpu":
            for case in case_names:
                c = spec.CASES[case]
                run_sizes = sizes_of(case)
                if not c.memory or not run_sizes:
                    continue
                size = c.standard if c.standard in run_sizes else run_sizes[-1]
                _run_memory(case, size, live, workers, results, opts, floor)
    finally:
        for w in workers.values():
            w.close()
        results["meta"]["wall_s"] = round(time.perf_counter() - started, 1)
        shutil.rmtree(log_dir, ignore_errors=True)
    return results, status


def _run_cell(case, size, live, workers, results, profile, opts, spec, floor, order_rng):
    """Check and time one case at one size in every live implementation."""
    import numpy as np
    label = f"{case} ({size}: {spec.CASES[case].describe(size)})"
    cell = {}
    with tempfile.TemporaryDirectory(prefix="gradtape-check-") as check_dir:
        for name in live:
            answer = workers[name].request(
                {"op": "prepare", "case": case, "size": size, "check_dir": check_dir,
                 "warmup_s": profile["warmup_s"]}, timeout=opts.timeout)
            cell[name] = answer
        ref_answer = cell[floor]
        if not ref_answer.get("ok"):
            raise BenchError(f"the floor failed on {label}:\n"
                             f"{ref_answer.get('error') or ref_answer.get('skip')}")
        with np.load(ref_answer["check"]) as f:
            ref = {k: f[k] for k in f.files}
        status = 0
        timed = []
        for name in live:
            answer = cell[name]
            entry = {"case": case, "size": size, "impl": name, "note": answer.get("note", "")}
            if not answer.get("ok"):
                entry["status"] = "skipped" if "skip" in answer else "error"
                entry["reason"] = (answer.get("skip") or answer.get("error") or "").strip()
                short_reason = entry["reason"].splitlines()[-1] if entry["reason"] else ""
                _log(f"  {name} {entry['status']} on {label}: {short_reason}")
                results["results"].append(entry)
                continue
            with np.load(answer["check"]) as f:
                got = {k: f[k] for k in f.files}
            problems = spec.compare(ref, got) if name != floor else []
            if problems:
                entry["status"] = "disagrees"
                entry["reason"] = "; ".join(problems)
                results["results"].append(entry)
                _log("\n" + "!" * 78 + f"\nAGREEMENT CHECK FAILED: {name} disagrees with the "
                     f"floor ({floor}) on {label}:\n  " + "\n  ".join(problems) + "\n" +
                     "!" * 78)
                status = EXIT_DISAGREE
                continue
            entry["status"] = "ok"
            entry["estimate_s"] = answer["estimate"]
            entry["number"] = max(1, math.ceil(profile["target_s"] / max(answer["estimate"],
                                                                         1e-9)))
            entry["times"] = []
            timed.append(entry)
        if status and not opts.keep_going:
            for name in live:
                workers[name].request({"op": "release"}, timeout=opts.timeout)
            return status
        for r in range(profile["rounds"]):
            order = timed[r % len(timed):] + timed[:r % len(timed)] if timed else []
            if r % 2:
                order_rng.shuffle(order)
            for entry in order:
                if entry["status"] != "ok":
                    continue
                answer = workers[entry["impl"]].request(
                    {"op": "time", "number": entry["number"]}, timeout=opts.timeout)
                if not answer.get("ok"):
                    entry["status"] = "error"
                    entry["reason"] = (answer.get("error") or answer.get("skip") or "").strip()
                    continue
                entry["times"].append(answer["seconds"])
        for name in live:
            workers[name].request({"op": "release"}, timeout=opts.timeout)
    floor_entry = next((e for e in timed if e["impl"] == floor), None)
    parts = []
    for entry in timed:
        if entry["status"] != "ok" or not entry["times"]:
            results["results"].append(entry)
            continue
        entry["median_s"], entry["spread_s"] = summarize(entry["times"])
        if floor_entry is not None and floor_entry["status"] == "ok":
            n = min(len(entry["times"]), len(floor_entry["times"]))
            ratios = [entry["times"][i] / floor_entry["times"][i] for i in range(n)]
            entry["ratios"] = ratios
            entry["ratio"], entry["ratio_spread"] = summarize(ratios)
        results["results"].append(entry)
        ratio = f" ({entry['ratio']:.2f}x)" if "ratio" in entry and entry["impl"] != floor else ""
        parts.append(f"{entry['impl']} {_fmt_time(entry['median_s'])}{ratio}")
    _log(f"{label}: " + ", ".join(parts))
    return status


def _run_memory(case, size, live, workers, results, opts, floor):
    floor_peak = None
    rows = []
    for name in live:
        if not workers[name].info.get("traced_memory"):
            continue
        answer = workers[name].request({"op": "memory", "case": case, "size": size},
                                       timeout=opts.timeout)
        if not answer.get("ok"):
            reason = (answer.get("skip") or answer.get("error") or "").strip()
            _log(f"  memory {case} {name}: {reason.splitlines()[-1] if reason else 'failed'}")
            continue
        row = {"case": case, "size": size, "impl": name, "peak_bytes": answer["peak_bytes"],
               "transient_bytes": answer["transient_bytes"]}
        if name == floor:
            floor_peak = row
        rows.append(row)
    for row in rows:
        if floor_peak and floor_peak["peak_bytes"]:
            row["ratio"] = row["peak_bytes"] / floor_peak["peak_bytes"]
        results["memory"].append(row)
    _log(f"memory {case} ({size}): " + ", ".join(
        f"{r['impl']} {r['peak_bytes'] / 2**20:.1f} MB" for r in rows))


def _meta(opts, profile) -> dict:
    import numpy as np
    return {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "device": opts.device,
        "cores": os.cpu_count(),
        "machine": f"{platform.system()} {platform.machine()}",
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "quick": bool(opts.quick),
        "rounds": profile["rounds"],
        "target_s": profile["target_s"],
        "threads": opts.threads,
    }


# --- reports ------------------------------------------------------------------------------------------

def _short(results, impl: str) -> str:
    """Column title of ``impl``: the floor's own label (NumPy or CuPy by hand), else a short
    name."""
    if impl == results.get("floor"):
        return results["implementations"].get(impl, {}).get("label") or SHORT.get(impl, impl)
    return SHORT.get(impl, impl)


def _columns(results) -> list[str]:
    return [n for n in results["implementations"]]


def _cell(results, case, size, impl):
    for e in results["results"]:
        if e["case"] == case and e["size"] == size and e["impl"] == impl:
            return e
    return None


def _headline_size(results, case):
    """The size shown for ``case`` in the headline tables: the standard one when it was run,
    else the largest that was; None when the case was not run."""
    info = results["cases"][case]
    run = [s for s in ("tiny", "small", "medium", "large")
           if any(e["case"] == case and e["size"] == s for e in results["results"])]
    if not run:
        return None
    return info["standard"] if info["standard"] in run else run[-1]


def _mib(n: int) -> str:
    mib = n / 2**20
    return f"{mib:.1f}" if mib >= 10 else f"{mib:.2f}"


def _status_text(entry) -> str:
    if entry is None:
        return ""
    return {"skipped": "skip", "error": "error", "disagrees": "DISAGREES"}.get(entry["status"], "")


def markdown(results) -> str:
    """The report as markdown: ratios, times, scaling, memory, notes."""
    meta = results["meta"]
    impls = _columns(results)
    floor = results.get("floor", "numpy")
    others = [i for i in impls if i != floor]
    head = [f"# gradtape benchmarks ({meta['device']}, {meta['cores']} cores)", ""]
    labels = ", ".join(
        f"{results['implementations'][i]['label']}" +
        (f" ({results['implementations'][i]['threads']} threads)"
         if results["implementations"][i].get("threads") else "")
        for i in impls)
    head.append(f"{meta['date']} · {meta['machine']} · Python {meta['python']} · "
                f"NumPy {meta['numpy']} · {'quick' if meta['quick'] else 'full'} run, "
                f"{meta['rounds']} interleaved rounds · {labels}.")
    if results["skipped_implementations"]:
        head.append("")
        head.append("Not run: " + "; ".join(f"{k} ({v})" for k, v in
                                            results["skipped_implementations"].items()) + ".")
    out = head + [""]
    standard = [(c, s) for c in results["cases"] if (s := _headline_size(results, c))]
    if standard:
        out += [f"## Ratio to the floor, {_short(results, floor)} (lower is better)", "",
                "Median over rounds of (time of the implementation / time of the hand-written "
                "floor) measured in the same round.", "",
                "| case | size | " + " | ".join(_short(results, i) for i in others) + " |",
                "| --- | --- |" + " ---: |" * len(others)]
        for case, size in standard:
            row = [results["cases"][case]["title"], results["cases"][case]["sizes"][size]]
            for i in others:
                e = _cell(results, case, size, i)
                row.append(f"{e['ratio']:.2f}x" if e and "ratio" in e else _status_text(e))
            out.append("| " + " | ".join(row) + " |")
        out += ["", "## Time per call", "",
                "Median ± half the interquartile range over rounds.", "",
                "| case | size | " + " | ".join(_short(results, i) for i in impls) + " |",
                "| --- | --- |" + " ---: |" * len(impls)]
        for case, size in standard:
            row = [results["cases"][case]["title"], results["cases"][case]["sizes"][size]]
            for i in impls:
                e = _cell(results, case, size, i)
                if e and "median_s" in e:
                    row.append(f"{_fmt_time(e['median_s'])} ± {_fmt_time(e['spread_s'])}")
                else:
                    row.append(_status_text(e))
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    scaled = [c for c in results["cases"]
              if sum(1 for s in ("tiny", "small", "medium", "large")
                     if _cell(results, c, s, floor)) > 1]
    if scaled:
        sizes = ("tiny", "small", "medium", "large")
        out += [f"## Scaling: ratio to the floor ({_short(results, floor)}) at each size", "",
                "| case | implementation | " + " | ".join(sizes) + " |",
                "| --- | --- |" + " ---: |" * len(sizes)]
        for case in scaled:
            info = results["cases"][case]
            out.append(f"| **{info['title']}** | *sizes* | " +
                       " | ".join(info["sizes"][s] for s in sizes) + " |")
            out.append(f"| | {_short(results, floor)} | " + " | ".join(
                _fmt_time(e["median_s"]) if (e := _cell(results, case, s, floor)) and
                "median_s" in e else "" for s in sizes) + " |")
            for i in others:
                cells = []
                for s in sizes:
                    e = _cell(results, case, s, i)
                    cells.append(f"{e['ratio']:.2f}x" if e and "ratio" in e else _status_text(e))
                out.append(f"| | {_short(results, i)} | " + " | ".join(cells) + " |")
        out.append("")
    if results["memory"]:
        mem_impls = [i for i in impls if any(r["impl"] == i for r in results["memory"])]
        out += ["## Memory: peak traced memory of one call (tracemalloc)", "",
                "Everything traced and alive at the peak (inputs, parameters, optimizer state, "
                "temporaries), in MiB; in brackets the part above what was alive just before "
                "the call. Only NumPy-based implementations are visible to tracemalloc.", "",
                "| case | size | " + " | ".join(_short(results, i) for i in mem_impls) + " |",
                "| --- | --- |" + " ---: |" * len(mem_impls)]
        for case in results["cases"]:
            rows = [r for r in results["memory"] if r["case"] == case]
            if not rows:
                continue
            size = rows[0]["size"]
            cells = []
            for i in mem_impls:
                r = next((r for r in rows if r["impl"] == i), None)
                if r is None:
                    cells.append("")
                    continue
                text = f"{_mib(r['peak_bytes'])} ({_mib(r['transient_bytes'])})"
                if i != floor and "ratio" in r:
                    text += f", {r['ratio']:.2f}x"
                cells.append(text)
            out.append(f"| {results['cases'][case]['title']} | "
                       f"{results['cases'][case]['sizes'][size]} | " + " | ".join(cells) + " |")
        out.append("")
    notes = []
    for e in results["results"]:
        if e.get("note"):
            notes.append(f"- {_short(results, e['impl'])}, {e['case']}: {e['note']}")
        if e["status"] in ("skipped", "error", "disagrees"):
            reason = e.get("reason", "").strip().splitlines()
            notes.append(f"- {_short(results, e['impl'])}, {e['case']} ({e['size']}): "
                         f"{e['status']}: {reason[-1] if reason else ''}")
    if notes:
        out += ["## Notes", ""] + list(dict.fromkeys(notes)) + [""]
    return "\n".join(out)


def plot(results, ratios_png: Path, scaling_png: Path) -> list[Path]:
    """Draw the ratio bar chart and the ratio-vs-size chart; returns the files written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _log("matplotlib is not installed: no charts (pip install -e '.[bench]')")
        return []
    impls = _columns(results)
    floor = results.get("floor", "numpy")
    others = [i for i in impls if i != floor]
    colors = {i: plt.get_cmap("tab10")(k % 10) for k, i in enumerate(others)}
    written = []
    standard = [(c, s) for c in results["cases"] if (s := _headline_size(results, c))]
    title = (f"{results['meta']['device']}, {results['meta']['cores']} cores, "
             f"{results['meta']['date'][:10]}")
    if standard and others:
        fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(standard) + 2), 5))
        width = 0.8 / len(others)
        for k, i in enumerate(others):
            xs, ys = [], []
            for j, (c, s) in enumerate(standard):
                e = _cell(results, c, s, i)
                if e and "ratio" in e:
                    xs.append(j + (k - (len(others) - 1) / 2) * width)
                    ys.append(e["ratio"])
            bars = ax.bar(xs, ys, width, label=_short(results, i), color=colors[i])
            for b, y in zip(bars, ys):
                ax.text(b.get_x() + b.get_width() / 2, y, f"{y:.1f}" if y >= 10 else f"{y:.2f}",
                        ha="center", va="bottom", fontsize=6, rotation=90)
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * 4)
        ax.set_xticks(range(len(standard)))
        ax.set_xticklabels([f"{results['cases'][c]['title']}\n{results['cases'][c]['sizes'][s]}"
                            for c, s in standard], fontsize=7)
        ax.set_ylabel("time / floor time (log)")
        ax.set_title(f"Ratio to the floor, {_short(results, floor)} ({title})")
        ax.legend(fontsize=7, ncol=min(len(others), 4))
        fig.tight_layout()
        fig.savefig(ratios_png, dpi=110)
        plt.close(fig)
        written.append(ratios_png)
    sizes = ("tiny", "small", "medium", "large")
    scaled = [c for c in results["cases"]
              if sum(1 for s in sizes if _cell(results, c, s, floor)) > 1]
    if scaled and others:
        ncols = min(3, len(scaled))
        nrows = math.ceil(len(scaled) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.6 * nrows), squeeze=False)
        for ax, case in zip(axes.flat, scaled):
            info = results["cases"][case]
            for i in others:
                xs, ys = [], []
                for k, s in enumerate(sizes):
                    e = _cell(results, case, s, i)
                    if e and "ratio" in e:
                        xs.append(k)
                        ys.append(e["ratio"])
                if xs:
                    ax.plot(xs, ys, marker="o", label=_short(results, i), color=colors[i])
            ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
            ax.set_yscale("log")
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels([f"{s}\n" + info["sizes"][s].replace(", ", "\n") for s in sizes],
                               fontsize=6)
            ax.set_title(info["title"], fontsize=9)
            ax.set_ylabel("ratio to the floor (log)", fontsize=7)
        for ax in list(axes.flat)[len(scaled):]:
            ax.axis("off")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 7), fontsize=8)
        fig.suptitle(f"Ratio to the floor ({_short(results, floor)}) against problem size "
                     f"({title})", fontsize=10)
        fig.tight_layout(rect=(0, 0.05, 1, 0.96))
        fig.savefig(scaling_png, dpi=110)
        plt.close(fig)
        written.append(scaling_png)
    return written


def write(results, opts) -> dict:
    """Write the run's JSON and markdown (and the charts); returns the paths written."""
    out_dir = Path(opts.out) if opts.out else RESULTS
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = markdown(results)
    paths = {"json": out_dir / f"run-{stamp}.json", "md": out_dir / f"run-{stamp}.md"}
    paths["json"].write_text(json.dumps(results, indent=1) + "\n")
    paths["md"].write_text(text + "\n")
    if opts.latest:
        for kind in ("json", "md"):
            latest = out_dir / f"latest.{kind}"
            shutil.copyfile(paths[kind], latest)
            paths["latest_" + kind] = latest
    if opts.plots:
        prefix = "latest" if opts.latest else f"run-{stamp}"
        for p in plot(results, out_dir / f"{prefix}_ratios.png",
                      out_dir / f"{prefix}_scaling.png"):
            paths[p.stem] = p
    return paths


def main(args=None) -> int:
    """Entry point of ``python -m gradtape bench`` (``args`` from its parser, or a list)."""
    if args is None or isinstance(args, (list, tuple)):
        args = build_parser().parse_args(args)
    opts = complete_options(args)
    try:
        results, status = run(opts)
    except BenchError as exc:
        _log(f"bench: {exc}")
        return 2
    if status == EXIT_DISAGREE and not opts.keep_going:
        _log("bench: stopped: an implementation disagrees with the floor (see above); "
             "nothing was written")
        return status
    paths = write(results, opts)
    print(markdown(results))
    _log("wrote " + ", ".join(str(p) for p in paths.values()) +
         f" ({results['meta']['wall_s']} s)")
    return status
