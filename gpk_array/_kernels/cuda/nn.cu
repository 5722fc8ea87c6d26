// Fused neural-network kernels of the transformer forward pass (gpk_array/_kernels/nn.py launches them).
//
// For each dtype dt in f32, f16, bf16 (arithmetic in float):
//   gpk_nn_layer_norm_<dt>      y = layer_norm(x [+ r]) over rows of C contiguous elements; with r, the sum
//                               x + r is also written to s (the residual stream), so "x = x + h; y = ln(x)"
//                               is one kernel. One block per row; the row is staged in shared memory as
//                               float, mean and variance are two passes over it (no cancellation).
//   gpk_nn_embed_<dt>           x[i] = wte[tok[i]] + wpe[pos[i]] (token and position embeddings).
//   gpk_nn_decode_attn_<dt>     one new token per sequence attends its KV cache: writes the token's key and
//                               value into the cache at slot pos[b], then softmax(q . K[0..pos[b]] * scale)
//                               . V. One block per (sequence, head); scores live in shared memory.
//   gpk_nn_gemv_<dt>            y = act(x w^T + b) for a few rows of x (decode: M <= 8): w (N, K) row-major, each
//                               warp streams one row of w with 16-byte loads and keeps M float accumulators;
//                               act: 0 none, 1 relu, 2 gelu (erf), 3 gelu (tanh), 4 silu.
//   gpk_nn_ln_gemv_<dt>         the layer norm of x (+ r, the sum also stored) and the GEMV after it, one kernel.
//   gpk_nn_argmax_<dt>          argmax over rows (first index of the largest; the first NaN wins, as NumPy's).
//   gpk_nn_attn_softmax_<dt>    the softmax of attention scores: float32 rows of Tk scores (query i of Tq, as
//                               produced by a GEMM in float32) -> probabilities in dt, scaled, with keys after
//                               i + Tk - Tq masked when causal. One block per row, the row in shared memory.
#include "gpk_common.cuh"

namespace gpk {

template <class T>
__device__ __forceinline__ float ld(const T* p) { return Tr<T>::to_c(*p); }

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = 0.f;
  for (int w = 0; w < nw; ++w) t += red[w];
  return t;
}

__device__ __forceinline__ float block_max(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = red[0];
  for (int w = 1; w < nw; ++w) t = fmaxf(t, red[w]);
  return t;
}

// row[j] = exp(row[j] - m) for j < n, in place; returns the block-wide sum (which also orders the writes before
// any read after it).
__device__ __forceinline__ float exp_shift_sum(float* row, int n, float m, float* red) {
  float sum = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const float e = __expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  return block_sum(sum, red);
}

// The layer norm of one row of C elements, x (+ r: the sum rounded to T is what gets normalized, and it is
// stored to s when s is not null), then * w + b. The row is staged in `row` (shared, C floats); the result goes
// to y (global) when y is not null, else back into `row`, rounded to T as a stored result would be. Every thread
// of the block takes part (block reductions through red).
template <class T>
__device__ void norm_row(const T* __restrict__ x, const T* __restrict__ r, T* __restrict__ s,
                         const T* __restrict__ w, const T* __restrict__ b, float eps, T* __restrict__ y,
                         float* row, float* red, int C) {
  float acc = 0.f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float v = ld(x + c);
    if (r != nullptr) {
      const T vt = Tr<T>::from_c(v + ld(r + c));
      if (s != nullptr) s[c] = vt;
      v = Tr<T>::to_c(vt);
    }
    row[c] = v;
    acc += v;
  }
  const float mean = block_sum(acc, red) / (float)C;
  float sq = 0.f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = row[c] - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq, red) / (float)C + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float v = (row[c] - mean) * rstd;
    if (w != nullptr) v *= ld(w + c);
    if (b != nullptr) v += ld(b + c);
    if (y != nullptr) {
      y[c] = Tr<T>::from_c(v);
    } else {
      row[c] = Tr<T>::to_c(Tr<T>::from_c(v));
    }
  }
}

// One block per row. Dynamic shared memory: C floats (the row) + 32 floats (reductions).
template <class T>
__device__ void layer_norm(const T* __restrict__ x, const T* __restrict__ r, T* __restrict__ s,
                           const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
                           int C, float eps) {
  extern __shared__ float sh[];
  const long long base = (long long)blockIdx.x * C;
  norm_row<T>(x + base, r == nullptr ? nullptr : r + base, s == nullptr ? nullptr : s + base, w, b, eps, y + base,
              sh, sh + C, C);
}

