"""Builds the optional C module gradtape._speedups (the per-op hot paths).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the
install goes on and gradtape runs the same logic in Python.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("gradtape._speedups", ["gradtape/_speedups.c"], optional=True)])
