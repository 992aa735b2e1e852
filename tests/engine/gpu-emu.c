/* gpu-emu.c: the device API of engine/src/cuda (lm-cuda-rt.h, lm-cuda-matvec.h,
 * lm-cuda-ops.h) emulated on the host with the CPU engine's functions (the
 * products in the activation mode asked for: LM_CUDA_ACT_Q8 is the CPU's
 * LM_ACT_NATIVE),
 * so that the GPU backend's C code (lm-cuda-model.c, lm-cuda-session.c,
 * lm-cuda-forward.c) and the GPU test programs run on any machine.
 *
 * Each operation does what its header says, synchronously; the model
 * vectors a kernel reads (norm weights, biases, the shared expert's gate)
 * must lie in device memory, as on a GPU. CUDA graphs are
 * emulated too: between capture begin and end the operations are recorded
 * with their arguments (pointers, not the data behind them) and a launch
 * runs the record again, so a replay reads token, position and expert
 * choice from memory as a real graph does. As in CUDA, a stream sync or a
 * copy from or to pageable host memory breaks a capture. The probe
 * (lm-gpu.h) says a GPU is present. For the device LoRA hook, a test's
 * hook enqueues its work with gpu_emu_enqueue (a "kernel" on the stream),
 * checks its pointers with gpu_emu_is_device, and gpu_emu_copies_to_host
 * shows whether anything crossed to the host.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "forward-ops.h"
#include "gpu-emu.h"
#include "lm-cuda-matvec.h"
#include "lm-cuda-ops.h"
#include "lm-cuda-rt.h"
#include "lm-gpu.h"
#include "quant.h"

size_t gpu_emu_free_bytes = (size_t) 1 << 34;
atomic_size_t gpu_emu_live_allocations;
atomic_size_t gpu_emu_graph_launches;
atomic_size_t gpu_emu_copies_to_host;

/* ---- the probe: the emulated GPU is always there ---- */

bool
lm_gpu_available (char *why, size_t why_len)
{
  return true;
}

bool
lm_gpu_built (void)
{
  return true;
}

/* ---- memory a capture may copy from or to: device, pinned, registered ---- */

#define MAX_REGIONS 4096

static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct {
  const char *p;
  size_t n;
  bool device;             /* lm_cuda_rt_malloc, not pinned or registered host memory */
} Region;

static Region regions[MAX_REGIONS];
static size_t n_regions;

static void
region_add (const void *p, size_t n, bool device)
{
  pthread_mutex_lock (&regions_lock);
  if (n_regions < MAX_REGIONS)
    regions[n_regions++] = (Region) { p, n, device };
  pthread_mutex_unlock (&regions_lock);
}

static void
region_remove (const void *p)
{
  pthread_mutex_lock (&regions_lock);
  for (size_t i = 0; i < n_regions; i++)
    if (regions[i].p == p)
      {
        regions[i] = regions[--n_regions];
        break;
      }
  pthread_mutex_unlock (&regions_lock);
}

static bool
region_find (const void *p, size_t n, bool device_only)
{
  bool found = false;
  pthread_mutex_lock (&regions_lock);
  for (size_t i = 0; i < n_regions && !found; i++)
    found = (!device_only || regions[i].device) && (const char *) p >= regions[i].p
            && (const char *) p + n <= regions[i].p + regions[i].n;
  pthread_mutex_unlock (&regions_lock);
  return found;
}

static bool
region_holds (const void *p, size_t n)
{
  return region_find (p, n, false);
}

bool
gpu_emu_is_device (const void *p, size_t bytes)
{
  return region_find (p, bytes, true);
}

/* ---- recording: a capture is per thread (cudaStreamCaptureModeThreadLocal) ---- */

typedef LmStatus (*EmuRun) (const void *args);

typedef struct {
  EmuRun run;
  void *args;
} EmuCall;

struct CUgraphExec_st {
  EmuCall *calls;
  size_t n;
};

static _Thread_local struct {
  bool on, broken;
  EmuCall *calls;
  size_t n, cap;
} capture;

static void
calls_free (EmuCall *calls, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (calls[i].args);
  free (calls);
}

/* Runs @run now, or records it (with a copy of @args) during a capture. */
static LmStatus
dispatch (EmuRun run, const void *args, size_t size)
{
  if (!capture.on)
    return run (args);
  if (capture.n == capture.cap)
    {
      capture.cap = capture.cap ? 2 * capture.cap : 256;
      capture.calls = realloc (capture.calls, capture.cap * sizeof *capture.calls);
    }
  void *copy = malloc (size);
  memcpy (copy, args, size);
  capture.calls[capture.n++] = (EmuCall) { run, copy };
  return LM_OK;
}

