/* A stand-in for libcuda's launch entry points (host only), for the ctypes cluster-launch path of
 * gpk_array/_kernels/cutlass/launch_sm90.py, built with gcc against NVIDIA's cuda.h by
 * tests/kernels/test_cutlass_sm90_params.py. gpk_launch_layout() reports the header's sizeof/offsetof of
 * CUlaunchConfig, CUlaunchAttribute and CUlaunchAttributeValue (and the enum values the launcher uses),
 * so the ctypes structures can be checked against the real header; the cuLaunchKernel / cuLaunchKernelEx
 * / cuFuncSetAttribute stubs record what they were given, read back with gpk_last_launch(). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cuda.h>

enum { GPK_LAYOUT_N = 24, GPK_LAST_N = 32 };

int gpk_launch_layout(long long* out, int n) {
  long long v[GPK_LAYOUT_N] = {
      (long long)sizeof(CUlaunchConfig),
      (long long)offsetof(CUlaunchConfig, gridDimX), (long long)offsetof(CUlaunchConfig, gridDimY),
      (long long)offsetof(CUlaunchConfig, gridDimZ), (long long)offsetof(CUlaunchConfig, blockDimX),
      (long long)offsetof(CUlaunchConfig, blockDimY), (long long)offsetof(CUlaunchConfig, blockDimZ),
      (long long)offsetof(CUlaunchConfig, sharedMemBytes), (long long)offsetof(CUlaunchConfig, hStream),
      (long long)offsetof(CUlaunchConfig, attrs), (long long)offsetof(CUlaunchConfig, numAttrs),
      (long long)sizeof(CUlaunchAttribute), (long long)offsetof(CUlaunchAttribute, id),
      (long long)offsetof(CUlaunchAttribute, value), (long long)sizeof(CUlaunchAttributeValue),
      (long long)offsetof(CUlaunchAttributeValue, clusterDim.x),
      (long long)offsetof(CUlaunchAttributeValue, clusterDim.y),
      (long long)offsetof(CUlaunchAttributeValue, clusterDim.z),
      (long long)sizeof(CUlaunchAttributeID),
      (long long)_Alignof(CUlaunchAttribute), (long long)_Alignof(CUlaunchConfig),
      (long long)CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
      (long long)CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
      (long long)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
  };
  for (int i = 0; i < n && i < GPK_LAYOUT_N; ++i) out[i] = v[i];
  return GPK_LAYOUT_N;
}

/* Last launch: [0] 1 = cuLaunchKernel, 2 = cuLaunchKernelEx; [1] function; [2..4] grid; [5..7] block;
 * [8] shared bytes; [9] stream; [10] numAttrs; [11] attr[0].id; [12..14] attr[0] clusterDim; [15] address
 * of the Params (kernelParams[0]); [16..31] its first 128 bytes as 16 little-endian u64; [the extra
 * pointer must be null]. Set attributes: gpk_attrs[attr] = value. */
static long long gpk_last[GPK_LAST_N];
static long long gpk_attrs[64];
/* Last cuMemsetD8Async (stream-K workspaces): [0] address, [1] value, [2] bytes, [3] stream, [4] its sequence
 * number; [5] the sequence number of the last launch (memset before launch: [4] < [5]). */
static long long gpk_memset[6];
static long long gpk_seq;
/* Every attribute of the last cuLaunchKernelEx: (id, the value's first 4 bytes as an int) pairs, up to 8. */
static long long gpk_attr_list[16];

int gpk_last_attrs(long long* out) {
  memcpy(out, gpk_attr_list, sizeof(gpk_attr_list));
  return 16;
}

int gpk_last_memset(long long* out) {
  memcpy(out, gpk_memset, sizeof(gpk_memset));
  return 6;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
  gpk_memset[0] = (long long)dst; gpk_memset[1] = value; gpk_memset[2] = (long long)n;
  gpk_memset[3] = (long long)(uintptr_t)stream; gpk_memset[4] = ++gpk_seq;
  return CUDA_SUCCESS;
}

int gpk_last_launch(long long* out, long long* attrs) {
  memcpy(out, gpk_last, sizeof(gpk_last));
  memcpy(attrs, gpk_attrs, sizeof(gpk_attrs));
  return GPK_LAST_N;
}

static void gpk_params(void** kp) {
  gpk_last[15] = (long long)(uintptr_t)kp[0];
  memcpy(&gpk_last[16], kp[0], 128);
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str) {
  (void)error;
  *str = "CUDA_ERROR_INVALID_VALUE";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  (void)hfunc;
  if ((int)attrib < 0 || (int)attrib >= 64) return CUDA_ERROR_INVALID_VALUE;
  gpk_attrs[(int)attrib] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem, CUstream stream,
    void** kernelParams, void** extra) {
  if (extra) return CUDA_ERROR_INVALID_VALUE;
  memset(gpk_last, 0, sizeof(gpk_last));
  gpk_last[0] = 1; gpk_last[1] = (long long)(uintptr_t)f;
  gpk_last[2] = gx; gpk_last[3] = gy; gpk_last[4] = gz;
  gpk_last[5] = bx; gpk_last[6] = by; gpk_last[7] = bz;
  gpk_last[8] = smem; gpk_last[9] = (long long)(uintptr_t)stream;
  gpk_memset[5] = ++gpk_seq;
  gpk_params(kernelParams);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
    void** extra) {
  if (extra || (config->numAttrs && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  memset(gpk_last, 0, sizeof(gpk_last));
  gpk_last[0] = 2; gpk_last[1] = (long long)(uintptr_t)f;
  gpk_last[2] = config->gridDimX; gpk_last[3] = config->gridDimY; gpk_last[4] = config->gridDimZ;
  gpk_last[5] = config->blockDimX; gpk_last[6] = config->blockDimY; gpk_last[7] = config->blockDimZ;
  gpk_last[8] = config->sharedMemBytes; gpk_last[9] = (long long)(uintptr_t)config->hStream;
  gpk_last[10] = config->numAttrs;
  gpk_memset[5] = ++gpk_seq;
  memset(gpk_attr_list, 0, sizeof(gpk_attr_list));
  for (unsigned int i = 0; i < config->numAttrs && i < 8; ++i) {
    int v;
    memcpy(&v, &config->attrs[i].value, sizeof(v));
    gpk_attr_list[2 * i] = (long long)config->attrs[i].id;
    gpk_attr_list[2 * i + 1] = v;
  }
  if (config->numAttrs) {
    gpk_last[11] = (long long)config->attrs[0].id;
    gpk_last[12] = config->attrs[0].value.clusterDim.x;
    gpk_last[13] = config->attrs[0].value.clusterDim.y;
    gpk_last[14] = config->attrs[0].value.clusterDim.z;
  }
  gpk_params(kernelParams);
  return CUDA_SUCCESS;
}
