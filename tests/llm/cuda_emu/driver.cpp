// The emulated sampler kernels (one block per row; one cluster per row) as C functions for ctypes (tests/llm/test_sampling_kernel.py builds this with
// g++ -std=c++20 -DGPK_EMULATE -include emu.h).
#include "../../../gpk_array/_kernels/cuda/sampling.cu"

extern "C" void emu_sample(int threads, int rows, const float* logits, long long ld, int V, const long long* slots,
                           const long long* tok, const long long* pos, const unsigned long long* table, int* counts,
                           unsigned char* seen, const float* bias, long long* counted, const long long* prompt,
                           long long prompt_stride, float* work, long long ldw, long long* out, float* lp, int* lp_ids,
                           long long* next_tok, long long* next_pos, long long max_pos) {
  emu_launch(rows, threads, [=] {
    gpk_sample_f32(logits, ld, V, slots, tok, pos, table, counts, seen, bias, counted, prompt, prompt_stride, work,
                   ldw, out, lp, lp_ids, next_tok, next_pos, max_pos);
  });
}

extern "C" void emu_sample_cl(int threads, int rows, const float* logits, long long ld, int V, const long long* slots,
                              const long long* tok, const long long* pos, const unsigned long long* table,
                              int* counts, unsigned char* seen, const float* bias, long long* counted,
                              const long long* prompt, long long prompt_stride, long long* out, float* lp,
                              int* lp_ids, long long* next_tok, long long* next_pos, long long max_pos) {
  emu_launch(rows * gpk_smc::CL, threads, [=] {
    gpk_sample_cl_f32(logits, ld, V, slots, tok, pos, table, counts, seen, bias, counted, prompt, prompt_stride, out,
                      lp, lp_ids, next_tok, next_pos, max_pos);
  }, gpk_smc::CL);
}
