/* session.c: sessions: state and scratch allocation, prefill, decode, rewind.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward-rows.h"
#include "lm-gpu.h"
#include "lora-private.h"
#include "session-gpu.h"

#define DEFAULT_N_CTX 4096
#define DEFAULT_N_BATCH 64

static size_t
max_of (const size_t *v, size_t n)
{
  size_t best = 0;
  for (size_t i = 0; i < n; i++)
    best = v[i] > best ? v[i] : best;
  return best;
}

/* Allocates @count zeroed elements of @size bytes and accounts for them. */
static void *
session_alloc (LmSession *s, size_t count, size_t size, bool *ok)
{
  void *p = calloc (count ? count : 1, size);
  if (p == NULL)
    *ok = false;
  s->memory_bytes += count * size;
  return p;
}

static void
size_scratch (LmSession *s)
{
  const LmModelInfo *in = &s->model->info;
  size_t E = in->n_embd, C = lm_conv_dim (in), vd = lm_value_dim (in);
  size_t q = (size_t) 2 * in->head_dim * in->n_head, kvd = (size_t) in->head_dim * in->n_head_kv;
  size_t att = (size_t) in->head_dim * in->n_head;
  size_t w1[] = { C, q, in->n_ff, in->n_ff_exp, in->n_ff_shexp };
  size_t w2[] = { vd, kvd, in->n_ff, in->n_ff_exp, in->n_ff_shexp };
  size_t w3[] = { C, kvd, E };
  size_t w4[] = { vd, att, E };
  s->w1 = max_of (w1, 5);
  s->w2 = max_of (w2, 5);
  s->w3 = max_of (w3, 3);
  s->w4 = max_of (w4, 3);
}

static bool
alloc_buffers (LmSession *s)
{
  const LmModel *m = s->model;
  const LmModelInfo *in = &m->info;
  size_t nb = s->n_batch, E = in->n_embd, k = in->n_expert_used;
  size_t kvd = (size_t) in->head_dim * in->n_head_kv, K = in->ssm_conv_kernel;
  size_t S = in->ssm_state;
  bool ok = true;
  size_scratch (s);
  s->history = session_alloc (s, s->n_ctx, sizeof (int32_t), &ok);
  s->kv_k = session_alloc (s, (size_t) m->n_full * s->n_ctx * kvd, sizeof (float), &ok);
  s->kv_v = session_alloc (s, (size_t) m->n_full * s->n_ctx * kvd, sizeof (float), &ok);
  s->conv_state = session_alloc (s, (size_t) m->n_linear * (K - 1) * lm_conv_dim (in),
                                 sizeof (float), &ok);
  s->ssm_state = session_alloc (s, (size_t) m->n_linear * in->ssm_heads * S * S,
                                sizeof (float), &ok);
  s->x = session_alloc (s, nb * E, sizeof (float), &ok);
  s->h = session_alloc (s, nb * E, sizeof (float), &ok);
  s->o = session_alloc (s, nb * E, sizeof (float), &ok);
  s->a1 = session_alloc (s, nb * s->w1, sizeof (float), &ok);
  s->a2 = session_alloc (s, nb * s->w2, sizeof (float), &ok);
  s->a3 = session_alloc (s, nb * s->w3, sizeof (float), &ok);
  s->a4 = session_alloc (s, nb * s->w4, sizeof (float), &ok);
  s->ab = session_alloc (s, nb * 2 * in->ssm_heads, sizeof (float), &ok);
  s->rope = session_alloc (s, nb * in->n_rot, sizeof (float), &ok);
  s->router = session_alloc (s, nb * in->n_expert, sizeof (float), &ok);
  s->sel = session_alloc (s, nb * k, sizeof (int32_t), &ok);
  s->sel_w = session_alloc (s, nb * k, sizeof (float), &ok);
  s->moe_y = session_alloc (s, nb * k * E, sizeof (float), &ok);
  s->gather = session_alloc (s, nb * (k ? k : 1), sizeof (int32_t), &ok);
  s->logits = session_alloc (s, in->n_vocab, sizeof (float), &ok);
  size_t wexp = in->n_ff_exp > in->n_ff_shexp ? in->n_ff_exp : in->n_ff_shexp;
  s->moe_gu = session_alloc (s, 2 * (k + 1) * wexp, sizeof (float), &ok);
  size_t max_in[] = { E, lm_value_dim (in), (size_t) in->head_dim * in->n_head, in->n_ff, wexp };
  size_t act_bytes = lm_rows_scratch_bytes (max_of (max_in, 5));
  s->act_buf = aligned_alloc (64, (act_bytes + 63) / 64 * 64);
  s->memory_bytes += act_bytes;
  ok = ok && s->act_buf != NULL;
  s->module_slot = session_alloc (s, (size_t) in->n_layer * LM_N_MODULE_KINDS, sizeof (int32_t),
                                  &ok);
  if (m->n_full > 0)
    {
      s->attn_scratch_floats = lm_attend_scratch_floats (s->n_ctx, in->head_dim);
      s->attn_scratch = session_alloc (s, (size_t) lm_thread_pool_size (s->pool)
                                          * s->attn_scratch_floats, sizeof (float), &ok);
    }
  return ok;
}

