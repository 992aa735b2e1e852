/* lm-cuda-session.c: a session's device buffers, adapter copy and reset.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Everything a GPU session needs per token is allocated here, once: the KV
 * cache of its full-attention layers, the conv and DeltaNet state of its
 * linear layers, and the scratch of n_batch rows, carved out of a single
 * device allocation; the pinned host memory a recorded decode step copies
 * through; the adapter's matrices when one is attached.
 */
#include <stdlib.h>
#include <string.h>

#include "lm-cuda-gpu.h"
#include "lm-cuda-ops.h"
#include "lora-private.h"

#define CARVE_ALIGN 256

/* Hands out consecutive aligned pieces of @base; with base NULL it only
 * measures (off is the total). */
typedef struct {
  char *base;
  size_t off;
} Carve;

static void *
carve (Carve *c, size_t count, size_t size)
{
  void *p = c->base != NULL ? c->base + c->off : NULL;
  c->off += (count * size + CARVE_ALIGN - 1) / CARVE_ALIGN * CARVE_ALIGN;
  return p;
}

static void
count_layers (const LmModel *m, uint32_t n_layers, size_t *n_full, size_t *n_linear)
{
  *n_full = *n_linear = 0;
  for (uint32_t il = 0; il < n_layers; il++)
    {
      if (m->layers[il].is_linear)
        ++*n_linear;
      else
        ++*n_full;
    }
}

/* The device buffers, in the same shapes as the host scratch (session.c). */
static void
layout (const LmSession *s, LmGpuSession *g, Carve *c)
{
  const LmModel *m = s->model;
  const LmModelInfo *in = &m->info;
  size_t nb = s->n_batch, E = in->n_embd, k = in->n_expert_used;
  size_t kvd = (size_t) in->head_dim * in->n_head_kv, C = lm_conv_dim (in);
  size_t S = in->ssm_state, n_full, n_linear;
  count_layers (m, g->n_layers, &n_full, &n_linear);
  /* Attention-only architectures have no conv (kernel size 0) and no linear layers. */
  size_t conv_rows = in->ssm_conv_kernel > 0 ? in->ssm_conv_kernel - 1 : 0;
  g->conv_count = n_linear * conv_rows * C;
  g->ssm_count = n_linear * in->ssm_heads * S * S;
  g->tokens = carve (c, nb, sizeof (int32_t));
  g->pos = carve (c, 1, sizeof (uint32_t));
  g->kv_k = carve (c, n_full * s->n_ctx * kvd, sizeof (float));
  g->kv_v = carve (c, n_full * s->n_ctx * kvd, sizeof (float));
  g->conv_state = carve (c, g->conv_count, sizeof (float));
  g->ssm_state = carve (c, g->ssm_count, sizeof (float));
  g->x = carve (c, nb * E, sizeof (float));
  g->h = carve (c, nb * E, sizeof (float));
  g->o = carve (c, nb * E, sizeof (float));
  g->a1 = carve (c, nb * s->w1, sizeof (float));
  g->a2 = carve (c, nb * s->w2, sizeof (float));
  g->a3 = carve (c, nb * s->w3, sizeof (float));
  g->a4 = carve (c, nb * s->w4, sizeof (float));
  g->ab = carve (c, nb * 2 * in->ssm_heads, sizeof (float));
  g->router = carve (c, nb * in->n_expert, sizeof (float));
  g->sel_w = carve (c, nb * k, sizeof (float));
  g->sel = carve (c, nb * k, sizeof (int32_t));
  g->rows_x = carve (c, nb * k, sizeof (int32_t));
  g->rows_y = carve (c, nb * k, sizeof (int32_t));
  g->moe_g = carve (c, nb * k * in->n_ff_exp, sizeof (float));
  g->moe_u = carve (c, nb * k * in->n_ff_exp, sizeof (float));
  g->moe_y = carve (c, nb * k * E, sizeof (float));
  g->logits = carve (c, g->head ? nb * in->n_vocab : 0, sizeof (float));
  g->attn_scratch = carve (c, n_full ? lm_cuda_attention_scratch_floats (in->n_head, in->head_dim,
                                                                         1, s->n_ctx)
                                     : 0,
                           sizeof (float));
}

static LmStatus
alloc_host (const LmSession *s, LmGpuSession *g)
{
  const LmModelInfo *in = &s->model->info;
  size_t io = (sizeof (LmGpuIo) + 63) / 64 * 64;
  size_t logits = ((size_t) in->n_vocab * sizeof (float) + 63) / 64 * 64;
  LmStatus st = lm_cuda_rt_host_alloc (&g->host_mem, io + logits + in->n_embd * sizeof (float));
  if (st != LM_OK)
    return st;
  g->io = g->host_mem;
  g->h_logits = (float *) ((char *) g->host_mem + io);
  g->h_x = (float *) ((char *) g->host_mem + io + logits);
  memset (g->io, 0, sizeof *g->io);
  /* The decode step's logits go straight into the session's buffer when it
   * can be page-locked (saving a copy of n_vocab floats per token). */
  if (lm_cuda_rt_host_register (s->logits, (size_t) in->n_vocab * sizeof (float)) == LM_OK)
    g->h_logits = g->registered = s->logits;
  g->h_rows = calloc ((size_t) 3 * s->n_batch * (in->n_expert_used ? in->n_expert_used : 1),
                      sizeof (int32_t));
  g->h_first = calloc ((size_t) 2 * in->n_expert + 1, sizeof (uint32_t));
  return g->h_rows != NULL && g->h_first != NULL ? LM_OK : LM_ERR_NO_MEMORY;
}