template <class T>
__device__ void embed(const long long* __restrict__ tok, const long long* __restrict__ pos,
                      const T* __restrict__ wte, const T* __restrict__ wpe, T* __restrict__ x,
                      long long n, int C) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n * C;
       i += (long long)gridDim.x * blockDim.x) {
    const long long t = i / C;
    const int c = (int)(i - t * C);
    x[i] = Tr<T>::from_c(ld(wte + tok[t] * C + c) + ld(wpe + pos[t] * C + c));
  }
}

// qkv: (B, 3, H, D) contiguous (the new token's query, key and value); cache: (2, Bc, H, L, D) contiguous,
// row b of the batch uses cache row b; pos: (B,) slot of the new token; y: (B, H, D).
// Slots [0, min(pos[b], kv_len - 1)] are attended. Dynamic shared memory: kv_len + D + 32 floats, then blockDim
// floats per element of a 16-byte vector (vec) or blockDim floats (scalar path).
template <class T>
__device__ void decode_attn(const T* __restrict__ qkv, T* __restrict__ cache, const long long* __restrict__ pos,
                            T* __restrict__ y, int Bc, int H, int L, int D, int kv_len, float scale, int vec) {
  // vec: D is a multiple of V = 16 / sizeof(T) and the cache is 16-byte aligned, so key and value rows are read
  // with 16-byte loads (a thread's loads of one key are independent, issued back to back).
  constexpr int V = 16 / sizeof(T);
  extern __shared__ float sh[];
  const int b = blockIdx.y, h = blockIdx.x;
  const int HD = H * D;
  float* scores = sh;
  float* q = sh + kv_len;
  float* red = q + D;
  float* part = red + 32;  // blockDim * V floats
  const long long p = pos[b];
  const int n = (int)min((long long)kv_len, p + 1);
  const T* qs = qkv + (long long)b * 3 * HD + h * D;
  T* K = cache + ((long long)b * H + h) * L * D;
  T* Vc = cache + (((long long)Bc + b) * H + h) * L * D;
  if (p >= 0 && p < L) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
      K[p * D + d] = qs[HD + d];
      Vc[p * D + d] = qs[2 * HD + d];
    }
  }
  for (int d = threadIdx.x; d < D; d += blockDim.x) q[d] = ld(qs + d) * scale;
  __syncthreads();  // the key/value just written and q are visible to the whole block
  float m = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h macros)
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const T* k = K + (long long)j * D;
    float a = 0.f;
    if (vec) {
#pragma unroll 8
      for (int d0 = 0; d0 < D; d0 += V) {
        T kv[V];
        vload<T, V>(k + d0, kv);
#pragma unroll
        for (int e = 0; e < V; ++e) a += q[d0 + e] * Tr<T>::to_c(kv[e]);
      }
    } else {
      for (int d = 0; d < D; ++d) a += q[d] * ld(k + d);
    }
    scores[j] = a;
    m = fmaxf(m, a);
  }
  m = block_max(m, red);
  const float sum = exp_shift_sum(scores, n, m, red);
  if (vec) {
    // thread t: components [c*V, c*V + V) of the output over slots j = g, g + P, ... (G = D / V threads per row)
    const int G = D / V, P = blockDim.x / G;
    const int c = threadIdx.x % G, g = threadIdx.x / G;
    float acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = 0.f;
    if (g < P) {
#pragma unroll 4
      for (int j = g; j < n; j += P) {
        T vv[V];
        vload<T, V>(Vc + (long long)j * D + c * V, vv);
        const float pj = scores[j];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] += pj * Tr<T>::to_c(vv[e]);
      }
#pragma unroll
      for (int e = 0; e < V; ++e) part[g * D + c * V + e] = acc[e];
    }
    __syncthreads();
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
      float t = 0.f;
      for (int k = 0; k < P; ++k) t += part[k * D + d];
      y[(long long)b * HD + h * D + d] = Tr<T>::from_c(n > 0 ? t / sum : 0.f);
    }
    return;
  }
  // scalar: thread t: component d = t % D of the output over slots j = t / D, t / D + P, ... (P = blockDim / D)
  const int P = blockDim.x / D;
  const int d = threadIdx.x % D, g = threadIdx.x / D;
  float acc = 0.f;
  if (g < P) {
    for (int j = g; j < n; j += P) acc += scores[j] * ld(Vc + (long long)j * D + d);
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x < D) {
    float t = 0.f;
    for (int k = 0; k < P; ++k) t += part[k * D + threadIdx.x];
    y[(long long)b * HD + h * D + threadIdx.x] = Tr<T>::from_c(n > 0 ? t / sum : 0.f);
  }
}