static uint32_t
online_cores (void)
{
  long n = sysconf (_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t) n : 1;
}

bool
lm_backend_from_name (const char *name, LmBackend *out)
{
  static const char *const names[] = { "cpu", "cuda", "auto" };
  for (int i = 0; name != NULL && i < 3; i++)
    if (strcmp (name, names[i]) == 0)
      {
        *out = (LmBackend) i;
        return true;
      }
  return false;
}

/* Puts the session on the GPU when asked to. LM_BACKEND_AUTO keeps it on the
 * CPU when that fails and records why; LM_BACKEND_CUDA fails. */
static LmStatus
start_backend (LmSession *s, const LmSessionParams *p, char **error_out)
{
  if (p->backend == LM_BACKEND_CPU)
    return LM_OK;
  if (p->backend != LM_BACKEND_CUDA && p->backend != LM_BACKEND_AUTO)
    return lm_fail (error_out, LM_ERR_INVALID_ARGUMENT, "unknown backend %d", (int) p->backend);
  char why[200] = "", *msg = NULL;
  LmStatus st = LM_ERR_DEVICE;
  if (!lm_gpu_available (why, sizeof why))
    lm_fail (&msg, st, "%s", why);
  else
    st = lm_gpu_session_new (s, p->gpu_layers, &msg);
  if (st == LM_OK)
    return LM_OK;
  if (p->backend == LM_BACKEND_AUTO && st != LM_ERR_NO_MEMORY)
    {
      lm_fail (&s->backend_note, LM_OK, "running on the CPU: %s",
               msg != NULL ? msg : lm_status_message (st));
      free (msg);
      return LM_OK;
    }
  if (error_out != NULL && *error_out == NULL)
    *error_out = msg;
  else
    free (msg);
  return st;
}

LmStatus
lm_session_new (const LmModel *model, const LmSessionParams *params, LmSession **out)
{
  return lm_session_new_full (model, params, out, NULL);
}

