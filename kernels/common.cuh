// Shared device helpers for the gradtape kernels: overloads of the math functions for
// float and double, activation codes, and block-wide reductions.
#pragma once

#define GT_ACT_LINEAR 0
#define GT_ACT_RELU 1
#define GT_ACT_GELU 2        // exact: 0.5 x erfc(-x / sqrt 2) (= 0.5 x (1 + erf(x / sqrt 2)))
#define GT_ACT_GELU_TANH 3   // tanh approximation
#define GT_ACT_SILU 4
#define GT_ACT_TANH 5
#define GT_ACT_SIGMOID 6

typedef long long gt_index;

__device__ __forceinline__ float gt_exp(float x) { return expf(x); }
__device__ __forceinline__ double gt_exp(double x) { return exp(x); }
__device__ __forceinline__ float gt_log(float x) { return logf(x); }
__device__ __forceinline__ double gt_log(double x) { return log(x); }
__device__ __forceinline__ float gt_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double gt_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float gt_erf(float x) { return erff(x); }
__device__ __forceinline__ double gt_erf(double x) { return erf(x); }
__device__ __forceinline__ float gt_erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double gt_erfc(double x) { return erfc(x); }
__device__ __forceinline__ float gt_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double gt_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float gt_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double gt_rsqrt(double x) { return rsqrt(x); }
__device__ __forceinline__ float gt_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double gt_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float gt_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double gt_abs(double x) { return fabs(x); }
__device__ __forceinline__ float gt_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double gt_max(double a, double b) { return fmax(a, b); }

template <typename T> __device__ __forceinline__ T gt_inf();
template <> __device__ __forceinline__ float gt_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double gt_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
template <typename T> __device__ __forceinline__ T gt_nan();
template <> __device__ __forceinline__ float gt_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double gt_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

// sigmoid without overflow: exp(-|x|) never overflows.
template <typename T> __device__ __forceinline__ T gt_sigmoid(T x) {
    T e = gt_exp(-gt_abs(x));
    return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}

template <typename T> __device__ __forceinline__ T gt_activation(T z, int act) {
    switch (act) {
        case GT_ACT_RELU: return z > T(0) ? z : T(0);
        // erfc, not 1 + erf, which cancels in the negative tail (float32 loses every digit
        // below about z = -5)
        case GT_ACT_GELU: return T(0.5) * z * gt_erfc(z * T(-0.70710678118654752440));
        case GT_ACT_GELU_TANH: {     // 0.5 z (1 + tanh u) = z sigmoid(2u), without cancelling
            T u = T(0.79788456080286535588) * (z + T(0.044715) * z * z * z);
            return z * gt_sigmoid(T(2) * u);
        }
        case GT_ACT_SILU: return z * gt_sigmoid(z);
        case GT_ACT_TANH: return gt_tanh(z);
        case GT_ACT_SIGMOID: return gt_sigmoid(z);
        default: return z;
    }
}

// d activation / dz at z.
template <typename T> __device__ __forceinline__ T gt_activation_grad(T z, int act) {
    switch (act) {
        case GT_ACT_RELU: return z > T(0) ? T(1) : T(0);
        case GT_ACT_GELU: {
            T cdf = T(0.5) * gt_erfc(z * T(-0.70710678118654752440));
            T pdf = T(0.39894228040143267794) * gt_exp(T(-0.5) * z * z);
            return cdf + z * pdf;
        }
        case GT_ACT_GELU_TANH: {
            T u = T(0.79788456080286535588) * (z + T(0.044715) * z * z * z);
            T du = T(0.79788456080286535588) * (T(1) + T(3) * T(0.044715) * z * z);
            // 1 + tanh u = 2 sigmoid(2u), 1 - tanh^2 u = 4 sigmoid(2u) sigmoid(-2u): no
            // cancellation where tanh u is near -1 (in float it is -1 for z below about -4)
            T s = gt_sigmoid(T(2) * u), sn = gt_sigmoid(T(-2) * u);
            return s * (T(1) + T(2) * z * sn * du);
        }
        case GT_ACT_SILU: {
            T s = gt_sigmoid(z);
            return s * (T(1) + z * (T(1) - s));
        }
        case GT_ACT_TANH: {
            T t = gt_tanh(z);
            return T(1) - t * t;
        }
        case GT_ACT_SIGMOID: {
            T s = gt_sigmoid(z);
            return s * (T(1) - s);
        }
        default: return T(1);
    }
}

template <typename T> __device__ __forceinline__ T gt_warp_sum(T v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

template <typename T> __device__ __forceinline__ T gt_warp_max(T v) {
    for (int off = 16; off > 0; off >>= 1) v = gt_max(v, __shfl_down_sync(0xffffffffu, v, off));
    return v;
}

// Block-wide sum; every thread gets the result. blockDim.x must be a multiple of 32
// (at most 1024); `scratch` holds 32 values.
template <typename T> __device__ T gt_block_sum(T v, T* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = gt_warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = threadIdx.x < nwarps ? scratch[threadIdx.x] : T(0);
    if (warp == 0) v = gt_warp_sum(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    return scratch[0];
}

template <typename T> __device__ T gt_block_max(T v, T* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = gt_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = threadIdx.x < nwarps ? scratch[threadIdx.x] : -gt_inf<T>();
    if (warp == 0) v = gt_warp_max(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    return scratch[0];
}

// Grid-stride loop over n elements.
#define GT_FOR_EACH(i, n) \
    for (gt_index i = (gt_index)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (gt_index)blockDim.x * gridDim.x)

// i % m and i / m for 0 <= i < n: in 32 bits when n fits (64-bit division is emulated,
// many times slower; the test is the same for every thread).
__device__ __forceinline__ gt_index gt_mod(gt_index i, gt_index m, gt_index n) {
    return n <= 0xffffffffLL ? (gt_index)((unsigned int)i % (unsigned int)m) : i % m;
}
__device__ __forceinline__ gt_index gt_div(gt_index i, gt_index m, gt_index n) {
    return n <= 0xffffffffLL ? (gt_index)((unsigned int)i / (unsigned int)m) : i / m;
}