// argmax over rows of C contiguous elements: the first index of the largest value, a NaN counting as larger
// than everything (NumPy's rule: the first NaN wins). One block per row.
template <class T>
__device__ void argmax_rows(const T* __restrict__ x, long long* __restrict__ out, int C) {
  __shared__ float bv[32];
  __shared__ int bi[32];
  const T* row = x + (long long)blockIdx.x * C;
  float best = __int_as_float(0xff800000);
  int idx = C;  // none yet
  // each thread visits its indices in increasing order, so "strictly better" keeps the first of equal values
  auto consider = [&](float v, int c) {
    const bool nan_v = v != v, nan_b = best != best;
    if (idx == C || (!nan_b && (nan_v || v > best))) {
      best = v;
      idx = c;
    }
  };
  int c_tail = 0;
  if ((reinterpret_cast<unsigned long long>(row) & 15ull) == 0) {
    constexpr int V = 16 / sizeof(T);  // 16-byte loads, four in flight per thread
    const int nv = C / V;
    for (int v0 = threadIdx.x; v0 < nv; v0 += 4 * blockDim.x) {
      T buf[4][V];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int v = v0 + u * blockDim.x;
        if (v < nv) vload<T, V>(row + (long long)v * V, buf[u]);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int v = v0 + u * blockDim.x;
        if (v < nv) {
#pragma unroll
          for (int e = 0; e < V; ++e) consider(Tr<T>::to_c(buf[u][e]), v * V + e);
        }
      }
    }
    c_tail = nv * V;
  }
  for (int c0 = c_tail + threadIdx.x; c0 < C; c0 += 4 * blockDim.x) {
    float v[4];  // four loads in flight, then compared in index order
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int c = c0 + u * blockDim.x;
      v[u] = c < C ? ld(row + c) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int c = c0 + u * blockDim.x;
      if (c < C) consider(v[u], c);
    }
  }
  // combine (value, index) pairs: NaN first, then larger, then lower index
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_down_sync(0xffffffffu, best, o);
    const int oi = __shfl_down_sync(0xffffffffu, idx, o);
    const bool on = ov != ov, bn = best != best;
    if (oi != C && (idx == C || (on && (!bn || oi < idx)) || (!on && !bn && (ov > best || (ov == best && oi < idx))))) {
      best = ov;
      idx = oi;
    }
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  if (lane == 0) {
    bv[warp] = best;
    bi[warp] = idx;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < nw; ++w) {
      const float ov = bv[w];
      const int oi = bi[w];
      const bool on = ov != ov, bn = best != best;
      if (oi != C && (idx == C || (on && (!bn || oi < idx)) || (!on && !bn && (ov > best || (ov == best && oi < idx))))) {
        best = ov;
        idx = oi;
      }
    }
    out[blockIdx.x] = idx;
  }
}

__device__ __forceinline__ float activate(float v, int act) {
  switch (act) {
    case 1: return v != v ? v : fmaxf(v, 0.f);  // NaN stays NaN, as NumPy's maximum(v, 0)
    case 2: return v < -1e30f ? -0.f : 0.5f * v * (1.f + erff(v * 0.70710678118654752f));  // limit -0 at -inf
    case 3: return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case 4: return v < -1e30f ? -0.f : v / (1.f + __expf(-v));
    default: return v;
  }
}

// x: (M, K), w: (N, K), b: (N,) or null, y: (M, N); K a multiple of V = 16 / sizeof(T), x and w 16-byte aligned.
// xs: when not null, x is read from there instead (float, in shared memory, M * K of them).
// Blocks of 4 warps; KS (1, 2 or 4) warps share an output row, each taking a contiguous part of K (split K keeps
// enough loads in flight when K is long and N short), so a block computes 4 / KS rows. Each lane first issues
// its first U 16-byte loads of w, then calls pre() (the PDL wait, and for ln_gemv the layer norm into xs), so
// the weight reads overlap the previous kernel's tail and the layer norm.
template <class T, int MAXM, int U, class Pre>
__device__ void gemv(const T* __restrict__ x, const float* xs, const T* __restrict__ w, const T* __restrict__ b,
                     T* __restrict__ y, int M, int N, int K, int act, int KS, Pre pre) {
  constexpr int V = 16 / sizeof(T);
  __shared__ float parts[4][MAXM];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n = blockIdx.x * (4 / KS) + warp / KS, part = warp % KS;
  const int kv = K / V, per = (kv + KS - 1) / KS;
  const int v0 = part * per, v1 = min(kv, v0 + per);
  const bool valid = n < N;
  const T* wr = w + (long long)(valid ? n : 0) * K;
  T wp[U][V];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int v = v0 + lane + 32 * u;
    if (valid && v < v1) vload<T, V>(wr + (long long)v * V, wp[u]);
  }
  pre();
  float acc[MAXM];