LmStatus
lm_session_new_full (const LmModel *model, const LmSessionParams *params, LmSession **out,
                     char **error_out)
{
  if (model == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  LmSessionParams p = params != NULL ? *params : (LmSessionParams) { 0 };
  LmSession *s = calloc (1, sizeof *s);
  if (s == NULL)
    return LM_ERR_NO_MEMORY;
  s->model = model;
  s->kernels = lm_kernels_best ();
  s->act_mode = p.exact_activations ? LM_ACT_F32 : LM_ACT_NATIVE;
  s->n_ctx = p.n_ctx ? p.n_ctx
                     : (model->info.n_ctx_train < DEFAULT_N_CTX ? model->info.n_ctx_train
                                                                : DEFAULT_N_CTX);
  s->n_batch = p.n_batch ? p.n_batch : DEFAULT_N_BATCH;
  if (s->n_batch > s->n_ctx)
    s->n_batch = s->n_ctx;
  s->owns_pool = p.pool == NULL;
  s->pool = p.pool ? p.pool : lm_thread_pool_new ((int) (p.n_threads ? p.n_threads : online_cores ()));
  if (s->pool == NULL || !alloc_buffers (s))
    {
      lm_session_free (s);
      return LM_ERR_NO_MEMORY;
    }
  memset (s->module_slot, 0xff, (size_t) model->info.n_layer * LM_N_MODULE_KINDS * sizeof (int32_t));
  LmStatus st = start_backend (s, &p, error_out);
  /* a layer or the head on the CPU: its weights in huge pages */
  if (st == LM_OK && (s->gpu == NULL || s->gpu_layers < model->info.n_layer))
    st = lm_model_host_weights_needed (model, error_out);
  if (st != LM_OK)
    {
      lm_session_free (s);
      return st;
    }
  *out = s;
  return LM_OK;
}

void
lm_session_free (LmSession *s)
{
  if (s == NULL)
    return;
  lm_gpu_session_free (s->gpu);
  free (s->backend_note);
  float *buffers[] = { s->kv_k, s->kv_v, s->conv_state, s->ssm_state, s->x, s->h, s->o,
                       s->a1, s->a2, s->a3, s->a4, s->ab, s->rope, s->router, s->sel_w,
                       s->moe_y, s->moe_gu, s->logits, s->lora_u, s->lora_y, s->attn_scratch };
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
    free (buffers[i]);
  free (s->history);
  free (s->sel);
  free (s->gather);
  free (s->module_slot);
  free (s->hooks);
  free (s->act_buf);
  if (s->owns_pool)
    lm_thread_pool_free (s->pool);
  free (s);
}

const LmModel *
lm_session_model (const LmSession *s)
{
  return s->model;
}

size_t
lm_session_memory_bytes (const LmSession *s)
{
  return s->memory_bytes;
}

uint32_t
lm_session_n_ctx (const LmSession *s)
{
  return s->n_ctx;
}

uint32_t
lm_session_pos (const LmSession *s)
{
  return s->pos;
}

const float *
lm_session_logits (const LmSession *s)
{
  return s->logits;
}

LmTimings *
lm_session_timings (LmSession *s)
{
  return &s->timings;
}

const char *
lm_session_backend_name (const LmSession *s)
{
  return s->gpu != NULL ? "cuda" : "cpu";
}

const char *
lm_session_backend_note (const LmSession *s)
{
  return s->backend_note;
}

uint32_t
lm_session_gpu_layers (const LmSession *s)
{
  return s->gpu != NULL ? s->gpu_layers : 0;
}

void
lm_session_gpu_memory (const LmSession *s, size_t *model_bytes, size_t *session_bytes)
{
  lm_gpu_session_memory (s->gpu, model_bytes, session_bytes);
}

void
lm_session_set_abort (LmSession *s, LmAbortFunc abort_fn, void *user_data)
{
  s->abort_fn = abort_fn;
  s->abort_data = user_data;
}

void
lm_session_set_debug (LmSession *s, LmDebugFunc fn, void *user_data)
{
  s->debug_fn = fn;
  s->debug_data = user_data;
}

LmStatus
lm_session_prefill (LmSession *s, const int32_t *tokens, size_t n, float *logits_all)
{
  if (s == NULL || (tokens == NULL && n > 0) || n == 0)
    return LM_ERR_INVALID_ARGUMENT;
  if (n > s->n_ctx - s->pos)
    return LM_ERR_CONTEXT_FULL;
  memset (&s->timings, 0, sizeof s->timings);
  size_t V = s->model->info.n_vocab;
  for (size_t done = 0; done < n;)
    {
      if (s->abort_fn != NULL && s->abort_fn (s->abort_data))
        return LM_ERR_CANCELLED;
      uint32_t chunk = (uint32_t) (n - done < s->n_batch ? n - done : s->n_batch);
      s->logits_unused = logits_all == NULL && done + chunk < n;
      LmStatus st = lm_forward_batch (s, tokens + done, chunk,
                                      logits_all != NULL ? logits_all + done * V : NULL);
      s->logits_unused = false;
      if (st != LM_OK)
        return st;
      done += chunk;
    }
  return LM_OK;
}

LmStatus
lm_session_mean_hidden (LmSession *s, const int32_t *tokens, size_t n, float *out)
{
  if (s == NULL || out == NULL || n == 0)
    return LM_ERR_INVALID_ARGUMENT;
  uint32_t E = s->model->info.n_embd;
  double *sum = calloc (E, sizeof *sum);
  if (sum == NULL)
    return LM_ERR_NO_MEMORY;
  s->pool_sum = sum;
  LmStatus st = lm_session_prefill (s, tokens, n, NULL);
  s->pool_sum = NULL;
  for (uint32_t e = 0; st == LM_OK && e < E; e++)
    out[e] = (float) (sum[e] / (double) n);
  free (sum);
  return st;
}

LmStatus
lm_session_decode (LmSession *s, int32_t token)
{
  if (s == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  memset (&s->timings, 0, sizeof s->timings);
  return lm_forward_batch (s, &token, 1, NULL);
}

void
lm_session_reset (LmSession *s)
{
  const LmModel *m = s->model;
  const LmModelInfo *in = &m->info;
  size_t S = in->ssm_state;
  s->pos = 0;
  s->broken = false;
  /* The KV cache needs no clearing: attention reads only positions < pos. */
  memset (s->conv_state, 0, (size_t) m->n_linear * (in->ssm_conv_kernel - 1) * lm_conv_dim (in)
                            * sizeof (float));
  memset (s->ssm_state, 0, (size_t) m->n_linear * in->ssm_heads * S * S * sizeof (float));
  lm_gpu_session_reset (s->gpu);
}

LmStatus
lm_session_rewind (LmSession *s, uint32_t pos)
{
  if (s == NULL || pos > s->pos)
    return LM_ERR_INVALID_ARGUMENT;
  if (pos == s->pos && !s->broken)
    return LM_OK;
  /* Attention alone reads only positions below pos, so a model without
   * recurrent layers drops the rest by moving back; the last kept token is
   * fed again for its logits. (On the GPU the cache lives on the device:
   * replay there.) */
  if (s->model->n_linear == 0 && s->gpu == NULL && !s->broken && pos > 0)
    {
      s->pos = pos - 1;
      return lm_session_decode (s, s->history[pos - 1]);
    }
  /* The recurrent state cannot be undone, so replay the kept prefix. The
   * history buffer is read while the replay rewrites the same entries with
   * the same values, front to back. */
  lm_session_reset (s);
  if (pos == 0)
    return LM_OK;
  return lm_session_prefill (s, s->history, pos, NULL);
}
