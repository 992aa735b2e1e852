/* forward-ffn.c: dense SwiGLU FFN and the routed + shared expert MoE (FORMAT.md 3.6).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "forward-ops.h"
#include "session-private.h"

/* gate = SiLU(gate) * up over @count values. */
static void
swiglu (float *gate, const float *up, size_t count)
{
  for (size_t i = 0; i < count; i++)
    gate[i] = lm_silu (gate[i]) * up[i];
}

static LmStatus
dense_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->model->layers[il];
  LmStatus st;
  if ((st = lm_project (s, il, LM_MODULE_FFN_GATE, &l->ffn_gate, s->h, n, s->a1)) ||
      (st = lm_project (s, il, LM_MODULE_FFN_UP, &l->ffn_up, s->h, n, s->a2)))
    return st;
  swiglu (s->a1, s->a2, (size_t) n * l->ffn_gate.n_out);
  return lm_project (s, il, LM_MODULE_FFN_DOWN, &l->ffn_down, s->a1, n, s->o);
}

/* Softmax over all experts, the k most probable (ties: lower index), their
 * probabilities renormalised to sum 1. */
static void
route_token (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel, float *w)
{
  float max = logits[0];
  for (uint32_t e = 1; e < n_expert; e++)
    max = logits[e] > max ? logits[e] : max;
  float total = 0.0f;
  for (uint32_t e = 0; e < n_expert; e++)
    total += expf (logits[e] - max);
  float picked = 0.0f;
  for (uint32_t i = 0; i < k; i++)
    {
      int32_t best = -1;
      for (uint32_t e = 0; e < n_expert; e++)
        {
          bool taken = false;
          for (uint32_t j = 0; j < i; j++)
            taken |= sel[j] == (int32_t) e;
          if (!taken && (best < 0 || logits[e] > logits[best]))
            best = (int32_t) e;
        }
      sel[i] = best;
      w[i] = expf (logits[best] - max) / total;
      picked += w[i];
    }
  float denom = picked > 6.103515625e-5f ? picked : 6.103515625e-5f;
  for (uint32_t i = 0; i < k; i++)
    w[i] /= denom;
}

/* Runs expert @e on every (token, slot) routed to it; outputs, already scaled
 * by the routing weight, go to moe_y[token][slot]. */
static void
run_expert (LmSession *s, const LmLayer *l, uint32_t e, uint32_t n)
{
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, k = in->n_expert_used, nf = in->n_ff_exp;
  uint32_t count = 0;
  for (uint32_t i = 0; i < n * k; i++)
    if (s->sel[i] == (int32_t) e)
      {
        memcpy (s->a3 + (size_t) count * E, s->h + (size_t) (i / k) * E, E * sizeof (float));
        s->gather[count++] = (int32_t) i;
      }
  if (count == 0)
    return;
  lm_linear (s, &l->exp_gate, e, s->a3, count, s->a1);
  lm_linear (s, &l->exp_up, e, s->a3, count, s->a2);
  swiglu (s->a1, s->a2, (size_t) count * nf);
  lm_linear (s, &l->exp_down, e, s->a1, count, s->a4);
  for (uint32_t r = 0; r < count; r++)
    {
      float w = s->sel_w[s->gather[r]];
      float *dst = s->moe_y + (size_t) s->gather[r] * E;
      const float *src = s->a4 + (size_t) r * E;
      for (uint32_t i = 0; i < E; i++)
        dst[i] = w * src[i];
    }
}

static LmStatus
shared_expert (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->model->layers[il];
  LmStatus st;
  if ((st = lm_project (s, il, LM_MODULE_FFN_GATE_SHEXP, &l->sh_gate, s->h, n, s->a1)) ||
      (st = lm_project (s, il, LM_MODULE_FFN_UP_SHEXP, &l->sh_up, s->h, n, s->a2)))
    return st;
  swiglu (s->a1, s->a2, (size_t) n * l->sh_gate.n_out);
  return lm_project (s, il, LM_MODULE_FFN_DOWN_SHEXP, &l->sh_down, s->a1, n, s->o);
}

static LmStatus
moe_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->model->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, k = in->n_expert_used;
  lm_linear (s, &l->router, 0, s->h, n, s->router);
  for (uint32_t t = 0; t < n; t++)
    route_token (s->router + (size_t) t * in->n_expert, in->n_expert, k, s->sel + (size_t) t * k,
                 s->sel_w + (size_t) t * k);
  for (uint32_t e = 0; e < in->n_expert; e++)
    run_expert (s, l, e, n);
  LmStatus st = shared_expert (s, il, n);
  if (st != LM_OK)
    return st;
  for (uint32_t t = 0; t < n; t++)
    {
      const float *h = s->h + (size_t) t * E;
      float dot = 0.0f;
      for (uint32_t i = 0; i < E; i++)
        dot += l->shexp_gate_inp[i] * h[i];
      float gate = lm_sigmoid (dot);
      float *o = s->o + (size_t) t * E;
      for (uint32_t i = 0; i < E; i++)
        {
          float sum = 0.0f;
          for (uint32_t j = 0; j < k; j++)
            sum += s->moe_y[((size_t) t * k + j) * E + i];
          o[i] = sum + gate * o[i];
        }
    }
  return LM_OK;
}

LmStatus
lm_forward_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  return s->model->info.arch == LM_ARCH_QWEN35MOE ? moe_ffn (s, il, n) : dense_ffn (s, il, n);
}
