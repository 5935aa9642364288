// Optimizer updates: one launch per parameter, every state buffer updated in place.
// The learning rate and the step count are read from device memory when their pointers are
// not null (so a captured CUDA graph sees the values of each replay), else taken from the
// scalar arguments.
//   sgd_momentum:  v = momentum * v - lr * g;  p += v            (nesterov: p += momentum * v - lr * g)
//                  momentum == 0 and no velocity buffer: p -= lr * g
//   adam / adamw:  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//                  alpha = lr * sqrt(1 - b2^t) / (1 - b1^t)
//                  p -= alpha * m / (sqrt(v) + eps)
//                  adamw first decays the weights: p -= lr * weight_decay * p
#include "common.cuh"

template <typename T>
__device__ __forceinline__ T read_scalar(const T* ptr, T value) {
    return ptr != nullptr ? *ptr : value;
}

template <typename T>
__device__ void sgd_momentum(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ v,
                             const T* __restrict__ lr_ptr, T lr_value, T momentum, int nesterov,
                             gt_index n) {
    const T lr = read_scalar(lr_ptr, lr_value);
    GT_FOR_EACH(i, n) {
        const T gi = g[i];
        if (v == nullptr) {
            p[i] -= lr * gi;
            continue;
        }
        const T vi = momentum * v[i] - lr * gi;
        v[i] = vi;
        p[i] += nesterov ? momentum * vi - lr * gi : vi;
    }
}

template <typename T>
__device__ void adam(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                     T* __restrict__ v, const T* __restrict__ lr_ptr, T lr_value,
                     const gt_index* __restrict__ step_ptr, gt_index step_value, double beta1,
                     double beta2, T eps, T weight_decay, gt_index n) {
    const T lr = read_scalar(lr_ptr, lr_value);
    // the bias correction in double precision whatever T is (1 - 0.999^t loses most of
    // float's digits), as the CPU path computes it
    const double t = double(step_ptr != nullptr ? *step_ptr : step_value);
    const T alpha = T(double(lr) * sqrt(1.0 - pow(beta2, t)) / (1.0 - pow(beta1, t)));
    // 1 - beta formed in double, then rounded, as the CPU paths round the Python float
    // (in float, 1 - float(0.999) is 0.00099998713, not 0.001)
    const T b1 = T(beta1), b2 = T(beta2), c1 = T(1.0 - beta1), c2 = T(1.0 - beta2);
    const T decay = lr * weight_decay;
    GT_FOR_EACH(i, n) {
        const T gi = g[i];
        T pi = p[i];
        if (weight_decay != T(0)) pi -= decay * pi;
        const T mi = b1 * m[i] + c1 * gi;
        const T vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - alpha * mi / (gt_sqrt(vi) + eps);
    }
}

extern "C" {

__global__ void sgd_momentum_f32(float* p, const float* g, float* v, const float* lr_ptr,
                                 float lr, float momentum, int nesterov, gt_index n) {
    sgd_momentum<float>(p, g, v, lr_ptr, lr, momentum, nesterov, n);
}

__global__ void sgd_momentum_f64(double* p, const double* g, double* v, const double* lr_ptr,
                                 double lr, double momentum, int nesterov, gt_index n) {
    sgd_momentum<double>(p, g, v, lr_ptr, lr, momentum, nesterov, n);
}

__global__ void adam_f32(float* p, const float* g, float* m, float* v, const float* lr_ptr,
                         float lr, const gt_index* step_ptr, gt_index step, double beta1,
                         double beta2, float eps, float weight_decay, gt_index n) {
    adam<float>(p, g, m, v, lr_ptr, lr, step_ptr, step, beta1, beta2, eps, weight_decay, n);
}

__global__ void adam_f64(double* p, const double* g, double* m, double* v, const double* lr_ptr,
                         double lr, const gt_index* step_ptr, gt_index step, double beta1,
                         double beta2, double eps, double weight_decay, gt_index n) {
    adam<double>(p, g, m, v, lr_ptr, lr, step_ptr, step, beta1, beta2, eps, weight_decay, n);
}

}  // extern "C"
