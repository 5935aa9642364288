// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC'11), as
// in TensorFlow, JAX and cuRAND's device API. Block b of the stream of key (k0, k1) is the
// cipher of the counter (low word of b, high word of b, 0, 0): four 32-bit words. The state
// lives in device memory, state = {offset, k0, k1} (64-bit words): a draw reads its first
// block and its key there, and a launch after it advances the offset on the device, so a
// draw recorded in a CUDA graph gives new numbers at every replay (and a reseed, written
// into the same state, reaches the graph).
//   uniform_f32:  element i = word i % 4 of block offset + i / 4, top 24 bits / 2^24
//   uniform_f64:  element i = words 2 (i % 2), 2 (i % 2) + 1 of block offset + i / 2,
//                 top 53 bits of the pair / 2^53
//   bits_u64:     element i = the same pair of words as one 64-bit integer (high word first)
// Every value is in [0, 1) (resp. the full 64-bit range). The NumPy reference in
// gradtape/backend/kernels.py gives the same bits.
#include "common.cuh"

__device__ __forceinline__ void philox4x32_10(unsigned int c[4], unsigned int k0,
                                              unsigned int k1) {
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned int hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
        const unsigned int hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
        const unsigned int n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = lo1;
        c[2] = n2;
        c[3] = lo0;
    }
}

__device__ __forceinline__ void philox_block(unsigned long long block, unsigned int k0,
                                             unsigned int k1, unsigned int w[4]) {
    w[0] = (unsigned int)(block & 0xFFFFFFFFull);
    w[1] = (unsigned int)(block >> 32);
    w[2] = 0u;
    w[3] = 0u;
    philox4x32_10(w, k0, k1);
}

// value j of a block's four words: a float from one word (its top 24 bits / 2^24), a double
// from a pair (the top 53 bits of words 2j, 2j+1 / 2^53), a 64-bit integer from a pair
__device__ __forceinline__ void block_value(const unsigned int* w, int j, float* out) {
    *out = float(w[j] >> 8) * (1.0f / 16777216.0f);
}

__device__ __forceinline__ void block_value(const unsigned int* w, int j, double* out) {
    *out = (double(w[2 * j] >> 5) * 67108864.0 + double(w[2 * j + 1] >> 6)) *
           (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ void block_value(const unsigned int* w, int j,
                                            unsigned long long* out) {
    *out = ((unsigned long long)w[2 * j] << 32) | w[2 * j + 1];
}

// out[i] = value i % per of block state[0] + i / per, per = 4 for 32-bit values, else 2
template <typename T>
__device__ void philox_values(T* out, gt_index n, const unsigned long long* state) {
    constexpr int per = sizeof(T) == 4 ? 4 : 2;
    const unsigned long long base = state[0];
    const unsigned int k0 = (unsigned int)state[1], k1 = (unsigned int)state[2];
    const gt_index blocks = (n + per - 1) / per;
    GT_FOR_EACH(b, blocks) {
        unsigned int w[4];
        philox_block(base + (unsigned long long)b, k0, k1, w);
        for (int j = 0; j < per; ++j) {
            const gt_index i = b * per + j;
            if (i < n) block_value(w, j, out + i);
        }
    }
}

extern "C" {

__global__ void philox_uniform_f32(float* out, gt_index n, const unsigned long long* state) {
    philox_values<float>(out, n, state);
}

__global__ void philox_uniform_f64(double* out, gt_index n, const unsigned long long* state) {
    philox_values<double>(out, n, state);
}

__global__ void philox_bits_u64(unsigned long long* out, gt_index n,
                                const unsigned long long* state) {
    philox_values<unsigned long long>(out, n, state);
}

__global__ void philox_advance(unsigned long long* state, unsigned long long blocks) {
    if (blockIdx.x == 0 && threadIdx.x == 0) state[0] += blocks;
}

}  // extern "C"
