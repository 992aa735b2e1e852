/* forward-attn.c: softmax attention with (partial) RoPE and a KV cache; the
 * optional parts (q/k bias, q/k norm, output gate) as the model declares them
 * (FORMAT.md 3.3).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward-ops.h"
#include "session-private.h"

/* The queries of one kv head attended at once: heads of the group, and as
 * many tokens as fill LM_ATTN_QUERIES lanes. */
typedef struct {
  LmSession *s;
  uint32_t n;                    /* new tokens */
  uint32_t tokens, heads;        /* per item: tokens, heads of one group */
  uint32_t token_blocks, head_blocks;
  const float *k_cache, *v_cache;
  float *scratch;                /* scratch_floats per worker */
  size_t scratch_floats;
} AttnJob;

/* Adds the bias rows of q, k and v (Qwen2) to the @n new tokens. */
static void
add_qkv_bias (LmSession *s, const LmLayer *l, uint32_t n)
{
  const LmModelInfo *in = &s->model->info;
  uint32_t qd = in->head_dim * in->n_head, kvd = in->head_dim * in->n_head_kv;
  for (uint32_t t = 0; t < n; t++)
    {
      lm_add (s->a1 + (size_t) t * qd, l->bq, qd);
      lm_add (s->a2 + (size_t) t * kvd, l->bk, kvd);
      lm_add (s->a3 + (size_t) t * kvd, l->bv, kvd);
    }
}

/* Normalises (where the model has q/k norms) and rotates one head. */
static void
prepare_head (float *x, const float *norm, const LmModelInfo *in, const float *cs)
{
  if (norm != NULL)
    lm_rms_norm (x, norm, in->rms_eps, in->head_dim, x);
  lm_rope_apply (x, in->n_rot, cs);
}

/* Normalises and rotates the new q and k heads, and appends k, v to the cache. */
static void
prepare_qkv (LmSession *s, const LmLayer *l, uint32_t n, float *k_cache, float *v_cache)
{
  const LmModelInfo *in = &s->model->info;
  uint32_t hd = in->head_dim, kvd = hd * in->n_head_kv, qs = lm_q_stride (in);
  for (uint32_t t = 0; t < n; t++)
    {
      float *cs = s->rope + (size_t) t * in->n_rot;
      lm_rope_table (s->pos + t, in->n_rot, in->rope_base, in->rope_sections, cs);
      float *qg = s->a1 + (size_t) t * qs * in->n_head;
      for (uint32_t j = 0; j < in->n_head; j++)
        prepare_head (qg + (size_t) qs * j, l->q_norm, in, cs);
      float *k = s->a2 + (size_t) t * kvd;
      for (uint32_t i = 0; i < in->n_head_kv; i++)
        prepare_head (k + (size_t) hd * i, l->k_norm, in, cs);
      size_t row = (size_t) (s->pos + t) * kvd;
      memcpy (k_cache + row, k, kvd * sizeof (float));
      memcpy (v_cache + row, s->a3 + (size_t) t * kvd, kvd * sizeof (float));
    }
}

/* The sigmoid output gate of Qwen3.5's attention. */
static void
apply_gate (float *out, const float *gate, uint32_t hd)
{
  for (uint32_t d = 0; d < hd; d++)
    out[d] *= lm_sigmoid (gate[d]);
}

void
lm_attend_head (const LmKernels *kernels, const float *q, const float *gate, const float *k_cache,
                const float *v_cache, uint32_t kvd, uint32_t n_pos, uint32_t hd, float *out)
{
  LmAttnQueries a = { .n_q = 1, .q = { q }, .n_pos = { n_pos }, .out = { out }, .k = k_cache,
                      .v = v_cache, .kvd = kvd, .hd = hd, .scale = 1.0f / sqrtf ((float) hd) };
  float *scratch = malloc (lm_attend_scratch_floats (n_pos, hd) * sizeof (float));
  if (scratch == NULL)
    {
      for (uint32_t d = 0; d < hd; d++)
        out[d] = NAN;
      return;
    }
  lm_attend (kernels, &a, scratch);
  free (scratch);
  if (gate != NULL)
    apply_gate (out, gate, hd);
}