/* What CUDA refuses during a capture: it fails, and so does the capture. */
static LmStatus
capture_violation (void)
{
  capture.broken = true;
  return LM_ERR_DEVICE;
}

/* ---- runtime ---- */

const char *
lm_cuda_rt_error (void)
{
  return "emulated device error";
}

static LmStatus
emu_alloc (void **out, size_t bytes, bool device)
{
  size_t size = (bytes + 255) / 256 * 256 + 256;
  *out = aligned_alloc (256, size);
  if (*out == NULL)
    return LM_ERR_DEVICE;
  /* Device memory starts as garbage: NaN floats show any read before a write. */
  memset (*out, 0xff, size);
  region_add (*out, size, device);
  gpu_emu_live_allocations++;
  return LM_OK;
}

LmStatus
lm_cuda_rt_malloc (void **out, size_t bytes)
{
  return emu_alloc (out, bytes, true);
}

void
lm_cuda_rt_free (void *p)
{
  if (p == NULL)
    return;
  region_remove (p);
  gpu_emu_live_allocations--;
  free (p);
}

LmStatus
lm_cuda_rt_host_alloc (void **out, size_t bytes)
{
  return emu_alloc (out, bytes, false);
}

void
lm_cuda_rt_host_free (void *p)
{
  lm_cuda_rt_free (p);
}

LmStatus
lm_cuda_rt_host_register (void *p, size_t bytes)
{
  region_add (p, bytes, false);
  return LM_OK;
}

void
lm_cuda_rt_host_unregister (void *p)
{
  region_remove (p);
}

LmStatus
lm_cuda_rt_mem_info (size_t *free_bytes, size_t *total_bytes)
{
  *free_bytes = gpu_emu_free_bytes;
  *total_bytes = (size_t) 1 << 34;
  return LM_OK;
}

LmStatus
lm_cuda_rt_stream_new (LmCudaStream *out)
{
  static int dummy;
  *out = (LmCudaStream) (void *) &dummy;
  return LM_OK;
}

void
lm_cuda_rt_stream_free (LmCudaStream stream)
{
}

LmStatus
lm_cuda_rt_sync (LmCudaStream stream)
{
  return capture.on ? capture_violation () : LM_OK;
}

typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
} CopyArgs;

static LmStatus
copy_run (const void *p)
{
  const CopyArgs *a = p;
  if (gpu_emu_is_device (a->src, a->bytes) && !gpu_emu_is_device (a->dst, a->bytes))
    gpu_emu_copies_to_host++;
  memmove (a->dst, a->src, a->bytes);
  return LM_OK;
}

LmStatus
lm_cuda_rt_copy (LmCudaStream stream, void *dst, const void *src, size_t bytes)
{
  if (capture.on && (!region_holds (dst, bytes) || !region_holds (src, bytes)))
    return capture_violation ();
  CopyArgs a = { dst, src, bytes };
  return dispatch (copy_run, &a, sizeof a);
}

/* ---- work a device hook enqueues (its "kernels") ---- */

typedef struct {
  GpuEmuWork fn;
  void *data;
} WorkArgs;

static LmStatus
work_run (const void *p)
{
  const WorkArgs *a = p;
  return a->fn (a->data);
}

LmStatus
gpu_emu_enqueue (void *stream, GpuEmuWork fn, void *data)
{
  if (stream == NULL || fn == NULL)
    return LM_ERR_DEVICE;
  WorkArgs a = { fn, data };
  return dispatch (work_run, &a, sizeof a);
}

LmStatus
lm_cuda_rt_upload (void *dst, const void *src, size_t bytes)
{
  if (capture.on)
    return capture_violation ();
  memcpy (dst, src, bytes);
  return LM_OK;
}

typedef struct {
  void *dst;
  int value;
  size_t bytes;
} MemsetArgs;

static LmStatus
memset_run (const void *p)
{
  const MemsetArgs *a = p;
  memset (a->dst, a->value, a->bytes);
  return LM_OK;
}

LmStatus
lm_cuda_rt_memset (LmCudaStream stream, void *dst, int value, size_t bytes)
{
  MemsetArgs a = { dst, value, bytes };
  return dispatch (memset_run, &a, sizeof a);
}

