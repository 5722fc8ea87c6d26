// A host C++ stand-in for the CUDA execution model, enough to run gpk_array/_kernels/cuda/sampling.cu on the CPU
// (compiled with -DGPK_EMULATE -include emu.h): every CUDA thread of a block is a std::thread, __shared__ variables
// are function statics (one block runs at a time), __syncthreads is a barrier of the block's threads and a warp's
// shuffles and ballots exchange values through a barrier of its 32 lanes. Float intrinsics are the plain IEEE
// operations (compiled with -ffp-contract=off, so nothing is fused); __umulhi / __umul64hi are exact. The tests
// (tests/llm/test_sampling_kernel.py) compare the emulated kernel with gpk_array.llm.sampling.run_numpy: this checks
// the kernel's logic (reductions, radix selects, scans, state updates, every branch) without a GPU; the GPU tests
// check the real thing.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static

struct dim3_ { unsigned x, y, z; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) float4 { float x, y, z, w; };
inline thread_local dim3_ threadIdx;
inline thread_local dim3_ blockIdx;
inline dim3_ blockDim;
inline dim3_ gridDim;

namespace emu {
struct Warp {
  std::barrier<> bar{32};
  unsigned long long slot[32];
};
inline thread_local unsigned rank;  // the thread's block within its cluster
inline unsigned cluster = 1;
inline std::vector<std::unique_ptr<std::barrier<>>> block_bars;  // one per block of a cluster
inline std::unique_ptr<std::barrier<>> cluster_bar;
inline std::vector<std::unique_ptr<Warp>> warps;  // block rank's warp w: warps[rank * warps per block + w]
inline Warp& warp() { return *warps[rank * (blockDim.x >> 5) + (threadIdx.x >> 5)]; }
}  // namespace emu

inline void __syncthreads() { emu::block_bars[emu::rank]->arrive_and_wait(); }

template <class V>
inline V emu_exchange(V v, int src_lane) {
  static_assert(sizeof(V) <= 8, "shuffle of more than 8 bytes");
  emu::Warp& w = emu::warp();
  const int lane = threadIdx.x & 31;
  unsigned long long raw = 0;
  std::memcpy(&raw, &v, sizeof(V));
  w.slot[lane] = raw;
  w.bar.arrive_and_wait();
  unsigned long long got = w.slot[src_lane & 31];
  w.bar.arrive_and_wait();
  V out;
  std::memcpy(&out, &got, sizeof(V));
  return out;
}
template <class V> inline V __shfl_xor_sync(unsigned, V v, int o) { return emu_exchange(v, (threadIdx.x & 31) ^ o); }
template <class V> inline V __shfl_up_sync(unsigned, V v, int o) {
  const int lane = threadIdx.x & 31;
  V got = emu_exchange(v, lane >= o ? lane - o : lane);
  return got;
}
inline unsigned __ballot_sync(unsigned, bool pred) {
  emu::Warp& w = emu::warp();
  const int lane = threadIdx.x & 31;
  w.slot[lane] = pred ? 1ull : 0ull;
  w.bar.arrive_and_wait();
  unsigned b = 0;
  for (int i = 0; i < 32; ++i) b |= (unsigned)w.slot[i] << i;
  w.bar.arrive_and_wait();
  return b;
}
template <class V> inline V __shfl_down_sync(unsigned, V v, int o) {
  const int lane = threadIdx.x & 31;
  return emu_exchange(v, lane + o < 32 ? lane + o : lane);
}
template <class V> inline V __shfl_sync(unsigned, V v, int src) { return emu_exchange(v, src); }
inline unsigned __match_any_sync(unsigned, unsigned v) {
  emu::Warp& w = emu::warp();
  const int lane = threadIdx.x & 31;
  w.slot[lane] = v;
  w.bar.arrive_and_wait();
  unsigned m = 0;
  for (int i = 0; i < 32; ++i) m |= (unsigned)(w.slot[i] == v) << i;
  w.bar.arrive_and_wait();
  return m;
}
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp().bar.arrive_and_wait(); }
inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }

template <class V, class W> inline V atomicAdd(V* p, W v) { return __atomic_fetch_add(p, (V)v, __ATOMIC_SEQ_CST); }

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ull2double_rn(unsigned long long v) { return (double)v; }
inline unsigned long long __double2ull_rz(double v) { return (unsigned long long)v; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
using std::max;
using std::min;
inline float fmaxf(float a, float b) { return std::fmax(a, b); }

// Thread block clusters (sampling.cu's cluster kernel): the block's rank in its cluster, a barrier of every
// thread of the cluster, and another block's copy of a shared variable. The kernel keeps all its shared state in
// one object per block, declared as an array of emu::cluster objects indexed by rank (GPK_CLUSTER_SHARED), so
// another rank's copy lies a whole number of objects away.
inline unsigned gpk_cl_rank() { return emu::rank; }
inline void gpk_cl_sync() { emu::cluster_bar->arrive_and_wait(); }
template <class S, class T>
inline T* gpk_cl_map(T* p, unsigned r) {
  return reinterpret_cast<T*>(reinterpret_cast<char*>(p) + ((long long)r - (long long)emu::rank) * (long long)sizeof(S));
}

// Run kernel(args...) over `blocks` blocks of `threads` threads (a multiple of 32, at most 1024), one cluster of
// `cluster` blocks at a time (blocks a multiple of it), on a pool of cluster * threads std::threads.
template <class F>
inline void emu_launch(int blocks, int threads, F kernel, int cluster = 1) {
  blockDim = {(unsigned)threads, 1, 1};
  gridDim = {(unsigned)blocks, 1, 1};
  emu::cluster = (unsigned)cluster;
  emu::block_bars.clear();
  for (int c = 0; c < cluster; ++c) emu::block_bars.push_back(std::make_unique<std::barrier<>>(threads));
  emu::cluster_bar = std::make_unique<std::barrier<>>(threads * cluster);
  emu::warps.clear();
  for (int w = 0; w < cluster * threads / 32; ++w) emu::warps.push_back(std::make_unique<emu::Warp>());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads * cluster; ++t) {
    pool.emplace_back([=] {
      emu::rank = (unsigned)(t / threads);
      threadIdx = {(unsigned)(t % threads), 0, 0};
      for (int b = 0; b < blocks; b += cluster) {
        blockIdx = {(unsigned)(b + (int)emu::rank), 0, 0};
        kernel();
        emu::cluster_bar->arrive_and_wait();  // the cluster is done before the next reuses the statics
      }
    });
  }
  for (auto& th : pool) th.join();
}
