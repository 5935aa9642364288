// Layer normalisation over the last axis of x[rows, C]: one block per row.
//   forward:        y = (x - mean) * rstd * gamma + beta,  rstd = 1 / sqrt(var + eps)
//                   (mean and rstd per row are also written when the pointers are not null)
//   backward_input: dx = rstd * (h - mean(h) - xhat * mean(h * xhat)),  h = g * gamma,
//                   xhat = (x - mean) * rstd (the row statistics are recomputed); when gxhat
//                   is not null it also gets g * xhat, whose column sums (a matrix-vector
//                   product on the host side's BLAS) are dgamma, as g's are dbeta
#include "common.cuh"

template <typename T>
__device__ void row_moments(const T* __restrict__ row, gt_index c, T eps, T* scratch, T& mean,
                            T& rstd) {
    T s = T(0);
    for (gt_index j = threadIdx.x; j < c; j += blockDim.x) s += row[j];
    mean = gt_block_sum(s, scratch) / T(c);
    T v = T(0);
    for (gt_index j = threadIdx.x; j < c; j += blockDim.x) {
        T d = row[j] - mean;
        v += d * d;
    }
    T var = gt_block_sum(v, scratch) / T(c);
    rstd = gt_rsqrt(var + eps);
}

template <typename T>
__device__ void layer_norm_forward(const T* __restrict__ x, const T* __restrict__ gamma,
                                   const T* __restrict__ beta, T* __restrict__ y,
                                   T* __restrict__ mean_out, T* __restrict__ rstd_out,
                                   gt_index rows, gt_index c, double eps) {
    __shared__ T scratch[32];
    for (gt_index r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * c;
        T mean, rstd;
        row_moments(row, c, T(eps), scratch, mean, rstd);
        for (gt_index j = threadIdx.x; j < c; j += blockDim.x) {
            T xhat = (row[j] - mean) * rstd;
            y[r * c + j] = xhat * (gamma != nullptr ? gamma[j] : T(1)) +
                           (beta != nullptr ? beta[j] : T(0));
        }
        if (threadIdx.x == 0) {
            if (mean_out != nullptr) mean_out[r] = mean;
            if (rstd_out != nullptr) rstd_out[r] = rstd;
        }
    }
}

template <typename T>
__device__ void layer_norm_backward_input(const T* __restrict__ g, const T* __restrict__ x,
                                          const T* __restrict__ gamma, T* __restrict__ dx,
                                          T* __restrict__ gxhat, gt_index rows, gt_index c,
                                          double eps) {
    __shared__ T scratch[32];
    for (gt_index r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * c;
        const T* grow = g + r * c;
        T mean, rstd;
        row_moments(row, c, T(eps), scratch, mean, rstd);
        T sh = T(0), shx = T(0);
        for (gt_index j = threadIdx.x; j < c; j += blockDim.x) {
            T h = grow[j] * (gamma != nullptr ? gamma[j] : T(1));
            sh += h;
            shx += h * (row[j] - mean) * rstd;
        }
        T mh = gt_block_sum(sh, scratch) / T(c);
        T mhx = gt_block_sum(shx, scratch) / T(c);
        for (gt_index j = threadIdx.x; j < c; j += blockDim.x) {
            T h = grow[j] * (gamma != nullptr ? gamma[j] : T(1));
            T xhat = (row[j] - mean) * rstd;
            dx[r * c + j] = rstd * (h - mh - xhat * mhx);
            if (gxhat != nullptr) gxhat[r * c + j] = grow[j] * xhat;
        }
    }
}

extern "C" {

__global__ void layer_norm_forward_f32(const float* x, const float* gamma, const float* beta,
                                       float* y, float* mean, float* rstd, gt_index rows,
                                       gt_index c, double eps) {
    layer_norm_forward<float>(x, gamma, beta, y, mean, rstd, rows, c, eps);
}

__global__ void layer_norm_forward_f64(const double* x, const double* gamma, const double* beta,
                                       double* y, double* mean, double* rstd, gt_index rows,
                                       gt_index c, double eps) {
    layer_norm_forward<double>(x, gamma, beta, y, mean, rstd, rows, c, eps);
}

__global__ void layer_norm_backward_input_f32(const float* g, const float* x, const float* gamma,
                                              float* dx, float* gxhat, gt_index rows, gt_index c,
                                              double eps) {
    layer_norm_backward_input<float>(g, x, gamma, dx, gxhat, rows, c, eps);
}

__global__ void layer_norm_backward_input_f64(const double* g, const double* x,
                                              const double* gamma, double* dx, double* gxhat,
                                              gt_index rows, gt_index c, double eps) {
    layer_norm_backward_input<double>(g, x, gamma, dx, gxhat, rows, c, eps);
}

}  // extern "C"
