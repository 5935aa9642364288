// Bias-add plus activation, forward and backward, elementwise over x[..., C].
//   forward:  y  = act(x + b)           (b of length C broadcast over the last axis; may be null)
//   backward: dz = g * act'(x + b)      (the gradient of x; the bias gradient is dz summed
//                                        over the leading axes)
#include "common.cuh"

template <typename T>
__device__ void bias_act_forward(const T* __restrict__ x, const T* __restrict__ b,
                                 T* __restrict__ y, gt_index n, gt_index channels, int act) {
    GT_FOR_EACH(i, n) {
        T z = x[i];
        if (b != nullptr) z += b[i % channels];
        y[i] = gt_activation(z, act);
    }
}

template <typename T>
__device__ void bias_act_backward(const T* __restrict__ g, const T* __restrict__ x,
                                  const T* __restrict__ b, T* __restrict__ dz, gt_index n,
                                  gt_index channels, int act) {
    GT_FOR_EACH(i, n) {
        T z = x[i];
        if (b != nullptr) z += b[i % channels];
        dz[i] = g[i] * gt_activation_grad(z, act);
    }
}

extern "C" {

__global__ void bias_act_forward_f32(const float* x, const float* b, float* y, gt_index n,
                                     gt_index channels, int act) {
    bias_act_forward<float>(x, b, y, n, channels, act);
}

__global__ void bias_act_forward_f64(const double* x, const double* b, double* y, gt_index n,
                                     gt_index channels, int act) {
    bias_act_forward<double>(x, b, y, n, channels, act);
}

__global__ void bias_act_backward_f32(const float* g, const float* x, const float* b, float* dz,
                                      gt_index n, gt_index channels, int act) {
    bias_act_backward<float>(g, x, b, dz, n, channels, act);
}

__global__ void bias_act_backward_f64(const double* g, const double* x, const double* b,
                                      double* dz, gt_index n, gt_index channels, int act) {
    bias_act_backward<double>(g, x, b, dz, n, channels, act);
}

}  // extern "C"
