// Row-wise softmax kernels over x[rows, C]: one block per row.
//   log_softmax:          out = x - logsumexp(x)
//   softmax_xent_sparse:  loss[r] = logsumexp(x[r]) - x[r, label[r]]
//                         grad[r] = scale[r] * (softmax(x[r]) - onehot(label[r]))
//   softmax_xent_dense:   loss[r] = sum_j labels[r, j] * (logsumexp(x[r]) - x[r, j])
//                         grad[r] = scale[r] * (sum_j labels[r, j] * softmax(x[r]) - labels[r])
// loss, grad and scale may each be null: the cross-entropy kernels compute the loss, the
// gradient, or both in the same pass over the row. A label outside [0, C) gives NaN.
#include "common.cuh"

template <typename T>
__device__ void row_stats(const T* __restrict__ row, gt_index c, T* scratch, T& mx, T& lse) {
    T m = -gt_inf<T>();
    for (gt_index j = threadIdx.x; j < c; j += blockDim.x) m = gt_max(m, row[j]);
    m = gt_block_max(m, scratch);
    // an all -inf row: keep exp finite (the result is -inf/NaN as in NumPy)
    T shift = (m == -gt_inf<T>() || m == gt_inf<T>()) ? T(0) : m;
    T s = T(0);
    for (gt_index j = threadIdx.x; j < c; j += blockDim.x) s += gt_exp(row[j] - shift);
    s = gt_block_sum(s, scratch);
    mx = shift;
    lse = shift + gt_log(s);
}

template <typename T>
__device__ void log_softmax(const T* __restrict__ x, T* __restrict__ out, gt_index rows,
                            gt_index c) {
    __shared__ T scratch[32];
    for (gt_index r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * c;
        T mx, lse;
        row_stats(row, c, scratch, mx, lse);
        for (gt_index j = threadIdx.x; j < c; j += blockDim.x) out[r * c + j] = row[j] - lse;
    }
}

template <typename T>
__device__ void softmax_xent_sparse(const T* __restrict__ x, const gt_index* __restrict__ labels,
                                    const T* __restrict__ scale, T* __restrict__ loss,
                                    T* __restrict__ grad, gt_index rows, gt_index c) {
    __shared__ T scratch[32];
    for (gt_index r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * c;
        const gt_index label = labels[r];
        const bool valid = label >= 0 && label < c;
        T mx, lse;
        row_stats(row, c, scratch, mx, lse);
        if (loss != nullptr && threadIdx.x == 0) loss[r] = valid ? lse - row[label] : gt_nan<T>();
        if (grad != nullptr) {
            const T s = scale != nullptr ? scale[r] : T(1);
            for (gt_index j = threadIdx.x; j < c; j += blockDim.x) {
                T p = gt_exp(row[j] - lse);
                grad[r * c + j] = valid ? s * (p - (j == label ? T(1) : T(0))) : gt_nan<T>();
            }
        }
    }
}

template <typename T>
__device__ void softmax_xent_dense(const T* __restrict__ x, const T* __restrict__ labels,
                                   const T* __restrict__ scale, T* __restrict__ loss,
                                   T* __restrict__ grad, gt_index rows, gt_index c) {
    __shared__ T scratch[32];
    for (gt_index r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * c;
        const T* lab = labels + r * c;
        T mx, lse;
        row_stats(row, c, scratch, mx, lse);
        T total = T(0), dot = T(0);
        for (gt_index j = threadIdx.x; j < c; j += blockDim.x) {
            total += lab[j];
            dot += lab[j] * row[j];
        }
        total = gt_block_sum(total, scratch);
        dot = gt_block_sum(dot, scratch);
        if (loss != nullptr && threadIdx.x == 0) loss[r] = total * lse - dot;
        if (grad != nullptr) {
            const T s = scale != nullptr ? scale[r] : T(1);
            for (gt_index j = threadIdx.x; j < c; j += blockDim.x)
                grad[r * c + j] = s * (total * gt_exp(row[j] - lse) - lab[j]);
        }
    }
}

extern "C" {

__global__ void log_softmax_f32(const float* x, float* out, gt_index rows, gt_index c) {
    log_softmax<float>(x, out, rows, c);
}

__global__ void log_softmax_f64(const double* x, double* out, gt_index rows, gt_index c) {
    log_softmax<double>(x, out, rows, c);
}

__global__ void softmax_xent_sparse_f32(const float* x, const gt_index* labels, const float* scale,
                                        float* loss, float* grad, gt_index rows, gt_index c) {
    softmax_xent_sparse<float>(x, labels, scale, loss, grad, rows, c);
}

__global__ void softmax_xent_sparse_f64(const double* x, const gt_index* labels,
                                        const double* scale, double* loss, double* grad,
                                        gt_index rows, gt_index c) {
    softmax_xent_sparse<double>(x, labels, scale, loss, grad, rows, c);
}

__global__ void softmax_xent_dense_f32(const float* x, const float* labels, const float* scale,
                                       float* loss, float* grad, gt_index rows, gt_index c) {
    softmax_xent_dense<float>(x, labels, scale, loss, grad, rows, c);
}

__global__ void softmax_xent_dense_f64(const double* x, const double* labels, const double* scale,
                                       double* loss, double* grad, gt_index rows, gt_index c) {
    softmax_xent_dense<double>(x, labels, scale, loss, grad, rows, c);
}

}  // extern "C"
