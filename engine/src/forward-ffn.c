/* forward-ffn.c: dense SwiGLU FFN and the routed-expert MoE, with a gated shared
 * expert where the model has one (FORMAT.md 3.6).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "forward-ops.h"
#include "forward-rows.h"
#include "session-private.h"

/* gate = SiLU(gate) * up over @count values. */
static void
swiglu (const LmSession *s, float *gate, const float *up, size_t count)
{
  lm_swiglu (s->kernels, gate, up, count);
}

/* A SwiGLU MLP whose three projections are modules @kind (gate, then up and
 * down at the next two kinds): s->o = down(SiLU(gate h) * up h). */
static LmStatus
swiglu_mlp (LmSession *s, uint32_t il, LmModuleKind gate_kind, const LmWeight *gate,
            const LmWeight *up, const LmWeight *down, uint32_t n)
{
  LmProj projs[] = {
    { gate_kind, gate, s->a1 },
    { gate_kind + 1, up, s->a2 },
  };
  LmStatus st = lm_project_many (s, il, projs, 2, s->h, n);
  if (st != LM_OK)
    return st;
  swiglu (s, s->a1, s->a2, (size_t) n * gate->n_out);
  return lm_project (s, il, gate_kind + 2, down, s->a1, n, s->o);
}

static LmStatus
dense_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->model->layers[il];
  return swiglu_mlp (s, il, LM_MODULE_FFN_GATE, &l->ffn_gate, &l->ffn_up, &l->ffn_down, n);
}

void
lm_route_token (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel, float *w)
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
  swiglu (s, s->a1, s->a2, (size_t) count * nf);
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
  return swiglu_mlp (s, il, LM_MODULE_FFN_GATE_SHEXP, &l->sh_gate, &l->sh_up, &l->sh_down, n);
}

/* Decode: the selected experts' gate/up rows and the shared expert's (if
 * any) in one job, all their down rows in a second. Same numbers as the
 * batched path. */
static LmStatus
moe_decode (LmSession *s, uint32_t il)
{
  const LmLayer *l = &s->model->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, k = in->n_expert_used;
  size_t W = in->n_ff_exp > in->n_ff_shexp ? in->n_ff_exp : in->n_ff_shexp;
  float *gate = s->moe_gu, *up = s->moe_gu + (size_t) (k + 1) * W;
  LmRowsItem items[2 * LM_ROWS_MAX_ITEMS];
  uint32_t n_items = 0;
  for (uint32_t j = 0; j < k; j++)
    {
      items[n_items++] = (LmRowsItem) { &l->exp_gate, (uint32_t) s->sel[j], s->h, gate + j * W };
      items[n_items++] = (LmRowsItem) { &l->exp_up, (uint32_t) s->sel[j], s->h, up + j * W };
    }
  bool shared = l->sh_gate.data != NULL;
  if (shared)
    {
      items[n_items++] = (LmRowsItem) { &l->sh_gate, 0, s->h, gate + k * W };
      items[n_items++] = (LmRowsItem) { &l->sh_up, 0, s->h, up + k * W };
    }
  lm_rows_run (s, items, n_items);
  LmStatus st;
  if (shared &&
      ((st = lm_project_lora (s, il, LM_MODULE_FFN_GATE_SHEXP, s->h, 1, gate + k * W)) ||
       (st = lm_project_lora (s, il, LM_MODULE_FFN_UP_SHEXP, s->h, 1, up + k * W))))
    return st;
  for (uint32_t j = 0; j < k + shared; j++)
    swiglu (s, gate + j * W, up + j * W, j < k ? in->n_ff_exp : in->n_ff_shexp);
  n_items = 0;
  for (uint32_t j = 0; j < k; j++)
    items[n_items++] = (LmRowsItem) { &l->exp_down, (uint32_t) s->sel[j], gate + j * W,
                                      s->moe_y + (size_t) j * E };
  if (shared)
    items[n_items++] = (LmRowsItem) { &l->sh_down, 0, gate + k * W, s->o };
  lm_rows_run (s, items, n_items);
  for (uint32_t j = 0; j < k; j++)
    for (uint32_t i = 0; i < E; i++)
      s->moe_y[(size_t) j * E + i] *= s->sel_w[j];
  return shared ? lm_project_lora (s, il, LM_MODULE_FFN_DOWN_SHEXP, gate + k * W, 1, s->o) : LM_OK;
}

static LmStatus
moe_batch (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->model->layers[il];
  for (uint32_t e = 0; e < s->model->info.n_expert; e++)
    run_expert (s, l, e, n);
  return l->sh_gate.data != NULL ? shared_expert (s, il, n) : LM_OK;
}

/* o = sum of the routed outputs, plus the shared expert's output (already in
 * o) scaled by its sigmoid gate when the model has one. */
static void
combine_experts (LmSession *s, const LmLayer *l, uint32_t n)
{
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, k = in->n_expert_used;
  for (uint32_t t = 0; t < n; t++)
    {
      const float *h = s->h + (size_t) t * E;
      float gate = 0.0f;
      if (l->shexp_gate_inp != NULL)
        {
          float dot = 0.0f;
          for (uint32_t i = 0; i < E; i++)
            dot += l->shexp_gate_inp[i] * h[i];
          gate = lm_sigmoid (dot);
        }
      float *o = s->o + (size_t) t * E;
      for (uint32_t i = 0; i < E; i++)
        {
          float sum = 0.0f;
          for (uint32_t j = 0; j < k; j++)
            sum += s->moe_y[((size_t) t * k + j) * E + i];
          o[i] = l->shexp_gate_inp != NULL ? sum + gate * o[i] : sum;
        }
    }
}

static LmStatus
moe_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->model->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t k = in->n_expert_used;
  lm_linear (s, &l->router, 0, s->h, n, s->router);
  for (uint32_t t = 0; t < n; t++)
    lm_route_token (s->router + (size_t) t * in->n_expert, in->n_expert, k, s->sel + (size_t) t * k,
                 s->sel_w + (size_t) t * k);
  LmStatus st = n == 1 && k < LM_ROWS_MAX_ITEMS ? moe_decode (s, il) : moe_batch (s, il, n);
  if (st != LM_OK)
    return st;
  combine_experts (s, l, n);
  return LM_OK;
}

LmStatus
lm_forward_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  return s->model->info.is_moe ? moe_ffn (s, il, n) : dense_ffn (s, il, n);
}
