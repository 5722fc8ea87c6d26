// The token sampler on a thread block cluster (SM90): one cluster of CL blocks per row of logits, included by
// sampling.cu (gpk_sample_cl_<dt>). It chooses exactly the tokens of gpk_smp::sample_row (the one-block kernel)
// and of gpk_array.llm.sampling.run_numpy, from the same algorithm, spread over CL SMs:
//
// - block `rank` of the cluster owns the contiguous piece [rank * chunk, (rank + 1) * chunk) of the row, held in
//   registers, E slices of blockDim.x elements each (thread t's element of slice e: piece start + e * nt + t), so
//   the row is read from memory once and every later pass runs over registers;
// - cluster-wide values (max and first argmax, histograms, totals) are exchanged through distributed shared memory
//   after a cluster barrier; every block then computes the same decisions from the same integer sums;
// - top-k / top-p thresholds: a histogram of the probability keys by their top bits (key >> 19: 16 bins per
//   octave, ordered exactly like the keys), the bin holding the threshold found from the top, then a radix select
//   over the lower 19 bits of the keys in that bin only (three passes, one cluster barrier each, double-buffered);
// - the draw: each block's total of the kept fixed-point weights, the block whose range holds u finds the token
//   in token order (slice, warp, lane) and writes it; that block computes the logprobs (logprobs_row).
//
// Every block stays until the last cluster barrier after the last remote read, so no block's shared memory goes
// away while another reads it.

namespace gpk_smc {

using namespace gpk_smp;

constexpr int CL = 8;            // blocks per cluster (per row)
constexpr int E = 8;             // elements per thread at most: V <= CL * E * blockDim.x
constexpr int BIN_SHIFT = 19;
constexpr u32 BIN_BASE = 0x2B000000u >> BIN_SHIFT;   // every nonzero key is >= 0x2B000000 (e >= e**-28 > 2**-41)
constexpr int NB = ((0x3F800000u >> BIN_SHIFT) - BIN_BASE) + 1;   // 657 bins up to the key of 1.0
constexpr int NBP = (NB + 31) & ~31;
#ifndef GPK_EMULATE
constexpr int CAND_BLOCK = 256;  // threshold candidates a block lists (cluster_threshold)
constexpr int CAND_ALL = 1024;   // and the cluster (at most blockDim.x); more: the radix select
#else  // small, so that the tests' vocabularies take both the list and the radix select
constexpr int CAND_BLOCK = 8;
constexpr int CAND_ALL = 32;
#endif

struct Radix {       // one radix pass's histogram of 256 digits: counts and fixed-point mass
  u32 cnt[256];
  Wide mass[256];
};

struct ClShared {
  u32 hcnt[NBP];     // this block's bin histograms: nonzero keys, and the fixed-point mass of those past min-p
  Wide hmass[NBP];
  u32 mcnt[NBP];     // the cluster's (summed over its blocks)
  u64 mmass[NBP];
  Radix rx[2];       // radix passes, double-buffered (pass i fills rx[i & 1])
  u32 rmc[256];      // the cluster's radix histogram of the current pass
  u64 rmm[256];
  u64 part[E][MAX_WARPS];   // the draw: each warp's kept mass per slice
  float bestv;
  int besti;
  u64 total;
  int sel;
  u64 sel_above, sel_above2;
  u64 red2[MAX_WARPS];
  u32 clist[2][CAND_BLOCK];  // this block's keys in the threshold's bin, double-buffered per threshold
  u32 ccount[2];
  u32 call[CAND_ALL];        // the cluster's
  u32 tbest;
  u64 tmass;
  Shared sh;         // block reductions, logprobs_row
};

#if !defined(GPK_EMULATE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ u32 cl_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cl_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The address of *p's copy in the shared memory of the cluster's block `rank` (a generic address).
template <class T>
__device__ __forceinline__ T* cl_map(T* p, u32 rank) {
  u64 a;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(a) : "l"(reinterpret_cast<u64>(p)), "r"(rank));
  return reinterpret_cast<T*>(a);
}
#elif defined(GPK_EMULATE)
__device__ __forceinline__ u32 cl_rank() { return gpk_cl_rank(); }
__device__ __forceinline__ void cl_sync() { gpk_cl_sync(); }
template <class T>
__device__ __forceinline__ T* cl_map(T* p, u32 rank) { return gpk_cl_map<ClShared>(p, rank); }
#else  // before SM90 there are no clusters: the launcher never runs these kernels there
__device__ __forceinline__ u32 cl_rank() { return 0; }
__device__ __forceinline__ void cl_sync() { __trap(); }
template <class T>
__device__ __forceinline__ T* cl_map(T* p, u32) { return p; }
#endif

