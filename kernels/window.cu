// Window ops of 2-D convolution and max pooling on C-contiguous NHWC arrays.
//
// One thread per element written, no atomics: each element gathers what it needs in the
// order the host loops add it (gradtape/_speedups.c and the tap loops of gradtape/ops/nn.py,
// the references), so a GPU gives the CPU's results bit for bit. Except with float32
// denormals: CuPy compiles with -ftz, so they count as zero, in the sums and also in the
// comparisons of max pooling (a window holding 0 and 1e-40 sends its gradient to the 0).
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

// The bodies are templates on the index type I: int when every index of the launch is below
// 2^30 (32-bit division, several times faster than the emulated 64-bit one), else gt_index.
#define GT_FOR_EACH_I(I, i, n)                                                               \
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < (n);                          \
         i += (I)(blockDim.x * gridDim.x))

#ifndef GT_WINDOW_INT_LIMIT
#define GT_WINDOW_INT_LIMIT (gt_index(1) << 30)
#endif

__device__ __forceinline__ bool gt_fits_int(gt_index a, gt_index b) {
    return a < GT_WINDOW_INT_LIMIT && b < GT_WINDOW_INT_LIMIT;
}

// a product never fused into a following add (the host rounds it before adding)
__device__ __forceinline__ float gt_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double gt_mul_rn(double a, double b) { return __dmul_rn(a, b); }

// 1 / the number of taps of window (oh, ow) inside the input, computed in double (as the
// host's float64 table) and rounded to T
template <typename T, typename I>
__device__ __forceinline__ T window_recip(I oh, I ow, I H, I W, I KH, I KW, I sh, I sw, I pt,
                                          I pl) {
    I rows = 0, cols = 0;
    for (I i = 0; i < KH; i++) {
        const I ih = oh * sh - pt + i;
        rows += (ih >= 0 && ih < H);
    }
    for (I j = 0; j < KW; j++) {
        const I iw = ow * sw - pl + j;
        cols += (iw >= 0 && iw < W);
    }
    return (T)(1.0 / ((double)rows * (double)cols));
}

template <typename T, typename I>
__device__ void im2col(const T* __restrict__ x, T* __restrict__ p, I n0, I nb, I r0, I rows, I H,
                       I W, I C, I OW, I KH, I KW, I sh, I sw, I dh, I dw, I pt, I pl) {
    GT_FOR_EACH_I(I, k, nb * rows * OW * KH * KW * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I j = t % KW;
        t /= KW;
        const I i = t % KH;
        t /= KH;
        const I ow = t % OW;
        t /= OW;
        const I r = t % rows;
        const I n = t / rows;
        const I ih = (r0 + r) * sh - pt + i * dh;
        const I iw = ow * sw - pl + j * dw;
        p[k] = (ih >= 0 && ih < H && iw >= 0 && iw < W)
                   ? x[(((n0 + n) * H + ih) * W + iw) * C + c]
                   : T(0);
    }
}

// dx rows [ih0, ih0 + hrows) of images [n0, n0 + nb): the rows the block's patches touch.
template <typename T, typename I>
__device__ void col2im_add(const T* __restrict__ dp, T* __restrict__ dx, I n0, I nb, I r0, I rows,
                           I ih0, I hrows, I H, I W, I C, I OW, I KH, I KW, I sh, I sw, I dh, I dw,
                           I pt, I pl) {
    GT_FOR_EACH_I(I, k, nb * hrows * W * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I iw = t % W;
        t /= W;
        const I ih = ih0 + t % hrows;
        const I n = t / hrows;
        T* dst = dx + (((n0 + n) * H + ih) * W + iw) * C + c;
        T acc = *dst;
        for (I i = 0; i < KH; i++) {
            const I a = ih + pt - i * dh;          // oh * sh
            if (a < 0 || a % sh != 0) continue;
            const I oh = a / sh - r0;
            if (oh < 0 || oh >= rows) continue;
            for (I j = 0; j < KW; j++) {
                const I b = iw + pl - j * dw;      // ow * sw
                if (b < 0 || b % sw != 0) continue;
                const I ow = b / sw;
                if (ow >= OW) continue;
                acc += dp[((((n * rows + oh) * OW + ow) * KH + i) * KW + j) * C + c];
            }
        }
        *dst = acc;
    }
}

