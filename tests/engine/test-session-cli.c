/* test-session-cli.c: tensafe-cli generate and bench engine, run as a program
 * ($TENSAFE_CLI) on the golden models.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm-gpu.h"
#include "test-forward-util.h"
#include "ts-test-util.h"

#define MODEL "tiny-qwen35moe-f32"

/* Runs tensafe-cli with @args (NULL-terminated); returns the exit status. */
static int
run_cli (const char *const *args, char **out, char **err)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) cli);
  for (size_t i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  int wait_status = 0;
  g_autoptr (GError) error = NULL;
  gboolean ok = g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                              out, err, &wait_status, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_ptr_array_free (argv, TRUE);
  return g_spawn_check_wait_status (wait_status, NULL) ? 0 : 1;
}

/* "1,2,3" from an int array. */
static char *
join_ids (const int32_t *ids, gsize n)
{
  GString *s = g_string_new (NULL);
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (s, i ? ",%d" : "%d", ids[i]);
  return g_string_free (s, FALSE);
}

static char *
join_ids_spaces (const int32_t *ids, gsize n)
{
  char *commas = join_ids (ids, n);
  g_strdelimit (commas, ",", ' ');
  return commas;
}

/* @flag: an extra option (NULL: none) that the goldens of @prefix assume. */
static void
check_generate_with (const char *name, const char *lora_rel, const char *prefix, const char *flag)
{
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/%s.gguf", name, name);
  g_autofree char *model = ts_test_data_path (rel);
  g_autofree char *lora = lora_rel ? ts_test_data_path (lora_rel) : NULL;
  gsize n_tok, n_gold, n_greedy;
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree char *f_logits = g_strdup_printf ("%slogits_batched.bin", prefix);
  g_autofree char *f_greedy = g_strdup_printf ("%sgreedy_tokens.bin", prefix);
  g_autofree float *gold = golden_floats (name, f_logits, &n_gold);
  g_autofree int32_t *greedy = golden_ints (name, f_greedy, &n_greedy);
  g_autofree char *ids = join_ids (tokens, n_tok);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-cli-XXXXXX", NULL);
  g_autofree char *dump = g_build_filename (dir, "logits.bin", NULL);
  g_autofree char *timings = g_build_filename (dir, "timings.json", NULL);
  const char *fixed[] = { "generate", "--model", model, "--tokens", ids, "-n", "32", "--greedy",
                          "--threads", "2", "--print-ids", "--dump-logits", dump,
                          "--timings", timings };
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  g_autofree char *out = NULL, *err = NULL;

  for (gsize i = 0; i < G_N_ELEMENTS (fixed); i++)
    g_ptr_array_add (args, (gpointer) fixed[i]);
  if (flag != NULL)
    g_ptr_array_add (args, (gpointer) flag);
  if (lora != NULL)
    {
      g_ptr_array_add (args, (gpointer) "--lora");
      g_ptr_array_add (args, lora);
    }
  g_ptr_array_add (args, NULL);
  g_assert_cmpint (run_cli ((const char *const *) args->pdata, &out, &err), ==, 0);
  g_autofree char *want = join_ids_spaces (greedy, n_greedy);
  g_assert_cmpstr (g_strstrip (out), ==, want);
  g_autofree char *logits = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (dump, &logits, &len, NULL));
  g_assert_cmpuint (len, ==, n_gold * sizeof (float));
  assert_close ("cli --dump-logits", (const float *) logits, gold, n_gold, LOGITS_TOL);
  g_autofree char *json = NULL;
  g_assert_true (g_file_get_contents (timings, &json, NULL, NULL));
  g_assert_nonnull (strstr (json, "\"forward\""));
  g_assert_nonnull (strstr (json, "\"sample\""));
  g_remove (dump);
  g_remove (timings);
  g_rmdir (dir);
}

static void
check_generate (const char *name, const char *lora_rel, const char *prefix)
{
  check_generate_with (name, lora_rel, prefix, NULL);
}

static void
test_generate (void)
{
  check_generate (MODEL, NULL, "");
  check_generate ("tiny-qwen35-f32", NULL, "");
  /* f32 activations against the decoded Q8_0 weights: the dequant goldens */
  check_generate_with ("tiny-qwen35moe-e256-q8_0", NULL, "dequant_f32_", "--exact-activations");
}

