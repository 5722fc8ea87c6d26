// The token sampler of gpk_array.llm: one block per row of logits, every parameter per slot in a table.
//
//   gpk_sample_<dt>   (dt: f32, f16, bf16, the logits' dtype)
//
// gpk_array/llm/sampling.py describes the algorithm (its module docstring) and computes the same in NumPy
// (run_numpy): penalties and bias in float32, greedy argmax, or exp by a fixed sequence of float32 operations,
// probabilities in 40-bit fixed point (uint64 sums, which no order changes), min-p / top-k / top-p as thresholds,
// and the inverse CDF in token order of 64 bits from Philox4x32-10 keyed by the sequence's seed. Every float
// operation that decides a token is spelled as a correctly rounded intrinsic (__fmul_rn, __fadd_rn, ...) that the
// compiler may not contract into an FMA, so the CPU and the GPU choose the same tokens from the same logits.
// Library expf/logf appear only in the logprobs, which are reported values, not choices.
//
// Thresholds are found by radix select over the 32-bit keys (a probability's float bits, which order like the
// probability): four passes of 8 bits, each a shared-memory histogram of counts (top-k) or of fixed-point mass
// (top-p), the bin picked by one warp. When top-k leaves few candidates they are gathered into shared memory and
// top-p and the draw run there.
//
// Capturable in a CUDA graph: no allocation, no host synchronization; state updates are idempotent (a step run
// twice with the same inputs leaves the same state), since a graph's warm-up runs it before capture.
//
// Built by NVRTC/nvcc with gpk_common.cuh; with -DGPK_EMULATE by a host C++ compiler against the thread emulator
// of tests/llm/cuda_emu (float32 only), which the CPU tests use to compare this kernel with run_numpy.
#ifndef GPK_EMULATE
#include "gpk_common.cuh"
#endif

namespace gpk_smp {

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

constexpr int MAX_THREADS = 1024;
constexpr int MAX_WARPS = MAX_THREADS / 32;
constexpr int CAND = 512;         // top-k survivors handled in shared memory (more: the full-row path)
constexpr int MAX_LP = 20;        // logprobs per token at most (sampling.MAX_LOGPROBS)
constexpr int SLOT_WORDS = 8;
constexpr unsigned FULL = 0xffffffffu;

enum : u32 { GREEDY = 1, REPETITION = 2, COUNTS = 4, BIAS = 8, TOP_P = 16, LOGPROBS = 32 };

#ifndef GPK_EMULATE
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
#else
__device__ __forceinline__ float to_f(float v) { return v; }
#endif

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float pos_inf() { return __int_as_float(0x7f800000); }

// ---- Philox4x32-10 (Salmon et al. 2011), as gpk_array/llm/philox.py -------------------------------------------
__device__ __forceinline__ void philox(u32 (&c)[4], u32 k0, u32 k1) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const u32 hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    const u32 hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    const u32 n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
}

// The 64 random bits of token `step` of the sequence seeded `seed`: counter (step, 0, 0), key (seed).
__device__ __forceinline__ u64 token_bits(u64 seed, u64 step) {
  u32 c[4] = {(u32)step, (u32)(step >> 32), 0u, 0u};
  philox(c, (u32)seed, (u32)(seed >> 32));
  return (u64)c[0] | ((u64)c[1] << 32);
}

// ---- e**z for z <= 0, bit for bit as sampling.exp_fixed ---------------------------------------------------------
__device__ __forceinline__ float exp_fixed(float z) {
  if (!(z >= -28.f)) return 0.f;  // also NaN and -inf
  const float n = rintf(__fmul_rn(z, __uint_as_float(0x3fb8aa3bu)));        // z / ln 2, to nearest (even)
  float r = __fsub_rn(z, __fmul_rn(n, __uint_as_float(0x3f318000u)));       // n * ln2_hi is exact
  r = __fsub_rn(r, __fmul_rn(n, __uint_as_float(0xb95e8083u)));
  float p = __uint_as_float(0x3ab60b61u);                                    // 1/720
  p = __fadd_rn(__fmul_rn(p, r), __uint_as_float(0x3c088889u));             // 1/120
  p = __fadd_rn(__fmul_rn(p, r), __uint_as_float(0x3d2aaaabu));             // 1/24
  p = __fadd_rn(__fmul_rn(p, r), __uint_as_float(0x3e2aaaabu));             // 1/6
  p = __fadd_rn(__fmul_rn(p, r), 0.5f);
  p = __fadd_rn(__fmul_rn(p, r), 1.f);
  p = __fadd_rn(__fmul_rn(p, r), 1.f);
  return __fmul_rn(p, __int_as_float(((int)n + 127) << 23));                 // * 2**n, n in [-41, 0]
}

