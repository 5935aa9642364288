// Window ops of 2-D convolution and max pooling on C-contiguous NHWC arrays.
//
// One thread per element written, no atomics: each element gathers what it needs in the
// order the host loops add it (gradtape/_speedups.c and the tap loops of gradtape/ops/nn.py,
// the references), so a GPU gives the CPU's results bit for bit, up to flushed denormals.
//
// Geometry, for kernel tap (i, j), stride (sh, sw), dilation (dh, dw) and top/left padding
// (pt, pl): output position (oh, ow) reads input row oh * sh - pt + i * dh and column
// ow * sw - pl + j * dw; a tap outside the input reads zero (convolution) or is skipped
// (pooling).
//
//   im2col:          p[n, r, ow, i, j, c] = x[n0 + n, (r0 + r) * sh - pt + i * dh, ...]
//                    for a block of nb images and output rows [r0, r0 + rows)
//   col2im_add:      dx += the patch gradients dp of such a block (taps in row-major order)
//   max_pool:        out[n, oh, ow, c] = max over the window's taps inside x, folded from
//                    -inf in row-major order (a NaN wins, as NumPy's maximum)
//   max_pool_grad:   dx[n, ih, iw, c] = sum, over the windows holding it, in tap order, of
//                    g[window] * (this tap is the window's first maximum)
//   max_pool_gather: out[window] = sum over its taps of v[tap] * (tap is the first maximum):
//                    the derivative of max_pool_grad in g
//   avg_pool:        out[window] = (sum of its taps inside x, in tap order) * (1 / their count)
//   avg_pool_grad:   dx[n, ih, iw, c] = sum, over the windows holding it, in tap order, of
//                    g[window] * (1 / the window's count), each product rounded first
#include "common.cuh"

// a product never fused into a following add (the host rounds it before adding)
__device__ __forceinline__ float gt_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double gt_mul_rn(double a, double b) { return __dmul_rn(a, b); }

// 1 / the number of taps of window (oh, ow) inside the input, computed in double (as the
// host's float64 table) and rounded to T
template <typename T>
__device__ __forceinline__ T window_recip(gt_index oh, gt_index ow, gt_index H, gt_index W,
                                          gt_index KH, gt_index KW, gt_index sh, gt_index sw,
                                          gt_index pt, gt_index pl) {
    gt_index rows = 0, cols = 0;
    for (gt_index i = 0; i < KH; i++) {
        const gt_index ih = oh * sh - pt + i;
        rows += (ih >= 0 && ih < H);
    }
    for (gt_index j = 0; j < KW; j++) {
        const gt_index iw = ow * sw - pl + j;
        cols += (iw >= 0 && iw < W);
    }
    return (T)(1.0 / ((double)rows * (double)cols));
}

template <typename T>
__device__ void im2col(const T* __restrict__ x, T* __restrict__ p, gt_index n0, gt_index nb,
                       gt_index r0, gt_index rows, gt_index H, gt_index W, gt_index C,
                       gt_index OW, gt_index KH, gt_index KW, gt_index sh, gt_index sw,
                       gt_index dh, gt_index dw, gt_index pt, gt_index pl) {
    GT_FOR_EACH(k, nb * rows * OW * KH * KW * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index j = t % KW;
        t /= KW;
        const gt_index i = t % KH;
        t /= KH;
        const gt_index ow = t % OW;
        t /= OW;
        const gt_index r = t % rows;
        const gt_index n = t / rows;
        const gt_index ih = (r0 + r) * sh - pt + i * dh;
        const gt_index iw = ow * sw - pl + j * dw;
        p[k] = (ih >= 0 && ih < H && iw >= 0 && iw < W)
                   ? x[(((n0 + n) * H + ih) * W + iw) * C + c]
                   : T(0);
    }
}