static void
test_generate_lora (void)
{
  check_generate (MODEL, "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf", "lora_");
  check_generate (MODEL, "qwen35/" MODEL "/lora/peft", "lora_");
}

/* A chat prompt renders to the golden prompt tokens (ChatML user turn plus
 * the assistant header), so its greedy ids are the golden ones; so are those
 * of the raw prompt text with its special tokens. */
/* --add-lora stacks adapters: the golden adapter minus itself is no adapter
 * (the base model's golden tokens); halves of it on top of its PEFT copy
 * and a cancelling pair give the golden LoRA tokens, also under HE local. */
static void
test_generate_stacked (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  g_autofree char *gguf = ts_test_data_path ("qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf");
  g_autofree char *minus = g_strconcat (gguf, "@-1", NULL);
  g_autofree char *plus_half = g_strconcat (gguf, "@0.5", NULL);
  g_autofree char *minus_half = g_strconcat (gguf, "@-0.5", NULL);
  g_autofree char *bad = g_strconcat (gguf, "@x", NULL);
  gsize n_tok, n_base, n_lora;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree int32_t *base = golden_ints (MODEL, "greedy_tokens.bin", &n_base);
  g_autofree int32_t *lora = golden_ints (MODEL, "lora_greedy_tokens.bin", &n_lora);
  g_autofree char *ids = join_ids (tokens, n_tok);
  g_autofree char *want_base = join_ids_spaces (base, n_base);
  g_autofree char *want_lora = join_ids_spaces (lora, n_lora);
  const char *cancel[] = { "generate", "--model", model, "--tokens", ids, "-n", "32",
                           "--threads", "2", "--print-ids", "--lora", gguf, "--add-lora", minus, NULL };
  const char *halves[] = { "generate", "--model", model, "--tokens", ids, "-n", "32",
                           "--threads", "2", "--print-ids", "--lora", gguf, "--add-lora", minus_half,
                           "--add-lora", plus_half, "--he", "local", "--he-params", "fast", NULL };
  const char *wrong[] = { "generate", "--model", model, "--tokens", ids, "--lora", gguf,
                          "--add-lora", bad, NULL };
  g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL, *out3 = NULL, *err3 = NULL;

  g_assert_cmpint (run_cli (cancel, &out, &err), ==, 0);
  g_assert_cmpstr (g_strstrip (out), ==, want_base);
  g_assert_cmpint (run_cli (halves, &out2, &err2), ==, 0);
  g_assert_cmpstr (g_strstrip (out2), ==, want_lora);
  g_assert_nonnull (strstr (err2, "he local"));
  g_assert_cmpint (run_cli (wrong, &out3, &err3), !=, 0);
  g_assert_nonnull (strstr (err3, "PATH@WEIGHT"));
}

/* --he-backend: auto gives the golden LoRA tokens on the GPU or, saying
 * why, on the CPU; cuda either runs on the GPU or fails with the reason;
 * anything else is a usage error. */
static void
test_generate_he_backend (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  g_autofree char *gguf = ts_test_data_path ("qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf");
  gsize n_tok, n_lora;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree int32_t *lora = golden_ints (MODEL, "lora_greedy_tokens.bin", &n_lora);
  g_autofree char *ids = join_ids (tokens, n_tok);
  g_autofree char *want = join_ids_spaces (lora, 8);
  const char *base[] = { "generate", "--model", model, "--tokens", ids, "-n", "8", "--threads",
                         "2", "--print-ids", "--lora", gguf, "--he", "local", "--he-params",
                         "fast", "--he-backend", NULL, NULL };
  const gsize choice = G_N_ELEMENTS (base) - 2;
  g_autofree char *out = NULL, *err = NULL, *out2 = NULL, *err2 = NULL, *out3 = NULL, *err3 = NULL;

  base[choice] = "auto";
  g_assert_cmpint (run_cli (base, &out, &err), ==, 0);
  g_assert_cmpstr (g_strstrip (out), ==, want);
  if (strstr (err, "on the CPU") != NULL)
    g_assert_nonnull (strstr (err, "HE-LoRA does not use the GPU: "));
  else
    g_assert_nonnull (strstr (err, "on the GPU"));
  base[choice] = "cuda";
  if (run_cli (base, &out2, &err2) == 0)
    {
      g_assert_cmpstr (g_strstrip (out2), ==, want);
      g_assert_nonnull (strstr (err2, "on the GPU"));
    }
  else
    {
      g_assert_nonnull (strstr (err2, "HE-LoRA cannot run on the GPU: "));
      g_test_message ("%s", err2);
    }
  base[choice] = "gpu";
  g_assert_cmpint (run_cli (base, &out3, &err3), !=, 0);
  g_assert_nonnull (strstr (err3, "--he-backend cpu|cuda|auto"));
}