/* Streams run in program order here: the order between two streams holds
 * by itself. */
LmStatus
lm_cuda_rt_event_new (LmCudaEvent *out)
{
  static char token;
  *out = (LmCudaEvent) &token;
  return LM_OK;
}

void
lm_cuda_rt_event_free (LmCudaEvent event)
{
}

LmStatus
lm_cuda_rt_after (LmCudaStream waiter, LmCudaStream done, LmCudaEvent event)
{
  return event != NULL ? LM_OK : LM_ERR_INVALID_ARGUMENT;
}

LmStatus
lm_cuda_rt_capture_begin (LmCudaStream stream)
{
  if (capture.on)
    return LM_ERR_DEVICE;
  capture.on = true;
  capture.broken = false;
  capture.n = 0;
  return LM_OK;
}

LmStatus
lm_cuda_rt_capture_end (LmCudaStream stream, LmCudaGraph *out)
{
  *out = NULL;
  if (!capture.on)
    return LM_ERR_DEVICE;
  capture.on = false;
  if (capture.broken || capture.n == 0)
    {
      calls_free (capture.calls, capture.n);
      capture.calls = NULL;
      capture.n = capture.cap = 0;
      return LM_ERR_DEVICE;
    }
  LmCudaGraph graph = malloc (sizeof *graph);
  *graph = (struct CUgraphExec_st) { capture.calls, capture.n };
  capture.calls = NULL;
  capture.n = capture.cap = 0;
  *out = graph;
  return LM_OK;
}

LmStatus
lm_cuda_rt_graph_launch (LmCudaGraph graph, LmCudaStream stream)
{
  gpu_emu_graph_launches++;
  for (size_t i = 0; i < graph->n; i++)
    {
      LmStatus st = graph->calls[i].run (graph->calls[i].args);
      if (st != LM_OK)
        return st;
    }
  return LM_OK;
}

void
lm_cuda_rt_graph_free (LmCudaGraph graph)
{
  if (graph == NULL)
    return;
  calls_free (graph->calls, graph->n);
  free (graph);
}

/* ---- products ---- */

bool
lm_cuda_matvec_supports (LmTensorType type)
{
  return type == LM_TYPE_F32 || type == LM_TYPE_F16 || type == LM_TYPE_BF16
         || type == LM_TYPE_Q8_0 || type == LM_TYPE_Q4_K || type == LM_TYPE_Q5_K
         || type == LM_TYPE_Q6_K || type == LM_TYPE_Q4_0 || type == LM_TYPE_Q4_1
         || type == LM_TYPE_Q5_0 || type == LM_TYPE_Q5_1 || type == LM_TYPE_Q2_K
         || type == LM_TYPE_Q3_K;
}

/* The CPU's own product in the matching activation mode: LM_CUDA_ACT_Q8 is
 * LM_ACT_NATIVE (8-bit blocks for the quantised types, f32 for the others). */
static void
product (LmCudaActMode mode, LmTensorType type, const void *w, uint32_t n_in, uint32_t n_out,
         const float *x, uint32_t n, float *y)
{
  LmActMode cpu_mode = mode == LM_CUDA_ACT_Q8 ? LM_ACT_NATIVE : LM_ACT_F32;
  lm_matmul_ex (lm_kernels_best (), cpu_mode, NULL, type, w, n_in, n_out, x, n, y);
}

/* Every product: @n rows; row i reads x + x_row(i) * n_in of the matrix of
 * expert e(i) and writes y + y_row(i) * n_out (accumulating if asked). */
typedef struct {
  LmCudaActMode mode;
  LmTensorType type;
  const void *w;
  size_t mat_stride;
  uint32_t n_in, n_out, n;
  const int32_t *sel;        /* per row expert (decode experts), or NULL */
  uint32_t expert;           /* otherwise this one */
  const float *x;
  size_t x_stride;           /* floats between the rows of x when x_rows is NULL */
  const int32_t *x_rows, *y_rows;
  float *y;
  bool accumulate;
} ProductArgs;

