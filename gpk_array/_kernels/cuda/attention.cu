// Fused attention forward, FlashAttention-2 style (gpk_array/_kernels/attention.py launches it):
//
//   gpk_attn_fwd_<dt>_d<D>   o = softmax(q k^T * scale [+ causal mask]) v for dt in f16, bf16 and head dims D in
//                            64, 128, with float32 accumulation throughout.
//
// Shapes and layouts. q (B, H, Lq, D), k and v (B, H, Lk, D), o (B, H, Lq, D), each with its own element strides
// for the batch, head and row axes (the last axis contiguous; every stride a multiple of 8 elements and every base
// 16-byte aligned, which the launcher checks), so q, k and v can be strided views of one fused (B, T, 3, H, D) QKV
// projection and o can be written in (B, T, H, D) order, with no copies. causal: query i attends keys
// j <= i + (Lk - Lq) (the launcher only sends Lq <= Lk, so every query attends key 0 at least).
//
// Work split. One CTA of 4 warps per (batch * head, tile of BM queries); each warp owns 16 MT query rows (MT = 1:
// BM = 64, the kernels without a suffix; MT = 2: BM = 128, the _m128 ones, D = 64 only). The grid's x axis is
// batch * head and y the query tile, counted from the last tile when causal, so the tiles with the most keys start
// first. A CTA walks the key/value tiles of BN = 64 keys in order (only those a causal tile can see), with K and V
// double-buffered in shared memory by cp.async: tile t + 1 loads while tile t computes.
//
// Per key tile, per warp (the FlashAttention-2 loop): S = Q K^T with mma.sync m16n8k16 (Q's fragments loaded once
// into registers, K's through ldmatrix), S * scale * log2(e), masking (-inf) only on a tile that crosses the
// causal diagonal or the end of the keys; the running row maximum m and row sum l in float32; P = exp2(S - m)
// rounded to dt as the A operand of O += P V (V through ldmatrix.trans), after O and l were rescaled by
// exp2(m_old - m_new). The quad of lanes that share a row keep partial sums of l, added up once at the end; then
// o = O / l, staged through shared memory (Q's tile, no longer needed) for 16-byte stores.
//
// Shared memory: 16-byte chunks of each row are XOR-swizzled by (row % 8), so the 8 row addresses of an ldmatrix
// phase and the cp.async writes hit 8 different 16-byte bank groups. Dynamic size (BM + 4 BN) * D * 2 bytes:
// 40 KiB for D = 64 (48 KiB with BM = 128), 80 KiB for D = 128 (the launcher raises the kernel's limit).
//
// The numerics (tile order, the roundings, the -inf guards) are mirrored by a NumPy emulation in
// tests/kernels/_attention_emu.py, which the CPU tests hold against float64; the fragment and swizzle index
// arithmetic below is mirrored there lane by lane too.
#include "gpk_common.cuh"