static void
lora_clear (LmGpuSession *g)
{
  lm_cuda_rt_free (g->lora_mem);
  free (g->lora_a);
  free (g->lora_b);
  free (g->lora_h);
  g->lora_mem = NULL;
  g->lora_a = g->lora_b = NULL;
  g->lora_h = NULL;
  g->lora_u = g->lora_y = NULL;
  g->lora_bytes = 0;
}

void
lm_gpu_session_invalidate (LmGpuSession *g)
{
  if (g == NULL)
    return;
  for (size_t i = 0; i < g->n_segments; i++)
    lm_cuda_rt_graph_free (g->segments[i].graph);
  free (g->segments);
  g->segments = NULL;
  g->n_segments = 0;
  g->graph_failed = false;
}

bool
lm_gpu_session_graph_recorded (const LmGpuSession *g)
{
  return g != NULL && g->n_segments > 0;
}

size_t
lm_gpu_session_graph_segments (const LmGpuSession *g)
{
  return g != NULL ? g->n_segments : 0;
}

void
lm_gpu_session_free (LmGpuSession *g)
{
  if (g == NULL)
    return;
  if (g->stream != NULL)
    lm_cuda_rt_sync (g->stream);
  lm_gpu_session_invalidate (g);
  lora_clear (g);
  if (g->side != NULL)
    lm_cuda_rt_sync (g->side);
  lm_cuda_rt_event_free (g->join_event);
  lm_cuda_rt_event_free (g->fork_event);
  lm_cuda_rt_stream_free (g->side);
  lm_cuda_rt_stream_free (g->stream);
  lm_cuda_rt_free (g->mem);
  lm_cuda_rt_host_free (g->host_mem);
  lm_cuda_rt_host_unregister (g->registered);
  free (g->h_rows);
  free (g->h_first);
  if (g->dm != NULL)
    lm_gpu_model_release (g->model);
  free (g);
}

void
lm_gpu_session_reset (LmGpuSession *g)
{
  if (g == NULL)
    return;
  /* The KV cache needs no clearing: attention reads only positions < pos. */
  lm_cuda_rt_memset (g->stream, g->conv_state, 0, g->conv_count * sizeof (float));
  lm_cuda_rt_memset (g->stream, g->ssm_state, 0, g->ssm_count * sizeof (float));
  lm_cuda_rt_sync (g->stream);
}

/* Undoes a half-made session; @st LM_ERR_DEVICE is explained by @what. */
static LmStatus
session_fail (LmSession *s, LmGpuSession *g, LmStatus st, char **error_out, const char *what)
{
  if (st == LM_ERR_DEVICE)
    lm_fail (error_out, st, "%s failed (%s)", what, lm_cuda_rt_error ());
  lm_gpu_session_free (g);
  return st;
}

/* Shapes beyond the kernels' limits are refused before anything is made
 * (LM_BACKEND_AUTO then stays on the CPU). */
static LmStatus
check_limits (const LmModelInfo *in, char **error_out)
{
  if (in->head_dim > LM_CUDA_MAX_HEAD_DIM || in->ssm_state > LM_CUDA_MAX_STATE)
    return lm_fail (error_out, LM_ERR_UNSUPPORTED,
                    "the GPU kernels take heads of at most %d and states of at most %d values; "
                    "this model has %u and %u",
                    LM_CUDA_MAX_HEAD_DIM, LM_CUDA_MAX_STATE, in->head_dim, in->ssm_state);
  return LM_OK;
}

/* TENSAFE_CUDA_BRANCHES=1: a decode step runs the independent products of
 * a layer on a second stream (lm-cuda-forward.c). */
static bool
branches_wanted (void)
{
  const char *env = getenv ("TENSAFE_CUDA_BRANCHES");
  return env != NULL && strcmp (env, "1") == 0;
}

static LmStatus
open_branches (LmGpuSession *g)
{
  LmStatus st = lm_cuda_rt_stream_new (&g->side);
  if (st == LM_OK)
    st = lm_cuda_rt_event_new (&g->fork_event);
  if (st == LM_OK)
    st = lm_cuda_rt_event_new (&g->join_event);
  return st;
}