static void
test_generate_prompt (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  gsize n_greedy;
  g_autofree int32_t *greedy = golden_ints (MODEL, "greedy_tokens.bin", &n_greedy);
  g_autofree char *want = join_ids_spaces (greedy, 8);
  const char *chat[] = { "generate", "--model", model, "--prompt",
                         "What is free software? Explain it briefly.", "--chat", "-n", "8",
                         "--print-ids", NULL };
  const char *raw[] = { "generate", "--model", model, "--prompt",
                        "<|im_start|>user\nWhat is free software? Explain it briefly.<|im_end|>\n"
                        "<|im_start|>assistant\n", "-n", "8", "--print-ids", NULL };
  const char *const *cases[] = { chat, raw };
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *out = NULL, *err = NULL;
      g_assert_cmpint (run_cli (cases[i], &out, &err), ==, 0);
      g_assert_cmpstr (g_strstrip (out), ==, want);
    }
}

/* --system: the prompt is that system turn, then the user turn, as ChatML
 * written out by hand; without --chat it is a usage error. */
static void
test_generate_system (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  const char *chat[] = { "generate", "--model", model, "--chat", "--system", "Answer in verse.",
                         "--prompt", "What is free software?", "--print-prompt", NULL };
  const char *raw[] = { "generate", "--model", model, "--prompt",
                        "<|im_start|>system\nAnswer in verse.<|im_end|>\n"
                        "<|im_start|>user\nWhat is free software?<|im_end|>\n"
                        "<|im_start|>assistant\n", "--print-prompt", NULL };
  const char *no_chat[] = { "generate", "--model", model, "--system", "Answer in verse.",
                            "--prompt", "What is free software?", "--print-prompt", NULL };
  g_autofree char *a = NULL, *b = NULL, *c = NULL, *err = NULL;
  g_assert_cmpint (run_cli (chat, &a, NULL), ==, 0);
  g_assert_cmpint (run_cli (raw, &b, NULL), ==, 0);
  g_assert_cmpstr (a, ==, b);
  g_assert_cmpint (run_cli (no_chat, &c, &err), !=, 0);
  g_assert_nonnull (strstr (err, "--system TEXT"));
}

/* Sampling with a seed is reproducible, and different seeds differ. */
static void
test_generate_sampling (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  const char *seed1[] = { "generate", "--model", model, "--tokens", "999,716,260", "-n", "24",
                          "--temp", "1.5", "--top-k", "200", "--top-p", "0.99", "--seed", "1",
                          "--print-ids", NULL };
  const char *seed2[] = { "generate", "--model", model, "--tokens", "999,716,260", "-n", "24",
                          "--temp", "1.5", "--top-k", "200", "--top-p", "0.99", "--seed", "2",
                          "--print-ids", NULL };
  g_autofree char *a = NULL, *b = NULL, *c = NULL, *err = NULL;
  g_assert_cmpint (run_cli (seed1, &a, NULL), ==, 0);
  g_assert_cmpint (run_cli (seed1, &b, NULL), ==, 0);
  g_assert_cmpint (run_cli (seed2, &c, NULL), ==, 0);
  g_assert_cmpstr (a, ==, b);
  g_assert_cmpstr (a, !=, c);
  const char *both[] = { "generate", "--model", model, "--tokens", "1", "--greedy", "--temp", "1",
                         NULL };
  g_autofree char *out = NULL;
  g_assert_cmpint (run_cli (both, &out, &err), !=, 0);
}