// dx rows [ih0, ih0 + hrows) of images [n0, n0 + nb): the rows the block's patches touch.
template <typename T>
__device__ void col2im_add(const T* __restrict__ dp, T* __restrict__ dx, gt_index n0,
                           gt_index nb, gt_index r0, gt_index rows, gt_index ih0,
                           gt_index hrows, gt_index H, gt_index W, gt_index C, gt_index OW,
                           gt_index KH, gt_index KW, gt_index sh, gt_index sw, gt_index dh,
                           gt_index dw, gt_index pt, gt_index pl) {
    GT_FOR_EACH(k, nb * hrows * W * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index iw = t % W;
        t /= W;
        const gt_index ih = ih0 + t % hrows;
        const gt_index n = t / hrows;
        T* dst = dx + (((n0 + n) * H + ih) * W + iw) * C + c;
        T acc = *dst;
        for (gt_index i = 0; i < KH; i++) {
            const gt_index a = ih + pt - i * dh;          // oh * sh
            if (a < 0 || a % sh != 0) continue;
            const gt_index oh = a / sh - r0;
            if (oh < 0 || oh >= rows) continue;
            for (gt_index j = 0; j < KW; j++) {
                const gt_index b = iw + pl - j * dw;      // ow * sw
                if (b < 0 || b % sw != 0) continue;
                const gt_index ow = b / sw;
                if (ow >= OW) continue;
                acc += dp[((((n * rows + oh) * OW + ow) * KH + i) * KW + j) * C + c];
            }
        }
        *dst = acc;
    }
}

template <typename T>
__device__ void max_pool(const T* __restrict__ x, T* __restrict__ out, gt_index N, gt_index H,
                         gt_index W, gt_index C, gt_index OH, gt_index OW, gt_index KH,
                         gt_index KW, gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    GT_FOR_EACH(k, N * OH * OW * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index ow = t % OW;
        t /= OW;
        const gt_index oh = t % OH;
        const gt_index n = t / OH;
        T m = -gt_inf<T>();
        for (gt_index i = 0; i < KH; i++) {
            const gt_index ih = oh * sh - pt + i;
            if (ih < 0 || ih >= H) continue;
            for (gt_index j = 0; j < KW; j++) {
                const gt_index iw = ow * sw - pl + j;
                if (iw < 0 || iw >= W) continue;
                const T b = x[((n * H + ih) * W + iw) * C + c];
                m = (m > b || m != m) ? m : b;
            }
        }
        out[k] = m;
    }
}

// Whether tap (i, j) of window (oh, ow), holding value v, is the window's first tap inside
// x (row-major order) equal to the window's maximum m.
template <typename T>
__device__ __forceinline__ bool first_max(const T* __restrict__ x, T v, T m, gt_index n,
                                          gt_index oh, gt_index ow, gt_index i, gt_index j,
                                          gt_index c, gt_index H, gt_index W, gt_index C,
                                          gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                                          gt_index pl) {
    if (!(v == m)) return false;
    for (gt_index i2 = 0; i2 <= i; i2++) {
        const gt_index ih = oh * sh - pt + i2;
        if (ih < 0 || ih >= H) continue;
        const gt_index end = i2 < i ? KW : j;
        for (gt_index j2 = 0; j2 < end; j2++) {
            const gt_index iw = ow * sw - pl + j2;
            if (iw < 0 || iw >= W) continue;
            if (x[((n * H + ih) * W + iw) * C + c] == m) return false;
        }
    }
    return true;
}

template <typename T>
__device__ void max_pool_grad(const T* __restrict__ g, const T* __restrict__ x,
                              const T* __restrict__ y, T* __restrict__ dx, gt_index N,
                              gt_index H, gt_index W, gt_index C, gt_index OH, gt_index OW,
                              gt_index KH, gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                              gt_index pl) {
    GT_FOR_EACH(k, N * H * W * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index iw = t % W;
        t /= W;
        const gt_index ih = t % H;
        const gt_index n = t / H;
        const T v = x[k];
        T acc = T(0);
        for (gt_index i = 0; i < KH; i++) {
            const gt_index a = ih + pt - i;               // oh * sh
            if (a < 0 || a % sh != 0) continue;
            const gt_index oh = a / sh;
            if (oh >= OH) continue;
            for (gt_index j = 0; j < KW; j++) {
                const gt_index b = iw + pl - j;           // ow * sw
                if (b < 0 || b % sw != 0) continue;
                const gt_index ow = b / sw;
                if (ow >= OW) continue;
                const gt_index o = ((n * OH + oh) * OW + ow) * C + c;
                const bool hit = first_max(x, v, y[o], n, oh, ow, i, j, c, H, W, C, KW, sh, sw,
                                           pt, pl);
                acc += g[o] * (hit ? T(1) : T(0));
            }
        }
        dx[k] = acc;
    }
}

