// Optimizer updates, every state buffer updated in place: one launch per parameter, or one
// launch for up to GT_MULTI parameters of one dtype (the *_multi kernels, as PyTorch's
// multi-tensor "foreach" updates), which read each parameter from one buffer and write it to
// another (the same buffer for an update in place).
// The learning rate and the step count are read from device memory when their pointers are
// not null (so a captured CUDA graph sees the values of each replay), else taken from the
// scalar arguments.
//   sgd_momentum:  v = momentum * v - lr * g;  p += v
//                  (nesterov: p += momentum * v - lr * g)
//                  momentum == 0 and no velocity buffer: p -= lr * g
//   adam / adamw:  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//                  alpha = lr * sqrt(1 - b2^t) / (1 - b1^t)
//                  p -= alpha * m / (sqrt(v) + eps)
//                  adamw first decays the weights: p -= lr * weight_decay * p
#include "common.cuh"

#define GT_MULTI 8
// The slots of a *_multi kernel from its parameters p0, o0, g0, a0, b0, n0, p1 ...
#define GT_MULTI_SLOT(k) {p##k, o##k, g##k, a##k, b##k, n##k}
#define GT_MULTI_SLOTS {GT_MULTI_SLOT(0), GT_MULTI_SLOT(1), GT_MULTI_SLOT(2), GT_MULTI_SLOT(3), \
                        GT_MULTI_SLOT(4), GT_MULTI_SLOT(5), GT_MULTI_SLOT(6), GT_MULTI_SLOT(7)}
// ... and their parameters: (p, out, g, a, b, n) for each slot
#define GT_MULTI_PARAM(T, k) const T* p##k, T* o##k, const T* g##k, T* a##k, T* b##k, gt_index n##k
#define GT_MULTI_PARAMS(T) GT_MULTI_PARAM(T, 0), GT_MULTI_PARAM(T, 1), GT_MULTI_PARAM(T, 2), \
                           GT_MULTI_PARAM(T, 3), GT_MULTI_PARAM(T, 4), GT_MULTI_PARAM(T, 5), \
                           GT_MULTI_PARAM(T, 6), GT_MULTI_PARAM(T, 7)

template <typename T>
__device__ __forceinline__ T read_scalar(const T* ptr, T value) {
    return ptr != nullptr ? *ptr : value;
}

// One element of SGD: reads p[i] (the old value) before writing out[i] (p may be out).
template <typename T>
__device__ __forceinline__ void sgd_element(const T* p, T* out, const T* __restrict__ g,
                                            T* __restrict__ v, T lr, T momentum, int nesterov,
                                            gt_index i) {
    const T gi = g[i];
    if (v == nullptr) {
        out[i] = p[i] - lr * gi;
        return;
    }
    const T vi = momentum * v[i] - lr * gi;
    v[i] = vi;
    out[i] = p[i] + (nesterov ? momentum * vi - lr * gi : vi);
}

template <typename T>
__device__ void sgd_momentum(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ v,
                             const T* __restrict__ lr_ptr, T lr_value, T momentum, int nesterov,
                             gt_index n) {
    const T lr = read_scalar(lr_ptr, lr_value);
    GT_FOR_EACH(i, n) sgd_element<T>(p, p, g, v, lr, momentum, nesterov, i);
}

// Adam's constants for one launch: the bias-corrected step and the rounded betas.
template <typename T>
struct adam_consts {
    T alpha, b1, b2, c1, c2, eps, weight_decay, decay;

    __device__ adam_consts(const T* lr_ptr, T lr_value, const gt_index* step_ptr,
                           gt_index step_value, double beta1, double beta2, T eps_,
                           T weight_decay_) {
        const T lr = read_scalar(lr_ptr, lr_value);
        // the bias correction in double precision whatever T is (1 - 0.999^t loses most of
        // float's digits), as the CPU path computes it
        const double t = double(step_ptr != nullptr ? *step_ptr : step_value);
        alpha = T(double(lr) * sqrt(1.0 - pow(beta2, t)) / (1.0 - pow(beta1, t)));
        // 1 - beta formed in double, then rounded, as the CPU paths round the Python float
        // (in float, 1 - float(0.999) is 0.00099998713, not 0.001)
        b1 = T(beta1);
        b2 = T(beta2);
        c1 = T(1.0 - beta1);
        c2 = T(1.0 - beta2);
        eps = eps_;
        weight_decay = weight_decay_;
        decay = lr * weight_decay_;
    }
};