/* Bad input ends with a message on stderr and a non-zero status. */
static void
test_errors (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  const char *missing[] = { "generate", "--model", "/nonexistent.gguf", "--tokens", "1", NULL };
  const char *bad_id[] = { "generate", "--model", model, "--tokens", "1,99999", NULL };
  const char *no_prompt[] = { "generate", "--model", model, NULL };
  const char *bad_backend[] = { "bench", "engine", "--model", model, "--backend", "tpu", NULL };
  const char *bad_backend2[] = { "generate", "--model", model, "--tokens", "1", "--backend", "tpu",
                                 NULL };
  const char *bad_layers[] = { "generate", "--model", model, "--tokens", "1", "--backend", "auto",
                               "--gpu-layers", "-1", NULL };
  const char *bad_clock[] = { "bench", "engine", "--model", model, "--clock", "sundial", NULL };
  /* a buffer the last-level cache could hold, and one beyond any memory */
  const char *small_read[] = { "bench", "engine", "--model", model, "--read-mib", "1", NULL };
  const char *huge_read[] = { "bench", "engine", "--model", model, "--read-mib", "100000000",
                              NULL };
  const char *const *cases[] = { missing, bad_id, no_prompt, bad_backend, bad_backend2, bad_layers,
                                 bad_clock, small_read, huge_read };
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *out = NULL, *err = NULL;
      g_assert_cmpint (run_cli (cases[i], &out, &err), !=, 0);
      g_assert_cmpuint (strlen (err), >, 0);
    }
}

/* The decode ceiling and decode's share of it follow from the printed
 * rates: ceiling = bandwidth / bytes per token (to the printed digits). */
static void
check_floor_numbers (double decode, double bytes, double gb_s, double ceiling, double percent)
{
  g_assert_cmpfloat (decode, >, 0);
  g_assert_cmpfloat (bytes, >, 0);
  g_assert_cmpfloat (gb_s, >, 0.01);   /* a machine reading below 10 MB/s is a bug */
  g_assert_cmpfloat (fabs (ceiling - gb_s * 1e9 / bytes), <=, 1e-3 * ceiling + 1e-3);
  g_assert_cmpfloat (fabs (percent - 100 * decode / ceiling), <=, 1e-3 * percent + 0.06);
}

static void
check_bench_json (const char *clock, const char *expected_clock, const char *threads)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  const char *args[] = { "bench", "engine", "--model", model, "--threads", threads, "--json",
                         "--prompt-tokens", "16", "--decode-tokens", "8", "--runs", "1",
                         "--read-mib", "64", clock ? "--clock" : NULL, clock, NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (run_cli (args, &out, &err), ==, 0);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, out, -1, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (o, "clock"), ==, expected_clock);
  g_assert_cmpstr (json_object_get_string_member (o, "backend"), ==, "cpu");
  g_assert_cmpint (json_object_get_int_member (o, "threads"), ==, atoi (threads));
  g_assert_cmpint (json_object_get_int_member (o, "read_mib"), ==, 64);
  g_assert_cmpfloat (json_object_get_double_member (o, "prefill_tok_s"), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (o, "peak_rss_mib"), >, 0);
  check_floor_numbers (json_object_get_double_member (o, "decode_tok_s"),
                       json_object_get_double_member (o, "decode_bytes_per_token"),
                       json_object_get_double_member (o, "read_bandwidth_gb_s"),
                       json_object_get_double_member (o, "decode_ceiling_tok_s"),
                       json_object_get_double_member (o, "decode_of_ceiling_pct"));
}

static void
test_bench_json (void)
{
  check_bench_json (NULL, "wall", "1");
  check_bench_json ("cpu", "cpu", "2");
}