#pragma unroll
  for (int m = 0; m < MAXM; ++m) acc[m] = 0.f;
  auto dot = [&](const T (&wv)[V], int v) {
    const int k = v * V;
    float wf[V];
#pragma unroll
    for (int e = 0; e < V; ++e) wf[e] = Tr<T>::to_c(wv[e]);
#pragma unroll
    for (int m = 0; m < MAXM; ++m) {
      if (m < M) {
        float xf[V];
        if (xs != nullptr) {
#pragma unroll
          for (int e = 0; e < V; e += 4) {
            const float4 q4 = *reinterpret_cast<const float4*>(xs + m * K + k + e);
            xf[e] = q4.x;
            if (e + 1 < V) xf[e + 1] = q4.y;
            if (e + 2 < V) xf[e + 2] = q4.z;
            if (e + 3 < V) xf[e + 3] = q4.w;
          }
        } else {
          T xv[V];
          vload<T, V>(x + (long long)m * K + k, xv);
#pragma unroll
          for (int e = 0; e < V; ++e) xf[e] = Tr<T>::to_c(xv[e]);
        }
        float a = 0.f;
#pragma unroll
        for (int e = 0; e < V; ++e) a += wf[e] * xf[e];
        acc[m] += a;
      }
    }
  };
  if (valid) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int v = v0 + lane + 32 * u;
      if (v < v1) dot(wp[u], v);
    }
#pragma unroll 4
    for (int v = v0 + lane + 32 * U; v < v1; v += 32) {
      T wv[V];
      vload<T, V>(wr + (long long)v * V, wv);
      dot(wv, v);
    }
  }
#pragma unroll
  for (int m = 0; m < MAXM; ++m) {
    if (m < M) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_down_sync(0xffffffffu, acc[m], o);
    }
  }
  if (KS > 1) {
    if (lane == 0) {
#pragma unroll
      for (int m = 0; m < MAXM; ++m) parts[warp][m] = acc[m];
    }
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int m = 0; m < MAXM; ++m) {
      for (int p = 1; p < KS; ++p) acc[m] += parts[warp + p][m];
    }
  }
  if (lane == 0 && valid) {
    const float bn = b != nullptr ? Tr<T>::to_c(b[n]) : 0.f;
#pragma unroll
    for (int m = 0; m < MAXM; ++m) {
      if (m < M) y[(long long)m * N + n] = Tr<T>::from_c(activate(acc[m] + bn, act));
    }
  }
}

// The layer norm of x (+ r) feeding a GEMV, in one kernel (a decode step's "x = x + r; h = ln(x); y = h w^T + b"):
// every block normalizes the M rows into shared memory (rounded to T, as the separate layer norm would store
// them), block 0 writes the sum s = x + r, then the GEMV reads them from there. Dynamic shared memory:
// M * K + 32 floats.
template <class T>
__device__ void ln_gemv(const T* __restrict__ x, const T* __restrict__ r, T* __restrict__ s,
                        const T* __restrict__ lnw, const T* __restrict__ lnb, float eps, const T* __restrict__ w,
                        const T* __restrict__ b, T* __restrict__ y, int M, int N, int K, int act, int KS) {
  extern __shared__ float sh[];
  float* h = sh;
  gemv<T, 8, 4>(nullptr, h, w, b, y, M, N, K, act, KS, [&]() {
    pdl_wait();
    pdl_trigger();
    for (int m = 0; m < M; ++m) {
      const long long base = (long long)m * K;
      norm_row<T>(x + base, r == nullptr ? nullptr : r + base,
                  (s == nullptr || blockIdx.x != 0) ? nullptr : s + base,  // block 0 stores the sum
                  lnw, lnb, eps, nullptr, h + m * K, sh + M * K, K);
    }
    __syncthreads();
  });
}