// floor(e * 2**40) of a probability's float bits.
__device__ __forceinline__ u64 quant(u32 key) {
  return (u64)__fmul_rn(__uint_as_float(key), 1099511627776.f);
}

// A raw logit's order key: larger float, larger key; NaN as -inf, -0 as +0.
__device__ __forceinline__ u32 order_key(float v) {
  if (v != v) v = neg_inf();
  if (v == 0.f) v = 0.f;
  const u32 b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// ---- block-wide helpers (blockDim.x a multiple of 32, at most 1024) -----------------------------------------------
// A 64-bit sum in shared memory that threads add to with two native 32-bit atomics (the low word's old value gives
// the carry exactly): a 64-bit atomicAdd on shared memory is a compare-and-swap loop, which serializes badly when
// many lanes add to one bin.
struct alignas(8) Wide {
  u32 lo, hi;
  __device__ __forceinline__ void add(u64 v) {
    const u32 l = (u32)v;
    const u32 old = atomicAdd(&lo, l);
    const u32 h = (u32)(v >> 32) + ((u32)(old + l) < old ? 1u : 0u);
    if (h) atomicAdd(&hi, h);
  }
  // One 64-bit load (lo is the low word: little-endian), once no atomics are in flight.
  __device__ __forceinline__ u64 get() const { return *reinterpret_cast<const u64*>(this); }
  __device__ __forceinline__ void clear() { lo = hi = 0u; }
};

struct Shared {
  Wide hist[256];
  u32 ckey[CAND];
  int cidx[CAND];
  u64 red_u[MAX_WARPS];
  float red_f[MAX_WARPS];
  int red_i[MAX_WARPS];
  int count;
  int bin;
  u64 above, at;
  i64 token;
};

__device__ __forceinline__ u64 block_sum(u64 v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) sh.red_u[warp] = v;
  __syncthreads();
  u64 t = 0;
  for (int w = 0; w < nw; ++w) t += sh.red_u[w];
  return t;
}

__device__ __forceinline__ u32 block_max_u32(u32 v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, (u32)__shfl_xor_sync(FULL, v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) sh.red_i[warp] = (int)v;
  __syncthreads();
  u32 t = 0;
  for (int w = 0; w < nw; ++w) t = max(t, (u32)sh.red_i[w]);
  return t;
}

__device__ __forceinline__ float block_sum_f(float v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) sh.red_f[warp] = v;
  __syncthreads();
  float t = 0.f;
  for (int w = 0; w < nw; ++w) t += sh.red_f[w];
  return t;
}

__device__ __forceinline__ float block_max_f(float v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL, v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) sh.red_f[warp] = v;
  __syncthreads();
  float t = sh.red_f[0];
  for (int w = 1; w < nw; ++w) t = fmaxf(t, sh.red_f[w]);
  return t;
}

// The largest value and the first index holding it (b: the thread's best so far, i its index, INT_MAX if none).
__device__ __forceinline__ void block_argmax(float& b, int& i, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(FULL, b, o);
    const int oi = __shfl_xor_sync(FULL, i, o);
    if (ob > b || (ob == b && oi < i)) {
      b = ob;
      i = oi;
    }
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) {
    sh.red_f[warp] = b;
    sh.red_i[warp] = i;
  }
  __syncthreads();
  b = sh.red_f[0];
  i = sh.red_i[0];
  for (int w = 1; w < nw; ++w) {
    const float ob = sh.red_f[w];
    const int oi = sh.red_i[w];
    if (ob > b || (ob == b && oi < i)) {
      b = ob;
      i = oi;
    }
  }
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  return v;
}

// Inclusive prefix sum over the warp: lane l gets the sum of lanes 0..l.
__device__ __forceinline__ u64 warp_prefix(u64 v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 y = __shfl_up_sync(FULL, v, o);
    if (lane >= o) v += y;
  }
  return v;
}

// Inclusive suffix sums of two series over the warp: lane l gets the sums of lanes l..31.
__device__ __forceinline__ void warp_suffix2(u64& a, u64& b) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 ya = __shfl_down_sync(FULL, a, o), yb = __shfl_down_sync(FULL, b, o);
    if (lane + o < 32) {
      a += ya;
      b += yb;
    }
  }
}

// Warp w's contiguous piece of [0, n), in coalesced steps of 32: [begin, end).
__device__ __forceinline__ void warp_segment(int n, int& begin, int& end) {
  const int nw = blockDim.x >> 5, w = threadIdx.x >> 5;
  const int seg = ((n + nw - 1) / nw + 31) & ~31;
  begin = min(n, w * seg);
  end = min(n, begin + seg);
}