static LmStatus
product_run (const void *p)
{
  const ProductArgs *a = p;
  float *tmp = malloc (a->n_out * sizeof (float));
  for (uint32_t i = 0; i < a->n; i++)
    {
      int64_t e = a->sel != NULL ? (int64_t) a->sel[i] : (int64_t) a->expert;
      const float *x = a->x + (a->x_rows != NULL ? (size_t) a->x_rows[i] * a->n_in : i * a->x_stride);
      float *y = a->y + (size_t) (a->y_rows != NULL ? a->y_rows[i] : (int32_t) i) * a->n_out;
      if (e < 0)
        memset (tmp, 0, a->n_out * sizeof (float));
      else
        product (a->mode, a->type, (const char *) a->w + (size_t) e * a->mat_stride, a->n_in, a->n_out, x,
                 1, tmp);
      for (uint32_t o = 0; o < a->n_out; o++)
        y[o] = a->accumulate ? y[o] + tmp[o] : tmp[o];
    }
  free (tmp);
  return LM_OK;
}

static LmStatus
product_dispatch (const ProductArgs *a)
{
  if (a->mode != LM_CUDA_ACT_F32 && a->mode != LM_CUDA_ACT_Q8)
    return LM_ERR_INVALID_ARGUMENT;
  return dispatch (product_run, a, sizeof *a);
}

LmStatus
lm_cuda_matvec_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type, const void *w,
                   uint32_t n_in, uint32_t n_out, const float *x, float *y, bool accumulate)
{
  ProductArgs a = { mode, type, w, 0, n_in, n_out, 1, NULL, 0, x, 0, NULL, NULL, y, accumulate };
  return product_dispatch (&a);
}

LmStatus
lm_cuda_matvec (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, float *y, bool accumulate)
{
  return lm_cuda_matvec_ex (stream, LM_CUDA_ACT_F32, type, w, n_in, n_out, x, y, accumulate);
}

LmStatus
lm_cuda_matmul_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type, const void *w,
                   uint32_t n_in, uint32_t n_out, const float *x, uint32_t n, float *y)
{
  ProductArgs a = { mode, type, w, 0, n_in, n_out, n, NULL, 0, x, n_in, NULL, NULL, y, false };
  return product_dispatch (&a);
}

LmStatus
lm_cuda_matmul (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, uint32_t n, float *y)
{
  return lm_cuda_matmul_ex (stream, LM_CUDA_ACT_F32, type, w, n_in, n_out, x, n, y);
}

LmStatus
lm_cuda_matvec_experts_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                           const void *w, size_t mat_stride, uint32_t n_in, uint32_t n_out,
                           const int32_t *sel, uint32_t k, const float *x, size_t x_stride,
                           float *y)
{
  ProductArgs a = { mode, type, w, mat_stride, n_in, n_out, k, sel, 0, x, x_stride, NULL, NULL,
                    y, false };
  return product_dispatch (&a);
}

/* The fused decode products: each slot as its own product, the SwiGLU
 * input formed first by the host's SwiGLU (as lm_cuda_swiglu here). */
static LmStatus
fused_run (const void *p)
{
  const struct {
    LmCudaActMode mode;
    LmCudaProduct pr;
  } *a = p;
  const LmCudaProduct *pr = &a->pr;
  float *x = malloc ((size_t) pr->n_in * sizeof (float));
  for (uint32_t half = 0; half < (pr->w_pair != NULL ? 2u : 1u); half++)
    for (uint32_t j = 0; j < pr->k; j++)
      {
        const float *xj = pr->x + (size_t) j * pr->x_stride;
        memcpy (x, xj, (size_t) pr->n_in * sizeof (float));
        if (pr->x_up != NULL)
          lm_swiglu (lm_kernels_best (), x, pr->x_up + (size_t) j * pr->x_stride, pr->n_in);
        int64_t e = pr->sel != NULL ? (int64_t) pr->sel[j] : 0;
        float *y = (half ? pr->y_pair : pr->y) + (size_t) j * pr->n_out;
        if (e < 0)
          memset (y, 0, (size_t) pr->n_out * sizeof (float));
        else
          product (a->mode, pr->type,
                   (const char *) (half ? pr->w_pair : pr->w) + (size_t) e * pr->mat_stride,
                   pr->n_in, pr->n_out, x, 1, y);
      }
  free (x);
  return LM_OK;
}

LmStatus
lm_cuda_matvec_product (LmCudaStream stream, LmCudaActMode mode, const LmCudaProduct *product)
{
  if (product == NULL || (mode != LM_CUDA_ACT_F32 && mode != LM_CUDA_ACT_Q8)
      || (product->k > 1 && product->sel == NULL)
      || (product->w_pair != NULL && product->y_pair == NULL))
    return LM_ERR_INVALID_ARGUMENT;
  struct {
    LmCudaActMode mode;
    LmCudaProduct pr;
  } a = { mode, *product };
  return dispatch (fused_run, &a, sizeof a);
}

