"""The CUDA kernels of ``kernels/*.cu`` built as host C++ and launched on CPU threads.

Each kernel file is compiled into a shared library with the CUDA keywords and the intrinsics
the kernels use defined for the host: a launch runs its blocks one after another on
``blockDim.x`` threads that share the kernel's ``__shared__`` arrays and meet at
``__syncthreads`` (a barrier); ``__shfl_down_sync`` exchanges values through a per-warp
buffer between two warp barriers; ``atomicAdd`` and ``atomicCAS`` take a lock.
:func:`host_kernel` returns an object called like CuPy's ``RawKernel``
(``kernel(grid, block, args)``) on NumPy arrays, so
the launchers of :mod:`gradtape.backend.kernels` run unchanged against it: CI checks the
kernel sources and their launch arguments on a machine without a GPU. Float math comes from
the host's C library (it differs from CUDA's in the last bits) and denormals are not flushed.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from gradtape.backend import kernels as K

_PRELUDE = r"""
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
struct gt_dim3 { unsigned int x; };
static gt_dim3 blockDim = {1}, gridDim = {1};
static thread_local gt_dim3 threadIdx = {0}, blockIdx = {0};

struct gt_host_barrier {
    std::mutex m;
    std::condition_variable cv;
    unsigned count = 0, generation = 0, size = 1;
    void wait() {
        std::unique_lock<std::mutex> lock(m);
        unsigned gen = generation;
        if (++count == size) {
            count = 0;
            ++generation;
            cv.notify_all();
        } else {
            cv.wait(lock, [&] { return gen != generation; });
        }
    }
};
static gt_host_barrier gt_block_barrier;
static gt_host_barrier gt_warp_barriers[32];
static unsigned long long gt_shfl_slots[32][32];
static std::mutex gt_atomic_lock;

static inline void __syncthreads() { gt_block_barrier.wait(); }
template <typename T> static inline T __shfl_down_sync(unsigned, T v, int off) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    gt_shfl_slots[warp][lane] = bits;
    gt_warp_barriers[warp].wait();
    T out = v;
    if (lane + off < 32) std::memcpy(&out, &gt_shfl_slots[warp][lane + off], sizeof(T));
    gt_warp_barriers[warp].wait();
    return out;
}
template <typename T> static inline T atomicAdd(T* p, T v) {
    std::lock_guard<std::mutex> lock(gt_atomic_lock);
    T old = *p;
    *p = old + v;
    return old;
}
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
template <typename T> static inline T atomicCAS(T* p, T compare, T v) {
    std::lock_guard<std::mutex> lock(gt_atomic_lock);
    T old = *p;
    if (old == compare) *p = v;
    return old;
}
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static inline long long __double_as_longlong(double d) {
    long long i; std::memcpy(&i, &d, 8); return i;
}
static inline double __longlong_as_double(long long i) {
    double d; std::memcpy(&d, &i, 8); return d;
}
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// blockDim.x threads run the blocks one after another, meeting at a barrier between blocks
// (so a block's shared memory is free when the next one starts)
static void gt_launch(unsigned grid, unsigned block, const std::function<void()>& body) {
    gridDim.x = grid;
    blockDim.x = block;
    gt_block_barrier.size = block;
    for (auto& b : gt_warp_barriers) b.size = 32;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t)
        threads.emplace_back([t, grid, &body] {
            threadIdx.x = t;
            for (unsigned g = 0; g < grid; ++g) {
                blockIdx.x = g;
                body();
                gt_block_barrier.wait();
            }
        });
    for (auto& th : threads) th.join();
}
"""

_KERNEL = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", re.S)
_BUILT: dict = {}


def compiler():
    """A C++ compiler on PATH, or None."""
    return next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)


def _param_types(params: str) -> list:
    out = []
    for p in params.split(","):
        p = " ".join(p.split())
        name = re.search(r"(\w+)$", p).group(1)
        out.append(p[: -len(name)].strip())
    return out


def _wrappers(source: str) -> str:
    code = []
    for name, params in _KERNEL.findall(source):
        types = _param_types(params)
        args = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(types))
        code.append(f'extern "C" void run_{name}(unsigned grid, unsigned block, void** a) {{\n'
                    f"    gt_launch(grid, block, [&] {{ {name}({args}); }});\n}}\n")
    return "\n".join(code)


def _expanded(source: str) -> str:
    """``source`` through the C preprocessor (its macros expanded, so a kernel whose
    parameter list a macro writes is read as the compiler sees it); CUDA's keywords stay."""
    out = subprocess.run([compiler(), "-E", "-P", "-x", "c++", "-"], input=source,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"preprocessing a kernel file failed:\n{out.stderr}")
    return out.stdout


