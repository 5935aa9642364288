"""Regression guard: what got slower than the stored results, by ratio to the NumPy floor.

    python benchmarks/check.py                     # run numpy + gradtape now, compare
    python benchmarks/check.py --quick             # the same with the quick settings
    python benchmarks/check.py --run results.json  # compare a run made earlier

A run is compared with ``benchmarks/results/latest.json`` (``--against`` picks another file)
cell by cell (case, size, implementation), never by absolute time: each side's number is its
implementation's time divided by the hand-written NumPy time measured in the same run, so a
faster or slower machine changes nothing. A cell whose ratio grew by more than the threshold
(15% unless ``--threshold`` says otherwise) is reported, and so is a memory figure (peak traced
memory over the floor's) that grew by as much. Exit status 1 when anything got slower, 2 when
there is nothing to compare with, 0 otherwise.

This is a tool to run by hand before and after a change, not a timed test: timings on a busy
machine vary, and a cell near the threshold may need a second run (or more ``--rounds``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gradtape import bench  # noqa: E402

DEFAULT_BASELINE = bench.RESULTS / "latest.json"


def _ratios(results: dict) -> dict:
    """``{(kind, case, size, impl): ratio}`` of every cell with a ratio, floor excluded."""
    floor = results.get("floor", "numpy")
    out = {}
    for e in results.get("results", []):
        if e.get("status") == "ok" and "ratio" in e and e["impl"] != floor:
            out[("time", e["case"], e["size"], e["impl"])] = e["ratio"]
    for r in results.get("memory", []):
        if "ratio" in r and r["impl"] != floor:
            out[("memory", r["case"], r["size"], r["impl"])] = r["ratio"]
    return out


def compare_runs(baseline: dict, current: dict, threshold: float = 0.15) -> dict:
    """Compare two runs; returns ``compared`` rows and the ``slower`` and ``faster`` subsets.

    Each row is ``(kind, case, size, impl, baseline_ratio, current_ratio, change)`` with
    ``change = current / baseline - 1``; a row is slower when ``change > threshold`` and faster
    when ``change < -threshold``.
    """
    base = _ratios(baseline)
    cur = _ratios(current)
    rows = []
    for key in sorted(set(base) & set(cur)):
        change = cur[key] / base[key] - 1.0
        rows.append((*key, base[key], cur[key], change))
    return {"compared": rows,
            "slower": [r for r in rows if r[-1] > threshold],
            "faster": [r for r in rows if r[-1] < -threshold],
            "only_baseline": sorted(set(base) - set(cur)),
            "only_current": sorted(set(cur) - set(base))}


def report(cmp: dict, threshold: float) -> str:
    """The comparison as markdown."""
    lines = ["| kind | case | size | implementation | baseline | now | change |",
             "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    for kind, case, size, impl, b, c, change in cmp["compared"]:
        flag = " **slower**" if change > threshold else (" faster" if change < -threshold else "")
        lines.append(f"| {kind} | {case} | {size} | {impl} | {b:.2f}x | {c:.2f}x | "
                     f"{change:+.0%}{flag} |")
    out = ["\n".join(lines), ""]
    if cmp["slower"]:
        out.append(f"Slower by more than {threshold:.0%} relative to the NumPy floor:")
        for kind, case, size, impl, b, c, change in cmp["slower"]:
            out.append(f"  {impl} {case} ({size}, {kind}): {b:.2f}x -> {c:.2f}x ({change:+.0%})")
    else:
        out.append(f"Nothing got slower by more than {threshold:.0%} "
                   f"({len(cmp['compared'])} cells compared).")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/check.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", default=None,
                        help="a results JSON to check instead of running the suite now")
    parser.add_argument("--against", default=str(DEFAULT_BASELINE),
                        help="the stored results to compare with (default: %(default)s)")
    parser.add_argument("--threshold", type=float, default=0.15,
                        help="report ratios that grew by more than this fraction "
                             "(default: %(default)s)")
    bench.add_arguments(parser)
    parser.set_defaults(impls="numpy,gradtape", latest=False, plots=False)
    args = parser.parse_args(argv)
    baseline_path = Path(args.against)
    if not baseline_path.is_file():
        print(f"check: no stored results at {baseline_path}; run benchmarks/run_all.py first",
              file=sys.stderr)
        return 2
    baseline = json.loads(baseline_path.read_text())
    if args.run:
        current = json.loads(Path(args.run).read_text())
    else:
        opts = bench.complete_options(args)
        try:
            current, status = bench.run(opts)
        except bench.BenchError as exc:
            print(f"check: {exc}", file=sys.stderr)
            return 2
        if status:
            print("check: an implementation disagrees with the floor; fix that first",
                  file=sys.stderr)
            return status
        paths = bench.write(current, opts)
        print(f"this run: {paths['json']}", file=sys.stderr)
    for key in ("device", "cores"):
        if baseline["meta"].get(key) != current["meta"].get(key):
            print(f"check: warning: {key} differs: baseline {baseline['meta'].get(key)}, "
                  f"now {current['meta'].get(key)}", file=sys.stderr)
    cmp = compare_runs(baseline, current, args.threshold)
    if not cmp["compared"]:
        print("check: the two runs have no cell in common", file=sys.stderr)
        return 2
    print(report(cmp, args.threshold))
    return 1 if cmp["slower"] else 0


if __name__ == "__main__":
    sys.exit(main())