LmStatus
lm_cuda_matvec_experts (LmCudaStream stream, LmTensorType type, const void *w,
                        size_t mat_stride, uint32_t n_in, uint32_t n_out, const int32_t *sel,
                        uint32_t k, const float *x, size_t x_stride, float *y)
{
  return lm_cuda_matvec_experts_ex (stream, LM_CUDA_ACT_F32, type, w, mat_stride, n_in, n_out,
                                    sel, k, x, x_stride, y);
}

LmStatus
lm_cuda_matmul_rows_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                        const void *w, size_t mat_stride, uint32_t expert, uint32_t n_in,
                        uint32_t n_out, const float *x, const int32_t *x_rows,
                        const int32_t *y_rows, uint32_t n_rows, float *y)
{
  ProductArgs a = { mode, type, w, mat_stride, n_in, n_out, n_rows, NULL, expert, x, 0, x_rows,
                    y_rows, y, false };
  return product_dispatch (&a);
}

LmStatus
lm_cuda_matmul_rows (LmCudaStream stream, LmTensorType type, const void *w, size_t mat_stride,
                     uint32_t expert, uint32_t n_in, uint32_t n_out, const float *x,
                     const int32_t *x_rows, const int32_t *y_rows, uint32_t n_rows, float *y)
{
  return lm_cuda_matmul_rows_ex (stream, LM_CUDA_ACT_F32, type, w, mat_stride, expert, n_in,
                                 n_out, x, x_rows, y_rows, n_rows, y);
}

LmStatus
lm_cuda_dequantize_row (LmCudaStream stream, LmTensorType type, const void *src, float *dst,
                        uint32_t n)
{
  return lm_dequantize_row (type, src, dst, n);
}

/* ---- element-wise and per-row ---- */

typedef struct {
  float *x;
  const float *y;
  size_t x_stride, y_stride;
  const float *w;
  float eps;
  uint32_t n_rows, width;
  float *out;
  size_t n;
} RowArgs;

/* A kernel reading a model vector left in host memory (a part the upload
 * missed) would fault on a real device: here it fails the launch. */
static bool
weights_on_device (const float *w, size_t count)
{
  return gpu_emu_is_device (w, count * sizeof (float));
}

static LmStatus
rms_norm_run (const void *p)
{
  const RowArgs *a = p;
  if (!weights_on_device (a->w, a->width))
    return LM_ERR_DEVICE;
  for (uint32_t r = 0; r < a->n_rows; r++)
    lm_rms_norm (a->y + r * a->y_stride, a->w, a->eps, a->width, a->out + r * a->x_stride);
  return LM_OK;
}

LmStatus
lm_cuda_rms_norm (LmCudaStream stream, const float *x, size_t x_stride, const float *w,
                  float eps, uint32_t n_rows, uint32_t width, float *y, size_t y_stride)
{
  RowArgs a = { .y = x, .y_stride = x_stride, .w = w, .eps = eps, .n_rows = n_rows,
                .width = width, .out = y, .x_stride = y_stride };
  return dispatch (rms_norm_run, &a, sizeof a);
}

static LmStatus
add_rms_norm_run (const void *p)
{
  const RowArgs *a = p;
  if (!weights_on_device (a->w, a->width))
    return LM_ERR_DEVICE;
  for (uint32_t r = 0; r < a->n_rows; r++)
    {
      float *xr = a->x + (size_t) r * a->width;
      lm_add (xr, a->y + (size_t) r * a->width, a->width);
      lm_rms_norm (xr, a->w, a->eps, a->width, a->out + (size_t) r * a->width);
    }
  return LM_OK;
}

LmStatus
lm_cuda_add_rms_norm (LmCudaStream stream, float *x, const float *o, const float *w, float eps,
                      uint32_t n_rows, uint32_t width, float *y)
{
  RowArgs a = { .x = x, .y = o, .w = w, .eps = eps, .n_rows = n_rows, .width = width, .out = y };
  return dispatch (add_rms_norm_run, &a, sizeof a);
}

static LmStatus
l2_norm_run (const void *p)
{
  const RowArgs *a = p;
  for (uint32_t r = 0; r < a->n_rows; r++)
    lm_l2_norm (a->x + r * a->x_stride, a->eps, a->width);
  return LM_OK;
}

LmStatus
lm_cuda_l2_norm (LmCudaStream stream, float *x, size_t x_stride, float eps, uint32_t n_rows,
                 uint32_t width)
{
  RowArgs a = { .x = x, .x_stride = x_stride, .eps = eps, .n_rows = n_rows, .width = width };
  return dispatch (l2_norm_run, &a, sizeof a);
}

