"""Run the whole benchmark suite: ``python benchmarks/run_all.py [--quick] [options]``.

The same as ``python -m gradtape bench``, with every option of the driver
(:mod:`gradtape.bench`): implementations, cases, sizes, rounds, threads, output folder.
See ``benchmarks/README.md`` for how to read the tables and charts.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gradtape.bench import build_parser, main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(build_parser("benchmarks/run_all.py").parse_args()))