namespace gpk {
namespace attn {

constexpr int BN = 64;        // keys per tile
constexpr int NTHREADS = 128; // 4 warps, 16 query rows each

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; zero-filled when !valid (src must still be a mapped address).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ float ex2(float x) {  // 2^x; ex2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// d += a b for one m16n8k16 tile: a 16x16 (row-major fragments), b 16x8 ("col": each column's 16 k contiguous).
template <class T> struct Mma;
template <> struct Mma<__half> {
  static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {  // lo in the low half (lower column)
    const __half2 h = __floats2half2_rn(lo, hi);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  }
};
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  }
};

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of rows of D elements.
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Rows [row0, row0 + R) of a (L, D) matrix at g (row stride `stride` elements) into the swizzled tile sm; rows at
// or past L are zero-filled (so no stale value, NaN included, can reach an mma).
template <class T, int D, int R>
__device__ __forceinline__ void load_tile(T* sm, const T* __restrict__ g, long long stride, int row0, int L) {
  constexpr int CPR = D / 8;            // chunks per row
  constexpr int RPP = NTHREADS / CPR;   // rows per pass
  static_assert(R % RPP == 0, "tile rows must be a multiple of the rows per pass");
  const int c = threadIdx.x % CPR, r_in = threadIdx.x / CPR;
#pragma unroll
  for (int p = 0; p < R / RPP; ++p) {
    const int r = p * RPP + r_in;
    const int gr = row0 + r;
    const bool ok = gr < L;
    const T* src = g + (long long)(ok ? gr : 0) * stride + c * 8;
    cp_async16(smem_u32(sm + swz<D>(r, c)), src, ok);
  }
}

// MT: 16-row m-tiles per warp (BM = 64 MT queries per CTA). MT = 2 uses each K and V fragment read from shared
// memory for two mma instead of one, halving shared-memory traffic per flop, for twice the accumulator registers
// and half the CTAs (the launcher picks it for D = 64 where the grid stays large).
template <class T, int D, int MT>
__device__ __forceinline__ void fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                    T* __restrict__ o, int H, int Lq, int Lk, long long sqb, long long sqh,
                                    long long sqt, long long skb, long long skh, long long skt, long long svb,
                                    long long svh, long long svt, long long sob, long long soh, long long sot,
                                    float sl2, int causal) {
  static_assert(D % 64 == 0, "the swizzle needs at least 8 chunks per row");
  constexpr int BM = 64 * MT;  // queries per CTA
  constexpr int WR = 16 * MT;  // query rows per warp
  constexpr int KD = D / 16;   // k-steps of S = Q K^T, and 16-column groups of O
  constexpr int NB = BN / 8;   // 8-key column blocks of S
  const float NEG_INF = __int_as_float(0xff800000);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + BM * D;          // 2 buffers of BN x D
  T* sV = sK + 2 * BN * D;      // 2 buffers of BN x D

  const int bh = blockIdx.x;
  const int b = bh / H, h = bh - b * H;
  const int nq = (Lq + BM - 1) / BM;
  const int qt = causal ? nq - 1 - (int)blockIdx.y : (int)blockIdx.y;
  const int m0 = qt * BM;
  q += b * sqb + h * sqh;
  k += b * skb + h * skh;
  v += b * svb + h * svh;
  o += b * sob + h * soh;
  const int off = Lk - Lq;  // >= 0 when causal
  const int kv_end = causal ? min(Lk, m0 + BM + off) : Lk;  // keys any row of this tile may attend: [0, kv_end)
  const int n_tiles = (kv_end + BN - 1) / BN;

  pdl_wait();   // q, k, v may be the previous kernel's output
  pdl_trigger();

  load_tile<T, D, BM>(sQ, q, sqt, m0, Lq);
  load_tile<T, D, BN>(sK, k, skt, 0, Lk);
  load_tile<T, D, BN>(sV, v, svt, 0, Lk);
  cp_async_commit();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;    // fragment row group and column pair
  const int mi = lane >> 3, l8 = lane & 7;   // ldmatrix: which 8x8 matrix this lane addresses, and its row
  const int wrow = warp * WR;                // the warp's first row in the tile

  unsigned qf[MT][KD][4];
  float acc[MT][D / 8][4];
  float m_a[MT], m_b[MT], l_a[MT], l_b[MT];  // rows g and g + 8 of each m-tile
#pragma unroll
  for (int t = 0; t < MT; ++t) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n) acc[t][n][0] = acc[t][n][1] = acc[t][n][2] = acc[t][n][3] = 0.f;
    m_a[t] = m_b[t] = NEG_INF;
    l_a[t] = l_b[t] = 0.f;
  }

  for (int it = 0; it < n_tiles; ++it) {
    const int buf = it & 1;
    if (it + 1 < n_tiles) {
      load_tile<T, D, BN>(sK + (buf ^ 1) * BN * D, k, skt, (it + 1) * BN, Lk);
      load_tile<T, D, BN>(sV + (buf ^ 1) * BN * D, v, svt, (it + 1) * BN, Lk);
    }
    cp_async_commit();  // possibly empty: the group count stays one per iteration
    cp_async_wait<1>(); // everything but the group just committed has landed: tile it (and Q)
    __syncthreads();
    if (it == 0) {
#pragma unroll
      for (int t = 0; t < MT; ++t) {
#pragma unroll
        for (int kk = 0; kk < KD; ++kk)
          ldsm_x4(smem_u32(sQ + swz<D>(wrow + 16 * t + (mi & 1) * 8 + l8, 2 * kk + (mi >> 1))), qf[t][kk][0],
                  qf[t][kk][1], qf[t][kk][2], qf[t][kk][3]);
      }
    }
    const T* cK = sK + buf * BN * D;
    const T* cV = sV + buf * BN * D;

    // S = Q K^T (WR x BN per warp)
    float s[MT][NB][4];
#pragma unroll
    for (int t = 0; t < MT; ++t) {
#pragma unroll
      for (int j = 0; j < NB; ++j) s[t][j][0] = s[t][j][1] = s[t][j][2] = s[t][j][3] = 0.f;
    }
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
#pragma unroll
      for (int jj = 0; jj < NB / 2; ++jj) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(smem_u32(cK + swz<D>(16 * jj + (mi >> 1) * 8 + l8, 2 * kk + (mi & 1))), b0, b1, b2, b3);
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          Mma<T>::run(s[t][2 * jj], qf[t][kk], b0, b1);
          Mma<T>::run(s[t][2 * jj + 1], qf[t][kk], b2, b3);
        }
      }
    }

    // scale to the log2 domain, mask, online softmax
    const int n0 = it * BN;
    const bool need_mask = n0 + BN > Lk || (causal && n0 + BN - 1 > m0 + off);
    unsigned pa[MT][BN / 16][4];  // P as the A fragments of O += P V