static LmStatus
add_run (const void *p)
{
  const RowArgs *a = p;
  for (size_t i = 0; i < a->n; i++)
    a->x[i] += a->y[i];
  return LM_OK;
}

LmStatus
lm_cuda_add (LmCudaStream stream, float *x, const float *y, size_t n)
{
  RowArgs a = { .x = x, .y = y, .n = n };
  return dispatch (add_run, &a, sizeof a);
}

/* The CPU backend's SwiGLU: the emulation follows the host where the
 * device's expf rounds its own way anyway. */
static LmStatus
swiglu_run (const void *p)
{
  const RowArgs *a = p;
  lm_swiglu (lm_kernels_best (), a->x, a->y, a->n);
  return LM_OK;
}

static LmStatus
add_rows_run (const void *p)
{
  const RowArgs *a = p;
  if (!weights_on_device (a->y, a->width))
    return LM_ERR_DEVICE;
  for (uint32_t r = 0; r < a->n_rows; r++)
    lm_add (a->x + (size_t) r * a->width, a->y, a->width);
  return LM_OK;
}

LmStatus
lm_cuda_add_rows (LmCudaStream stream, float *x, const float *row, uint32_t n_rows,
                  uint32_t width)
{
  RowArgs a = { .x = x, .y = row, .n_rows = n_rows, .width = width };
  return dispatch (add_rows_run, &a, sizeof a);
}

LmStatus
lm_cuda_swiglu (LmCudaStream stream, float *gate, const float *up, size_t n)
{
  RowArgs a = { .x = gate, .y = up, .n = n };
  return dispatch (swiglu_run, &a, sizeof a);
}

/* ---- embedding ---- */

typedef struct {
  LmTensorType type;
  const void *table;
  uint32_t n_vocab, width, n;
  const int32_t *tokens;
  float *x;
  int32_t *bad;
} EmbedArgs;

static LmStatus
embed_run (const void *p)
{
  const EmbedArgs *a = p;
  for (uint32_t t = 0; t < a->n; t++)
    {
      float *row = a->x + (size_t) t * a->width;
      int32_t tok = a->tokens[t];
      if (tok < 0 || (uint32_t) tok >= a->n_vocab)
        {
          memset (row, 0, a->width * sizeof (float));
          if (a->bad != NULL)
            *a->bad = 1;
          continue;
        }
      lm_dequantize_row (a->type, (const char *) a->table + (size_t) tok * lm_row_bytes (a->type, a->width),
                         row, a->width);
    }
  return LM_OK;
}

LmStatus
lm_cuda_embed (LmCudaStream stream, LmTensorType type, const void *table, uint32_t n_vocab,
               uint32_t width, const int32_t *tokens, uint32_t n, float *x, int32_t *bad)
{
  EmbedArgs a = { type, table, n_vocab, width, n, tokens, x, bad };
  return dispatch (embed_run, &a, sizeof a);
}

/* ---- full attention ---- */

typedef struct {
  float *x;
  size_t token_stride, head_stride;
  uint32_t n_heads, n_tokens, n_rot;
  const uint32_t *pos;
  float base;
  int32_t sections[4];
} RopeArgs;

static LmStatus
rope_run (const void *p)
{
  const RopeArgs *a = p;
  float cs[LM_CUDA_MAX_HEAD_DIM];
  for (uint32_t t = 0; t < a->n_tokens; t++)
    {
      lm_rope_table (a->pos[0] + t, a->n_rot, a->base, a->sections, cs);
      for (uint32_t h = 0; h < a->n_heads; h++)
        lm_rope_apply (a->x + t * a->token_stride + h * a->head_stride, a->n_rot, cs);
    }
  return LM_OK;
}

LmStatus
lm_cuda_rope (LmCudaStream stream, float *x, size_t token_stride, size_t head_stride,
              uint32_t n_heads, uint32_t n_tokens, const uint32_t *pos, uint32_t n_rot,
              float base, const int32_t sections[4])
{
  RopeArgs a = { x, token_stride, head_stride, n_heads, n_tokens, n_rot, pos, base,
                 { sections[0], sections[1], sections[2], sections[3] } };
  return dispatch (rope_run, &a, sizeof a);
}

typedef struct {
  const float *k, *v;
  uint32_t kv_dim, n;
  const uint32_t *pos;
  float *k_cache, *v_cache;
} KvArgs;