// The sum of v over the warps before this one (v: each warp's own total, the same in all its lanes).
__device__ __forceinline__ u64 warps_before(u64 v, Shared& sh) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) sh.red_u[warp] = v;
  __syncthreads();
  u64 base = 0;
  for (int w = 0; w < warp; ++w) base += sh.red_u[w];
  return base;
}

// 4 keys of a 16-byte aligned u32 row from j (a multiple of 4); those at or past n read as 0.
// visit_row's pass where f(j, y) gives the float to keep at dst[j] (dst 16-byte aligned, x any alignment): each
// warp stages its 32 vectors' values in `stage` (STAGE_FLOATS per warp, padded against bank conflicts) and writes
// them back as coalesced rows of 32 consecutive floats, rather than each lane storing VEC words 16 bytes apart
// (one 32-byte sector each).
constexpr int STAGE_FLOATS = 32 * 9;
template <class T, class F>
__device__ __forceinline__ void visit_row_store(const T* __restrict__ x, int n, float* __restrict__ dst,
                                                float* __restrict__ stage_all, const F& f) {
  constexpr int VEC = 16 / sizeof(T), PAD = VEC + 1;
  static_assert(32 * PAD <= STAGE_FLOATS, "stage too small");
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31;
  float* stage = stage_all + (tid >> 5) * STAGE_FLOATS;
  const int head = min(n, (int)(((16u - (unsigned)(reinterpret_cast<u64>(x) & 15u)) & 15u) / sizeof(T)));
  for (int j = tid; j < head; j += nt) dst[j] = f(j, to_f(x[j]));
  const int nv = (n - head) / VEC;
  const T* body = x + head;
  float* dbody = dst + head;
  for (int w0 = tid & ~31; w0 < nv; w0 += 4 * nt) {  // warp-uniform
    const int v0 = w0 + lane;
    uint4 buf[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (v0 + u * nt < nv) buf[u] = *reinterpret_cast<const uint4*>(body + (i64)(v0 + u * nt) * VEC);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int wb = w0 + u * nt;  // the warp's first vector of this round
      if (wb >= nv) break;         // warp-uniform
      if (wb + lane < nv) {
        T vals[VEC];
        memcpy(vals, &buf[u], 16);
#pragma unroll
        for (int q = 0; q < VEC; ++q) stage[lane * PAD + q] = f(head + (wb + lane) * VEC + q, to_f(vals[q]));
      }
      __syncwarp();
      const int lim = min(32, nv - wb) * VEC;
#pragma unroll
      for (int q = 0; q < VEC; ++q) {
        const int i = q * 32 + lane;
        if (i < lim) dbody[(i64)wb * VEC + i] = stage[(i / VEC) * PAD + i % VEC];
      }
      __syncwarp();
    }
  }
  for (int j = head + nv * VEC + tid; j < n; j += nt) dst[j] = f(j, to_f(x[j]));
}

__device__ __forceinline__ void load4(const u32* __restrict__ row, int j, int n, u32 (&k)[4]) {
  if (j + 3 < n) {
    const uint4 v = *reinterpret_cast<const uint4*>(row + j);
    k[0] = v.x;
    k[1] = v.y;
    k[2] = v.z;
    k[3] = v.w;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) k[e] = j + e < n ? row[j + e] : 0u;
  }
}

// The inverse CDF in token order over a 16-byte aligned row of keys: the first j in [0, n) at which the running sum
// of weight(key[j]) exceeds u (u below the total; weight(0) must be 0). Each warp sums its own segment (a multiple
// of 128 keys, read 4 per lane); the warp whose range holds u walks it 128 keys at a time.
template <class Wt>
__device__ i64 choose_in_order(const u32* __restrict__ row, int n, const Wt& weight, u64 u, Shared& sh) {
  const int lane = threadIdx.x & 31, nw = blockDim.x >> 5, warp = threadIdx.x >> 5;
  const int seg = ((n + nw - 1) / nw + 127) & ~127;
  const int b = min(n, warp * seg), e = min(n, b + seg);
  u64 s = 0;
#pragma unroll 4
  for (int j = b + 4 * lane; j < e; j += 128) {
    u32 k[4];
    load4(row, j, e, k);
#pragma unroll
    for (int q = 0; q < 4; ++q) s += weight(k[q]);
  }
  s = warp_sum(s);
  if (threadIdx.x == 0) sh.token = -1;
  u64 base = warps_before(s, sh);
  if (base <= u && u < base + s) {  // warp-uniform
    for (int j0 = b; j0 < e; j0 += 128) {
      const int j = j0 + 4 * lane;
      u32 k[4];
      load4(row, j, e, k);
      u64 w[4], mine = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        w[q] = weight(k[q]);
        mine += w[q];
      }
      u64 inc = warp_prefix(mine);
      const unsigned hit = __ballot_sync(FULL, base + inc > u);
      if (hit) {
        if (lane == __ffs(hit) - 1) {
          u64 acc = base + inc - mine;
          for (int q = 0; q < 4; ++q) {
            acc += w[q];
            if (acc > u) {
              sh.token = j + q;
              break;
            }
          }
        }
        break;
      }
      base += __shfl_sync(FULL, inc, 31);
    }
  }
  __syncthreads();
  return sh.token;
}

