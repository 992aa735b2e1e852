/* forward.c: the Qwen3.5 layer loop over one batch of tokens (FORMAT.md 3.2).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "forward-ops.h"
#include "forward-rows.h"
#include "lora-private.h"
#include "session-gpu.h"

void
lm_linear (LmSession *s, const LmWeight *w, uint32_t mat, const float *x, uint32_t n,
           float *y)
{
  const char *data = (const char *) w->data + (size_t) mat * w->mat_stride;
  if (n == 1)
    lm_matvec_ex (s->kernels, s->act_mode, s->pool, w->type, data, w->n_in, w->n_out, x, y);
  else
    lm_matmul_ex (s->kernels, s->act_mode, s->pool, w->type, data, w->n_in, w->n_out, x, n, y);
}

/* The attached adapter's module at (@layer, @kind), -1 for none. */
static int32_t
module_of (const LmSession *s, uint32_t layer, LmModuleKind kind)
{
  return s->lora != NULL ? s->module_slot[layer * LM_N_MODULE_KINDS + kind] : -1;
}

LmStatus
lm_project_lora (LmSession *s, uint32_t layer, LmModuleKind kind, const float *x, uint32_t n,
                 float *y)
{
  int32_t index = module_of (s, layer, kind);
  return index < 0 ? LM_OK : lm_lora_apply (s, (size_t) index, x, n, y);
}

static bool
any_begin (const LmSession *s, uint32_t layer, const LmProj *projs, uint32_t n_projs)
{
  for (uint32_t i = 0; i < n_projs; i++)
    {
      int32_t index = module_of (s, layer, projs[i].kind);
      if (index >= 0 && lm_lora_has_begin (s, (size_t) index))
        return true;
    }
  return false;
}

LmStatus
lm_project (LmSession *s, uint32_t layer, LmModuleKind kind, const LmWeight *w,
            const float *x, uint32_t n, float *y)
{
  LmProj proj = { kind, w, y };
  if (n == 1 && any_begin (s, layer, &proj, 1))
    return lm_project_many (s, layer, &proj, 1, x, n);
  lm_linear (s, w, 0, x, n, y);
  return lm_project_lora (s, layer, kind, x, n, y);
}

/* The decode step's products of @x on the pool's workers, with the begin
 * hooks of their modules called meanwhile on this thread. */
static LmStatus
products_with_begins (LmSession *s, uint32_t layer, const LmProj *projs, uint32_t n_projs,
                      const LmRowsItem *items, const float *x)
{
  LmRowsJob job;
  LmStatus st = LM_OK;
  lm_rows_start (s, &job, items, n_projs);
  for (uint32_t i = 0; i < n_projs && st == LM_OK; i++)
    {
      int32_t index = module_of (s, layer, projs[i].kind);
      if (index >= 0 && lm_lora_has_begin (s, (size_t) index))
        st = lm_lora_begin (s, (size_t) index, x);
    }
  lm_rows_finish (s, &job);
  return st;
}

LmStatus
lm_project_many (LmSession *s, uint32_t layer, const LmProj *projs, uint32_t n_projs,
                 const float *x, uint32_t n)
{
  if (n == 1 && n_projs <= LM_ROWS_MAX_ITEMS)
    {
      LmRowsItem items[LM_ROWS_MAX_ITEMS] = { 0 };
      for (uint32_t i = 0; i < n_projs; i++)
        items[i] = (LmRowsItem) { projs[i].w, 0, x, projs[i].y };
      if (any_begin (s, layer, projs, n_projs) && lm_rows_fit_one_job (s, items, n_projs) && lm_thread_pool_size (s->pool) > 1)
        {
          LmStatus st = products_with_begins (s, layer, projs, n_projs, items, x);
          if (st != LM_OK)
            return st;
        }
      else
        lm_rows_run (s, items, n_projs);
    }
  else
    for (uint32_t i = 0; i < n_projs; i++)
      lm_linear (s, projs[i].w, 0, x, n, projs[i].y);
  for (uint32_t i = 0; i < n_projs; i++)
    {
      LmStatus st = lm_project_lora (s, layer, projs[i].kind, x, n, projs[i].y);
      if (st != LM_OK)
        return st;
    }
  return LM_OK;
}

static LmStatus
check_tokens (const LmSession *s, const int32_t *tokens, uint32_t n)
{
  for (uint32_t t = 0; t < n; t++)
    if (tokens[t] < 0 || (uint32_t) tokens[t] >= s->model->info.n_vocab)
      return LM_ERR_INVALID_ARGUMENT;
  return LM_OK;
}

static LmStatus
embed (LmSession *s, const int32_t *tokens, uint32_t n)
{
  const LmModel *m = s->model;
  uint32_t E = m->info.n_embd;
  LmStatus st = check_tokens (s, tokens, n);
  for (uint32_t t = 0; st == LM_OK && t < n; t++)
    {
      const char *row = (const char *) m->tok_embd.data
                        + (size_t) tokens[t] * lm_row_bytes (m->tok_embd.type, E);
      st = lm_dequantize_row (m->tok_embd.type, row, s->x + (size_t) t * E, E);
    }
  return st;
}

