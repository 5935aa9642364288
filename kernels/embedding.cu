// Embedding backward: scatter-add of the output gradient rows into the table gradient.
//   table_grad[ids[i], j] += grad[i, j]   (table_grad zeroed by the caller; repeated ids sum)
// One thread per element of grad; atomicAdd resolves repeated ids. An id outside
// [0, vocab) is skipped.
#include "common.cuh"

template <typename T>
__device__ void embedding_backward(const gt_index* __restrict__ ids, const T* __restrict__ grad,
                                   T* __restrict__ table_grad, gt_index n_ids, gt_index dim,
                                   gt_index vocab) {
    const gt_index n = n_ids * dim;
    GT_FOR_EACH(k, n) {
        const gt_index i = gt_div(k, dim, n);
        const gt_index j = k - i * dim;
        const gt_index row = ids[i];
        if (row >= 0 && row < vocab) atomicAdd(table_grad + row * dim + j, grad[k]);
    }
}

extern "C" {

__global__ void embedding_backward_f32(const gt_index* ids, const float* grad, float* table_grad,
                                       gt_index n_ids, gt_index dim, gt_index vocab) {
    embedding_backward<float>(ids, grad, table_grad, n_ids, dim, vocab);
}

__global__ void embedding_backward_f64(const gt_index* ids, const double* grad,
                                       double* table_grad, gt_index n_ids, gt_index dim,
                                       gt_index vocab) {
    embedding_backward<double>(ids, grad, table_grad, n_ids, dim, vocab);
}

}  // extern "C"