// One element's part in a radix pass's histogram: its count (COUNT: weight 1, the low word only) or its weight,
// with the bin's native 32-bit shared-memory atomics (grouping a warp's lanes by bin first is slower on the H200:
// docs/measurements.md, token sampler kernels).
template <bool COUNT>
__device__ __forceinline__ void hist_add(bool in, u32 key, u64 w, int shift, Shared& sh) {
  if (!in) return;
  if constexpr (COUNT) {
    atomicAdd(&sh.hist[(key >> shift) & 255u].lo, 1u);
  } else {
    sh.hist[(key >> shift) & 255u].add(w);
  }
}

// Radix select: the largest key t such that the weight of the elements taking part with key >= t reaches
// `target` (target >= 1 and at most their total weight). fill(mask, prefix, shift) adds to sh.hist, for every
// element taking part whose key matches prefix under mask, its weight at bin (key >> shift) & 255 (hist_add).
// Leaves in sh.above the weight strictly above t and in sh.at the weight at t.
template <class Fill>
__device__ u32 radix_select(const Fill& fill, u64 target, Shared& sh) {
  const int tid = threadIdx.x, lane = tid & 31;
  u32 prefix = 0, mask = 0;
  u64 above = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += blockDim.x) sh.hist[b].clear();
    __syncthreads();
    fill(mask, prefix, shift);
    __syncthreads();
    if (tid < 32) {  // warp 0 picks the bin: lane l holds bins 255 - 8l down to 248 - 8l
      u64 loc[8];
      u64 s = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        loc[i] = sh.hist[255 - 8 * lane - i].get();
        s += loc[i];
      }
      u64 inc = warp_prefix(s);
      const unsigned hit = __ballot_sync(FULL, above + inc >= target);
      const int first = hit ? __ffs(hit) - 1 : 31;
      if (lane == first) {
        u64 acc = above + inc - s;
        int i = 0;
        for (; i < 7; ++i) {
          if (acc + loc[i] >= target) break;
          acc += loc[i];
        }
        sh.bin = 255 - 8 * lane - i;
        sh.above = acc;
        sh.at = loc[i];
      }
    }
    __syncthreads();
    prefix |= (u32)sh.bin << shift;
    mask |= 255u << shift;
    above = sh.above;
    __syncthreads();  // every thread has read sh before the next pass rewrites it
  }
  return prefix;
}

// A radix pass over a 16-byte aligned row of keys (4 per lane, warp-uniform steps): those with pred(key) take part.
template <bool COUNT, class Pred>
__device__ __forceinline__ void fill_keys(const u32* __restrict__ row, int n, const Pred& pred, u32 mask, u32 prefix,
                                          int shift, Shared& sh) {
  const int lane = threadIdx.x & 31;
#pragma unroll 4
  for (int base = (int)(threadIdx.x & ~31u) * 4; base < n; base += 4 * (int)blockDim.x) {
    const int j = base + 4 * lane;
    u32 k[4];
    load4(row, j, n, k);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const bool in = j + q < n && pred(k[q]) && (k[q] & mask) == prefix;
      hist_add<COUNT>(in, k[q], COUNT ? 1 : quant(k[q]), shift, sh);
    }
  }
}

// Calls f(j, value) once for every j in [0, n) of row x (as float), this thread's share: 16-byte loads (four in
// flight) over the aligned body of the row, single elements before and after it.
template <class T, class F>
__device__ __forceinline__ void visit_row(const T* __restrict__ x, int n, const F& f) {
  constexpr int VEC = 16 / sizeof(T);
  const int tid = threadIdx.x, nt = blockDim.x;
  const int head = min(n, (int)(((16u - (unsigned)(reinterpret_cast<u64>(x) & 15u)) & 15u) / sizeof(T)));
  for (int j = tid; j < head; j += nt) f(j, to_f(x[j]));
  const int nv = (n - head) / VEC;
  const T* body = x + head;
  for (int v0 = tid; v0 < nv; v0 += 4 * nt) {
    uint4 buf[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (v0 + u * nt < nv) buf[u] = *reinterpret_cast<const uint4*>(body + (i64)(v0 + u * nt) * VEC);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (v0 + u * nt >= nv) break;
      T vals[VEC];
      memcpy(vals, &buf[u], 16);
#pragma unroll
      for (int q = 0; q < VEC; ++q) f(head + (v0 + u * nt) * VEC + q, to_f(vals[q]));
    }
  }
  for (int j = head + nv * VEC + tid; j < n; j += nt) f(j, to_f(x[j]));
}