/* The text report carries the same figures as the JSON one. */
static void
test_bench_text (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  const char *args[] = { "bench", "engine", "--model", model, "--threads", "2",
                         "--prompt-tokens", "16", "--decode-tokens", "8", "--runs", "1",
                         "--read-mib", "64", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (run_cli (args, &out, &err), ==, 0);
  const char *decode_line = strstr (out, "\ndecode ");
  const char *floor_line = strstr (out, "\nread bandwidth ");
  g_assert_nonnull (decode_line);
  g_assert_nonnull (floor_line);
  double decode, bytes, gb_s, ceiling, percent;
  int threads, mib;
  g_assert_cmpint (sscanf (decode_line, "\ndecode %lf tok/s (%*d tokens), %lf bytes", &decode,
                           &bytes), ==, 2);
  g_assert_cmpint (sscanf (floor_line, "\nread bandwidth %lf GB/s (%d threads, %d MiB): "
                           "ceiling %lf tok/s, decode at %lf %%", &gb_s, &threads, &mib, &ceiling,
                           &percent), ==, 5);
  g_assert_cmpint (threads, ==, 2);
  g_assert_cmpint (mib, ==, 64);
  check_floor_numbers (decode, bytes, gb_s, ceiling, percent);
}

/* --backend: cuda gives the greedy tokens of the goldens on a GPU and fails
 * with the probe's reason without one; auto falls back to the CPU and says
 * why on stderr; bench engine --backend cuda reports the GPU's figures. */
static void
test_backend (void)
{
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/" MODEL ".gguf");
  gsize n_tok, n_greedy;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree int32_t *greedy = golden_ints (MODEL, "greedy_tokens.bin", &n_greedy);
  g_autofree char *ids = join_ids (tokens, n_tok);
  g_autofree char *want = join_ids_spaces (greedy, n_greedy);
  char why[200] = "";
  gboolean gpu = lm_gpu_available (why, sizeof why);
  const char *backends[] = { "cuda", "auto" };
  for (size_t i = 0; i < G_N_ELEMENTS (backends); i++)
    {
      const char *args[] = { "generate", "--model", model, "--tokens", ids, "-n", "32",
                             "--greedy", "--threads", "2", "--print-ids", "--backend",
                             backends[i], NULL };
      g_autofree char *out = NULL, *err = NULL;
      int rc = run_cli (args, &out, &err);
      g_test_message ("--backend %s: status %d, stderr: %s", backends[i], rc, err);
      if (!gpu && i == 0)
        {
          g_assert_cmpint (rc, !=, 0);
          g_assert_nonnull (strstr (err, why));
          continue;
        }
      g_assert_cmpint (rc, ==, 0);
      g_assert_cmpstr (g_strstrip (out), ==, want);
      g_assert_true (gpu ? strstr (err, "running on the CPU") == NULL
                         : strstr (err, "running on the CPU") != NULL);
    }
  const char *bench[] = { "bench", "engine", "--model", model, "--backend", "cuda", "--json",
                          "--prompt-tokens", "16", "--decode-tokens", "8", "--runs", "1", NULL };
  g_autofree char *out = NULL, *err = NULL;
  int rc = run_cli (bench, &out, &err);
  if (!gpu)
    {
      g_assert_cmpint (rc, !=, 0);
      g_assert_nonnull (strstr (err, why));
      return;
    }
  g_assert_cmpint (rc, ==, 0);
  const char *keys[] = { "\"backend\": \"cuda\"", "\"gpu_layers\": ", "\"prefill_tok_s\"",
                         "\"decode_tok_s\"", "\"gpu_weights_mib\"", "\"gpu_session_mib\"" };
  for (size_t i = 0; i < G_N_ELEMENTS (keys); i++)
    g_assert_nonnull (strstr (out, keys[i]));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cli/generate-stacked", test_generate_stacked);
  g_test_add_func ("/engine/cli/generate", test_generate);
  g_test_add_func ("/engine/cli/generate-lora", test_generate_lora);
  g_test_add_func ("/engine/cli/generate-prompt", test_generate_prompt);
  g_test_add_func ("/engine/cli/generate-he-backend", test_generate_he_backend);
  g_test_add_func ("/engine/cli/generate-system", test_generate_system);
  g_test_add_func ("/engine/cli/generate-sampling", test_generate_sampling);
  g_test_add_func ("/engine/cli/errors", test_errors);
  g_test_add_func ("/engine/cli/bench-json", test_bench_json);
  g_test_add_func ("/engine/cli/bench-text", test_bench_text);
  g_test_add_func ("/engine/cli/backend", test_backend);
  return g_test_run ();
}