template <typename T>
__device__ void max_pool_gather(const T* __restrict__ v, const T* __restrict__ x,
                                const T* __restrict__ y, T* __restrict__ out, gt_index N,
                                gt_index H, gt_index W, gt_index C, gt_index OH, gt_index OW,
                                gt_index KH, gt_index KW, gt_index sh, gt_index sw,
                                gt_index pt, gt_index pl) {
    GT_FOR_EACH(k, N * OH * OW * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index ow = t % OW;
        t /= OW;
        const gt_index oh = t % OH;
        const gt_index n = t / OH;
        const T m = y[k];
        bool taken = false;
        T acc = T(0);
        for (gt_index i = 0; i < KH; i++) {
            const gt_index ih = oh * sh - pt + i;
            if (ih < 0 || ih >= H) continue;
            for (gt_index j = 0; j < KW; j++) {
                const gt_index iw = ow * sw - pl + j;
                if (iw < 0 || iw >= W) continue;
                const gt_index in = ((n * H + ih) * W + iw) * C + c;
                const bool hit = !taken && x[in] == m;
                taken = taken || hit;
                acc += v[in] * (hit ? T(1) : T(0));
            }
        }
        out[k] = acc;
    }
}

template <typename T>
__device__ void avg_pool(const T* __restrict__ x, T* __restrict__ out, gt_index N, gt_index H,
                         gt_index W, gt_index C, gt_index OH, gt_index OW, gt_index KH,
                         gt_index KW, gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    GT_FOR_EACH(k, N * OH * OW * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index ow = t % OW;
        t /= OW;
        const gt_index oh = t % OH;
        const gt_index n = t / OH;
        T acc = T(0);
        for (gt_index i = 0; i < KH; i++) {
            const gt_index ih = oh * sh - pt + i;
            if (ih < 0 || ih >= H) continue;
            for (gt_index j = 0; j < KW; j++) {
                const gt_index iw = ow * sw - pl + j;
                if (iw < 0 || iw >= W) continue;
                acc += x[((n * H + ih) * W + iw) * C + c];
            }
        }
        out[k] = acc * window_recip<T>(oh, ow, H, W, KH, KW, sh, sw, pt, pl);
    }
}

template <typename T>
__device__ void avg_pool_grad(const T* __restrict__ g, T* __restrict__ dx, gt_index N,
                              gt_index H, gt_index W, gt_index C, gt_index OH, gt_index OW,
                              gt_index KH, gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                              gt_index pl) {
    GT_FOR_EACH(k, N * H * W * C) {
        gt_index t = k;
        const gt_index c = t % C;
        t /= C;
        const gt_index iw = t % W;
        t /= W;
        const gt_index ih = t % H;
        const gt_index n = t / H;
        T acc = T(0);
        for (gt_index i = 0; i < KH; i++) {
            const gt_index a = ih + pt - i;               // oh * sh
            if (a < 0 || a % sh != 0) continue;
            const gt_index oh = a / sh;
            if (oh >= OH) continue;
            for (gt_index j = 0; j < KW; j++) {
                const gt_index b = iw + pl - j;           // ow * sw
                if (b < 0 || b % sw != 0) continue;
                const gt_index ow = b / sw;
                if (ow >= OW) continue;
                const T r = window_recip<T>(oh, ow, H, W, KH, KW, sh, sw, pt, pl);
                acc += gt_mul_rn(g[((n * OH + oh) * OW + ow) * C + c], r);
            }
        }
        dx[k] = acc;
    }
}