// The logprobs of one row of raw logits x (float32; library expf / logf), the chosen token's and the k largest
// (ties by lower id), into row r of lp and lp_ids; the block's threads call it together.
template <class T>
__device__ void logprobs_row(const T* __restrict__ x, int V, i64 r, i64 token, u32 flags, float* __restrict__ lp,
                             int* __restrict__ lp_ids, Shared& sh) {
  const int tid = threadIdx.x, nt = blockDim.x;
  float mr = neg_inf();
  for (int j = tid; j < V; j += nt) {
    float v = to_f(x[j]);
    if (v != v) v = neg_inf();
    mr = fmaxf(mr, v);
  }
  mr = block_max_f(mr, sh);
  float lse, inf_lp = 0.f;
  if (mr == pos_inf()) {
    u64 c = 0;
    for (int j = tid; j < V; j += nt) c += to_f(x[j]) == pos_inf();
    inf_lp = -logf((float)block_sum(c, sh));
    lse = pos_inf();
  } else {
    float acc = 0.f;
    for (int j = tid; j < V; j += nt) {
      float v = to_f(x[j]);
      if (v != v) v = neg_inf();
      acc += expf(v - mr);
    }
    lse = mr + logf(block_sum_f(acc, sh));
  }
  auto logprob = [&](float v) {
    if (v != v) v = neg_inf();
    if (mr == pos_inf()) return v == pos_inf() ? inf_lp : neg_inf();
    return v - lse;
  };
  float* lpr = lp + r * (1 + MAX_LP);
  int* idr = lp_ids + r * MAX_LP;
  if (tid == 0) lpr[0] = token >= 0 ? logprob(to_f(x[token])) : __int_as_float(0x7fc00000);
  const int k = (int)((flags >> 8) & 0xffu) < V ? (int)((flags >> 8) & 0xffu) : V;
  if (k > 0) {
    const u32 t = radix_select([&](u32 mask, u32 prefix, int shift) {
      for (int base = tid & ~31; base < V; base += nt) {  // warp-uniform steps
        const int j = base + (tid & 31);
        const u32 key = j < V ? order_key(to_f(x[j])) : 0u;
        hist_add<true>(j < V && (key & mask) == prefix, key, 1, shift, sh);
      }
    }, (u64)k, sh);
    const int need = k - (int)sh.above;  // how many of the ties at t, lowest ids first
    if (tid == 0) sh.count = 0;
    __syncthreads();
    const int lane = tid & 31;
    int b, e;
    warp_segment(V, b, e);
    u64 ties = 0;
    for (int j = b + lane; j < e; j += 32) {
      const u32 key = order_key(to_f(x[j]));
      if (key > t) {
        const int i = atomicAdd(&sh.count, 1);
        sh.ckey[i] = key;
        sh.cidx[i] = j;
      } else if (key == t) {
        ++ties;
      }
    }
    u64 rank = warps_before(warp_sum(ties), sh);  // ties in earlier warps' segments (also orders the gathers)
    for (int j0 = b; j0 < e && rank < (u64)need; j0 += 32) {  // warp-uniform: the ties in token order
      const int j = j0 + lane;
      const bool tie = j < e && order_key(to_f(x[j])) == t;
      const unsigned m = __ballot_sync(FULL, tie);
      if (tie && rank + __popc(m & ((1u << lane) - 1u)) < (u64)need) {
        const int i = atomicAdd(&sh.count, 1);
        sh.ckey[i] = t;
        sh.cidx[i] = j;
      }
      rank += __popc(m);
    }
    __syncthreads();
    for (int i = tid; i < k; i += nt) {
      const u32 ki = sh.ckey[i];
      const int ii = sh.cidx[i];
      int at = 0;
      for (int j = 0; j < k; ++j)
        at += sh.ckey[j] > ki || (sh.ckey[j] == ki && sh.cidx[j] < ii);
      idr[at] = ii;
      lpr[1 + at] = logprob(to_f(x[ii]));
    }
  }
}

// -DGPK_SMC_STAMPS (benchmarks/diag/sampler_diag.py --phases): block 0's thread 0 records clock64() at the
// numbered points of sample_row (40..) and gpk_smc::sample_row_cl (0..39), the time each phase takes on the GPU.
#ifdef GPK_SMC_STAMPS
extern "C" {
__device__ long long gpk_smc_stamps[64];
}
#define GPK_SMC_STAMP(i) \
  if (threadIdx.x == 0 && blockIdx.x == 0) gpk_smc_stamps[i] = clock64()