static LmStatus
kv_append_run (const void *p)
{
  const KvArgs *a = p;
  size_t row = (size_t) a->pos[0] * a->kv_dim, count = (size_t) a->n * a->kv_dim;
  memcpy (a->k_cache + row, a->k, count * sizeof (float));
  memcpy (a->v_cache + row, a->v, count * sizeof (float));
  return LM_OK;
}

LmStatus
lm_cuda_kv_append (LmCudaStream stream, const float *k, const float *v, uint32_t kv_dim,
                   uint32_t n, const uint32_t *pos, float *k_cache, float *v_cache)
{
  KvArgs a = { k, v, kv_dim, n, pos, k_cache, v_cache };
  return dispatch (kv_append_run, &a, sizeof a);
}

typedef struct {
  const float *q, *k_cache, *v_cache;
  bool gated;
  uint32_t n_head, n_head_kv, head_dim, n, n_ctx;
  const uint32_t *pos;
  float *scratch, *out;
} AttnArgs;

static LmStatus
attention_run (const void *p)
{
  const AttnArgs *a = p;
  uint32_t hd = a->head_dim, kvd = hd * a->n_head_kv, group = a->n_head / a->n_head_kv;
  size_t qs = a->gated ? 2 * (size_t) hd : hd;
  if (a->scratch != NULL)   /* the split form's scratch must be usable */
    memset (a->scratch, 0, (size_t) a->n_head * hd * sizeof (float));
  for (uint32_t t = 0; t < a->n; t++)
    for (uint32_t h = 0; h < a->n_head; h++)
      {
        const float *q = a->q + ((size_t) t * a->n_head + h) * qs;
        size_t kv = (size_t) (h / group) * hd;
        if (a->pos[0] + t >= a->n_ctx)
          return LM_ERR_INVALID_ARGUMENT;
        lm_attend_head (lm_kernels_best (), q, a->gated ? q + hd : NULL, a->k_cache + kv, a->v_cache + kv, kvd,
                        a->pos[0] + t + 1, hd, a->out + ((size_t) t * a->n_head + h) * hd);
      }
  return LM_OK;
}

LmStatus
lm_cuda_attention (LmCudaStream stream, const float *q, bool gated, const float *k_cache,
                   const float *v_cache, uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                   uint32_t n, const uint32_t *pos, uint32_t n_ctx, float *out)
{
  AttnArgs a = { q, k_cache, v_cache, gated, n_head, n_head_kv, head_dim, n, n_ctx, pos, NULL,
                 out };
  return dispatch (attention_run, &a, sizeof a);
}

size_t
lm_cuda_attention_scratch_floats (uint32_t n_head, uint32_t head_dim, uint32_t n, uint32_t n_ctx)
{
  return (size_t) n * n_head * head_dim;
}

LmStatus
lm_cuda_attention_split (LmCudaStream stream, const float *q, bool gated, const float *k_cache,
                         const float *v_cache, uint32_t n_head, uint32_t n_head_kv,
                         uint32_t head_dim, uint32_t n, const uint32_t *pos, uint32_t n_ctx,
                         float *scratch, float *out)
{
  AttnArgs a = { q, k_cache, v_cache, gated, n_head, n_head_kv, head_dim, n, n_ctx, pos, scratch,
                 out };
  return dispatch (attention_run, &a, sizeof a);
}

/* ---- Gated DeltaNet ---- */

typedef struct {
  const float *in, *w;
  uint32_t K, C, n;
  float *state, *out;
} ConvArgs;

static LmStatus
causal_conv_run (const void *p)
{
  const ConvArgs *a = p;
  lm_causal_conv (a->in, a->w, a->K, a->C, a->n, a->state, a->out);
  return LM_OK;
}

LmStatus
lm_cuda_causal_conv (LmCudaStream stream, const float *in, const float *w, uint32_t K,
                     uint32_t C, uint32_t n, float *state, float *out)
{
  ConvArgs a = { in, w, K, C, n, state, out };
  return dispatch (causal_conv_run, &a, sizeof a);
}

typedef struct {
  LmCudaDeltaShape shape;     /* by value, as a kernel launch copies it */
  float *u;
  size_t u_stride, ab_stride;
  const float *z, *alpha, *beta;
  uint32_t n;
  float *state, *out;
} DeltaArgs;

