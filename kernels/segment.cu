// Segment maximum and minimum: out[ids[r] * inner + c] = extreme(out[...], x[r * inner + c])
// over the rows r whose id lies in [0, segments), for every column c < inner. Each element
// is folded in with an atomic compare-and-swap on the value's bits, so double is exact
// (CuPy's atomicMax on double rounds through float). NaN wins, as NumPy's maximum.
#include "common.cuh"

__device__ __forceinline__ bool gt_takes(float v, float cur, int is_max) {
    return (is_max ? v > cur : v < cur) || (v != v && cur == cur);
}
__device__ __forceinline__ bool gt_takes(double v, double cur, int is_max) {
    return (is_max ? v > cur : v < cur) || (v != v && cur == cur);
}

__device__ __forceinline__ void gt_atomic_extreme(float* addr, float v, int is_max) {
    int* bits = (int*)addr;
    int old = *bits;
    while (gt_takes(v, __int_as_float(old), is_max)) {
        const int seen = atomicCAS(bits, old, __float_as_int(v));
        if (seen == old) break;
        old = seen;
    }
}

__device__ __forceinline__ void gt_atomic_extreme(double* addr, double v, int is_max) {
    unsigned long long* bits = (unsigned long long*)addr;
    unsigned long long old = *bits;
    while (gt_takes(v, __longlong_as_double((long long)old), is_max)) {
        const unsigned long long seen =
            atomicCAS(bits, old, (unsigned long long)__double_as_longlong(v));
        if (seen == old) break;
        old = seen;
    }
}

template <typename T>
__device__ void segment_extreme(const T* __restrict__ x, const long long* __restrict__ ids,
                                T* __restrict__ out, gt_index rows, gt_index inner,
                                gt_index segments, int is_max) {
    const gt_index n = rows * inner;
    GT_FOR_EACH(i, n) {
        const gt_index r = gt_div(i, inner, n);
        const long long s = ids[r];
        if (s < 0 || s >= segments) continue;
        gt_atomic_extreme(out + s * inner + (i - r * inner), x[i], is_max);
    }
}

extern "C" {

__global__ void segment_extreme_f32(const float* x, const long long* ids, float* out,
                                    gt_index rows, gt_index inner, gt_index segments,
                                    int is_max) {
    segment_extreme<float>(x, ids, out, rows, inner, segments, is_max);
}

__global__ void segment_extreme_f64(const double* x, const long long* ids, double* out,
                                    gt_index rows, gt_index inner, gt_index segments,
                                    int is_max) {
    segment_extreme<double>(x, ids, out, rows, inner, segments, is_max);
}

}  // extern "C"