#else
#define GPK_SMC_STAMP(i)
#endif

// ---- a slot's parameters (gpk_array.llm.sampling's table row, SLOT_WORDS words) ----------------------------------
struct Slot {
  u64 seed, qmin;
  i64 plen;
  float temp, rep, pres, freq;
  u32 top_k, flags;
  double top_p;

  __device__ __forceinline__ static Slot load(const u64* w) {
    Slot P;
    P.seed = w[0];
    P.plen = (i64)w[1];
    P.temp = __uint_as_float((u32)w[2]);
    P.top_k = (u32)(w[2] >> 32);
    P.top_p = __longlong_as_double((i64)w[3]);
    P.qmin = w[4];
    P.rep = __uint_as_float((u32)w[5]);
    P.pres = __uint_as_float((u32)(w[5] >> 32));
    P.freq = __uint_as_float((u32)w[6]);
    P.flags = (u32)(w[6] >> 32);
    return P;
  }

  // Logit y of token j after the slot's penalties and bias (pen: any of them is on), NaN as -inf, in the order
  // and float32 roundings of run_numpy.
  __device__ __forceinline__ float penalize(float y, int j, bool pen, const int* cnt, const unsigned char* sn,
                                            const float* bs) const {
    if (y != y) y = neg_inf();
    if (pen) {
      if (flags & (REPETITION | COUNTS)) {
        const int c = cnt[j];
        if ((flags & REPETITION) && (c > 0 || sn[j] != 0)) y = y > 0.f ? __fdiv_rn(y, rep) : __fmul_rn(y, rep);
        if ((flags & COUNTS) && c > 0) {
          y = __fsub_rn(y, __fmul_rn(freq, (float)c));
          y = __fsub_rn(y, pres);
        }
      }
      if (flags & BIAS) y = __fadd_rn(y, bs[j]);
      if (y != y) y = neg_inf();
    }
    return y;
  }
};

