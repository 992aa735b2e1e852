/* test-helora-backend.c: local HE-LoRA on the CPU or the GPU, and the fallback between them.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Without a usable GPU (or in a build without CUDA) "auto" must run on the
 * CPU, give the golden tokens and say why, and an explicit "cuda" must fail
 * with that reason. With one, the GPU backend must give the CPU backend's
 * logits within CKKS error and fill the HE stages of the engine's timings
 * (those tests skip here with the reason).
 */
#include <math.h>
#include <string.h>

#include "ckks-gpu.h"
#include "helora-golden.h"
#include "ts-helora-proto.h"
#include "ts-helora-session-private.h"
#include "ts-test-util.h"

static Golden golden;

static gboolean
gpu_usable (char *why, gsize len)
{
  return ckks_gpu_available (why, len);
}

static TsHeloraSession *
local_session (TsHeloraBackend backend, gboolean public_key, const char *preset, GError **error)
{
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .backend = backend,
                              .public_key = public_key, .params_preset = preset,
                              .track_error = TRUE, .n_threads = 2 };

  return ts_helora_session_new (golden.lora, &options, error);
}

static void
test_parse (void)
{
  TsHeloraBackend b = TS_HELORA_BACKEND_CPU;
  g_autoptr (GError) error = NULL;

  g_assert_true (ts_helora_backend_parse ("auto", &b, NULL));
  g_assert_cmpint (b, ==, TS_HELORA_BACKEND_AUTO);
  g_assert_true (ts_helora_backend_parse ("cuda", &b, NULL));
  g_assert_cmpint (b, ==, TS_HELORA_BACKEND_CUDA);
  g_assert_true (ts_helora_backend_parse ("cpu", &b, NULL));
  g_assert_cmpint (b, ==, TS_HELORA_BACKEND_CPU);
  g_assert_false (ts_helora_backend_parse ("gpu", &b, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  g_assert_nonnull (strstr (error->message, "cpu, cuda or auto"));
  for (TsHeloraBackend k = TS_HELORA_BACKEND_AUTO; k <= TS_HELORA_BACKEND_CUDA; k++)
    {
      g_assert_true (ts_helora_backend_parse (ts_helora_backend_name (k), &b, NULL));
      g_assert_cmpint (b, ==, k);
    }
}

/* Golden tokens and the existing tests' bound on the LoRA deltas. */
static void
check_golden (TsHeloraSession *helora)
{
  g_autofree gint32 *tokens = golden_greedy (&golden, helora);
  TsHeloraStats stats;

  g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, golden.lora_greedy, GOLDEN_STEPS * 4);
  ts_helora_session_get_stats (helora, &stats);
  g_assert_cmpuint (stats.encryptions, >, 0);
  g_assert_cmpfloat (stats.max_abs_delta_plain, >, 0.01);
  g_assert_cmpfloat (stats.max_abs_delta_error, <, 1e-4 * stats.max_abs_delta_plain);
}

static void
test_cpu_explicit (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = local_session (TS_HELORA_BACKEND_CPU, FALSE, NULL, &error);
  g_autofree char *summary = NULL;

  g_assert_no_error (error);
  g_assert_cmpint (ts_helora_session_backend (helora), ==, TS_HELORA_BACKEND_CPU);
  g_assert_null (ts_helora_session_backend_reason (helora));
  summary = ts_helora_session_summary (helora);
  g_assert_nonnull (strstr (summary, "on the CPU"));
  check_golden (helora);
}

/* No GPU: auto runs on the CPU, and works; it gives the probe's reason
 * where an NVIDIA driver is installed, none on a computer without one. */
static void
test_auto_falls_back (void)
{
  char why[256] = "";
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = NULL;

  if (gpu_usable (why, sizeof why))
    {
      g_test_skip ("a GPU is usable here: auto takes it (see /helora/backend/gpu-matches-cpu)");
      return;
    }
  g_assert_cmpstr (why, !=, "");
  helora = local_session (TS_HELORA_BACKEND_AUTO, FALSE, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (ts_helora_session_backend (helora), ==, TS_HELORA_BACKEND_CPU);
  g_assert_cmpstr (ts_helora_session_backend_reason (helora), ==,
                   ckks_gpu_driver_present () ? why : NULL);
  g_test_message ("auto on the CPU: %s (probe: %s)", ts_helora_session_backend_reason (helora),
                  why);
  check_golden (helora);
}

/* Public-key encryption has no GPU pipeline: auto says so where there is
 * an NVIDIA driver, and nothing on a computer without one. */
static void
test_auto_public_key (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = local_session (TS_HELORA_BACKEND_AUTO, TRUE, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpint (ts_helora_session_backend (helora), ==, TS_HELORA_BACKEND_CPU);
  if (!ckks_gpu_driver_present ())
    {
      g_assert_null (ts_helora_session_backend_reason (helora));
      return;
    }
  g_assert_nonnull (ts_helora_session_backend_reason (helora));
  g_assert_nonnull (strstr (ts_helora_session_backend_reason (helora), "public-key"));
}

/* Explicit cuda where it cannot run: a clear error with the reason. */
static void
test_cuda_fails_cleanly (void)
{
  char why[256] = "";
  g_autoptr (GError) error = NULL;
  g_autoptr (GError) pk_error = NULL;
  g_autoptr (TsHeloraSession) helora = NULL;
  g_autoptr (TsHeloraSession) pk = local_session (TS_HELORA_BACKEND_CUDA, TRUE, NULL, &pk_error);

  g_assert_null (pk);
  g_assert_error (pk_error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE);
  g_assert_nonnull (strstr (pk_error->message, "GPU"));
  if (gpu_usable (why, sizeof why))
    {
      g_test_skip ("a GPU is usable here: cuda runs (see /helora/backend/gpu-matches-cpu)");
      return;
    }
  helora = local_session (TS_HELORA_BACKEND_CUDA, FALSE, NULL, &error);
  g_assert_null (helora);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE);
  g_assert_nonnull (strstr (error->message, why));
  g_test_message ("%s", error->message);
}

/* Prefill and GOLDEN_STEPS greedy steps; every step's logits and the sum of
 * the engine's HE stages over the decode steps. */
static float *
greedy_logits_on (TsHeloraSession *helora, LmBackend backend, double stage_ms[LM_N_STAGES])
{
  LmSessionParams params = { .n_ctx = (guint32) golden.n_prompt + GOLDEN_STEPS + 1, .n_threads = 1,
                             .backend = backend };
  guint n_vocab = lm_model_info (golden.model)->n_vocab;
  float *all = g_new (float, (gsize) GOLDEN_STEPS * n_vocab);
  g_autoptr (GError) error = NULL;
  LmSession *s = NULL;

  memset (stage_ms, 0, LM_N_STAGES * sizeof (double));
  g_assert_cmpint (lm_session_new (golden.model, &params, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (s, golden.lora), ==, LM_OK);
  g_assert_true (ts_helora_session_attach (helora, s, &error));
  g_assert_no_error (error);
  g_assert_cmpint (lm_session_prefill (s, golden.prompt, golden.n_prompt, NULL), ==, LM_OK);
  for (guint k = 0; k < GOLDEN_STEPS; k++)
    {
      const float *logits = lm_session_logits (s);
      guint best = 0;

      memcpy (all + (gsize) k * n_vocab, logits, n_vocab * sizeof (float));
      for (guint i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best])
          best = i;
      g_assert_cmpint ((gint32) best, ==, golden.lora_greedy[k]);
      if (k + 1 < GOLDEN_STEPS)
        {
          LmStatus st = lm_session_decode (s, (gint32) best);

          if (st != LM_OK && ts_helora_session_last_error (helora) != NULL)
            g_error ("decode: %s", ts_helora_session_last_error (helora)->message);
          g_assert_cmpint (st, ==, LM_OK);
          for (guint t = 0; t < LM_N_STAGES; t++)
            stage_ms[t] += lm_session_timings (s)->ms[t];
        }
    }
  lm_session_free (s);
  return all;
}

static float *
greedy_logits (TsHeloraSession *helora, double stage_ms[LM_N_STAGES])
{
  return greedy_logits_on (helora, LM_BACKEND_CPU, stage_ms);
}

/* On a GPU: the same logits as the CPU backend within CKKS error, the
 * golden tokens, and the HE stages filled from the device's events. */
static void
test_gpu_matches_cpu (void)
{
  static const char *const presets[] = { "fast", "default" };
  char why[256] = "";
  guint n_vocab = lm_model_info (golden.model)->n_vocab;

  if (!gpu_usable (why, sizeof why))
    {
      g_test_skip (why);
      return;
    }
  for (gsize p = 0; p < G_N_ELEMENTS (presets); p++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (TsHeloraSession) cpu = local_session (TS_HELORA_BACKEND_CPU, FALSE, presets[p], &error);
      g_autoptr (TsHeloraSession) gpu = NULL;
      g_autofree float *want = NULL, *got = NULL;
      double cpu_ms[LM_N_STAGES], gpu_ms[LM_N_STAGES], max_diff = 0, max_logit = 0;
      TsHeloraStats stats;

      g_assert_no_error (error);
      /* d = 128 >= N / 512 at every preset: within the GPU pipeline's limits. */
      gpu = local_session (TS_HELORA_BACKEND_CUDA, FALSE, presets[p], &error);
      g_assert_no_error (error);
      g_assert_cmpint (ts_helora_session_backend (gpu), ==, TS_HELORA_BACKEND_CUDA);
      g_assert_null (ts_helora_session_backend_reason (gpu));
      want = greedy_logits (cpu, cpu_ms);
      got = greedy_logits (gpu, gpu_ms);
      for (gsize i = 0; i < (gsize) GOLDEN_STEPS * n_vocab; i++)
        {
          max_diff = fmax (max_diff, fabs ((double) got[i] - want[i]));
          max_logit = fmax (max_logit, fabs ((double) want[i]));
        }
      ts_helora_session_get_stats (gpu, &stats);
      g_test_message ("%s: max |logit_gpu - logit_cpu| = %.3g (max |logit| %.3g); max |delta_he - "
                      "delta_plain| %.3g of %.3g; decode HE ms gpu: upload %.3f encrypt %.3f "
                      "evaluate %.3f decrypt %.3f download %.3f; cpu: encrypt %.3f evaluate %.3f "
                      "decrypt %.3f", presets[p], max_diff, max_logit, stats.max_abs_delta_error,
                      stats.max_abs_delta_plain, gpu_ms[LM_STAGE_UPLOAD], gpu_ms[LM_STAGE_ENCRYPT],
                      gpu_ms[LM_STAGE_EVALUATE], gpu_ms[LM_STAGE_DECRYPT], gpu_ms[LM_STAGE_DOWNLOAD],
                      cpu_ms[LM_STAGE_ENCRYPT], cpu_ms[LM_STAGE_EVALUATE], cpu_ms[LM_STAGE_DECRYPT]);
      /* The existing tests' CKKS bound on Δ, and the logits it implies. */
      g_assert_cmpfloat (stats.max_abs_delta_plain, >, 0.01);
      g_assert_cmpfloat (stats.max_abs_delta_error, <, 1e-4 * stats.max_abs_delta_plain);
      g_assert_cmpfloat (max_diff, <, 1e-3 * max_logit);
      for (LmStage t = LM_STAGE_ENCRYPT; t <= LM_STAGE_DECRYPT; t++)
        g_assert_cmpfloat (gpu_ms[t], >, 0);
      g_assert_cmpuint (stats.encryptions, >, 0);
      g_assert_cmpuint (stats.ct_bytes_up % stats.encryptions, ==, 0);
    }
}

/* On a GPU, with the engine on the GPU too: the HE-LoRA session reads h
 * from the engine's device memory (the device hook; the host hook is never
 * called, so h never reaches the host) and gives the host hook's logits
 * (engine on the GPU, HE on the CPU) within the CKKS bound above, with the
 * HE stages filled from the device's events. */
static void
test_device_hook_matches_host_hook (void)
{
  char why[256] = "";
  guint n_vocab = lm_model_info (golden.model)->n_vocab;
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .backend = TS_HELORA_BACKEND_CUDA,
                              .params_preset = "default", .n_threads = 2 };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) dev = NULL, host = NULL;
  g_autofree float *want = NULL, *got = NULL;
  double host_ms[LM_N_STAGES], dev_ms[LM_N_STAGES], max_diff = 0, max_logit = 0;

  if (!gpu_usable (why, sizeof why))
    {
      g_test_skip (why);
      return;
    }
  dev = ts_helora_session_new (golden.lora, &options, &error);
  g_assert_no_error (error);
  options.backend = TS_HELORA_BACKEND_CPU;
  host = ts_helora_session_new (golden.lora, &options, &error);
  g_assert_no_error (error);
  want = greedy_logits_on (host, LM_BACKEND_CUDA, host_ms);
  got = greedy_logits_on (dev, LM_BACKEND_CUDA, dev_ms);
  g_assert_cmpuint (host->device_hook_calls, ==, 0);
  g_assert_cmpuint (host->host_hook_calls, >, 0);
  g_assert_cmpuint (dev->host_hook_calls, ==, 0);
  g_assert_cmpuint (dev->device_hook_calls, ==, host->host_hook_calls);
  for (gsize i = 0; i < (gsize) GOLDEN_STEPS * n_vocab; i++)
    {
      max_diff = fmax (max_diff, fabs ((double) got[i] - want[i]));
      max_logit = fmax (max_logit, fabs ((double) want[i]));
    }
  g_test_message ("device hook: max |logit_dev - logit_host| = %.3g (max |logit| %.3g); decode "
                  "HE ms: staging %.3f encrypt %.3f evaluate %.3f decrypt %.3f to-f32 %.3f",
                  max_diff, max_logit, dev_ms[LM_STAGE_UPLOAD], dev_ms[LM_STAGE_ENCRYPT],
                  dev_ms[LM_STAGE_EVALUATE], dev_ms[LM_STAGE_DECRYPT], dev_ms[LM_STAGE_DOWNLOAD]);
  g_assert_cmpfloat (max_diff, <, 1e-3 * max_logit);
  for (LmStage t = LM_STAGE_ENCRYPT; t <= LM_STAGE_DECRYPT; t++)
    g_assert_cmpfloat (dev_ms[t], >, 0);
}

