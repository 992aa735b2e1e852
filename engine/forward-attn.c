/* forward-attn.c: softmax attention with (partial) RoPE and a KV cache; the
 * optional parts (q/k bias, q/k norm, output gate) as the model declares them
 * (FORMAT.md 3.3).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "forward-ops.h"
#include "session-private.h"

#define MAX_HEAD_DIM 1024
#define SCORE_BLOCK 128

typedef struct {
  LmSession *s;
  const LmLayer *l;
  uint32_t n;
  const float *k_cache, *v_cache;
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

void
lm_attend_head (const LmKernels *kernels, const float *q, const float *gate, const float *k_cache,
                const float *v_cache, uint32_t kvd, uint32_t n_pos, uint32_t hd, float *out)
{
  float acc[MAX_HEAD_DIM], score[SCORE_BLOCK];
  memset (acc, 0, hd * sizeof (float));
  float scale = 1.0f / sqrtf ((float) hd), max = -INFINITY, sum = 0.0f;
  for (uint32_t p0 = 0; p0 < n_pos; p0 += SCORE_BLOCK)
    {
      uint32_t nb = n_pos - p0 < SCORE_BLOCK ? n_pos - p0 : SCORE_BLOCK;
      const float *k = k_cache + (size_t) p0 * kvd;
      const float *v = v_cache + (size_t) p0 * kvd;
      lm_dot_rows (kernels, LM_TYPE_F32, LM_ACT_F32, k, kvd * sizeof (float), nb, q, hd, score);
      float block_max = -INFINITY;
      for (uint32_t i = 0; i < nb; i++)
        {
          score[i] *= scale;
          block_max = score[i] > block_max ? score[i] : block_max;
        }
      if (block_max > max)
        {
          float shrink = expf (max - block_max);
          sum *= shrink;
          for (uint32_t d = 0; d < hd; d++)
            acc[d] *= shrink;
          max = block_max;
        }
      for (uint32_t i = 0; i < nb; i++)
        {
          float w = expf (score[i] - max);
          sum += w;
          lm_scale_axpy (acc, 1.0f, w, v + (size_t) i * kvd, hd);
        }
    }
  if (gate == NULL)
    for (uint32_t d = 0; d < hd; d++)
      out[d] = acc[d] / sum;
  else
    for (uint32_t d = 0; d < hd; d++)
      out[d] = acc[d] / sum * lm_sigmoid (gate[d]);
}

/* One (token, query head). */
static void
attend_cb (void *ctx, uint32_t item)
{
  const AttnJob *job = ctx;
  LmSession *s = job->s;
  const LmModelInfo *in = &s->model->info;
  uint32_t hd = in->head_dim, kvd = hd * in->n_head_kv;
  uint32_t t = item / in->n_head, j = item % in->n_head;
  uint32_t kv = j / (in->n_head / in->n_head_kv);
  const float *q = s->a1 + (size_t) (t * in->n_head + j) * lm_q_stride (in);
  lm_attend_head (s->kernels, q, in->attn_gated ? q + hd : NULL, job->k_cache + (size_t) kv * hd,
                  job->v_cache + (size_t) kv * hd, kvd, s->pos + t + 1, hd,
                  s->a4 + (size_t) (t * in->n_head + j) * hd);
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
  AttnJob job = { s, l, n, k_cache, v_cache };
  lm_parallel_for (s->pool, n * in->n_head, attend_cb, &job);
  return lm_project (s, il, LM_MODULE_ATTN_OUTPUT, &l->wo, s->a4, n, s->o);
}
