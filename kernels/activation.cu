// Bias-add plus activation, forward and backward, elementwise over x[..., C].
//   forward:  y  = act(x + b)           (b of length C broadcast over the last axis; may be null)
//   backward: dz = g * act'(x + b)      (the gradient of x; the bias gradient is dz summed
//                                        over the leading axes)
//   backward from the output, for the activations whose derivative is a function of y
//   (linear, relu, tanh, sigmoid; what the op saves for them instead of x):
//             dz = g * d(y)             d = 1, [y > 0], 1 - y^2, y (1 - y)
#include "common.cuh"

template <typename T>
__device__ void bias_act_forward(const T* __restrict__ x, const T* __restrict__ b,
                                 T* __restrict__ y, gt_index n, gt_index channels, int act) {
    GT_FOR_EACH(i, n) {
        T z = x[i];
        if (b != nullptr) z += b[gt_mod(i, channels, n)];
        y[i] = gt_activation(z, act);
    }
}

template <typename T>
__device__ void bias_act_backward(const T* __restrict__ g, const T* __restrict__ x,
                                  const T* __restrict__ b, T* __restrict__ dz, gt_index n,
                                  gt_index channels, int act) {
    GT_FOR_EACH(i, n) {
        T z = x[i];
        if (b != nullptr) z += b[gt_mod(i, channels, n)];
        dz[i] = g[i] * gt_activation_grad(z, act);
    }
}

template <typename T>
__device__ T gt_activation_grad_from_output(T y, int act) {
    switch (act) {
        case GT_ACT_RELU: return y > T(0) ? T(1) : T(0);
        case GT_ACT_TANH: return T(1) - y * y;
        case GT_ACT_SIGMOID: return y * (T(1) - y);
        default: return T(1);
    }
}

template <typename T>
__device__ void act_backward_from_output(const T* __restrict__ g, const T* __restrict__ y,
                                         T* __restrict__ dz, gt_index n, int act) {
    GT_FOR_EACH(i, n) {
        dz[i] = g[i] * gt_activation_grad_from_output(y[i], act);
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

__global__ void act_backward_from_output_f32(const float* g, const float* y, float* dz,
                                             gt_index n, int act) {
    act_backward_from_output<float>(g, y, dz, n, act);
}

__global__ void act_backward_from_output_f64(const double* g, const double* y, double* dz,
                                             gt_index n, int act) {
    act_backward_from_output<double>(g, y, dz, n, act);
}

}  // extern "C"