// s: (rows, Tk) float32 scores, rows = batch * Tq; p: (rows, Tk) probabilities. Dynamic shared memory: Tk + 32
// floats.
template <class T>
__device__ void attn_softmax(const float* __restrict__ s, T* __restrict__ p, int Tq, int Tk, float scale,
                             int causal) {
  extern __shared__ float sh[];
  float* row = sh;
  float* red = sh + Tk;
  const long long r = blockIdx.x;
  const int i = (int)(r % Tq);
  const int n = causal ? min(Tk, i + Tk - Tq + 1) : Tk;  // keys [0, n) may be attended
  const float* src = s + r * Tk;
  float m = __int_as_float(0xff800000);
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    float v = src[j] * scale;
    row[j] = v;
    m = fmaxf(m, v);
  }
  m = block_max(m, red);
  const float sum = exp_shift_sum(row, n, m, red);
  T* dst = p + r * Tk;
  if (n <= 0) {  // a query that may attend no key: the mean of the values (as the plain code's masked softmax)
    for (int j = threadIdx.x; j < Tk; j += blockDim.x) dst[j] = Tr<T>::from_c(1.f / (float)Tk);
    return;
  }
  const float inv = 1.f / sum;
  for (int j = threadIdx.x; j < Tk; j += blockDim.x) dst[j] = Tr<T>::from_c(j < n ? row[j] * inv : 0.f);
}

}  // namespace gpk

#define GPK_NN_KERNELS(T, DT)                                                                           \
  extern "C" __global__ void gpk_nn_layer_norm_##DT(const T* x, const T* r, T* s, const T* w, const T* b, \
                                                    T* y, int C, float eps) {                           \
    gpk::pdl_wait();                                                                                     \
    gpk::pdl_trigger();                                                                                  \
    gpk::layer_norm<T>(x, r, s, w, b, y, C, eps);                                                       \
  }                                                                                                     \
  extern "C" __global__ void gpk_nn_embed_##DT(const long long* tok, const long long* pos, const T* wte, \
                                               const T* wpe, T* x, long long n, int C) {                \
    gpk::pdl_wait();                                                                                     \
    gpk::pdl_trigger();                                                                                  \
    gpk::embed<T>(tok, pos, wte, wpe, x, n, C);                                                         \
  }                                                                                                     \
  extern "C" __global__ void gpk_nn_decode_attn_##DT(const T* qkv, T* cache, const long long* pos, T* y, \
                                                     int Bc, int H, int L, int D, int kv_len,            \
                                                     float scale, int vec) {                            \
    gpk::pdl_wait();                                                                                     \
    gpk::pdl_trigger();                                                                                  \
    gpk::decode_attn<T>(qkv, cache, pos, y, Bc, H, L, D, kv_len, scale, vec);                           \
  }                                                                                                     \
  extern "C" __global__ void gpk_nn_argmax_##DT(const T* x, long long* out, int C) {                    \
    gpk::pdl_wait();                                                                                     \
    gpk::pdl_trigger();                                                                                  \
    gpk::argmax_rows<T>(x, out, C);                                                                     \
  }                                                                                                     \
  extern "C" __global__ void gpk_nn_gemv_##DT(const T* x, const T* w, const T* b, T* y,  \
                                                                    int M, int N, int K, int act, int ks) { \
    gpk::gemv<T, 8, 4>(x, nullptr, w, b, y, M, N, K, act, ks, []() { gpk::pdl_wait(); gpk::pdl_trigger(); }); \
  }                                                                                                     \
  extern "C" __global__ void gpk_nn_ln_gemv_##DT(                                \
      const T* x, const T* r, T* s, const T* lnw, const T* lnb, float eps, const T* w, const T* b, T* y,  \
      int M, int N, int K, int act, int ks) {                                                          \
    gpk::ln_gemv<T>(x, r, s, lnw, lnb, eps, w, b, y, M, N, K, act, ks);                                 \
  }                                                                                                     \
  extern "C" __global__ void gpk_nn_attn_softmax_##DT(const float* s, T* p, int Tq, int Tk, float scale,  \
                                                      int causal) {                                     \
    gpk::pdl_wait();                                                                                     \
    gpk::pdl_trigger();                                                                                  \
    gpk::attn_softmax<T>(s, p, Tq, Tk, scale, causal);                                                  \
  }

GPK_NN_KERNELS(float, f32)
GPK_NN_KERNELS(__half, f16)
GPK_NN_KERNELS(__nv_bfloat16, bf16)