/* After a GPU failure (a device error mid-reply marks it), the next
 * sessions do not touch the GPU: auto runs on the CPU and says so, cuda
 * fails with it. Last: the mark lasts for the process. */
static void
test_after_gpu_failure (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) autob = NULL;
  g_autoptr (TsHeloraSession) cuda = NULL;

  _ts_helora_gpu_mark_failed ("device error");
  autob = local_session (TS_HELORA_BACKEND_AUTO, FALSE, "fast", &error);
  g_assert_no_error (error);
  g_assert_cmpint (ts_helora_session_backend (autob), ==, TS_HELORA_BACKEND_CPU);
  g_assert_cmpstr (ts_helora_session_backend_reason (autob), ==,
                   ckks_gpu_driver_present ()
                     ? "the GPU failed earlier in this process (device error)" : NULL);
  check_golden (autob);
  cuda = local_session (TS_HELORA_BACKEND_CUDA, FALSE, "fast", &error);
  g_assert_null (cuda);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE);
  g_assert_nonnull (strstr (error->message, "failed earlier"));
}

int
main (int argc, char **argv)
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  golden_load (&golden);
  g_test_add_func ("/helora/backend/parse", test_parse);
  g_test_add_func ("/helora/backend/cpu-explicit", test_cpu_explicit);
  g_test_add_func ("/helora/backend/auto-falls-back", test_auto_falls_back);
  g_test_add_func ("/helora/backend/auto-public-key", test_auto_public_key);
  g_test_add_func ("/helora/backend/cuda-fails-cleanly", test_cuda_fails_cleanly);
  g_test_add_func ("/helora/backend/gpu-matches-cpu", test_gpu_matches_cpu);
  g_test_add_func ("/helora/backend/device-hook-matches-host-hook",
                   test_device_hook_matches_host_hook);
  g_test_add_func ("/helora/backend/after-gpu-failure", test_after_gpu_failure);
  rc = g_test_run ();
  golden_clear (&golden);
  return rc;
}