__device__ __forceinline__ int bin_of(u32 key) {
  const int b = (int)((key >> BIN_SHIFT) - BIN_BASE);
  return b < 0 ? 0 : (b >= NB ? NB - 1 : b);
}

// The largest i in [0, n) at which the sum of h(i..n-1) reaches target (>= 1), with in `above` the sum of h
// strictly above it and in `above2` that of a second series h2; -1 when the whole sum is below target.
// Block-wide (a suffix scan over the threads' contiguous groups of bins): every thread gets the same answer.
template <class H, class H2>
__device__ int search_top(const H& h, const H2& h2, int n, u64 target, u64& above, u64& above2, ClShared& cs) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  const int g = (n + nt - 1) / nt;
  const int lo = min(n, tid * g), hi = min(n, lo + g);
  u64 s = 0, s2 = 0;
  for (int i = lo; i < hi; ++i) {
    s += h(i);
    s2 += h2(i);
  }
  u64 v = s, v2 = s2;  // inclusive suffix sums within the warp (this lane and the lanes above it)
  warp_suffix2(v, v2);
  Shared& sh = cs.sh;
  __syncthreads();
  if (lane == 0) {
    sh.red_u[warp] = v;
    cs.red2[warp] = v2;
  }
  if (tid == 0) cs.sel = -1;
  __syncthreads();
  u64 wv = lane < nw ? sh.red_u[lane] : 0, wv2 = lane < nw ? cs.red2[lane] : 0;  // suffix sums over the warps
  warp_suffix2(wv, wv2);
  const u64 later = __shfl_sync(FULL, wv, (warp + 1) & 31), later2 = __shfl_sync(FULL, wv2, (warp + 1) & 31);
  u64 acc = v - s + (warp + 1 < 32 ? later : 0), acc2 = v2 - s2 + (warp + 1 < 32 ? later2 : 0);
  if (acc < target && target <= acc + s) {  // one thread
    for (int i = hi - 1; i >= lo; --i) {
      const u64 x = h(i);
      if (acc + x >= target) {
        cs.sel = i;
        cs.sel_above = acc;
        cs.sel_above2 = acc2;
        break;
      }
      acc += x;
      acc2 += h2(i);
    }
  }
  __syncthreads();
  above = cs.sel_above;
  above2 = cs.sel_above2;
  return cs.sel;
}

template <class H>
__device__ __forceinline__ int search_top(const H& h, int n, u64 target, u64& above, ClShared& cs) {
  u64 unused;
  return search_top(h, [](int) { return (u64)0; }, n, target, above, unused, cs);
}

// The smallest i in [0, n) at which the running sum of h(0..i) exceeds u, with in `before` the sum before it;
// -1 when the whole sum is at most u. Block-wide, as search_top.
template <class H>
__device__ int search_first(const H& h, int n, u64 u, u64& before, ClShared& cs) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  const int g = (n + nt - 1) / nt;
  const int lo = min(n, tid * g), hi = min(n, lo + g);
  u64 s = 0;
  for (int i = lo; i < hi; ++i) s += h(i);
  u64 v = warp_prefix(s);  // inclusive prefix sum within the warp
  Shared& sh = cs.sh;
  __syncthreads();
  if (lane == 31) sh.red_u[warp] = v;
  if (tid == 0) cs.sel = -1;
  __syncthreads();
  u64 wv = warp_prefix(lane < nw ? sh.red_u[lane] : 0);  // prefix sums over the warps
  const u64 earlier = __shfl_sync(FULL, wv, (warp + 31) & 31);
  u64 acc = v - s + (warp > 0 ? earlier : 0);
  if (acc <= u && u < acc + s) {  // one thread
    for (int i = lo; i < hi; ++i) {
      const u64 x = h(i);
      if (acc + x > u) {
        cs.sel = i;
        cs.sel_above = acc;
        break;
      }
      acc += x;
    }
  }
  __syncthreads();
  before = cs.sel_above;
  return cs.sel;
}

