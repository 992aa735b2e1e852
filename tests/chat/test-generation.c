/* test-generation.c: replies on the demo model with another adapter than the one it
 * was loaded with: the adapter cache, and the same tokens as a model loaded
 * with that adapter, in plaintext and under HE-LoRA (local evaluator); the
 * request's top-k, min-p and repetition penalty reach the sampler.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <string.h>

#include "ckks-gpu.h"
#include "ts-generation.h"
#include "ts-test-util.h"

#define N_TOKENS 8

static char *model_path;
static char *demo_adapter;
static char *pirate;

typedef struct {
  GArray *ids;
  gboolean done;
  GError *error;
  gboolean started;
  TsHeloraBackend backend;     /* from STARTED */
  char *backend_reason;
} Reply;

static void
reply_cb (TsGenerationJob *job, const TsGenerationEvent *event, gpointer data)
{
  Reply *r = data;

  if (event->kind == TS_GENERATION_EVENT_TOKEN)
    g_array_append_val (r->ids, event->token_id);
  else if (event->kind == TS_GENERATION_EVENT_STARTED)
    {
      r->started = TRUE;
      r->backend = event->he_backend;
      r->backend_reason = g_strdup (event->he_backend_reason);
    }
  else if (event->kind != TS_GENERATION_EVENT_STARTED)
    {
      r->done = TRUE;
      if (event->error != NULL)
        r->error = g_error_copy (event->error);
      /* Nothing private was asked: no budget to report. */
      g_assert_false (event->has_privacy);
    }
}

/* Token ids of one reply to a fixed prompt with @request's sampling. */
static GArray *
generate_request (TsGenerationModel *model, TsGenerationRequest *request)
{
  Reply r = { g_array_new (FALSE, FALSE, sizeof (int)), FALSE, NULL };
  g_autoptr (TsGenerationJob) job = NULL;

  g_ptr_array_add (request->turns, g_strdup ("Tell me about encrypted adapters."));
  if (request->max_tokens == 0)
    request->max_tokens = N_TOKENS;
  request->he_preset = g_strdup ("fast");
  job = ts_generation_job_start (model, request, NULL, reply_cb, &r);
  while (!r.done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_no_error (r.error);
  g_assert_cmpuint (r.ids->len, >, 0);
  g_free (r.backend_reason);
  return r.ids;
}

/* Greedy token ids of one reply to a fixed prompt; @adapter_path as the
 * request's adapter (NULL: the model's), @he_mode NULL or "local". */
static GArray *
generate (TsGenerationModel *model, const char *adapter_path, const char *he_mode)
{
  g_autoptr (TsGenerationRequest) request = ts_generation_request_new ();

  request->temperature = 0;
  request->max_tokens = 0;
  request->adapter_path = g_strdup (adapter_path);
  request->he_mode = g_strdup (he_mode);
  return generate_request (model, request);
}

static void
assert_same_ids (GArray *a, GArray *b)
{
  g_assert_cmpuint (a->len, ==, b->len);
  g_assert_cmpmem (a->data, a->len * sizeof (int), b->data, b->len * sizeof (int));
}

/* One reply under local HE-LoRA with @backend; fills @r (free its members). */
static void
generate_on (TsGenerationModel *model, TsHeloraBackend backend, Reply *r)
{
  g_autoptr (TsGenerationRequest) request = ts_generation_request_new ();
  g_autoptr (TsGenerationJob) job = NULL;

  g_ptr_array_add (request->turns, g_strdup ("Tell me about encrypted adapters."));
  request->max_tokens = N_TOKENS;
  request->temperature = 0;
  request->he_mode = g_strdup ("local");
  request->he_preset = g_strdup ("fast");
  request->he_backend = backend;
  r->ids = g_array_new (FALSE, FALSE, sizeof (int));
  job = ts_generation_job_start (model, request, NULL, reply_cb, r);
  while (!r->done)
    g_main_context_iteration (NULL, TRUE);
}

/* The reply says where its HE-LoRA ran: without a GPU, auto runs on the
 * CPU with the reason; cuda ends the reply with that reason. */
static void
test_backend_choice (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, demo_adapter, &error);
  g_autoptr (GArray) cpu_ids = NULL;
  Reply cpu = { 0 }, autob = { 0 }, cuda = { 0 };
  char why[256] = "";
  gboolean gpu = ckks_gpu_available (why, sizeof why);

  g_assert_no_error (error);
  generate_on (model, TS_HELORA_BACKEND_CPU, &cpu);
  g_assert_no_error (cpu.error);
  g_assert_true (cpu.started);
  g_assert_cmpint (cpu.backend, ==, TS_HELORA_BACKEND_CPU);
  g_assert_null (cpu.backend_reason);
  generate_on (model, TS_HELORA_BACKEND_AUTO, &autob);
  g_assert_no_error (autob.error);
  assert_same_ids (autob.ids, cpu.ids);
  g_assert_cmpint (autob.backend, ==, gpu ? TS_HELORA_BACKEND_CUDA : TS_HELORA_BACKEND_CPU);
  g_assert_cmpstr (autob.backend_reason, ==, gpu || !ckks_gpu_driver_present () ? NULL : why);
  generate_on (model, TS_HELORA_BACKEND_CUDA, &cuda);
  if (gpu)
    {
      g_assert_no_error (cuda.error);
      assert_same_ids (cuda.ids, cpu.ids);
    }
  else
    {
      g_assert_false (cuda.started);
      g_assert_nonnull (cuda.error);
      g_assert_nonnull (strstr (cuda.error->message, why));
      g_test_message ("%s", cuda.error->message);
    }
  for (Reply *r = &cpu; r != NULL; r = r == &cpu ? &autob : r == &autob ? &cuda : NULL)
    {
      g_array_unref (r->ids);
      g_clear_error (&r->error);
      g_free (r->backend_reason);
    }
}

