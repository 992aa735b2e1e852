/* kernels-dispatch.c: kernel tables chosen by cpuid, and the threaded matvec / matmul.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels-private.h"

/* Activations are quantised and consumed in segments of at most this many
 * values, so a segment's 8-bit copy fits on the stack (no allocation per
 * call). Every Qwen3.5 matrix has n_in below it: one segment, one pass. */
#define SEGMENT 16384
/* Rows a task hands to a row kernel at once while looping over tokens, so
 * those weight rows stay in cache during a prefill. */
#define ROW_TILE 16
/* Tasks per thread: enough slack to even out uneven progress. */
#define TASKS_PER_THREAD 4
/* Large products get more tasks, about this many weight bytes each: what is
 * left when one thread runs out of tasks is then at most one short task
 * (the output head would otherwise end on a millisecond of one thread). */
#define TASK_BYTES (512 * 1024)
/* Below this many weight bytes per token a product runs on the caller: waking
 * the pool costs more than it saves (router, alpha/beta projections). */
#define MIN_PARALLEL_BYTES (32 * 1024)

static LmKernels kernel_tables[LM_ISA_COUNT];
static bool isa_available[LM_ISA_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* Whether the CPU feature @name is withheld by TENSAFE_CPU_WITHOUT, a list
 * of cpuid feature names ("avx512vbmi,avx512f") the kernels are to run
 * without: the older kernels then run, and are tested, on a newer CPU, and
 * a user can rule out a kernel when a result looks wrong. */
static bool
feature_withheld (const char *name)
{
  const char *list = getenv ("TENSAFE_CPU_WITHOUT");
  const size_t len = strlen (name);

  for (const char *p = list; p && *p; p += strcspn (p, ", "), p += strspn (p, ", "))
    if (strncmp (p, name, len) == 0 && (p[len] == '\0' || p[len] == ',' || p[len] == ' '))
      return true;
  return false;
}

/* __builtin_cpu_supports takes only a string literal, hence a macro. */
#define CPU_HAS(name) (__builtin_cpu_supports (name) && !feature_withheld (name))

static void
init_tables (void)
{
  __builtin_cpu_init ();
  lm_kernels_fill_scalar (&kernel_tables[LM_ISA_SCALAR]);
  isa_available[LM_ISA_SCALAR] = true;

  isa_available[LM_ISA_AVX2] = CPU_HAS ("avx2") && CPU_HAS ("fma") && CPU_HAS ("f16c");
  if (isa_available[LM_ISA_AVX2])
    {
      kernel_tables[LM_ISA_AVX2] = kernel_tables[LM_ISA_SCALAR];
      lm_kernels_fill_avx2 (&kernel_tables[LM_ISA_AVX2]);
    }
  isa_available[LM_ISA_AVX512] = isa_available[LM_ISA_AVX2] && CPU_HAS ("avx512f")
                                 && CPU_HAS ("avx512bw") && CPU_HAS ("avx512dq")
                                 && CPU_HAS ("avx512vl") && CPU_HAS ("avx512vnni");
  if (isa_available[LM_ISA_AVX512])
    {
      kernel_tables[LM_ISA_AVX512] = kernel_tables[LM_ISA_AVX2];
      lm_kernels_fill_avx512 (&kernel_tables[LM_ISA_AVX512]);
      if (CPU_HAS ("avx512vbmi"))
        lm_kernels_fill_avx512vbmi_q5 (&kernel_tables[LM_ISA_AVX512]);
    }
}

const LmKernels *
lm_kernels_for_isa (LmIsa isa)
{
  pthread_once (&tables_once, init_tables);
  if ((int) isa < 0 || isa >= LM_ISA_COUNT || !isa_available[isa])
    return NULL;
  return &kernel_tables[isa];
}

const LmKernels *
lm_kernels_best (void)
{
  for (int isa = LM_ISA_COUNT - 1; isa > LM_ISA_SCALAR; isa--)
    if (lm_kernels_for_isa ((LmIsa) isa))
      return lm_kernels_for_isa ((LmIsa) isa);
  return lm_kernels_for_isa (LM_ISA_SCALAR);
}

LmIsa
lm_kernels_isa (const LmKernels *kernels)
{
  return kernels->isa;
}

const char *
lm_isa_name (LmIsa isa)
{
  switch (isa)
    {
    case LM_ISA_SCALAR: return "scalar";
    case LM_ISA_AVX2: return "avx2";
    case LM_ISA_AVX512: return "avx512";
    case LM_ISA_COUNT: break;
    }
  return "unknown";
}

int
lm_kernel_type_index (LmTensorType type)
{
  switch (type)
    {
    case LM_TYPE_F32: return LM_KT_F32;
    case LM_TYPE_F16: return LM_KT_F16;
    case LM_TYPE_BF16: return LM_KT_BF16;
    case LM_TYPE_Q8_0: return LM_KT_Q8_0;
    case LM_TYPE_Q4_K: return LM_KT_Q4_K;
    case LM_TYPE_Q5_K: return LM_KT_Q5_K;
    case LM_TYPE_Q6_K: return LM_KT_Q6_K;
    case LM_TYPE_Q4_0: return LM_KT_Q4_0;
    case LM_TYPE_Q4_1: return LM_KT_Q4_1;
    case LM_TYPE_Q5_0: return LM_KT_Q5_0;
    case LM_TYPE_Q5_1: return LM_KT_Q5_1;
    case LM_TYPE_Q2_K: return LM_KT_Q2_K;
    case LM_TYPE_Q3_K: return LM_KT_Q3_K;
    }
  return -1;
}

LmTensorType
lm_act_type (LmTensorType weight_type, LmActMode mode)
{
  if (mode == LM_ACT_F32)
    return LM_TYPE_F32;
  switch (weight_type)
    {
    case LM_TYPE_Q4_0:
    case LM_TYPE_Q5_0:
    case LM_TYPE_Q8_0: return LM_TYPE_Q8_0;
    case LM_TYPE_Q4_1:
    case LM_TYPE_Q5_1: return LM_ACT_TYPE_Q8_1;
    case LM_TYPE_Q2_K:
    case LM_TYPE_Q3_K:
    case LM_TYPE_Q4_K:
    case LM_TYPE_Q5_K:
    case LM_TYPE_Q6_K: return LM_ACT_TYPE_Q8_K;
    default: return LM_TYPE_F32;
    }
}

size_t
lm_act_row_bytes (LmTensorType weight_type, LmActMode mode, int64_t n)
{
  switch ((int) lm_act_type (weight_type, mode))
    {
    case LM_TYPE_Q8_0: return (size_t) (n / LM_QK8_0) * sizeof (LmBlockQ8_0);
    case LM_ACT_TYPE_Q8_1: return (size_t) (n / LM_QK32) * sizeof (LmBlockQ8_1);
    case LM_ACT_TYPE_Q8_K: return (size_t) (n / LM_QK_K) * sizeof (LmBlockQ8_K);
    default: return (size_t) n * sizeof (float);
    }
}

void
lm_quantize_act (const LmKernels *kernels, LmTensorType weight_type, LmActMode mode,
                 const float *x, void *act, int64_t n)
{
  switch ((int) lm_act_type (weight_type, mode))
    {
    case LM_TYPE_Q8_0: kernels->quantize_q8_0 (x, act, n); break;
    case LM_ACT_TYPE_Q8_1: kernels->quantize_q8_1 (x, act, n); break;
    case LM_ACT_TYPE_Q8_K: kernels->quantize_q8_K (x, act, n); break;
    default: memcpy (act, x, (size_t) n * sizeof (float)); break;
    }
}

/* The row kernel of @type in @mode; @alone: for a product one thread runs */
static LmDotRowsFn
rows_kernel (const LmKernels *kernels, LmTensorType type, LmActMode mode, bool alone)
{
  int index = lm_kernel_type_index (type);
  if (index < 0)
    return NULL;
  if (mode == LM_ACT_NATIVE && alone && kernels->native_alone[index])
    return kernels->native_alone[index];
  if (mode == LM_ACT_NATIVE && kernels->native[index])
    return kernels->native[index];
  return kernels->f32act[index];
}

static void
dot_rows (const LmKernels *kernels, LmTensorType type, LmActMode mode, bool alone,
          const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n,
          float *y)
{
  LmDotRowsFn fn = rows_kernel (kernels, type, mode, alone);
  if (fn)
    fn (W, row_bytes, n_rows, act, n, y);
}

void
lm_dot_rows (const LmKernels *kernels, LmTensorType type, LmActMode mode,
             const void *W, size_t row_bytes, int64_t n_rows, const void *act,
             int64_t n, float *y)
{
  dot_rows (kernels, type, mode, false, W, row_bytes, n_rows, act, n, y);
}

void
lm_dot_rows_alone (const LmKernels *kernels, LmTensorType type, LmActMode mode,
                   const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                   int64_t n, float *y)
{
  dot_rows (kernels, type, mode, true, W, row_bytes, n_rows, act, n, y);
}

int64_t
lm_matmul_batch_tokens (const LmKernels *kernels, LmTensorType type, int64_t n_tok)
{
  int index = lm_kernel_type_index (type);
  if (index < 0 || kernels->batch_tile[index] == NULL || n_tok < kernels->batch_tokens[index])
    return 0;
  return n_tok - n_tok % kernels->batch_step[index];
}

/* One segment of a product: rows [0, n_out) of W (offset to the segment)
 * against n_tok activation rows act_stride bytes apart. */
typedef struct {
  LmDotRowsFn fn;
  LmDotRowsFn fn_alone;   /* fn when one thread runs the product */
  LmDotTileFn tile;       /* NULL: token by token */
  int tile_tokens;        /* its width */
  LmDotTileFn batch;      /* NULL: no batch kernel for this product */
  int batch_width;        /* its width */
  int64_t n_batch;        /* the leading tokens it takes */
  const uint8_t *W;
  size_t row_bytes;
  int64_t n_out;
  const uint8_t *act;
  size_t act_stride;
  int64_t n_seg;
  int64_t n_tok;
  float *Y;               /* Y[t * n_out + r] */
  bool accumulate;        /* add to Y (segments after the first) */
  int64_t rows_per_task;
} ProductJob;

/* Writes @width tokens of @tile's products into Y, or adds them to it
 * after the first segment. */
static void
product_tile (const ProductJob *job, LmDotTileFn tile, const uint8_t *w, int64_t r,
              int64_t rows, int64_t t, int width)
{
  float partial[LM_TILE_TOKENS_MAX * ROW_TILE];
  const void *a = job->act + (size_t) t * job->act_stride;
  float *y = job->Y + t * job->n_out + r;

  if (!job->accumulate)
    {
      tile (w, job->row_bytes, rows, a, job->act_stride, job->n_seg, width, y, (size_t) job->n_out);
      return;
    }
  tile (w, job->row_bytes, rows, a, job->act_stride, job->n_seg, width, partial, ROW_TILE);
  for (int k = 0; k < width; k++)
    for (int64_t i = 0; i < rows; i++)
      y[k * job->n_out + i] += partial[k * ROW_TILE + i];
}

/* Rows [r, r + rows) for the tokens from t: within the batch kernel's
 * tokens a tile of up to its width; past them a tile of up to the tile
 * kernel's width when at least two are left and there is one, else one
 * token. Returns the tokens done. */
static int64_t
product_rows (const ProductJob *job, const uint8_t *w, int64_t r, int64_t rows, int64_t t)
{
  float partial[ROW_TILE];
  const void *a = job->act + (size_t) t * job->act_stride;
  float *y = job->Y + t * job->n_out + r;
  int64_t left = job->n_tok - t;

  if (t < job->n_batch)
    {
      int width = job->n_batch - t < job->batch_width ? (int) (job->n_batch - t) : job->batch_width;
      product_tile (job, job->batch, w, r, rows, t, width);
      return width;
    }
  if (job->tile && left >= 2)
    {
      int width = left < job->tile_tokens ? (int) left : job->tile_tokens;
      product_tile (job, job->tile, w, r, rows, t, width);
      return width;
    }
  if (!job->accumulate)
    job->fn (w, job->row_bytes, rows, a, job->n_seg, y);
  else
    {
      job->fn (w, job->row_bytes, rows, a, job->n_seg, partial);
      for (int64_t i = 0; i < rows; i++)
        y[i] += partial[i];
    }
  return 1;
}

static void
product_task (void *ctx, int index, int n)
{
  const ProductJob *job = ctx;
  int64_t r0 = (int64_t) index * job->rows_per_task;
  int64_t r1 = r0 + job->rows_per_task < job->n_out ? r0 + job->rows_per_task : job->n_out;

  for (int64_t r = r0; r < r1; r += ROW_TILE)
    {
      int64_t rows = r1 - r < ROW_TILE ? r1 - r : ROW_TILE;
      const uint8_t *w = job->W + (size_t) r * job->row_bytes;
      for (int64_t t = 0; t < job->n_tok;)
        t += product_rows (job, w, r, rows, t);
    }
}

static void
run_product (LmThreadPool *pool, ProductJob *job)
{
  int threads = lm_thread_pool_size (pool);
  if ((double) job->row_bytes * (double) job->n_out * (double) job->n_tok < MIN_PARALLEL_BYTES)
    threads = 1;
  if (threads == 1)
    job->fn = job->fn_alone;
  int64_t tiles = (job->n_out + ROW_TILE - 1) / ROW_TILE;
  int64_t tasks = threads == 1 ? 1 : (int64_t) threads * TASKS_PER_THREAD;
  double weight_bytes = (double) job->row_bytes * (double) job->n_out;
  if (threads > 1 && weight_bytes / TASK_BYTES > (double) tasks)
    tasks = (int64_t) (weight_bytes / TASK_BYTES);
  if (tasks > tiles)
    tasks = tiles;
  if (tasks < 1)
    tasks = 1;
  job->rows_per_task = (tiles + tasks - 1) / tasks * ROW_TILE;
  tasks = (job->n_out + job->rows_per_task - 1) / job->rows_per_task;
  lm_thread_pool_run (threads == 1 ? NULL : pool, product_task, job, (int) tasks);
}

typedef struct {
  const LmKernels *kernels;
  LmTensorType type;
  LmActMode mode;
  const float *X;
  int64_t n_in;
  int64_t n_seg;
  uint8_t *act;
  size_t act_stride;
} QuantizeJob;

static void
quantize_task (void *ctx, int index, int n)
{
  const QuantizeJob *job = ctx;
  lm_quantize_act (job->kernels, job->type, job->mode, job->X + (int64_t) index * job->n_in,
                   job->act + (size_t) index * job->act_stride, job->n_seg);
}

static bool
product_args_ok (const LmKernels *kernels, LmTensorType type, LmActMode mode, int64_t n_in,
                 int64_t n_out, int64_t n_tok)
{
  return kernels && rows_kernel (kernels, type, mode, false) && n_in > 0 && n_out > 0 && n_tok > 0
         && lm_row_bytes (type, n_in) != 0;
}

static int64_t
longest_segment (int64_t n_in)
{
  return n_in < SEGMENT ? n_in : SEGMENT;
}

/* The product over n_in in segments; @act_buf holds n_tok segment
 * activations when they need converting (NULL for f32 activations). */
static void
product_segments (const LmKernels *kernels, LmActMode mode, LmThreadPool *pool,
                  LmTensorType type, const void *W, int64_t n_in, int64_t n_out,
                  const float *X, int64_t n_tok, float *Y, uint8_t *act_buf)
{
  size_t row_bytes = lm_row_bytes (type, n_in);
  bool f32_act = lm_act_type (type, mode) == LM_TYPE_F32;

  for (int64_t s0 = 0; s0 < n_in; s0 += SEGMENT)
    {
      int64_t n_seg = n_in - s0 < SEGMENT ? n_in - s0 : SEGMENT;
      int index = lm_kernel_type_index (type);
      bool native = mode == LM_ACT_NATIVE;
      ProductJob job = {
        .fn = rows_kernel (kernels, type, mode, false),
        .fn_alone = rows_kernel (kernels, type, mode, true),
        .tile = native ? kernels->native_tile[index] : kernels->f32act_tile[index],
        .tile_tokens = native ? kernels->tile_tokens[index] : LM_TILE_TOKENS_MAX,
        .batch = kernels->batch_tile[index],
        .batch_width = kernels->batch_width[index],
        .n_batch = native ? lm_matmul_batch_tokens (kernels, type, n_tok) : 0,
        .W = (const uint8_t *) W + lm_row_bytes (type, s0),
        .row_bytes = row_bytes,
        .n_out = n_out,
        .n_seg = n_seg,
        .n_tok = n_tok,
        .Y = Y,
        .accumulate = s0 > 0,
      };
      if (f32_act)
        {
          job.act = (const uint8_t *) (X + s0);
          job.act_stride = (size_t) n_in * sizeof (float);
        }
      else
        {
          QuantizeJob q = { kernels, type, mode, X + s0, n_in, n_seg, act_buf,
                            lm_act_row_bytes (type, mode, longest_segment (n_in)) };
          lm_thread_pool_run (n_tok > 1 ? pool : NULL, quantize_task, &q, (int) n_tok);
          job.act = act_buf;
          job.act_stride = q.act_stride;
        }
      run_product (pool, &job);
    }
}

void
lm_matvec_ex (const LmKernels *kernels, LmActMode mode, LmThreadPool *pool,
              LmTensorType type, const void *W, int64_t n_in, int64_t n_out,
              const float *x, float *y)
{
  /* Q8_K is the largest 8-bit format: 292 bytes per 256 values (Q8_1: 288) */
  _Alignas (64) uint8_t act[SEGMENT / LM_QK_K * sizeof (LmBlockQ8_K)];

  if (!product_args_ok (kernels, type, mode, n_in, n_out, 1))
    return;
  product_segments (kernels, mode, pool, type, W, n_in, n_out, x, 1, y, act);
}

void
lm_matmul_ex (const LmKernels *kernels, LmActMode mode, LmThreadPool *pool,
              LmTensorType type, const void *W, int64_t n_in, int64_t n_out,
              const float *X, int64_t n_tok, float *Y)
{
  if (!product_args_ok (kernels, type, mode, n_in, n_out, n_tok))
    return;
  uint8_t *act = NULL;
  if (lm_act_type (type, mode) != LM_TYPE_F32)
    {
      act = malloc ((size_t) n_tok * lm_act_row_bytes (type, mode, longest_segment (n_in)));
      if (!act)   /* same numbers, token by token */
        {
          for (int64_t t = 0; t < n_tok; t++)
            lm_matvec_ex (kernels, mode, pool, type, W, n_in, n_out, X + t * n_in, Y + t * n_out);
          return;
        }
    }
  product_segments (kernels, mode, pool, type, W, n_in, n_out, X, n_tok, Y, act);
  free (act);
}

void
lm_matvec (LmThreadPool *pool, LmTensorType type, const void *W, int64_t n_in,
           int64_t n_out, const float *x, float *y)
{
  lm_matvec_ex (lm_kernels_best (), LM_ACT_NATIVE, pool, type, W, n_in, n_out, x, y);
}

void
lm_matmul (LmThreadPool *pool, LmTensorType type, const void *W, int64_t n_in,
           int64_t n_out, const float *X, int64_t n_tok, float *Y)
{
  lm_matmul_ex (lm_kernels_best (), LM_ACT_NATIVE, pool, type, W, n_in, n_out, X, n_tok, Y);
}

size_t
lm_attend_scratch_floats (uint32_t max_pos, uint32_t hd)
{
  /* the transposed queries, then a weight per (position, query), the
   * positions up to a multiple of 16 */
  return ((size_t) hd + (max_pos + 15) / 16 * 16) * LM_ATTN_QUERIES;
}

void
lm_attend (const LmKernels *kernels, const LmAttnQueries *a, float *scratch)
{
  kernels->attend (a, scratch);
}

void
lm_swiglu (const LmKernels *kernels, float *gate, const float *up, size_t n)
{
  kernels->swiglu (gate, up, n);
}