// ---- one row ----------------------------------------------------------------------------------------------------
template <class T>
__device__ void sample_row(const T* __restrict__ logits, i64 ld, int V, const i64* __restrict__ slots,
                           const i64* __restrict__ tok, const i64* __restrict__ pos, const u64* __restrict__ table,
                           int* __restrict__ counts, unsigned char* __restrict__ seen, const float* __restrict__ bias,
                           i64* __restrict__ counted, const i64* __restrict__ prompt, i64 prompt_stride,
                           float* __restrict__ work, i64 ldw, i64* __restrict__ out, float* __restrict__ lp,
                           int* __restrict__ lp_ids, i64* __restrict__ next_tok, i64* __restrict__ next_pos,
                           i64 max_pos, Shared& sh, float* __restrict__ stage) {
  const int tid = threadIdx.x, nt = blockDim.x;
  const i64 r = blockIdx.x;
  const i64 s = slots != nullptr ? slots[r] : r;
  const Slot P = Slot::load(table + s * SLOT_WORDS);
  const i64 p = pos[r], t_in = tok[r];
  int* cnt = counts + s * (i64)V;
  unsigned char* sn = seen + s * (i64)V;
  const float* bs = bias + s * (i64)V;
  const T* x = logits + r * ld;
  float* wk = work + r * ldw;  // 16-byte aligned rows (ldw a multiple of 4)
  u32* wku = reinterpret_cast<u32*>(wk);
  GPK_SMC_STAMP(40);

  // -- the slot's penalty state: reset by the sequence's first row, else count the fed token once --
  if (prompt != nullptr && p == P.plen - 1) {
    for (int j = tid; j < V; j += nt) cnt[j] = 0;
    if (P.flags & REPETITION) {
      for (int j = tid; j < V; j += nt) sn[j] = 0;
      __syncthreads();
      const i64* pr = prompt + r * prompt_stride;
      for (i64 i = tid; i < P.plen; i += nt) {
        const i64 v = pr[i];
        if (0 <= v && v < V) sn[v] = 1;
      }
    }
    if (tid == 0) counted[s] = p;
  } else if (tid == 0 && p >= P.plen && p > counted[s] && 0 <= t_in && t_in < V) {
    cnt[t_in] += 1;
    counted[s] = p;
  }
  __syncthreads();

  // -- penalized logits (kept in work for sampling), their max and first argmax --
  const bool sampled = !(P.flags & GREEDY);
  const bool pen = (P.flags & (REPETITION | COUNTS | BIAS)) != 0;
  float best = neg_inf();
  int bi = 0x7fffffff;
  auto penalized = [&](int j, float y) {
    y = P.penalize(y, j, pen, cnt, sn, bs);
    if (y > best || (y == best && j < bi)) {
      best = y;
      bi = j;
    }
    return y;
  };
  if (sampled)
    visit_row_store(x, V, wk, stage, penalized);
  else
    visit_row(x, V, penalized);
  GPK_SMC_STAMP(41);
  block_argmax(best, bi, sh);
  GPK_SMC_STAMP(42);
  const float m = best;
  i64 token = -1;

  if (m > neg_inf() && !sampled) token = bi;
  if (m > neg_inf() && sampled) {
    // -- probabilities, in place: their float bits are the keys --
    const bool inf_case = m == pos_inf();
    const bool t1 = P.temp == 1.f;  // z / 1 is z: the division (most of this pass's instructions) skipped
    auto prob = [&](float y) {
      const float z = __fsub_rn(y, m);
      return __float_as_uint(inf_case ? (y == pos_inf() ? 1.f : 0.f) : exp_fixed(t1 ? z : __fdiv_rn(z, P.temp)));
    };
    for (int j0 = 4 * tid; j0 < V; j0 += 16 * nt) {  // four float4 loads in flight before the stores
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (j0 + 4 * u * nt + 3 < V) v[u] = *reinterpret_cast<const float4*>(wk + j0 + 4 * u * nt);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int j = j0 + 4 * u * nt;
        if (j + 3 < V) {
          uint4 o;
          o.x = prob(v[u].x);
          o.y = prob(v[u].y);
          o.z = prob(v[u].z);
          o.w = prob(v[u].w);
          *reinterpret_cast<uint4*>(wku + j) = o;
        } else {
          for (int q = j; q < V; ++q) wku[q] = prob(wk[q]);
        }
      }
    }
    __syncthreads();
    GPK_SMC_STAMP(43);
    u32 tk = 0;
    if (P.top_k > 0 && P.top_k < (u32)V) {
      tk = radix_select([&](u32 mask, u32 prefix, int shift) {
        fill_keys<true>(wku, V, [](u32) { return true; }, mask, prefix, shift, sh);
      }, (u64)P.top_k, sh);
    }
    GPK_SMC_STAMP(44);
    auto keep = [&](u32 key) { return key >= tk && key != 0u && quant(key) >= P.qmin; };
    const u64 R = token_bits(P.seed, (u64)(p - P.plen + 1));
    bool small = false;
    if (tk != 0u && P.top_k <= (u32)CAND) {  // gather the survivors of top-k (ties may make them more than k)
      if (tid == 0) sh.count = 0;
      __syncthreads();
      for (int j = 4 * tid; j < V; j += 4 * nt) {
        u32 k[4];
        load4(wku, j, V, k);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if (keep(k[q])) {
            const int i = atomicAdd(&sh.count, 1);
            if (i < CAND) {
              sh.ckey[i] = k[q];
              sh.cidx[i] = j + q;
            }
          }
        }
      }
      __syncthreads();
      small = sh.count <= CAND;
    }
    GPK_SMC_STAMP(45);
    if (tid == 0) sh.token = -1;
    i64 chosen = -1;
    if (small) {
      const int n = sh.count;
      u64 loc = 0;
      for (int i = tid; i < n; i += nt) loc += quant(sh.ckey[i]);
      u64 total = block_sum(loc, sh);
      u32 tp = 0;
      if (P.flags & TOP_P) {
        u64 target = __double2ull_rz(__dmul_rn(__ull2double_rn(total), P.top_p));
        target = target > total ? total : (target < 1 ? 1 : target);
        u32 bk = 0;
        for (int i = tid; i < n; i += nt) {
          const u32 ki = sh.ckey[i];
          u64 mass = 0;
          for (int j = 0; j < n; ++j)
            if (sh.ckey[j] >= ki) mass += quant(sh.ckey[j]);
          if (mass >= target && ki > bk) bk = ki;
        }
        tp = block_max_u32(bk, sh);
        loc = 0;
        for (int i = tid; i < n; i += nt)
          if (sh.ckey[i] >= tp) loc += quant(sh.ckey[i]);
        total = block_sum(loc, sh);
      }
      const u64 u = __umul64hi(R, total);
      for (int i = tid; i < n; i += nt) {
        const u32 ki = sh.ckey[i];
        if (ki < tp) continue;
        const int ii = sh.cidx[i];
        u64 before = 0;
        for (int j = 0; j < n; ++j)
          if (sh.ckey[j] >= tp && sh.cidx[j] < ii) before += quant(sh.ckey[j]);
        if (before <= u && u < before + quant(ki)) sh.token = ii;
      }
    } else {
      u64 loc = 0;
      for (int j = 4 * tid; j < V; j += 4 * nt) {
        u32 k[4];
        load4(wku, j, V, k);
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (keep(k[q])) loc += quant(k[q]);
      }
      u64 total = block_sum(loc, sh);
      u32 tp = 0;
      if (P.flags & TOP_P) {
        u64 target = __double2ull_rz(__dmul_rn(__ull2double_rn(total), P.top_p));
        target = target > total ? total : (target < 1 ? 1 : target);
        tp = radix_select([&](u32 mask, u32 prefix, int shift) {
          fill_keys<false>(wku, V, keep, mask, prefix, shift, sh);
        }, target, sh);
        total = sh.above + sh.at;
      }
      GPK_SMC_STAMP(46);
      const u64 u = __umul64hi(R, total);
      chosen = choose_in_order(wku, V, [&](u32 key) { return keep(key) && key >= tp ? quant(key) : (u64)0; }, u, sh);
    }
    __syncthreads();
    token = small ? sh.token : chosen;
    GPK_SMC_STAMP(47);
  }
  if (tid == 0) {
    out[r] = token;
    if (next_tok != nullptr) {
      next_tok[s] = token < 0 ? 0 : token;
      next_pos[s] = p + 1 < max_pos ? p + 1 : max_pos;
    }
  }

  if (P.flags & LOGPROBS) logprobs_row(x, V, r, token, P.flags, lp, lp_ids, sh);
}

}  // namespace gpk_smp

