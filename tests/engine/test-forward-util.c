/* test-forward-util.c: golden-file helpers shared by the model/forward/LoRA/session tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>

#include "lm-gpu.h"
#include "test-forward-util.h"
#include "ts-test-util.h"

static void *
golden_read (const char *model, const char *file, gsize elem, gsize *count)
{
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/%s", model, file);
  gsize len = 0;
  guint8 *data = ts_test_read_data (rel, &len);
  g_assert_cmpuint (len % elem, ==, 0);
  *count = len / elem;
  return data;
}

float *
golden_floats (const char *model, const char *file, gsize *count)
{
  return golden_read (model, file, sizeof (float), count);
}

int32_t *
golden_ints (const char *model, const char *file, gsize *count)
{
  return golden_read (model, file, sizeof (int32_t), count);
}

LmModel *
golden_model (const char *model)
{
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/%s.gguf", model, model);
  g_autofree char *path = ts_test_data_path (rel);
  LmModel *m = NULL;
  char *error = NULL;
  LmStatus st = lm_model_load (path, &m, &error);
  if (st != LM_OK)
    g_error ("loading %s: %s (%s)", path, lm_status_message (st), error ? error : "");
  return m;
}

static char skip_reason[200];

static void
skip_cb (void)
{
  g_test_skip (skip_reason);
}

gboolean
golden_backend_skip (void)
{
  if (GOLDEN_BACKEND == LM_BACKEND_CPU || lm_gpu_available (skip_reason, sizeof skip_reason))
    return FALSE;
  g_test_add_func ("/engine/gpu/golden/skipped", skip_cb);
  return TRUE;
}

LmSession *
golden_session (const LmModel *model, uint32_t n_threads, uint32_t n_batch)
{
  LmSessionParams p = { .n_ctx = 512, .n_batch = n_batch, .n_threads = n_threads,
                        .backend = GOLDEN_BACKEND };
  LmSession *s = NULL;
  char *error = NULL;
  LmStatus st = lm_session_new_full (model, &p, &s, &error);
  if (st != LM_OK)
    g_error ("session: %s (%s)", lm_status_message (st), error ? error : "");
  return s;
}

double
max_abs_diff (const float *a, const float *b, gsize n)
{
  double worst = 0.0;
  for (gsize i = 0; i < n; i++)
    {
      double d = fabs ((double) a[i] - b[i]);
      if (!(d <= worst))
        worst = isnan (d) ? INFINITY : d;
    }
  return worst;
}

int32_t
argmax (const float *x, gsize n)
{
  gsize best = 0;
  for (gsize i = 1; i < n; i++)
    if (x[i] > x[best])
      best = i;
  return (int32_t) best;
}

void
assert_close (const char *what, const float *a, const float *b, gsize n, double tol)
{
  double err = max_abs_diff (a, b, n);
  g_test_message ("%s: max abs diff %.3g (tolerance %.3g)", what, err, tol);
  g_assert_cmpfloat (err, <=, tol);
}

/* Prefill, then 32 argmax steps: tokens identical, logits close. */
void
run_greedy (const LmModel *m, LmSession *s, const char *name, const char *prefix)
{
  gsize n_tok, n_gold, n_glog;
  uint32_t V = lm_model_info (m)->n_vocab;
  g_autofree char *f_tok = g_strdup_printf ("%sgreedy_tokens.bin", prefix);
  g_autofree char *f_log = g_strdup_printf ("%sgreedy_logits.bin", prefix);
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree int32_t *gold = golden_ints (name, f_tok, &n_gold);
  g_autofree float *glog = golden_floats (name, f_log, &n_glog);
  g_assert_cmpint (lm_session_prefill (s, tokens, n_tok, NULL), ==, LM_OK);
  double worst = 0.0;
  for (gsize k = 0; k < n_gold; k++)
    {
      const float *logits = lm_session_logits (s);
      double err = max_abs_diff (logits, glog + k * V, V);
      worst = err > worst ? err : worst;
      int32_t next = argmax (logits, V);
      g_assert_cmpint (next, ==, gold[k]);
      g_assert_cmpint (lm_session_decode (s, next), ==, LM_OK);
    }
  g_test_message ("%s %sgreedy: 32 tokens identical, logits max abs diff %.3g", name, prefix, worst);
  g_assert_cmpfloat (worst, <=, LOGITS_TOL);
}

float *
prefill_all (LmSession *s, const int32_t *tokens, gsize n)
{
  float *logits = g_new (float, n * lm_model_info (lm_session_model (s))->n_vocab);
  g_assert_cmpint (lm_session_prefill (s, tokens, n, logits), ==, LM_OK);
  return logits;
}