template <typename T, typename I>
__device__ void max_pool(const T* __restrict__ x, T* __restrict__ out, I N, I H, I W, I C, I OH,
                         I OW, I KH, I KW, I sh, I sw, I pt, I pl) {
    GT_FOR_EACH_I(I, k, N * OH * OW * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I ow = t % OW;
        t /= OW;
        const I oh = t % OH;
        const I n = t / OH;
        T m = -gt_inf<T>();
        for (I i = 0; i < KH; i++) {
            const I ih = oh * sh - pt + i;
            if (ih < 0 || ih >= H) continue;
            for (I j = 0; j < KW; j++) {
                const I iw = ow * sw - pl + j;
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
template <typename T, typename I>
__device__ __forceinline__ bool first_max(const T* __restrict__ x, T v, T m, I n, I oh, I ow, I i,
                                          I j, I c, I H, I W, I C, I KW, I sh, I sw, I pt, I pl) {
    if (!(v == m)) return false;
    for (I i2 = 0; i2 <= i; i2++) {
        const I ih = oh * sh - pt + i2;
        if (ih < 0 || ih >= H) continue;
        const I end = i2 < i ? KW : j;
        for (I j2 = 0; j2 < end; j2++) {
            const I iw = ow * sw - pl + j2;
            if (iw < 0 || iw >= W) continue;
            if (x[((n * H + ih) * W + iw) * C + c] == m) return false;
        }
    }
    return true;
}

template <typename T, typename I>
__device__ void max_pool_grad(const T* __restrict__ g, const T* __restrict__ x,
                              const T* __restrict__ y, T* __restrict__ dx, I N, I H, I W, I C, I OH,
                              I OW, I KH, I KW, I sh, I sw, I pt, I pl) {
    GT_FOR_EACH_I(I, k, N * H * W * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I iw = t % W;
        t /= W;
        const I ih = t % H;
        const I n = t / H;
        const T v = x[k];
        T acc = T(0);
        for (I i = 0; i < KH; i++) {
            const I a = ih + pt - i;               // oh * sh
            if (a < 0 || a % sh != 0) continue;
            const I oh = a / sh;
            if (oh >= OH) continue;
            for (I j = 0; j < KW; j++) {
                const I b = iw + pl - j;           // ow * sw
                if (b < 0 || b % sw != 0) continue;
                const I ow = b / sw;
                if (ow >= OW) continue;
                const I o = ((n * OH + oh) * OW + ow) * C + c;
                const bool hit = first_max<T, I>(x, v, y[o], n, oh, ow, i, j, c, H, W, C, KW,
                                                 sh, sw, pt, pl);
                acc += g[o] * (hit ? T(1) : T(0));
            }
        }
        dx[k] = acc;
    }
}

template <typename T, typename I>
__device__ void max_pool_gather(const T* __restrict__ v, const T* __restrict__ x,
                                const T* __restrict__ y, T* __restrict__ out, I N, I H, I W, I C,
                                I OH, I OW, I KH, I KW, I sh, I sw, I pt, I pl) {
    GT_FOR_EACH_I(I, k, N * OH * OW * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I ow = t % OW;
        t /= OW;
        const I oh = t % OH;
        const I n = t / OH;
        const T m = y[k];
        bool taken = false;
        T acc = T(0);
        for (I i = 0; i < KH; i++) {
            const I ih = oh * sh - pt + i;
            if (ih < 0 || ih >= H) continue;
            for (I j = 0; j < KW; j++) {
                const I iw = ow * sw - pl + j;
                if (iw < 0 || iw >= W) continue;
                const I in = ((n * H + ih) * W + iw) * C + c;
                const bool hit = !taken && x[in] == m;
                taken = taken || hit;
                acc += v[in] * (hit ? T(1) : T(0));
            }
        }
        out[k] = acc;
    }
}

template <typename T, typename I>
__device__ void avg_pool(const T* __restrict__ x, T* __restrict__ out, I N, I H, I W, I C, I OH,
                         I OW, I KH, I KW, I sh, I sw, I pt, I pl) {
    GT_FOR_EACH_I(I, k, N * OH * OW * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I ow = t % OW;
        t /= OW;
        const I oh = t % OH;
        const I n = t / OH;
        T acc = T(0);
        for (I i = 0; i < KH; i++) {
            const I ih = oh * sh - pt + i;
            if (ih < 0 || ih >= H) continue;
            for (I j = 0; j < KW; j++) {
                const I iw = ow * sw - pl + j;
                if (iw < 0 || iw >= W) continue;
                acc += x[((n * H + ih) * W + iw) * C + c];
            }
        }
        out[k] = acc * window_recip<T, I>(oh, ow, H, W, KH, KW, sh, sw, pt, pl);
    }
}

template <typename T, typename I>
__device__ void avg_pool_grad(const T* __restrict__ g, T* __restrict__ dx, I N, I H, I W, I C, I OH,
                              I OW, I KH, I KW, I sh, I sw, I pt, I pl) {
    GT_FOR_EACH_I(I, k, N * H * W * C) {
        I t = k;
        const I c = t % C;
        t /= C;
        const I iw = t % W;
        t /= W;
        const I ih = t % H;
        const I n = t / H;
        T acc = T(0);
        for (I i = 0; i < KH; i++) {
            const I a = ih + pt - i;               // oh * sh
            if (a < 0 || a % sh != 0) continue;
            const I oh = a / sh;
            if (oh >= OH) continue;
            for (I j = 0; j < KW; j++) {
                const I b = iw + pl - j;           // ow * sw
                if (b < 0 || b % sw != 0) continue;
                const I ow = b / sw;
                if (ow >= OW) continue;
                const T r = window_recip<T, I>(oh, ow, H, W, KH, KW, sh, sw, pt, pl);
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
    if (gt_fits_int(nb * rows * OW * KH * KW * C, (n0 + nb) * H * W * C))
        im2col<float, int>(x, p, n0, nb, r0, rows, H, W, C, OW, KH, KW, sh, sw, dh, dw, pt, pl);
    else
        im2col<float, gt_index>(x, p, n0, nb, r0, rows, H, W, C, OW, KH, KW, sh, sw, dh, dw, pt,
                                pl);
}

__global__ void col2im_add_f32(const float* dp, float* dx, gt_index n0, gt_index nb, gt_index r0,
                               gt_index rows, gt_index ih0, gt_index hrows, gt_index H,
                               gt_index W, gt_index C, gt_index OW, gt_index KH, gt_index KW,
                               gt_index sh, gt_index sw, gt_index dh, gt_index dw, gt_index pt,
                               gt_index pl) {
    if (gt_fits_int(nb * rows * OW * KH * KW * C, (n0 + nb) * H * W * C))
        col2im_add<float, int>(dp, dx, n0, nb, r0, rows, ih0, hrows, H, W, C, OW, KH, KW, sh, sw,
                               dh, dw, pt, pl);
    else
        col2im_add<float, gt_index>(dp, dx, n0, nb, r0, rows, ih0, hrows, H, W, C, OW, KH, KW, sh,
                                    sw, dh, dw, pt, pl);
}

__global__ void max_pool_f32(const float* x, float* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        max_pool<float, int>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        max_pool<float, gt_index>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_grad_f32(const float* g, const float* x, const float* y, float* dx,
                                  gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                  gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                  gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        max_pool_grad<float, int>(g, x, y, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        max_pool_grad<float, gt_index>(g, x, y, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_gather_f32(const float* v, const float* x, const float* y, float* out,
                                    gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                    gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                    gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        max_pool_gather<float, int>(v, x, y, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        max_pool_gather<float, gt_index>(v, x, y, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_f32(const float* x, float* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        avg_pool<float, int>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        avg_pool<float, gt_index>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_grad_f32(const float* g, float* dx, gt_index N, gt_index H, gt_index W,
                                  gt_index C, gt_index OH, gt_index OW, gt_index KH,
                                  gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                                  gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        avg_pool_grad<float, int>(g, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        avg_pool_grad<float, gt_index>(g, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void im2col_f64(const double* x, double* p, gt_index n0, gt_index nb, gt_index r0,
                           gt_index rows, gt_index H, gt_index W, gt_index C, gt_index OW,
                           gt_index KH, gt_index KW, gt_index sh, gt_index sw, gt_index dh,
                           gt_index dw, gt_index pt, gt_index pl) {
    if (gt_fits_int(nb * rows * OW * KH * KW * C, (n0 + nb) * H * W * C))
        im2col<double, int>(x, p, n0, nb, r0, rows, H, W, C, OW, KH, KW, sh, sw, dh, dw, pt, pl);
    else
        im2col<double, gt_index>(x, p, n0, nb, r0, rows, H, W, C, OW, KH, KW, sh, sw, dh, dw, pt,
                                 pl);
}

__global__ void col2im_add_f64(const double* dp, double* dx, gt_index n0, gt_index nb, gt_index r0,
                               gt_index rows, gt_index ih0, gt_index hrows, gt_index H,
                               gt_index W, gt_index C, gt_index OW, gt_index KH, gt_index KW,
                               gt_index sh, gt_index sw, gt_index dh, gt_index dw, gt_index pt,
                               gt_index pl) {
    if (gt_fits_int(nb * rows * OW * KH * KW * C, (n0 + nb) * H * W * C))
        col2im_add<double, int>(dp, dx, n0, nb, r0, rows, ih0, hrows, H, W, C, OW, KH, KW, sh, sw,
                                dh, dw, pt, pl);
    else
        col2im_add<double, gt_index>(dp, dx, n0, nb, r0, rows, ih0, hrows, H, W, C, OW, KH, KW, sh,
                                     sw, dh, dw, pt, pl);
}

__global__ void max_pool_f64(const double* x, double* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        max_pool<double, int>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        max_pool<double, gt_index>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_grad_f64(const double* g, const double* x, const double* y, double* dx,
                                  gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                  gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                  gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        max_pool_grad<double, int>(g, x, y, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        max_pool_grad<double, gt_index>(g, x, y, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void max_pool_gather_f64(const double* v, const double* x, const double* y, double* out,
                                    gt_index N, gt_index H, gt_index W, gt_index C, gt_index OH,
                                    gt_index OW, gt_index KH, gt_index KW, gt_index sh,
                                    gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        max_pool_gather<double, int>(v, x, y, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        max_pool_gather<double, gt_index>(v, x, y, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_f64(const double* x, double* out, gt_index N, gt_index H, gt_index W,
                             gt_index C, gt_index OH, gt_index OW, gt_index KH, gt_index KW,
                             gt_index sh, gt_index sw, gt_index pt, gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        avg_pool<double, int>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        avg_pool<double, gt_index>(x, out, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

__global__ void avg_pool_grad_f64(const double* g, double* dx, gt_index N, gt_index H, gt_index W,
                                  gt_index C, gt_index OH, gt_index OW, gt_index KH,
                                  gt_index KW, gt_index sh, gt_index sw, gt_index pt,
                                  gt_index pl) {
    if (gt_fits_int(N * OH * OW * C, N * H * W * C))
        avg_pool_grad<double, int>(g, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
    else
        avg_pool_grad<double, gt_index>(g, dx, N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl);
}

}  // extern "C"
