/* A host-memory stand-in for the part of libcublasLt that gpk_array/_kernels/blas.py calls, for tests without a GPU.
 *
 * Built by tests/kernels/test_blas.py. With -DGPK_REAL_HEADER it includes NVIDIA's cublasLt.h, so every definition
 * below must match the real prototype or the build fails; without it, the few typedefs come from the block below.
 * Attribute sizes are checked against the value types the header documents; "device" pointers are host pointers;
 * the GEMM is computed in double (epilogues: bias, ReLU, GELU tanh approximation) and stored in the output type.
 * Written for these tests; it is not NVIDIA code. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPK_REAL_HEADER
#include <cublasLt.h>
#else
typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 } cublasStatus_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType;
typedef cudaDataType cudaDataType_t;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct { uint64_t data[14]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t* cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t* cublasLtMatmulDesc_t;
typedef struct { uint64_t data[12]; } cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t* cublasLtMatmulPreference_t;
typedef int cublasLtMatmulDescAttributes_t;
typedef int cublasLtMatrixLayoutAttribute_t;
typedef int cublasLtMatmulPreferenceAttributes_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
#define CUBLASWINAPI
#endif
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "heuristic result layout");
_Static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "algo layout");

#define OK CUBLAS_STATUS_SUCCESS
#define BAD CUBLAS_STATUS_INVALID_VALUE
#define MAGIC 0xC0FFEEu
#define STUB_WORKSPACE 1024u

typedef struct { int magic; } Handle;
typedef struct {
  int compute, scale, transa, transb;
  uint32_t epilogue;
  const void* bias;
  int32_t bias_type;
} Desc;
typedef struct {
  int type;
  uint64_t rows, cols;
  int64_t ld, stride;
  int32_t batch;
} Layout;
typedef struct {
  uint64_t max_ws;
  uint32_t align[4];
} Pref;

static long heuristic_calls, matmul_calls;
static void* last_stream;
long stub_heuristic_calls(void) { return heuristic_calls; }
long stub_matmul_calls(void) { return matmul_calls; }
void* stub_last_stream(void) { return last_stream; }

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* h) {
  Handle* p = calloc(1, sizeof(Handle));
  p->magic = MAGIC;
  *h = (cublasLtHandle_t)p;
  return OK;
}
cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t h) { free(h); return OK; }
size_t CUBLASWINAPI cublasLtGetVersion(void) { return 131000; }
const char* CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t s) {
  return s == OK ? "CUBLAS_STATUS_SUCCESS" : s == BAD ? "CUBLAS_STATUS_INVALID_VALUE" : "CUBLAS_STATUS_OTHER";
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t c, cudaDataType_t s) {
  if (!((c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_FAST_TF32) && s == CUDA_R_32F) &&
      !(c == CUBLAS_COMPUTE_64F && s == CUDA_R_64F))
    return BAD;
  Desc* p = calloc(1, sizeof(Desc));
  p->compute = c; p->scale = s; p->epilogue = 1; p->bias_type = -1;
  *d = (cublasLtMatmulDesc_t)p;
  return OK;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { free(d); return OK; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                                           const void* buf, size_t n) {
  Desc* p = (Desc*)d;
  switch ((int)a) {
    case 3: case 4: {  /* TRANSA, TRANSB: int32_t */
      int32_t v;
      if (n != 4) return BAD;
      memcpy(&v, buf, 4);
      if (v != 0 && v != 1) return BAD;
      if (a == 3) p->transa = v; else p->transb = v;
      return OK;
    }
    case 7:  /* EPILOGUE: uint32_t */
      if (n != 4) return BAD;
      memcpy(&p->epilogue, buf, 4);
      return (p->epilogue == 1 || p->epilogue == 2 || p->epilogue == 4 || p->epilogue == 6 || p->epilogue == 32 ||
              p->epilogue == 36) ? OK : BAD;
    case 8:  /* BIAS_POINTER: const void* */
      if (n != sizeof(void*)) return BAD;
      memcpy(&p->bias, buf, n);
      return OK;
    case 26:  /* BIAS_DATA_TYPE: int32_t */
      if (n != 4) return BAD;
      memcpy(&p->bias_type, buf, 4);
      return OK;
    default: return BAD;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType t, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  if (t != CUDA_R_32F && t != CUDA_R_64F && t != CUDA_R_16F && t != CUDA_R_16BF) return BAD;
  if (rows == 0 || cols == 0 || ld < (int64_t)rows) return BAD;
  Layout* p = calloc(1, sizeof(Layout));
  p->type = t; p->rows = rows; p->cols = cols; p->ld = ld; p->batch = 1;
  *l = (cublasLtMatrixLayout_t)p;
  return OK;
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { free(l); return OK; }
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a,
                                                             const void* buf, size_t n) {
  Layout* p = (Layout*)l;
  if (a == 5) { if (n != 4) return BAD; memcpy(&p->batch, buf, 4); return p->batch >= 1 ? OK : BAD; }
  if (a == 6) { if (n != 8) return BAD; memcpy(&p->stride, buf, 8); return p->stride >= 0 ? OK : BAD; }
  return BAD;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  Pref* q = calloc(1, sizeof(Pref));
  for (int i = 0; i < 4; i++) q->align[i] = 256;
  *p = (cublasLtMatmulPreference_t)q;
  return OK;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { free(p); return OK; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                                 cublasLtMatmulPreferenceAttributes_t a,
                                                                 const void* buf, size_t n) {
  Pref* q = (Pref*)p;
  if (a == 1) { if (n != 8) return BAD; memcpy(&q->max_ws, buf, 8); return OK; }
  if (a >= 5 && a <= 8) {
    uint32_t v; if (n != 4) return BAD; memcpy(&v, buf, 4);
    if (v == 0 || v > 256 || (v & (v - 1))) return BAD;
    q->align[a - 5] = v;
    return OK;
  }
  return BAD;
}

/* dimensions of op(X) */
static uint64_t op_rows(const Layout* l, int t) { return t ? l->cols : l->rows; }
static uint64_t op_cols(const Layout* l, int t) { return t ? l->rows : l->cols; }

static cublasStatus_t validate(const Desc* d, const Layout* A, const Layout* B, const Layout* C, const Layout* D) {
  if (!d || !A || !B || !C || !D) return BAD;
  if (A->type != B->type || A->type != C->type || A->type != D->type) return BAD;
  if (memcmp(C, D, sizeof(Layout)) != 0) return BAD;
  if ((A->type == CUDA_R_64F) != (d->compute == CUBLAS_COMPUTE_64F)) return BAD;
  if (d->compute == CUBLAS_COMPUTE_32F_FAST_TF32 && A->type != CUDA_R_32F) return BAD;
  if (op_rows(A, d->transa) != D->rows || op_cols(B, d->transb) != D->cols ||
      op_cols(A, d->transa) != op_rows(B, d->transb))
    return BAD;
  if (A->batch != D->batch || B->batch != D->batch) return BAD;
  if (d->epilogue & 4) { if (d->bias_type != D->type || d->bias == NULL) return BAD; }
  else if (d->bias_type != -1) return BAD;
  return OK;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                                           cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                                           cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                                           cublasLtMatmulPreference_t pref, int requested,
                                                           cublasLtMatmulHeuristicResult_t results[], int* count) {
  heuristic_calls++;
  if (!h || ((Handle*)h)->magic != (int)MAGIC || !pref || requested < 1 || !results || !count) return BAD;
  cublasStatus_t s = validate((Desc*)d, (Layout*)A, (Layout*)B, (Layout*)C, (Layout*)D);
  if (s != OK) return s;
  if (((Pref*)pref)->max_ws < STUB_WORKSPACE) { *count = 0; return OK; }
  memset(&results[0], 0, sizeof(results[0]));
  results[0].algo.data[0] = MAGIC;
  results[0].workspaceSize = STUB_WORKSPACE;
  results[0].state = OK;
  results[0].wavesCount = 1.0f;
  *count = 1;
  return OK;
}

static double load(int t, const char* base, int64_t i) {
  switch (t) {
    case CUDA_R_32F: return ((const float*)base)[i];
    case CUDA_R_64F: return ((const double*)base)[i];
    case CUDA_R_16F: return (double)((const _Float16*)base)[i];
    default: {
      uint32_t bits = (uint32_t)((const uint16_t*)base)[i] << 16;
      float f; memcpy(&f, &bits, 4); return f;
    }
  }
}

static void store(int t, char* base, int64_t i, double v) {
  switch (t) {
    case CUDA_R_32F: ((float*)base)[i] = (float)v; break;
    case CUDA_R_64F: ((double*)base)[i] = v; break;
    case CUDA_R_16F: ((_Float16*)base)[i] = (_Float16)v; break;
    default: {  /* bfloat16, round to nearest even (no NaNs here) */
      float f = (float)v; uint32_t bits; memcpy(&bits, &f, 4);
      bits += 0x7FFFu + ((bits >> 16) & 1u);
      ((uint16_t*)base)[i] = (uint16_t)(bits >> 16);
    }
  }
}

/* element (i, j) of op(X), X column-major with leading dimension ld */
static double at(const Layout* l, int t, const char* base, uint64_t i, uint64_t j) {
  return t ? load(l->type, base, (int64_t)j + (int64_t)i * l->ld) : load(l->type, base, (int64_t)i + (int64_t)j * l->ld);
}

static int size_of(int t) { return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2; }

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                                           const void* Ap, cublasLtMatrixLayout_t Adesc, const void* Bp,
                                           cublasLtMatrixLayout_t Bdesc, const void* beta, const void* Cp,
                                           cublasLtMatrixLayout_t Cdesc, void* Dp, cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace, size_t wsSize,
                                           cudaStream_t stream) {
  const Desc* d = (const Desc*)desc;
  const Layout *A = (const Layout*)Adesc, *B = (const Layout*)Bdesc, *C = (const Layout*)Cdesc, *D = (const Layout*)Ddesc;
  if (!h || ((Handle*)h)->magic != (int)MAGIC || !alpha || !beta || !Ap || !Bp || !Dp) return BAD;
  cublasStatus_t s = validate(d, A, B, C, D);
  if (s != OK) return s;
  if (!algo || algo->data[0] != MAGIC || !workspace || wsSize < STUB_WORKSPACE) return BAD;
  double al = d->scale == CUDA_R_64F ? *(const double*)alpha : *(const float*)alpha;
  double be = d->scale == CUDA_R_64F ? *(const double*)beta : *(const float*)beta;
  int es = size_of(D->type);
  uint64_t m = D->rows, n = D->cols, k = op_cols(A, d->transa);
  for (int32_t b = 0; b < D->batch; b++) {
    const char* a = (const char*)Ap + (int64_t)b * A->stride * es;
    const char* bb = (const char*)Bp + (int64_t)b * B->stride * es;
    const char* c = (const char*)Cp + (int64_t)b * C->stride * es;
    char* dd = (char*)Dp + (int64_t)b * D->stride * es;
    for (uint64_t i = 0; i < m; i++)
      for (uint64_t j = 0; j < n; j++) {
        double acc = 0;
        for (uint64_t l = 0; l < k; l++) acc += at(A, d->transa, a, i, l) * at(B, d->transb, bb, l, j);
        double v = al * acc + (be != 0 ? be * load(C->type, c, (int64_t)i + (int64_t)j * C->ld) : 0);
        if (d->epilogue & 4) v += load(d->bias_type, (const char*)d->bias, (int64_t)i);
        if (d->epilogue & 2) v = v > 0 ? v : 0;
        if (d->epilogue & 32) v = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        store(D->type, dd, (int64_t)i + (int64_t)j * D->ld, v);
      }
  }
  matmul_calls++;
  last_stream = stream;
  return OK;
}
