"""Builds the optional C module gradtape._speedups (the per-op hot paths and the optimizers'
one-pass updates on host arrays).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the
install goes on and gradtape runs the same logic in Python.
"""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: GCC and Clang: sqrt without errno (so the update loops vectorise) and no fused
#: multiply-add (each operation rounds as NumPy's does, so results are bit-identical).
UNIX_FLAGS = ["-fno-math-errno", "-ffp-contract=off"]


class BuildExt(build_ext):
    def build_extensions(self):
        if self.compiler.compiler_type == "unix":
            for ext in self.extensions:
                ext.extra_compile_args = list(ext.extra_compile_args or []) + UNIX_FLAGS
        super().build_extensions()


setup(ext_modules=[Extension("gradtape._speedups", ["gradtape/_speedups.c"], optional=True)],
      cmdclass={"build_ext": BuildExt})