/* Item @item: a block of tokens and of heads of one kv head. */
static void
attend_item (const AttnJob *job, uint32_t item, float *scratch)
{
  LmSession *s = job->s;
  const LmModelInfo *in = &s->model->info;
  const uint32_t hd = in->head_dim, kvd = hd * in->n_head_kv, qs = lm_q_stride (in);
  const uint32_t group = in->n_head / in->n_head_kv;
  uint32_t hb = item % job->head_blocks, rest = item / job->head_blocks;
  uint32_t kv = rest % in->n_head_kv, t0 = rest / in->n_head_kv * job->tokens;
  LmAttnQueries a = { .k = job->k_cache + (size_t) kv * hd, .v = job->v_cache + (size_t) kv * hd,
                      .kvd = kvd, .hd = hd, .scale = 1.0f / sqrtf ((float) hd),
                      .one_token = job->n == 1 };
  for (uint32_t t = t0; t < t0 + job->tokens && t < job->n; t++)
    for (uint32_t j = hb * job->heads; j < (hb + 1) * job->heads && j < group; j++)
      {
        size_t row = (size_t) t * in->n_head + kv * group + j;
        a.q[a.n_q] = s->a1 + row * qs;
        a.n_pos[a.n_q] = s->pos + t + 1;
        a.out[a.n_q] = s->a4 + row * hd;
        a.n_q++;
      }
  lm_attend (s->kernels, &a, scratch);
  for (uint32_t i = 0; in->attn_gated && i < a.n_q; i++)
    apply_gate (a.out[i], a.q[i] + hd, hd);
}

/* Worker @slot of @n_slots: items slot, slot + n_slots, ... with its own
 * scratch; each item's arithmetic is the same whichever worker runs it. */
static void
attend_worker (void *ctx, int slot, int n_slots)
{
  const AttnJob *job = ctx;
  uint32_t n_items = job->token_blocks * job->s->model->info.n_head_kv * job->head_blocks;
  for (uint32_t item = (uint32_t) slot; item < n_items; item += (uint32_t) n_slots)
    attend_item (job, item, job->scratch + (size_t) slot * job->scratch_floats);
}

/* The attention of the @n new tokens, in items of up to LM_ATTN_QUERIES
 * queries sharing a kv head; each worker uses its part of the session's
 * scratch (allocated with the session, not per call). */
static void
attend_all (LmSession *s, uint32_t n, const float *k_cache, const float *v_cache)
{
  const LmModelInfo *in = &s->model->info;
  const uint32_t group = in->n_head / in->n_head_kv;
  AttnJob job = { .s = s, .n = n, .k_cache = k_cache, .v_cache = v_cache };
  job.heads = group < LM_ATTN_QUERIES ? group : LM_ATTN_QUERIES;
  job.tokens = job.heads == group ? LM_ATTN_QUERIES / group : 1;
  job.token_blocks = (n + job.tokens - 1) / job.tokens;
  job.head_blocks = (group + job.heads - 1) / job.heads;
  uint32_t n_items = job.token_blocks * in->n_head_kv * job.head_blocks;
  int workers = lm_thread_pool_size (s->pool);
  workers = (uint32_t) workers < n_items ? workers : (int) n_items;
  job.scratch_floats = s->attn_scratch_floats;
  job.scratch = s->attn_scratch;
  lm_thread_pool_run (workers > 1 ? s->pool : NULL, attend_worker, &job, workers);
}

LmStatus
lm_forward_full_attention (LmSession *s, uint32_t il, uint32_t n)
{
  const LmModel *m = s->model;
  const LmLayer *l = &m->layers[il];
  const LmModelInfo *in = &m->info;
  size_t kvd = (size_t) in->head_dim * in->n_head_kv;
  float *k_cache = s->kv_k + (size_t) l->state_index * s->n_ctx * kvd;
  float *v_cache = s->kv_v + (size_t) l->state_index * s->n_ctx * kvd;
  LmProj projs[] = {
    { LM_MODULE_ATTN_Q, &l->wq, s->a1 },
    { LM_MODULE_ATTN_K, &l->wk, s->a2 },
    { LM_MODULE_ATTN_V, &l->wv, s->a3 },
  };
  LmStatus st = lm_project_many (s, il, projs, 3, s->h, n);
  if (st != LM_OK)
    return st;
  if (l->bq != NULL)
    add_qkv_bias (s, l, n);
  prepare_qkv (s, l, n, k_cache, v_cache);
  attend_all (s, n, k_cache, v_cache);
  return lm_project (s, il, LM_MODULE_ATTN_OUTPUT, &l->wo, s->a4, n, s->o);
}