// One element of Adam: reads p[i] before writing out[i] (p may be out).
template <typename T>
__device__ __forceinline__ void adam_element(const T* p, T* out, const T* __restrict__ g,
                                             T* __restrict__ m, T* __restrict__ v,
                                             const adam_consts<T>& c, gt_index i) {
    const T gi = g[i];
    T pi = p[i];
    if (c.weight_decay != T(0)) pi -= c.decay * pi;
    const T mi = c.b1 * m[i] + c.c1 * gi;
    const T vi = c.b2 * v[i] + c.c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    out[i] = pi - c.alpha * mi / (gt_sqrt(vi) + c.eps);
}

template <typename T>
__device__ void adam(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                     T* __restrict__ v, const T* __restrict__ lr_ptr, T lr_value,
                     const gt_index* __restrict__ step_ptr, gt_index step_value, double beta1,
                     double beta2, T eps, T weight_decay, gt_index n) {
    const adam_consts<T> c(lr_ptr, lr_value, step_ptr, step_value, beta1, beta2, eps,
                           weight_decay);
    GT_FOR_EACH(i, n) adam_element<T>(p, p, g, m, v, c, i);
}

// A parameter of a multi-tensor launch: p read, out written (n elements each; p == out for
// an update in place), g its gradient, a and b its state (SGD: a the velocity or null;
// Adam: a = m, b = v). Slots past the launch's count have n == 0.
template <typename T>
struct multi_slot {
    const T* p;
    T* out;
    const T* g;
    T* a;
    T* b;
    gt_index n;
};

// Every thread strides over each slot in turn, so each parameter is spread over the grid.
template <typename T>
__device__ void sgd_momentum_multi(const multi_slot<T> (&s)[GT_MULTI],
                                   const T* __restrict__ lr_ptr, T lr_value, T momentum,
                                   int nesterov) {
    const T lr = read_scalar(lr_ptr, lr_value);
    for (int k = 0; k < GT_MULTI; ++k) {
        GT_FOR_EACH(i, s[k].n) sgd_element<T>(s[k].p, s[k].out, s[k].g, s[k].a, lr, momentum,
                                              nesterov, i);
    }
}

template <typename T>
__device__ void adam_multi(const multi_slot<T> (&s)[GT_MULTI], const T* __restrict__ lr_ptr,
                           T lr_value, const gt_index* __restrict__ step_ptr,
                           gt_index step_value, double beta1, double beta2, T eps,
                           T weight_decay) {
    const adam_consts<T> c(lr_ptr, lr_value, step_ptr, step_value, beta1, beta2, eps,
                           weight_decay);
    for (int k = 0; k < GT_MULTI; ++k) {
        GT_FOR_EACH(i, s[k].n) adam_element<T>(s[k].p, s[k].out, s[k].g, s[k].a, s[k].b, c, i);
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

// The *_multi kernels' parameters: GT_MULTI slots of (p, out, g, a, b, n), then the scalars.
__global__ void sgd_momentum_multi_f32(
    GT_MULTI_PARAMS(float),
    const float* lr_ptr, float lr, float momentum, int nesterov) {
    const multi_slot<float> s[GT_MULTI] = GT_MULTI_SLOTS;
    sgd_momentum_multi<float>(s, lr_ptr, lr, momentum, nesterov);
}

__global__ void adam_multi_f32(
    GT_MULTI_PARAMS(float),
    const float* lr_ptr, float lr, const gt_index* step_ptr, gt_index step, double beta1,
    double beta2, float eps, float weight_decay) {
    const multi_slot<float> s[GT_MULTI] = GT_MULTI_SLOTS;
    adam_multi<float>(s, lr_ptr, lr, step_ptr, step, beta1, beta2, eps, weight_decay);
}

__global__ void sgd_momentum_multi_f64(
    GT_MULTI_PARAMS(double),
    const double* lr_ptr, double lr, double momentum, int nesterov) {
    const multi_slot<double> s[GT_MULTI] = GT_MULTI_SLOTS;
    sgd_momentum_multi<double>(s, lr_ptr, lr, momentum, nesterov);
}

__global__ void adam_multi_f64(
    GT_MULTI_PARAMS(double),
    const double* lr_ptr, double lr, const gt_index* step_ptr, gt_index step, double beta1,
    double beta2, double eps, double weight_decay) {
    const multi_slot<double> s[GT_MULTI] = GT_MULTI_SLOTS;
    adam_multi<double>(s, lr_ptr, lr, step_ptr, step, beta1, beta2, eps, weight_decay);
}

}  // extern "C"