// Radix select over the lower BIN_SHIFT bits of the keys in bin `bin` that satisfy pred: the largest key t whose
// weight at or above it (among those keys) reaches target, by count (BY_MASS false) or by mass. Three passes of
// (8, 8, 3) bits, one cluster barrier each; `pass` numbers the passes of the whole kernel (double buffering).
// mass_ge: the mass (weight wm) of the taking-part keys >= t.
template <bool BY_MASS, class Pred, class Wm>
__device__ __forceinline__ u32 cluster_select(const u32 (&key)[E], int ns, int bin, const Pred& pred, const Wm& wm, u64 target,
                              int& pass, u64& mass_ge, ClShared& cs) {
  const int tid = threadIdx.x, nt = blockDim.x;
  u32 prefix = ((u32)bin + BIN_BASE) << BIN_SHIFT, mask = ~((1u << BIN_SHIFT) - 1u);
  u64 above = 0, mabove = 0;
#pragma unroll
  for (int q = 0; q < 3; ++q) {
    const int shift = q == 0 ? 11 : (q == 1 ? 3 : 0);
    const u32 dmask = q == 2 ? 7u : 255u;
    Radix& rx = cs.rx[pass & 1];
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const u32 k = key[e];
      if (e < ns && pred(k) && (k & mask) == prefix) {
        const u32 d = (k >> shift) & dmask;
        atomicAdd(&rx.cnt[d], 1u);
        const u64 m = wm(k);
        if (m) rx.mass[d].add(m);
      }
    }
    GPK_SMC_STAMP(20 + 3 * pass);
    cl_sync();
    GPK_SMC_STAMP(21 + 3 * pass);
    for (int d = tid; d < 256; d += nt) {
      u32 c = 0;
      u64 m = 0;
      for (u32 b = 0; b < (u32)CL; ++b) {
        const Radix* o = cl_map(&rx, b);
        c += o->cnt[d];
        m += o->mass[d].get();
      }
      cs.rmc[d] = c;
      cs.rmm[d] = m;
    }
    Radix& next = cs.rx[(pass + 1) & 1];  // read by nobody since the barrier before this pass
    for (int d = tid; d < 256; d += nt) {
      next.cnt[d] = 0;
      next.mass[d].clear();
    }
    __syncthreads();
    u64 a = 0, ma = 0;  // the count (or mass) and the mass of the digits above d
    const int d = search_top([&](int i) { return BY_MASS ? cs.rmm[i] : (u64)cs.rmc[i]; },
                             [&](int i) { return cs.rmm[i]; }, (int)dmask + 1, target - above, a, ma, cs);
    above += a;
    mabove += ma;
    if (q == 2) mabove += cs.rmm[d];
    prefix |= (u32)d << shift;
    mask |= dmask << shift;
    GPK_SMC_STAMP(22 + 3 * pass);
    ++pass;
    __syncthreads();  // every thread has read cs.rmc / rmm before the next pass rewrites them
  }
  mass_ge = mabove;
  return prefix;
}

// cluster_select's threshold from a list of candidates when the bin holds few keys: each block lists its keys of
// bin `bin` satisfying pred (list `which`: 0 for top-k, 1 for top-p, so that a later threshold never overwrites a
// list another block may still read), a cluster barrier, every block copies the cluster's lists and ranks them
// (thread i: the weight of the keys >= key i). Returns false, having changed nothing the radix select reads, when
// some block's list or the cluster's would overflow (at once, without a list, when the bin's count `in_bin`, an
// upper bound, says so): every block decides alike from the same counts.
template <bool BY_MASS, class Pred, class Wm>
__device__ __forceinline__ bool cluster_threshold(const u32 (&key)[E], int ns, int bin, u32 in_bin, const Pred& pred,
                                                  const Wm& wm, u64 target, int which, u32& t_out, u64& mass_ge,
                                                  ClShared& cs) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31;
  if (in_bin > (u32)min(CAND_ALL, nt)) return false;
  const u32 hi = (u32)bin + BIN_BASE;
  if (tid == 0) cs.ccount[which] = 0;
  __syncthreads();