def _library(file: str):
    source = K.kernel_source(file)
    text = _PRELUDE + source + "\n" + _wrappers(_expanded(source))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    lib = _BUILT.get((file, digest))
    if lib is not None:
        return lib
    root = os.path.join(tempfile.gettempdir(), "gradtape-host-cuda")
    os.makedirs(root, exist_ok=True)
    so = os.path.join(root, f"{file.replace('.', '_')}-{digest}.so")
    if not os.path.exists(so):
        cpp = so[:-3] + ".cpp"
        with open(cpp, "w") as f:
            f.write(text)
        tmp = f"{so}.{os.getpid()}"
        build = subprocess.run([compiler(), "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread",
                                "-w", "-o", tmp, cpp], capture_output=True, text=True)
        if build.returncode != 0:
            raise RuntimeError(f"host build of {file} failed:\n{build.stderr}")
        os.replace(tmp, so)
    lib = _BUILT[(file, digest)] = ctypes.CDLL(so)
    return lib


class HostKernel:
    """A kernel of a host-built kernel file, called as CuPy's RawKernel: ``(grid, block, args)``
    with NumPy arrays for pointers (``np.uintp(0)`` for null) and NumPy scalars by value."""

    def __init__(self, file, name):
        self._fn = getattr(_library(file), f"run_{name}")
        self._fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)]
        self.name = name

    def __call__(self, grid, block, args):
        keep = []
        slots = (ctypes.c_void_p * len(args))()
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray) and a.ndim > 0 or isinstance(a, HostArray):
                assert a.flags.c_contiguous, f"{self.name}: argument {i} is not contiguous"
                holder = ctypes.c_void_p(a.ctypes.data)
            elif isinstance(a, np.ndarray):         # a 0-d array: a pointer, as on CuPy
                holder = ctypes.c_void_p(a.ctypes.data)
            elif isinstance(a, np.uintp):
                holder = ctypes.c_void_p(int(a))
            elif isinstance(a, np.generic):
                holder = ctypes.create_string_buffer(a.tobytes(), a.nbytes)
            else:
                raise TypeError(f"{self.name}: argument {i} is a {type(a).__name__}; CuPy "
                                "would pass a Python number as a 64-bit value")
            keep.append(holder)
            slots[i] = ctypes.cast(ctypes.pointer(holder), ctypes.c_void_p) \
                if isinstance(holder, ctypes.c_void_p) else ctypes.cast(holder, ctypes.c_void_p)
        self._fn(int(grid[0]), int(block[0]), slots)


class HostArray(np.ndarray):
    """A NumPy array the launchers take for a device array (what ``is_cupy_array`` sees)."""


def host_kernel(file, name):
    return HostKernel(file, name)


def on_host_kernels(monkeypatch):
    """Make :mod:`gradtape.backend.kernels` launch the host-built kernels on HostArrays,
    with blocks of 64 threads (two warps, so the block reductions combine warps; an OS thread
    per CUDA thread makes larger blocks slow). The grid sizes stay those computed for 256, so
    the grid-stride loops take several turns."""
    monkeypatch.setattr(K, "get_kernel", host_kernel)
    monkeypatch.setattr(K, "is_cupy_array", lambda a: isinstance(a, HostArray))
    monkeypatch.setattr(K, "_BLOCK", HOST_BLOCK)
    monkeypatch.setattr(K, "_row_block", lambda c: HOST_BLOCK)


HOST_BLOCK = 64