double
decode_max_diff (LmSession *s, const int32_t *tokens, gsize n, const float *rows)
{
  uint32_t V = lm_model_info (lm_session_model (s))->n_vocab;
  double worst = 0.0;
  for (gsize t = 0; t < n; t++)
    {
      g_assert_cmpint (lm_session_decode (s, tokens[t]), ==, LM_OK);
      double err = max_abs_diff (lm_session_logits (s), rows + t * V, V);
      worst = err > worst ? err : worst;
    }
  return worst;
}

static void
capture_cb (void *user_data, uint32_t layer, int which, uint32_t pos0, uint32_t n, const float *x)
{
  Hidden *h = user_data;
  for (uint32_t t = 0; t < n; t++)
    {
      uint32_t p = pos0 + t;
      if (p >= h->n_tok)
        continue;
      float *dst = which == 0 ? h->attn_residual + ((size_t) layer * h->n_tok + p) * h->n_embd
                 : which == 1 ? h->l_out + ((size_t) layer * h->n_tok + p) * h->n_embd
                              : h->final_norm + (size_t) p * h->n_embd;
      memcpy (dst, x + (size_t) t * h->n_embd, h->n_embd * sizeof (float));
    }
}

void
hidden_capture (Hidden *h, LmSession *s, uint32_t n_tok)
{
  const LmModelInfo *in = lm_model_info (lm_session_model (s));
  *h = (Hidden) { in->n_embd, in->n_layer, n_tok };
  h->attn_residual = g_new0 (float, (gsize) in->n_layer * n_tok * in->n_embd);
  h->l_out = g_new0 (float, (gsize) in->n_layer * n_tok * in->n_embd);
  h->final_norm = g_new0 (float, (gsize) n_tok * in->n_embd);
  lm_session_set_debug (s, capture_cb, h);
}

void
hidden_clear (Hidden *h)
{
  g_free (h->attn_residual);
  g_free (h->l_out);
  g_free (h->final_norm);
}

int32_t *
golden_prompt_prefix (const char *model, gsize n_tokens)
{
  gsize n;
  int32_t *tokens = golden_ints (model, "long_prompt_tokens.bin", &n);
  g_assert_cmpuint (n, >=, n_tokens);
  return tokens;
}

void
assert_sessions_agree (const char *what, const LmModel *m, LmSession *a, LmSession *b,
                       const int32_t *prompt, gsize n_prompt, int n_decode, double tol)
{
  uint32_t V = lm_model_info (m)->n_vocab;
  g_autofree float *la = prefill_all (a, prompt, n_prompt);
  g_autofree float *lb = prefill_all (b, prompt, n_prompt);
  g_autofree char *w1 = g_strdup_printf ("%s prefill", what);
  assert_close (w1, la, lb, n_prompt * V, tol);
  double worst = 0.0;
  for (int k = 0; k < n_decode; k++)
    {
      int32_t next = argmax (lm_session_logits (a), V);
      g_assert_cmpint (lm_session_decode (a, next), ==, LM_OK);
      g_assert_cmpint (lm_session_decode (b, next), ==, LM_OK);
      double err = max_abs_diff (lm_session_logits (a), lm_session_logits (b), V);
      worst = err > worst ? err : worst;
    }
  g_test_message ("%s: %d decode steps, max abs diff %.3g", what, n_decode, worst);
  g_assert_cmpfloat (worst, <=, tol);
}

void
lora_hook_a_times_h (const LmLoraHookCall *call, const float *h, float *u)
{
  const LmLoraModule *mod = call->module;
  for (uint32_t t = 0; t < call->n_tokens; t++)
    for (uint32_t r = 0; r < mod->rank; r++)
      {
        float sum = 0.0f;
        for (uint32_t i = 0; i < mod->d_in; i++)
          sum += mod->a[(size_t) r * mod->d_in + i] * h[(size_t) t * mod->d_in + i];
        u[(size_t) t * mod->rank + r] = sum;
      }
}

LmLora *
golden_lora_load (const LmModel *m, const char *rel)
{
  g_autofree char *path = ts_test_data_path (rel);
  LmLora *lora = NULL;
  char *error = NULL;
  LmStatus st = lm_lora_load (m, path, 1.0f, &lora, &error);
  if (st != LM_OK)
    g_error ("loading %s: %s (%s)", path, lm_status_message (st), error ? error : "");
  return lora;
}