#pragma unroll
  for (int e = 0; e < E; ++e) {  // one atomic per warp (e < ns is block-uniform)
    const u32 k = key[e];
    const bool in = e < ns && (k >> BIN_SHIFT) == hi && pred(k);
    const unsigned mask = __ballot_sync(FULL, in);
    u32 base = 0;
    if (mask && lane == __ffs(mask) - 1) base = atomicAdd(&cs.ccount[which], (u32)__popc(mask));
    base = __shfl_sync(FULL, base, __ffs(mask) - 1 < 0 ? 0 : __ffs(mask) - 1);
    const u32 i = base + (u32)__popc(mask & ((1u << lane) - 1u));
    if (in && i < (u32)CAND_BLOCK) cs.clist[which][i] = k;
  }
  cl_sync();
  u32 cnt[CL];
  u32 n = 0;
  bool fits = true;
#pragma unroll
  for (int b = 0; b < CL; ++b) {
    cnt[b] = cl_map(&cs, (u32)b)->ccount[which];
    fits = fits && cnt[b] <= (u32)CAND_BLOCK;
    n += cnt[b];
  }
  if (!fits || n > (u32)min(CAND_ALL, nt)) return false;
  if (tid < (int)n) {  // candidate tid: block b's entry tid - (entries of the blocks before b)
    u32 i = (u32)tid;
    int b = 0;
    while (i >= cnt[b]) i -= cnt[b++];
    cs.call[tid] = cl_map(&cs, (u32)b)->clist[which][i];
  }
  if (tid == 0) {
    cs.tbest = 0;
    cs.tmass = 0;
  }
  __syncthreads();
  u32 mine = 0;
  u64 mg = 0;
  if (tid < (int)n) {
    const u32 ki = cs.call[tid];
    u64 w = 0;
    for (u32 j = 0; j < n; ++j) {
      const u32 kj = cs.call[j];
      if (kj >= ki) {
        const u64 m = wm(kj);
        w += BY_MASS ? m : 1;
        mg += m;
      }
    }
    if (w >= target) mine = ki;
  }
  const u32 t = block_max_u32(mine, cs.sh);  // every candidate's weight reaches target at most at its own key
  if (tid < (int)n && mine == t && t != 0u) cs.tmass = mg;  // the threads holding key t all computed the same mg
  __syncthreads();
  t_out = t;
  mass_ge = cs.tmass;
  return true;
}