/* Each adapter is read once and kept; the load's adapter is the default. */
static void
test_adapter_cache (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, demo_adapter, &error);
  const LmLora *own, *first, *again;

  double t0, t_first, t_again;

  g_assert_no_error (error);
  own = ts_generation_model_get_lora (model, NULL, &error);
  g_assert_nonnull (own);
  g_assert_true (ts_generation_model_get_lora (model, demo_adapter, &error) == own);
  t0 = g_get_monotonic_time ();
  first = ts_generation_model_get_lora (model, pirate, &error);
  t_first = (g_get_monotonic_time () - t0) / 1000.0;
  g_assert_no_error (error);
  g_assert_nonnull (first);
  g_assert_true (first != own);
  t0 = g_get_monotonic_time ();
  again = ts_generation_model_get_lora (model, pirate, &error);
  t_again = (g_get_monotonic_time () - t0) / 1000.0;
  g_assert_true (again == first);
  g_test_message ("adapter switch: first use %.3f ms (read from disk), then %.4f ms", t_first,
                  t_again);
  g_assert_null (ts_generation_model_get_lora (model, "/nonexistent/adapter", &error));
  g_assert_error (error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_MODEL);
}

/* A reply with the pirate adapter on a model loaded with the demo adapter
 * is the reply of a model loaded with the pirate adapter, and HE-LoRA
 * evaluates that same adapter (greedy: the same tokens). */
static void
test_switched_adapter (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, demo_adapter, &error);
  g_autoptr (TsGenerationModel) direct = ts_generation_model_load (model_path, pirate, &error);
  g_autoptr (GArray) own = NULL, switched = NULL, reference = NULL, he = NULL, bad = NULL;
  g_autoptr (TsGenerationRequest) request = ts_generation_request_new ();

  g_assert_no_error (error);
  own = generate (model, NULL, NULL);
  switched = generate (model, pirate, NULL);
  reference = generate (direct, NULL, NULL);
  he = generate (model, pirate, "local");
  assert_same_ids (switched, reference);
  assert_same_ids (he, reference);
  g_test_message ("demo adapter %u tokens, pirate %u tokens", own->len, switched->len);
  /* The two adapters do answer differently: the switch is not a no-op. */
  g_assert_true (own->len != switched->len
                 || memcmp (own->data, switched->data, own->len * sizeof (int)) != 0);
}