static LmStatus
delta_rule_run (const void *p)
{
  const DeltaArgs *a = p;
  const LmCudaDeltaShape *sh = &a->shape;
  uint32_t S = sh->state, Hv = sh->n_heads, Hk = sh->n_groups, key_dim = S * Hk;
  float mk[LM_CUDA_MAX_STATE];
  for (uint32_t t = 0; t < a->n; t++)
    {
      float *ut = a->u + t * a->u_stride;
      for (uint32_t h = 0; h < 2 * Hk; h++)
        lm_l2_norm (ut + (size_t) h * S, sh->eps, S);
      for (uint32_t j = 0; j < Hv; j++)
        {
          uint32_t m = j % Hk;
          float g = sh->ssm_a[j] * lm_softplus (a->alpha[t * a->ab_stride + j] + sh->dt_bias[j]);
          float b = lm_sigmoid (a->beta[t * a->ab_stride + j]);
          float *o = a->out + (size_t) t * Hv * S + (size_t) j * S;
          lm_delta_step (lm_kernels_best (), a->state + (size_t) j * S * S, ut + (size_t) m * S,
                         ut + key_dim + (size_t) m * S, ut + 2 * key_dim + (size_t) j * S,
                         expf (g), b, S, mk, o);
          lm_rms_norm (o, sh->norm, sh->eps, S, o);
          const float *zj = a->z + (size_t) t * Hv * S + (size_t) j * S;
          for (uint32_t i = 0; i < S; i++)
            o[i] *= lm_silu (zj[i]);
        }
    }
  return LM_OK;
}

LmStatus
lm_cuda_delta_rule (LmCudaStream stream, const LmCudaDeltaShape *shape, float *u,
                    size_t u_stride, const float *z, const float *alpha, const float *beta,
                    size_t ab_stride, uint32_t n, float *state, float *out)
{
  DeltaArgs a = { *shape, u, u_stride, ab_stride, z, alpha, beta, n, state, out };
  return dispatch (delta_rule_run, &a, sizeof a);
}

/* ---- mixture of experts ---- */

typedef struct {
  const float *logits, *y, *w, *gate_inp, *h;
  uint32_t n, n_expert, k, width;
  int32_t *sel;
  float *w_out, *o;
} MoeArgs;

static LmStatus
moe_route_run (const void *p)
{
  const MoeArgs *a = p;
  for (uint32_t t = 0; t < a->n; t++)
    lm_route_token (a->logits + (size_t) t * a->n_expert, a->n_expert, a->k,
                    a->sel + (size_t) t * a->k, a->w_out + (size_t) t * a->k);
  return LM_OK;
}

LmStatus
lm_cuda_moe_route (LmCudaStream stream, const float *logits, uint32_t n, uint32_t n_expert,
                   uint32_t k, int32_t *sel, float *w)
{
  MoeArgs a = { .logits = logits, .n = n, .n_expert = n_expert, .k = k, .sel = sel, .w_out = w };
  return dispatch (moe_route_run, &a, sizeof a);
}

static LmStatus
moe_combine_run (const void *p)
{
  const MoeArgs *a = p;
  bool shared = a->gate_inp != NULL;
  if (shared && !weights_on_device (a->gate_inp, a->width))
    return LM_ERR_DEVICE;
  for (uint32_t t = 0; t < a->n; t++)
    {
      float gate = 0.0f;
      if (shared)
        {
          const float *ht = a->h + (size_t) t * a->width;
          float dot = 0.0f;
          for (uint32_t i = 0; i < a->width; i++)
            dot += a->gate_inp[i] * ht[i];
          gate = lm_sigmoid (dot);
        }
      float *ot = a->o + (size_t) t * a->width;
      for (uint32_t i = 0; i < a->width; i++)
        {
          float sum = 0.0f;
          for (uint32_t j = 0; j < a->k; j++)
            sum += a->w[(size_t) t * a->k + j] * a->y[((size_t) t * a->k + j) * a->width + i];
          /* without a shared expert o holds nothing yet (NaN garbage on this device) */
          ot[i] = shared ? sum + gate * ot[i] : sum;
        }
    }
  return LM_OK;
}

LmStatus
lm_cuda_moe_combine (LmCudaStream stream, const float *y, const float *w, const float *gate_inp,
                     const float *h, uint32_t n, uint32_t k, uint32_t width, float *o)
{
  MoeArgs a = { .y = y, .w = w, .gate_inp = gate_inp, .h = h, .n = n, .k = k, .width = width,
                .o = o };
  return dispatch (moe_combine_run, &a, sizeof a);
}