static void
norm_rows (const float *x, const float *w, float eps, uint32_t n, uint32_t width, float *y)
{
  for (uint32_t t = 0; t < n; t++)
    lm_rms_norm (x + (size_t) t * width, w, eps, width, y + (size_t) t * width);
}

static void
debug_rows (LmSession *s, uint32_t layer, int which, uint32_t n, const float *x)
{
  if (s->debug_fn != NULL)
    s->debug_fn (s->debug_data, layer, which, s->pos, n, x);
}

static LmStatus
run_layer (LmSession *s, uint32_t il, uint32_t n)
{
  const LmModel *m = s->model;
  const LmLayer *l = &m->layers[il];
  uint32_t E = m->info.n_embd;
  size_t count = (size_t) n * E;
  norm_rows (s->x, l->attn_norm, m->info.rms_eps, n, E, s->h);
  LmStatus st = l->is_linear ? lm_forward_linear_attention (s, il, n)
                             : lm_forward_full_attention (s, il, n);
  if (st != LM_OK)
    return st;
  lm_add (s->x, s->o, (uint32_t) count);
  debug_rows (s, il, 0, n, s->x);
  norm_rows (s->x, l->post_norm, m->info.rms_eps, n, E, s->h);
  if ((st = lm_forward_ffn (s, il, n)) != LM_OK)
    return st;
  lm_add (s->x, s->o, (uint32_t) count);
  debug_rows (s, il, 1, n, s->x);
  return LM_OK;
}

void
lm_pool_hidden (LmSession *s, uint32_t n)
{
  const LmModel *m = s->model;
  uint32_t E = m->info.n_embd;
  norm_rows (s->x, m->output_norm, m->info.rms_eps, n, E, s->h);
  for (uint32_t t = 0; t < n; t++)
    for (uint32_t e = 0; e < E; e++)
      s->pool_sum[e] += s->h[(size_t) t * E + e];
}

/* Final norm and LM head: every row into @logits_all, or the last row only
 * (none for a prefill chunk before the last). */
static void
lm_head (LmSession *s, uint32_t n, float *logits_all)
{
  const LmModel *m = s->model;
  uint32_t E = m->info.n_embd, V = m->info.n_vocab;
  double t0 = lm_time_ms ();
  if (s->pool_sum != NULL)
    lm_pool_hidden (s, n);
  if (logits_all != NULL)
    {
      norm_rows (s->x, m->output_norm, m->info.rms_eps, n, E, s->h);
      debug_rows (s, m->info.n_layer, 2, n, s->h);
      lm_linear (s, &m->output, 0, s->h, n, logits_all);
      memcpy (s->logits, logits_all + (size_t) (n - 1) * V, V * sizeof (float));
    }
  else if (!s->logits_unused)
    {
      const float *last = s->x + (size_t) (n - 1) * E;
      lm_rms_norm (last, m->output_norm, m->info.rms_eps, E, s->h);
      lm_linear (s, &m->output, 0, s->h, 1, s->logits);
    }
  double ms = lm_time_ms () - t0;
  lm_timings_add (&s->timings, LM_STAGE_LM_HEAD, ms);
  s->excluded_ms += ms;
}

LmStatus
lm_forward_batch (LmSession *s, const int32_t *tokens, uint32_t n, float *logits_all)
{
  if (n == 0 || n > s->n_batch)
    return LM_ERR_INVALID_ARGUMENT;
  if (s->pos + n > s->n_ctx)
    return LM_ERR_CONTEXT_FULL;
  if (s->broken)
    return LM_ERR_INVALID_ARGUMENT;
  double t0 = lm_time_ms ();
  s->excluded_ms = 0.0;
  uint32_t n_layer = s->model->info.n_layer, first_cpu = 0;
  LmStatus st = s->gpu != NULL ? check_tokens (s, tokens, n) : embed (s, tokens, n);
  if (st != LM_OK)
    return st;   /* nothing changed yet */
  if (s->gpu != NULL)
    {
      /* The embedding and the GPU layers, and with all of them the head. */
      st = lm_gpu_forward (s, tokens, n, logits_all);
      first_cpu = s->gpu_layers;
    }
  for (uint32_t il = first_cpu; st == LM_OK && il < n_layer; il++)
    st = run_layer (s, il, n);
  if (st != LM_OK)
    {
      /* Earlier layers already advanced their state: only a replay helps. */
      s->broken = true;
      return st;
    }
  if (s->gpu == NULL || first_cpu < n_layer)
    lm_head (s, n, logits_all);
  memmove (s->history + s->pos, tokens, n * sizeof *tokens);
  s->pos += n;
  s->timings.n_tokens += n;
  lm_timings_add (&s->timings, LM_STAGE_FORWARD, lm_time_ms () - t0 - s->excluded_ms);
  return LM_OK;
}
