/* helora-golden.c: greedy generation on the tiny golden model with its LoRA, per HE mode.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>

#include "helora-golden.h"
#include "ts-test-util.h"

void
golden_load (Golden *g)
{
  g_autofree char *model_path = ts_test_data_path (GOLDEN_MODEL);
  char *msg = NULL;
  gsize len;

  g->lora_path = ts_test_data_path (GOLDEN_LORA);
  if (lm_model_load (model_path, &g->model, &msg) != LM_OK)
    g_error ("%s: %s", model_path, msg);
  if (lm_lora_load (g->model, g->lora_path, 1.0f, &g->lora, &msg) != LM_OK)
    g_error ("%s: %s", g->lora_path, msg);
  g->prompt = (gint32 *) ts_test_read_data (GOLDEN_DIR "prompt_tokens.bin", &len);
  g->n_prompt = len / sizeof (gint32);
  g->lora_greedy = (gint32 *) ts_test_read_data (GOLDEN_DIR "lora_greedy_tokens.bin", &len);
  g_assert_cmpuint (len, ==, GOLDEN_STEPS * sizeof (gint32));
}

void
golden_clear (Golden *g)
{
  lm_lora_free (g->lora);
  lm_model_free (g->model);
  g_free (g->lora_path);
  g_free (g->prompt);
  g_free (g->lora_greedy);
}

static gint32
argmax (const float *logits, guint n)
{
  guint best = 0;

  for (guint i = 1; i < n; i++)
    if (logits[i] > logits[best])
      best = i;
  return (gint32) best;
}

gint32 *
golden_greedy (Golden *g, TsHeloraSession *helora)
{
  return golden_greedy_threads (g, helora, 1);
}

gint32 *
golden_greedy_threads (Golden *g, TsHeloraSession *helora, guint n_threads)
{
  LmSessionParams params = { .n_ctx = (guint32) g->n_prompt + GOLDEN_STEPS + 1,
                             .n_threads = n_threads };
  guint n_vocab = lm_model_info (g->model)->n_vocab;
  gint32 *tokens = g_new0 (gint32, GOLDEN_STEPS);
  g_autoptr (GError) error = NULL;
  LmSession *s = NULL;

  g_assert_cmpint (lm_session_new (g->model, &params, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (s, g->lora), ==, LM_OK);
  if (helora != NULL)
    {
      g_assert_true (ts_helora_session_attach (helora, s, &error));
      g_assert_no_error (error);
    }
  g_assert_cmpint (lm_session_prefill (s, g->prompt, g->n_prompt, NULL), ==, LM_OK);
  for (guint k = 0; k < GOLDEN_STEPS; k++)
    {
      tokens[k] = argmax (lm_session_logits (s), n_vocab);
      if (k + 1 < GOLDEN_STEPS)
        {
          LmStatus st = lm_session_decode (s, tokens[k]);
          if (st != LM_OK && helora != NULL && ts_helora_session_last_error (helora))
            g_error ("decode: %s", ts_helora_session_last_error (helora)->message);
          g_assert_cmpint (st, ==, LM_OK);
        }
    }
  lm_session_free (s);
  return tokens;
}
