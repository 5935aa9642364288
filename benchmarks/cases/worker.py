"""A long-lived worker that runs one implementation for the driver.

    python -m benchmarks.cases.worker IMPLEMENTATION DEVICE

``IMPLEMENTATION`` is a name of :data:`benchmarks.cases.IMPLEMENTATIONS` or a plug-in
``package.module:Class``; ``DEVICE`` is ``cpu`` or ``gpu[:N]``. The worker answers one JSON
object per line on its standard output, one per request read from its standard input;
anything the libraries print goes to standard error. Its first line says whether it is ready:

    {"ready": true, "name": ..., "label": ..., "version": ..., "threads": ..., "traced_memory": ...}
    {"ready": false, "reason": "..."}

Requests and answers (every answer has ``ok``; a refusal has ``skip`` (the implementation
cannot run the case) or ``error`` (a traceback)):

- ``{"op": "prepare", "case", "size", "check_dir", "warmup_s"}``: build the case, run it once
  from fresh state and save its outputs to ``check_dir/<name>.npz`` (answer ``check``), then
  build it again for timing and warm it up (at least two calls and ``warmup_s`` seconds;
  answer ``estimate``, the fastest warm-up call in seconds, and ``note``).
- ``{"op": "time", "number": n}``: ``n`` calls then one sync; answers ``seconds`` per call.
- ``{"op": "memory", "case", "size"}``: peak traced memory (tracemalloc) of one call, after a
  first call that allocated whatever state persists (optimizer slots); answers ``peak_bytes``
  (everything traced and alive at the peak: inputs, parameters, state and temporaries) and
  ``transient_bytes`` (the part above what was alive just before the call).
- ``{"op": "release"}``: drop the built case.
- ``{"op": "quit"}``.
"""
from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import time
import tracemalloc
import traceback

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402

from benchmarks.cases import IMPLEMENTATIONS  # noqa: E402
from benchmarks.cases.base import Unsupported  # noqa: E402
from benchmarks.cases.spec import make_data  # noqa: E402


def load_implementation(spec: str, device: str):
    """Instantiate the implementation named ``spec`` (a registry name or ``module:Class``)."""
    target = IMPLEMENTATIONS.get(spec, spec)
    module_name, _, class_name = target.partition(":")
    if not class_name:
        raise ValueError(f"unknown implementation {spec!r}: not one of "
                         f"{', '.join(IMPLEMENTATIONS)} and not of the form module:Class")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise Unsupported(f"cannot import {module_name}: {exc}") from exc
    return getattr(module, class_name)(device)


class Worker:
    """Holds the implementation and the case currently built; answers requests."""

    def __init__(self, impl):
        self.impl = impl
        self.runner = None

    def prepare(self, case, size, check_dir, warmup_s):
        self.runner = None
        gc.collect()
        data = make_data(case, size)
        runner = self.impl.build(case, size, data)
        outputs = runner.check()
        runner.sync()
        path = os.path.join(check_dir, f"{self.impl.name}.npz")
        np.savez(path, **{k: np.asarray(v) for k, v in outputs.items()})
        del runner
        runner = self.impl.build(case, size, data)
        calls, best, start = 0, float("inf"), time.perf_counter()
        while calls < 2 or (time.perf_counter() - start < warmup_s and calls < 1000):
            t0 = time.perf_counter()
            runner.step()
            runner.sync()
            best = min(best, time.perf_counter() - t0)
            calls += 1
        self.runner = runner
        return {"check": path, "estimate": best, "note": runner.note}

    def time(self, number):
        runner = self.runner
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(number):
            runner.step()
        runner.sync()
        return {"seconds": (time.perf_counter() - t0) / number}

    def memory(self, case, size):
        if not self.impl.traced_memory:
            raise Unsupported("its allocations are not visible to tracemalloc")
        self.runner = None
        gc.collect()
        tracemalloc.start()
        try:
            runner = self.impl.build(case, size, make_data(case, size))
            runner.step()
            runner.sync()
            gc.collect()
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            runner.step()
            runner.sync()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return {"peak_bytes": peak, "transient_bytes": peak - before}

    def handle(self, request):
        op = request.get("op")
        if op == "prepare":
            return self.prepare(request["case"], request["size"], request["check_dir"],
                                float(request.get("warmup_s", 0.05)))
        if op == "time":
            return self.time(int(request["number"]))
        if op == "memory":
            return self.memory(request["case"], request["size"])
        if op == "release":
            self.runner = None
            gc.collect()
            return {}
        raise ValueError(f"unknown request {op!r}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    spec, device = argv
    # the protocol owns the real stdout; whatever a library prints goes to stderr
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        impl = load_implementation(spec, device)
    except Unsupported as exc:
        send({"ready": False, "reason": str(exc)})
        return 0
    except Exception:  # noqa: BLE001 - the driver shows the traceback
        send({"ready": False, "reason": traceback.format_exc()})
        return 1
    send({"ready": True, "name": impl.name, "label": impl.label,
          "version": getattr(impl, "version", ""), "threads": impl.threads(),
          "traced_memory": impl.traced_memory})
    # the libraries' own objects never become garbage: keep them out of every collection
    gc.collect()
    gc.freeze()
    worker = Worker(impl)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if request.get("op") == "quit":
            send({"ok": True})
            break
        try:
            answer = {"ok": True, **worker.handle(request)}
        except Unsupported as exc:
            worker.runner = None
            answer = {"ok": False, "skip": str(exc)}
        except Exception:  # noqa: BLE001 - reported to the driver, which decides
            worker.runner = None
            answer = {"ok": False, "error": traceback.format_exc()}
        send(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