#include "sampling_cluster.cuh"

#ifdef GPK_EMULATE
#define GPK_SMP_PDL()
#else
#define GPK_SMP_PDL() \
  gpk::pdl_wait();    \
  gpk::pdl_trigger();
#endif

#define GPK_SAMPLE_KERNEL(T, DT)                                                                                   \
  extern "C" __global__ void __launch_bounds__(1024) gpk_sample_##DT(                                              \
      const T* logits, long long ld, int V, const long long* slots, const long long* tok, const long long* pos,   \
      const unsigned long long* table, int* counts, unsigned char* seen, const float* bias, long long* counted,    \
      const long long* prompt, long long prompt_stride, float* work, long long ldw, long long* out, float* lp,     \
      int* lp_ids, long long* next_tok, long long* next_pos, long long max_pos) {                                  \
    __shared__ gpk_smp::Shared sh;                                                                                 \
    __shared__ float stage[gpk_smp::MAX_WARPS * gpk_smp::STAGE_FLOATS];                                            \
    GPK_SMP_PDL()                                                                                                  \
    gpk_smp::sample_row<T>(logits, ld, V, slots, tok, pos, table, counts, seen, bias, counted, prompt,             \
                           prompt_stride, work, ldw, out, lp, lp_ids, next_tok, next_pos, max_pos, sh, stage);     \
  }

GPK_SAMPLE_KERNEL(float, f32)
#ifndef GPK_EMULATE
GPK_SAMPLE_KERNEL(__half, f16)
GPK_SAMPLE_KERNEL(__nv_bfloat16, bf16)
#endif

// One cluster of gpk_smc::CL blocks per row (grid: rows * CL blocks); SM90 and later.
#ifdef GPK_EMULATE
#define GPK_CL_DIMS
#define GPK_CL_SHARED(S, name)           \
  __shared__ S name##_all[gpk_smc::CL]; \
  S& name = name##_all[gpk_smc::cl_rank()];
#else
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define GPK_CL_DIMS
#else
#define GPK_CL_DIMS __cluster_dims__(8, 1, 1)
#endif
#define GPK_CL_SHARED(S, name) __shared__ S name;
#endif

#define GPK_SAMPLE_CL_KERNEL(T, DT)                                                                                \
  extern "C" __global__ void GPK_CL_DIMS __launch_bounds__(1024, 1) gpk_sample_cl_##DT(                          \
      const T* logits, long long ld, int V, const long long* slots, const long long* tok, const long long* pos,   \
      const unsigned long long* table, int* counts, unsigned char* seen, const float* bias, long long* counted,    \
      const long long* prompt, long long prompt_stride, long long* out, float* lp, int* lp_ids,                    \
      long long* next_tok, long long* next_pos, long long max_pos) {                                               \
    GPK_CL_SHARED(gpk_smc::ClShared, cs)                                                                           \
    GPK_SMP_PDL()                                                                                                  \
    gpk_smc::sample_row_cl<T>(logits, ld, V, slots, tok, pos, table, counts, seen, bias, counted, prompt,          \
                              prompt_stride, out, lp, lp_ids, next_tok, next_pos, max_pos, cs);                    \
  }

GPK_SAMPLE_CL_KERNEL(float, f32)
#ifndef GPK_EMULATE
GPK_SAMPLE_CL_KERNEL(__half, f16)
GPK_SAMPLE_CL_KERNEL(__nv_bfloat16, bf16)
#endif