#pragma unroll
    for (int t = 0; t < MT; ++t) {
      const int row_a = m0 + wrow + 16 * t + g, row_b = row_a + 8;  // this thread's two query rows
#pragma unroll
      for (int j = 0; j < NB; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[t][j][e] *= sl2;
      }
      if (need_mask) {
#pragma unroll
        for (int j = 0; j < NB; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = n0 + 8 * j + 2 * t4 + (e & 1);
            const int row = e < 2 ? row_a : row_b;
            if (key >= Lk || (causal && key > row + off)) s[t][j][e] = NEG_INF;
          }
        }
      }
      float mx_a = m_a[t], mx_b = m_b[t];
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        mx_a = fmaxf(mx_a, fmaxf(s[t][j][0], s[t][j][1]));
        mx_b = fmaxf(mx_b, fmaxf(s[t][j][2], s[t][j][3]));
      }
      mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
      mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
      mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
      mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
      // a row with no key yet keeps m = -inf: subtract 0 instead, so exp2 sees -inf (0), never -inf - -inf (NaN)
      const float base_a = mx_a == NEG_INF ? 0.f : mx_a;
      const float base_b = mx_b == NEG_INF ? 0.f : mx_b;
      const float al_a = ex2(m_a[t] - base_a), al_b = ex2(m_b[t] - base_b);
      m_a[t] = mx_a;
      m_b[t] = mx_b;
      float ps_a = 0.f, ps_b = 0.f;
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        s[t][j][0] = ex2(s[t][j][0] - base_a);
        s[t][j][1] = ex2(s[t][j][1] - base_a);
        s[t][j][2] = ex2(s[t][j][2] - base_b);
        s[t][j][3] = ex2(s[t][j][3] - base_b);
        ps_a += s[t][j][0] + s[t][j][1];
        ps_b += s[t][j][2] + s[t][j][3];
      }
      l_a[t] = l_a[t] * al_a + ps_a;
      l_b[t] = l_b[t] * al_b + ps_b;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        acc[t][n][0] *= al_a;
        acc[t][n][1] *= al_a;
        acc[t][n][2] *= al_b;
        acc[t][n][3] *= al_b;
      }
      // P's C fragments of two adjacent 8-key blocks are the A fragment of one 16-key step
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        pa[t][kk][0] = Mma<T>::pack(s[t][2 * kk][0], s[t][2 * kk][1]);
        pa[t][kk][1] = Mma<T>::pack(s[t][2 * kk][2], s[t][2 * kk][3]);
        pa[t][kk][2] = Mma<T>::pack(s[t][2 * kk + 1][0], s[t][2 * kk + 1][1]);
        pa[t][kk][3] = Mma<T>::pack(s[t][2 * kk + 1][2], s[t][2 * kk + 1][3]);
      }
    }

    // O += P V
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
#pragma unroll
      for (int dd = 0; dd < KD; ++dd) {
        unsigned b0, b1, b2, b3;
        ldsm_x4_t(smem_u32(cV + swz<D>(16 * kk + (mi & 1) * 8 + l8, 2 * dd + (mi >> 1))), b0, b1, b2, b3);
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          Mma<T>::run(acc[t][2 * dd], pa[t][kk], b0, b1);
          Mma<T>::run(acc[t][2 * dd + 1], pa[t][kk], b2, b3);
        }
      }
    }
    __syncthreads();  // every warp is done with buffer `buf` before the next iteration refills it
  }
  cp_async_wait<0>();

  // o = O / l, staged through this warp's own rows of the Q tile, then 16-byte stores
  T* sO = sQ;
