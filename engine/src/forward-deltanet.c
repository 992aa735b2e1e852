/* forward-deltanet.c: the Gated DeltaNet linear-attention layer (FORMAT.md 3.5).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Prefill runs the same sequential delta-rule recurrence as decode, token by
 * token inside each head (heads run in parallel), so a batch of any size gives
 * exactly the numbers of one-token steps: the recurrence is the reference and
 * there is no second (chunked) formulation to keep equal to it.
 */
#include <math.h>
#include <string.h>

#include "forward-ops.h"
#include "session-private.h"

#define MAX_STATE 1024   /* S is checked against this when the model loads */

typedef struct {
  LmSession *s;
  const LmLayer *l;
  uint32_t n;
  float *state;      /* this layer's [Hv][S][S] */
} DeltaJob;

void
lm_causal_conv (const float *in, const float *w, uint32_t K, uint32_t C, uint32_t n,
                float *conv_state, float *out_rows)
{
  for (uint32_t t = 0; t < n; t++)
    {
      float *out = out_rows + (size_t) t * C;
      for (uint32_t c = 0; c < C; c++)
        {
          float sum = 0.0f;
          for (uint32_t j = 0; j < K; j++)
            {
              int64_t r = (int64_t) t - (K - 1) + j;
              const float *src = r >= 0 ? in + (size_t) r * C
                                        : conv_state + (size_t) ((int64_t) (K - 1) + r) * C;
              sum += w[(size_t) c * K + j] * src[c];
            }
          out[c] = lm_silu (sum);
        }
    }
  uint32_t keep = K - 1;
  if (keep == 0)
    return;
  if (n >= keep)
    memcpy (conv_state, in + (size_t) (n - keep) * C, (size_t) keep * C * sizeof (float));
  else
    {
      memmove (conv_state, conv_state + (size_t) n * C, (size_t) (keep - n) * C * sizeof (float));
      memcpy (conv_state + (size_t) (keep - n) * C, in, (size_t) n * C * sizeof (float));
    }
}

/* L2-normalises every q and k head of every token (in s->a3). */
static void
normalize_qk (LmSession *s, uint32_t n)
{
  const LmModelInfo *in = &s->model->info;
  uint32_t S = in->ssm_state, C = lm_conv_dim (in);
  for (uint32_t t = 0; t < n; t++)
    for (uint32_t h = 0; h < 2 * in->ssm_groups; h++)
      lm_l2_norm (s->a3 + (size_t) t * C + (size_t) h * S, in->rms_eps, S);
}

/* With the old state M0 and decay a: M k = a (M0 k), and
 * o = a (M0 q) + d (k . q), so both products read M0 through the f32 row
 * kernel before the single update pass. */
void
lm_delta_step (const LmKernels *kernels, float *M, const float *q, const float *k, const float *v,
            float decay, float beta, uint32_t S, float *mk, float *o)
{
  float scale = 1.0f / sqrtf ((float) S), kq = 0.0f;
  size_t row_bytes = (size_t) S * sizeof (float);
  lm_dot_rows (kernels, LM_TYPE_F32, LM_ACT_F32, M, row_bytes, S, k, S, mk);
  lm_dot_rows (kernels, LM_TYPE_F32, LM_ACT_F32, M, row_bytes, S, q, S, o);
  for (uint32_t c = 0; c < S; c++)
    kq += k[c] * q[c];
  for (uint32_t r = 0; r < S; r++)
    {
      float d = beta * (v[r] - decay * mk[r]);
      lm_scale_axpy (M + (size_t) r * S, decay, d, k, S);
      o[r] = (decay * o[r] + d * kq) * scale;
    }
}

/* Value head @j over all tokens of the batch, then its gated RMSNorm. */
static void
delta_head_cb (void *ctx, uint32_t j)
{
  const DeltaJob *job = ctx;
  LmSession *s = job->s;
  const LmLayer *l = job->l;
  const LmModelInfo *in = &s->model->info;
  uint32_t S = in->ssm_state, Hv = in->ssm_heads, C = lm_conv_dim (in);
  uint32_t key_dim = lm_key_dim (in), vd = lm_value_dim (in), m = j % in->ssm_groups;
  float *M = job->state + (size_t) j * S * S;
  float mk[MAX_STATE];
  const float *alpha = s->ab, *beta = s->ab + (size_t) s->n_batch * Hv;
  for (uint32_t t = 0; t < job->n; t++)
    {
      const float *u = s->a3 + (size_t) t * C;
      float g = l->ssm_a[j] * lm_softplus (alpha[(size_t) t * Hv + j] + l->dt_bias[j]);
      float b = lm_sigmoid (beta[(size_t) t * Hv + j]);
      float *o = s->a4 + (size_t) t * vd + (size_t) j * S;
      lm_delta_step (s->kernels, M, u + (size_t) m * S, u + key_dim + (size_t) m * S,
                  u + 2 * key_dim + (size_t) j * S, expf (g), b, S, mk, o);
      const float *z = s->a2 + (size_t) t * vd + (size_t) j * S;
      lm_rms_norm (o, l->ssm_norm, in->rms_eps, S, o);
      for (uint32_t i = 0; i < S; i++)
        o[i] *= lm_silu (z[i]);
    }
}

LmStatus
lm_forward_linear_attention (LmSession *s, uint32_t il, uint32_t n)
{
  const LmModel *m = s->model;
  const LmLayer *l = &m->layers[il];
  const LmModelInfo *in = &m->info;
  uint32_t K = in->ssm_conv_kernel, S = in->ssm_state, Hv = in->ssm_heads;
  float *conv_state = s->conv_state + (size_t) l->state_index * (K - 1) * lm_conv_dim (in);
  float *state = s->ssm_state + (size_t) l->state_index * Hv * S * S;
  LmProj projs[] = {
    { LM_MODULE_ATTN_QKV, &l->wqkv, s->a1 },
    { LM_MODULE_ATTN_GATE, &l->wgate, s->a2 },
    { LM_MODULE_SSM_ALPHA, &l->walpha, s->ab },
    { LM_MODULE_SSM_BETA, &l->wbeta, s->ab + (size_t) s->n_batch * Hv },
  };
  LmStatus st = lm_project_many (s, il, projs, 4, s->h, n);
  if (st != LM_OK)
    return st;
  lm_causal_conv (s->a1, l->conv, K, lm_conv_dim (in), n, conv_state, s->a3);
  normalize_qk (s, n);
  DeltaJob job = { s, l, n, state };
  lm_parallel_for (s->pool, Hv, delta_head_cb, &job);
  return lm_project (s, il, LM_MODULE_SSM_OUT, &l->wssm_out, s->a4, n, s->o);
}