template <class T>
__device__ void sample_row_cl(const T* __restrict__ logits, i64 ld, int V, const i64* __restrict__ slots,
                              const i64* __restrict__ tok, const i64* __restrict__ pos,
                              const u64* __restrict__ table, int* __restrict__ counts, unsigned char* __restrict__ seen,
                              const float* __restrict__ bias, i64* __restrict__ counted, const i64* __restrict__ prompt,
                              i64 prompt_stride, i64* __restrict__ out, float* __restrict__ lp,
                              int* __restrict__ lp_ids, i64* __restrict__ next_tok, i64* __restrict__ next_pos,
                              i64 max_pos, ClShared& cs) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  const u32 rank = cl_rank();
  const i64 r = blockIdx.x / CL;
  const i64 s = slots != nullptr ? slots[r] : r;
  const Slot P = Slot::load(table + s * SLOT_WORDS);
  const i64 p = pos[r], t_in = tok[r];
  int* cnt = counts + s * (i64)V;
  unsigned char* sn = seen + s * (i64)V;
  const float* bs = bias + s * (i64)V;
  const T* x = logits + r * ld;
  const int chunk = (V + CL - 1) / CL;
  const int c0 = min(V, (int)rank * chunk), c1 = min(V, c0 + chunk);
  const int ns = (c1 - c0 + nt - 1) / nt;  // slices this block uses (<= E: the launcher checks V)
  GPK_SMC_STAMP(0);

  for (int d = tid; d < 256; d += nt) {
    cs.rx[0].cnt[d] = cs.rx[1].cnt[d] = 0;
    cs.rx[0].mass[d].clear();
    cs.rx[1].mass[d].clear();
  }
  for (int b = tid; b < NBP; b += nt) {
    cs.hcnt[b] = 0;
    cs.hmass[b].clear();
  }

  // -- the slot's penalty state (as sample_row): each block resets its piece, block 0 marks and counts --
  const bool reset = prompt != nullptr && p == P.plen - 1;
  const bool pen = (P.flags & (REPETITION | COUNTS | BIAS)) != 0;
  if (reset) {
    for (int j = c0 + tid; j < c1; j += nt) cnt[j] = 0;
    if (P.flags & REPETITION) {
      for (int j = c0 + tid; j < c1; j += nt) sn[j] = 0;
      cl_sync();
      if (rank == 0) {
        const i64* pr = prompt + r * prompt_stride;
        for (i64 i = tid; i < P.plen; i += nt) {
          const i64 v = pr[i];
          if (0 <= v && v < V) sn[v] = 1;
        }
      }
    }
    if (rank == 0 && tid == 0) counted[s] = p;
  } else if (rank == 0 && tid == 0 && p >= P.plen && p > counted[s] && 0 <= t_in && t_in < V) {
    cnt[t_in] += 1;
    counted[s] = p;
  }
  if (pen) cl_sync();  // every block reads the counts and marks after they are written
  __syncthreads();
  GPK_SMC_STAMP(1);

  // -- penalized logits of this block's piece, its max and first argmax --
  const bool sampled = !(P.flags & GREEDY);
  float y[E];
  float best = neg_inf();
  int bi = 0x7fffffff;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int j = c0 + e * nt + tid;
    float v = neg_inf();
    if (e < ns && j < c1) {
      v = P.penalize(to_f(x[j]), j, pen, cnt, sn, bs);
      if (v > best || (v == best && j < bi)) {
        best = v;
        bi = j;
      }
    }
    y[e] = v;
  }
  block_argmax(best, bi, cs.sh);
  if (tid == 0) {
    cs.bestv = best;
    cs.besti = bi;
  }
  GPK_SMC_STAMP(2);
  cl_sync();
  GPK_SMC_STAMP(3);
  float m = neg_inf();
  int mi = 0x7fffffff;
  for (u32 b = 0; b < (u32)CL; ++b) {
    const ClShared* o = cl_map(&cs, b);
    const float ob = o->bestv;
    const int oi = o->besti;
    if (ob > m || (ob == m && oi < mi)) {
      m = ob;
      mi = oi;
    }
  }

  i64 token = -1;
  bool owner = rank == 0;  // the block that writes the token and the logprobs
  if (!(m > neg_inf()) || !sampled) {
    cl_sync();  // the last remote read is done: no block's shared memory is needed any more
    if (m > neg_inf()) token = mi;
  } else {
    // -- probability keys, in registers --
    const bool inf_case = m == pos_inf();
    u32 key[E];
    const bool t1 = P.temp == 1.f;  // z / 1 is z
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const float v = y[e], z = __fsub_rn(v, m);
      key[e] = __float_as_uint(inf_case ? (v == pos_inf() ? 1.f : 0.f) : exp_fixed(t1 ? z : __fdiv_rn(z, P.temp)));
    }
    GPK_SMC_STAMP(4);
    auto keepq = [&](u32 k) { return k != 0u && quant(k) >= P.qmin; };
    const bool has_k = P.top_k > 0 && P.top_k < (u32)V;
    const bool has_p = (P.flags & TOP_P) != 0;
    u32 tk = 0, tp = 0;
    int pass = 0;
    if (has_k || has_p) {
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const u32 k = key[e];
        if (e < ns && k != 0u) {
          const int b = bin_of(k);
          atomicAdd(&cs.hcnt[b], 1u);
          if (quant(k) >= P.qmin) cs.hmass[b].add(quant(k));
        }
      }
      GPK_SMC_STAMP(5);
      cl_sync();
      GPK_SMC_STAMP(6);
      for (int b = tid; b < NB; b += nt) {
        u32 c = 0;
        u64 ms = 0;
        for (u32 q = 0; q < (u32)CL; ++q) {
          const ClShared* o = cl_map(&cs, q);
          c += o->hcnt[b];
          ms += o->hmass[b].get();
        }
        cs.mcnt[b] = c;
        cs.mmass[b] = ms;
      }
      __syncthreads();
      GPK_SMC_STAMP(7);
      int bk = -1;
      if (has_k) {  // the k-th largest key (0 when fewer than k keys are nonzero: then only key != 0 filters)
        u64 above = 0;
        bk = search_top([&](int i) { return (u64)cs.mcnt[i]; }, NB, (u64)P.top_k, above, cs);
        GPK_SMC_STAMP(8);
        if (bk >= 0) {
          u64 mass_ge = 0;
          auto any = [](u32) { return true; };
          auto wk = [&](u32 k) { return keepq(k) ? quant(k) : (u64)0; };
          if (!cluster_threshold<false>(key, ns, bk, cs.mcnt[bk], any, wk, (u64)P.top_k - above, 0, tk, mass_ge, cs))
            tk = cluster_select<false>(key, ns, bk, any, wk, (u64)P.top_k - above, pass, mass_ge, cs);
          for (int b = tid; b < NB; b += nt) {  // the kept mass: keys >= tk
            if (b < bk) cs.mmass[b] = 0;
            if (b == bk) cs.mmass[b] = mass_ge;
          }
          __syncthreads();
        }
      }
      GPK_SMC_STAMP(9);
      if (has_p) {
        u64 loc = 0;
        for (int b = tid; b < NB; b += nt) loc += cs.mmass[b];
        const u64 total = block_sum(loc, cs.sh);
        u64 target = __double2ull_rz(__dmul_rn(__ull2double_rn(total), P.top_p));
        target = target > total ? total : (target < 1 ? 1 : target);
        u64 above = 0;
        const int bp = search_top([&](int i) { return cs.mmass[i]; }, NB, target, above, cs);
        GPK_SMC_STAMP(10);
        if (bp >= 0) {
          u64 unused = 0;
          auto kept = [&](u32 k) { return keepq(k) && k >= tk; };
          auto wq = [&](u32 k) { return quant(k); };
          if (!cluster_threshold<true>(key, ns, bp, cs.mcnt[bp], kept, wq, target - above, 1, tp, unused, cs))
            tp = cluster_select<true>(key, ns, bp, kept, wq, target - above, pass, unused, cs);
        }
      }
    }
    GPK_SMC_STAMP(11);
    // -- the draw: the first token, in token order, at which the running kept mass exceeds u --
    auto weight = [&](u32 k) { return keepq(k) && k >= tk && k >= tp ? quant(k) : (u64)0; };
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const u64 ws = warp_sum(e < ns ? weight(key[e]) : (u64)0);
      if (lane == 0) cs.part[e][warp] = ws;
    }
    __syncthreads();
    u64 mine = 0;
    for (int i = tid; i < ns * nw; i += nt) mine += cs.part[i / nw][i % nw];
    mine = block_sum(mine, cs.sh);
    if (tid == 0) cs.total = mine;
    GPK_SMC_STAMP(12);
    cl_sync();
    GPK_SMC_STAMP(13);
    u64 base = 0, grand = 0;
    for (u32 b = 0; b < (u32)CL; ++b) {
      const u64 t = cl_map(&cs, b)->total;
      if (b < rank) base += t;
      grand += t;
    }
    cl_sync();  // the last remote read is done
    GPK_SMC_STAMP(14);
    const u64 u = __umul64hi(token_bits(P.seed, (u64)(p - P.plen + 1)), grand);
    owner = grand == 0 ? rank == 0 : (base <= u && u < base + cs.total);
    if (owner && grand != 0) {  // block-uniform
      u64 before = 0;  // the (slice, warp) piece holding u, in token order
      const int f = search_first([&](int i) { return cs.part[i / nw][i % nw]; }, ns * nw, u - base, before, cs);
      const int fe = f < 0 ? -1 : f / nw, fw = f < 0 ? -1 : f % nw;
      const u64 acc = base + before;
      if (tid == 0) cs.sh.token = -1;
      __syncthreads();
      if (warp == fw) {
        u64 mine = 0;
#pragma unroll
        for (int e = 0; e < E; ++e)
          if (e == fe) mine = weight(key[e]);
        u64 inc = warp_prefix(mine);
        const unsigned hit = __ballot_sync(FULL, acc + inc > u);
        if (hit && lane == __ffs(hit) - 1) cs.sh.token = c0 + fe * nt + fw * 32 + lane;
      }
      __syncthreads();
      token = cs.sh.token;
    }
  }
  GPK_SMC_STAMP(15);
  if (!owner) return;
  if (tid == 0) {
    out[r] = token;
    if (next_tok != nullptr) {
      next_tok[s] = token < 0 ? 0 : token;
      next_pos[s] = p + 1 < max_pos ? p + 1 : max_pos;
    }
  }
  if (P.flags & LOGPROBS) logprobs_row(x, V, r, token, P.flags, lp, lp_ids, cs.sh);
  GPK_SMC_STAMP(16);
}

}  // namespace gpk_smc