/* An adapter made for another model says which one instead of only a
 * matrix shape: the PEFT folder of tests/data/hf/qwen2 names "tiny-qwen2"
 * and does not fit the demo model, as a first load and as a switch. */
static void
test_adapter_for_another_model (void)
{
  g_autofree char *other = ts_test_data_path ("hf/qwen2/lora/peft");
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) refused = ts_generation_model_load (model_path, other, &error);
  g_autoptr (TsGenerationModel) model = NULL;

  g_assert_null (refused);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "made for the model tiny-qwen2, not for "
                                            "tiny-qwen35moe-f32.gguf"));
  g_clear_error (&error);
  model = ts_generation_model_load (model_path, NULL, &error);
  g_assert_no_error (error);
  g_assert_null (ts_generation_model_get_lora (model, other, &error));
  g_assert_nonnull (strstr (error->message, "made for the model tiny-qwen2"));
  /* an adapter that names no base model keeps the engine's message alone */
  g_clear_error (&error);
  g_assert_nonnull (ts_generation_model_get_lora (model, pirate, &error));
  g_assert_no_error (error);
}

static GArray *
sample (TsGenerationModel *model, double temperature, int top_k, double min_p, double penalty)
{
  g_autoptr (TsGenerationRequest) request = ts_generation_request_new ();

  request->temperature = temperature;
  request->top_k = top_k;
  request->min_p = min_p;
  request->repeat_penalty = penalty;
  request->seed = 99;
  /* Long enough for the greedy reply to repeat a token. */
  request->max_tokens = 48;
  return generate_request (model, request);
}

/* Top-k 1, or min-p 1, leaves only the most likely token at any
 * temperature: the greedy reply. Without them a hot draw leaves it; a
 * penalty on the prompt's tokens changes the greedy reply. */
static void
test_sampling_settings (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, demo_adapter, &error);
  g_autoptr (GArray) greedy = NULL;
  g_autoptr (GArray) top1 = NULL;
  g_autoptr (GArray) minp1 = NULL;
  g_autoptr (GArray) hot = NULL;
  g_autoptr (GArray) penalised = NULL;

  g_assert_no_error (error);
  greedy = sample (model, 0, 40, 0.05, 1);
  top1 = sample (model, 2, 1, 0, 1);
  minp1 = sample (model, 2, 0, 1, 1);
  hot = sample (model, 2, 0, 0, 1);
  penalised = sample (model, 0, 40, 0.05, 2);
  assert_same_ids (greedy, top1);
  assert_same_ids (greedy, minp1);
  g_assert_false (hot->len == greedy->len
                  && memcmp (hot->data, greedy->data, hot->len * sizeof (int)) == 0);
  g_assert_false (penalised->len == greedy->len
                  && memcmp (penalised->data, greedy->data, greedy->len * sizeof (int)) == 0);
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  model_path = g_build_filename (TS_SOURCE_DATA_DIR, "demo", "tiny-qwen35moe-f32.gguf", NULL);
  demo_adapter = g_build_filename (TS_SOURCE_DATA_DIR, "demo", "tiny-qwen35moe-lora-f32.gguf",
                                   NULL);
  pirate = g_build_filename (TS_SOURCE_DATA_DIR, "market", "tiny-pirate", NULL);
  g_test_add_func ("/generation/adapter-cache", test_adapter_cache);
  g_test_add_func ("/generation/sampling-settings", test_sampling_settings);
  g_test_add_func ("/generation/backend-choice", test_backend_choice);
  g_test_add_func ("/generation/switched-adapter", test_switched_adapter);
  g_test_add_func ("/generation/adapter-for-another-model", test_adapter_for_another_model);
  status = g_test_run ();
  g_free (model_path);
  g_free (demo_adapter);
  g_free (pirate);
  return status;
}