extern "C" {

__global__ void im2col_f32(const float* x, float* p, gt_index n0, gt_index nb, gt_index r0,
                           gt_index rows, gt_index H, gt_index W, gt_index C, gt_index OW,
                           gt_index KH, gt_index KW, gt_index sh, gt_index sw, gt_index dh,
                           gt_index dw, gt_index pt, gt_index pl) {
    im2col<float>(x, p, n0, nb, r0, rows, H, W, C, OW, KH, KW, sh, sw, dh, dw, pt, pl);
}

__global__ void col2im_add_f32(const float* dp, float* dx, gt_index n0, gt_index nb, gt_index r0,
                               gt_index rows, gt_index ih0, gt_index hrows, gt_index H,
                               gt_index W, gt_index C, gt_index OW, gt_index KH, gt_index KW,
                               gt_index sh, gt_index sw, gt_index dh, gt_index dw, gt_index pt,
                               gt_index pl) {
    col2im_add<float>(dp, dx, n0, nb, r0, rows, ih0, hrows, H, W, C, OW, KH, KW, sh, sw, dh, dw,
                       pt, pl);
}

__global__ void max_pool_f32(const float* x, float* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    max_pool<float>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_grad_f32(const float* g, const float* x, const float* y, float* dx,
                                  gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                  gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                  gt_index sw, gt_index pt, gt_index pl) {
    max_pool_grad<float>(g, x, y, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_gather_f32(const float* v, const float* x, const float* y, float* out,
                                    gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                    gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                    gt_index sw, gt_index pt, gt_index pl) {
    max_pool_gather<float>(v, x, y, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_f32(const float* x, float* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    avg_pool<float>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_grad_f32(const float* g, float* dx, gt_index N, gt_index H, gt_index W,
                                  gt_index C, gt_index OH, gt_index OW, gt_index KH,
                                  gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                                  gt_index pl) {
    avg_pool_grad<float>(g, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void im2col_f64(const double* x, double* p, gt_index n0, gt_index nb, gt_index r0,
                           gt_index rows, gt_index H, gt_index W, gt_index C, gt_index OW,
                           gt_index KH, gt_index KW, gt_index sh, gt_index sw, gt_index dh,
                           gt_index dw, gt_index pt, gt_index pl) {
    im2col<double>(x, p, n0, nb, r0, rows, H, W, C, OW, KH, KW, sh, sw, dh, dw, pt, pl);
}

__global__ void col2im_add_f64(const double* dp, double* dx, gt_index n0, gt_index nb, gt_index r0,
                               gt_index rows, gt_index ih0, gt_index hrows, gt_index H,
                               gt_index W, gt_index C, gt_index OW, gt_index KH, gt_index KW,
                               gt_index sh, gt_index sw, gt_index dh, gt_index dw, gt_index pt,
                               gt_index pl) {
    col2im_add<double>(dp, dx, n0, nb, r0, rows, ih0, hrows, H, W, C, OW, KH, KW, sh, sw, dh, dw,
                       pt, pl);
}

__global__ void max_pool_f64(const double* x, double* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    max_pool<double>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_grad_f64(const double* g, const double* x, const double* y, double* dx,
                                  gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                  gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                  gt_index sw, gt_index pt, gt_index pl) {
    max_pool_grad<double>(g, x, y, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_gather_f64(const double* v, const double* x, const double* y, double* out,
                                    gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                    gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                    gt_index sw, gt_index pt, gt_index pl) {
    max_pool_gather<double>(v, x, y, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_f64(const double* x, double* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    avg_pool<double>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_grad_f64(const double* g, double* dx, gt_index N, gt_index H, gt_index W,
                                  gt_index C, gt_index OH, gt_index OW, gt_index KH,
                                  gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                                  gt_index pl) {
    avg_pool_grad<double>(g, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

}  // extern "C"