#pragma unroll
  for (int t = 0; t < MT; ++t) {
    float la = l_a[t], lb = l_b[t];
    la += __shfl_xor_sync(0xffffffffu, la, 1);
    la += __shfl_xor_sync(0xffffffffu, la, 2);
    lb += __shfl_xor_sync(0xffffffffu, lb, 1);
    lb += __shfl_xor_sync(0xffffffffu, lb, 2);
    const float inv_a = la > 0.f ? 1.f / la : 0.f;
    const float inv_b = lb > 0.f ? 1.f / lb : 0.f;
    const int r_a = wrow + 16 * t + g;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const unsigned ua = Mma<T>::pack(acc[t][n][0] * inv_a, acc[t][n][1] * inv_a);
      const unsigned ub = Mma<T>::pack(acc[t][n][2] * inv_b, acc[t][n][3] * inv_b);
      *reinterpret_cast<unsigned*>(sO + swz<D>(r_a, n) + 2 * t4) = ua;
      *reinterpret_cast<unsigned*>(sO + swz<D>(r_a + 8, n) + 2 * t4) = ub;
    }
  }
  __syncwarp();
  constexpr int CPR = D / 8;
#pragma unroll
  for (int i = lane; i < WR * CPR; i += 32) {
    const int r = i / CPR, c = i % CPR;
    const int gr = m0 + wrow + r;
    if (gr < Lq)
      *reinterpret_cast<uint4*>(o + (long long)gr * sot + c * 8) =
          *reinterpret_cast<const uint4*>(sO + swz<D>(wrow + r, c));
  }
}

}  // namespace attn
}  // namespace gpk

// Launch bounds: D = 64 with one m-tile per warp fits 3 CTAs per SM in registers; two m-tiles per warp (its
// accumulators and P fragments doubled) and D = 128 (an O accumulator of 64 floats per m-tile) are bounded at 2.
#define GPK_ATTN_KERNEL(T, DT, D, MT, SUFFIX, MINB)                                                            \
  extern "C" __global__ void __launch_bounds__(128, MINB) gpk_attn_fwd_##DT##_d##D##SUFFIX(                    \
      const T* q, const T* k, const T* v, T* o, int H, int Lq, int Lk, long long sqb, long long sqh,           \
      long long sqt, long long skb, long long skh, long long skt, long long svb, long long svh, long long svt,  \
      long long sob, long long soh, long long sot, float sl2, int causal) {                                    \
    gpk::attn::fwd<T, D, MT>(q, k, v, o, H, Lq, Lk, sqb, sqh, sqt, skb, skh, skt, svb, svh, svt, sob, soh,     \
                             sot, sl2, causal);                                                                \
  }

GPK_ATTN_KERNEL(__half, f16, 64, 1, , 3)
GPK_ATTN_KERNEL(__nv_bfloat16, bf16, 64, 1, , 3)
GPK_ATTN_KERNEL(__half, f16, 64, 2, _m128, 2)
GPK_ATTN_KERNEL(__nv_bfloat16, bf16, 64, 2, _m128, 2)
GPK_ATTN_KERNEL(__half, f16, 128, 1, , 2)
GPK_ATTN_KERNEL(__nv_bfloat16, bf16, 128, 1, , 2)
