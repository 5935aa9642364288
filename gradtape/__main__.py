"""``python -m gradtape info | demo | bench``."""
from __future__ import annotations

import argparse
import os
import platform
import sys


def _info(args) -> int:
    import numpy as np
    import gradtape as gt
    from gradtape import backend
    print(f"gradtape {gt.__version__}")
    print(f"python   {platform.python_version()} ({sys.executable})")
    print(f"numpy    {np.__version__}")
    from .tensor import _speedups
    if _speedups is not None:
        print("C hot paths: on (gradtape._speedups)")
    elif os.environ.get("GRADTAPE_PURE_PYTHON", "").strip() not in ("", "0"):
        print("C hot paths: off (GRADTAPE_PURE_PYTHON is set)")
    else:
        print("C hot paths: off (gradtape._speedups was not built: no C compiler at install "
              "time; reinstall with one to build it)")
    try:
        import cupy
        print(f"cupy     {cupy.__version__}")
    except Exception as exc:  # noqa: BLE001 - report whatever went wrong
        print(f"cupy     not available ({type(exc).__name__}: {exc})")
    print("devices:")
    for d in backend.list_devices():
        print(f"  {d.name}")
    reason = backend.gpu_unavailable_reason()
    try:
        default = backend.default_device()
    except backend.DeviceError as exc:
        print(f"default device: error: {exc}")
        return 1
    print(f"default device: {default.name}")
    if default.kind != "gpu":
        print(f"no GPU used: {reason or 'GRADTAPE_DEVICE selects the CPU'}")
    return 0


def _demo(args) -> int:
    from gradtape.demo import main as demo_main
    return demo_main(args)


def _bench(argv) -> int:
    from gradtape.bench import main as bench_main
    return bench_main(argv)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradtape")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, devices, and why no GPU is used")
    demo = sub.add_parser("demo", help="train a small network on the best device")
    demo.add_argument("--device", default=None)
    demo.add_argument("--epochs", type=int, default=None)
    demo.add_argument("--out", default="demo_out")
    demo.add_argument("--seeds", action="store_true", help="run the seed programs instead")
    sub.add_parser("bench", help="run the benchmark suite (options: python -m gradtape bench -h)",
                   add_help=False)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])   # every option of benchmarks/run_all.py
    args = parser.parse_args(argv)
    return {"info": _info, "demo": _demo}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