LmStatus
lm_gpu_session_new (LmSession *s, uint32_t n_layers, char **error_out)
{
  /* The device copy is a cache of the read-only model, shared under its lock. */
  LmModel *m = (LmModel *) s->model;
  uint32_t n_layer = m->info.n_layer;
  LmStatus st = check_limits (&m->info, error_out);
  if (st != LM_OK)
    return st;
  LmGpuSession *g = calloc (1, sizeof *g);
  if (g == NULL)
    return LM_ERR_NO_MEMORY;
  g->model = m;
  g->n_layers = n_layers == 0 || n_layers > n_layer ? n_layer : n_layers;
  g->head = g->n_layers == n_layer;
  Carve c = { NULL, 0 };
  layout (s, g, &c);
  g->bytes = c.off;
  st = lm_gpu_model_acquire (m, g->n_layers, g->head, g->bytes, &g->dm, error_out);
  if (st != LM_OK)
    {
      free (g);
      return st;
    }
  if ((st = lm_cuda_rt_malloc (&g->mem, g->bytes)) != LM_OK)
    return session_fail (s, g, st, error_out, "allocating the session's GPU memory");
  c = (Carve) { g->mem, 0 };
  layout (s, g, &c);
  if ((st = lm_cuda_rt_stream_new (&g->stream)) != LM_OK)
    return session_fail (s, g, st, error_out, "creating a CUDA stream");
  if ((st = alloc_host (s, g)) != LM_OK)
    return session_fail (s, g, st, error_out, "allocating pinned host memory");
  if (branches_wanted () && (st = open_branches (g)) != LM_OK)
    return session_fail (s, g, st, error_out, "creating the side stream");
  s->gpu = g;
  s->gpu_layers = g->n_layers;
  lm_gpu_session_reset (g);
  return LM_OK;
}

void
lm_gpu_session_memory (const LmGpuSession *g, size_t *model_bytes, size_t *session_bytes)
{
  *model_bytes = g != NULL ? g->dm->bytes : 0;
  *session_bytes = g != NULL ? g->bytes + g->lora_bytes : 0;
}

/* Copies module @i's A, and B times its scale, to the device. */
static LmStatus
upload_module (LmGpuSession *g, const LmLoraModule *mod, size_t i, char *mem, size_t *off)
{
  size_t a_bytes = (size_t) mod->rank * mod->d_in * sizeof (float);
  size_t b_count = (size_t) mod->d_out * mod->rank;
  float *scaled = malloc (b_count * sizeof (float));
  if (scaled == NULL)
    return LM_ERR_NO_MEMORY;
  for (size_t j = 0; j < b_count; j++)
    scaled[j] = mod->scale * mod->b[j];
  g->lora_a[i] = (const float *) (mem + *off);
  LmStatus st = lm_cuda_rt_upload (mem + *off, mod->a, a_bytes);
  *off += (a_bytes + CARVE_ALIGN - 1) / CARVE_ALIGN * CARVE_ALIGN;
  g->lora_b[i] = (const float *) (mem + *off);
  if (st == LM_OK)
    st = lm_cuda_rt_upload (mem + *off, scaled, b_count * sizeof (float));
  *off += (b_count * sizeof (float) + CARVE_ALIGN - 1) / CARVE_ALIGN * CARVE_ALIGN;
  free (scaled);
  return st;
}

LmStatus
lm_gpu_session_set_lora (LmSession *s)
{
  LmGpuSession *g = s->gpu;
  const LmLora *lora = s->lora;
  lm_gpu_session_invalidate (g);
  lora_clear (g);
  if (lora == NULL || lora->n_modules == 0)
    return LM_OK;
  size_t max_d_in = 0, nb = s->n_batch;
  Carve c = { NULL, 0 };
  for (size_t i = 0; i < lora->n_modules; i++)
    {
      const LmLoraModule *mod = &lora->modules[i];
      max_d_in = mod->d_in > max_d_in ? mod->d_in : max_d_in;
      carve (&c, (size_t) mod->rank * mod->d_in, sizeof (float));
      carve (&c, (size_t) mod->d_out * mod->rank, sizeof (float));
    }
  size_t matrices = c.off;
  g->lora_u = carve (&c, nb * lora->max_rank, sizeof (float));
  g->lora_y = carve (&c, nb * lora->max_d_out, sizeof (float));
  g->lora_a = calloc (lora->n_modules, sizeof *g->lora_a);
  g->lora_b = calloc (lora->n_modules, sizeof *g->lora_b);
  g->lora_h = malloc (nb * max_d_in * sizeof (float));
  if (g->lora_a == NULL || g->lora_b == NULL || g->lora_h == NULL)
    {
      lora_clear (g);
      return LM_ERR_NO_MEMORY;
    }
  LmStatus st = lm_cuda_rt_malloc (&g->lora_mem, c.off);
  size_t off = 0;
  for (size_t i = 0; st == LM_OK && i < lora->n_modules; i++)
    st = upload_module (g, &lora->modules[i], i, g->lora_mem, &off);
  if (st != LM_OK)
    {
      lora_clear (g);
      return st;
    }
  g->lora_u = (float *) ((char *) g->lora_mem + matrices);
  g->lora_y = (float *) ((char *) g->lora_mem + matrices
                         + (nb * lora->max_rank * sizeof (float) + CARVE_ALIGN - 1) / CARVE_ALIGN
                             * CARVE_ALIGN);
  g->lora_bytes = c.off;
  return LM_OK;
}
