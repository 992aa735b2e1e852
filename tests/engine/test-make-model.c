/* test-make-model.c: make-model's plan (--dry-run) against the files it writes,
 * the full Qwen3.5-35B-A3B preset's tensor table, overwrite and stop rules.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "gguf-synth.h"
#include "gguf.h"
#include "lm.h"
#include "quant.h"

static char *tmp_dir;

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmp_dir, name, NULL);
}

static uint64_t
file_size (const char *path)
{
  GStatBuf st;
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  return (uint64_t) st.st_size;
}

/* No temporary file is left in the test directory. */
static void
assert_no_leftovers (void)
{
  g_autoptr (GDir) dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;
  while ((name = g_dir_read_name (dir)))
    if (strstr (name, ".tmp-"))
      g_error ("left behind: %s", name);
}

/* The written file is what the plan said, tensor by tensor and byte for
 * byte, and the runtime reads as many bytes per token as the plan counted. */
static void
assert_file_matches_plan (const char *path, const LmSynthPlan *plan)
{
  g_assert_cmpuint (file_size (path), ==, plan->file_bytes);
  GgufFile *f = NULL;
  char *err = NULL;
  if (lm_gguf_open (path, &f, &err) != LM_OK)
    g_error ("%s: %s", path, err);
  g_assert_cmpuint (lm_gguf_data_offset (f), ==, plan->header_bytes);
  g_assert_cmpuint (lm_gguf_n_tensors (f), ==, plan->n_tensors);
  for (uint64_t i = 0; i < lm_gguf_n_tensors (f); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (f, i);
      const LmSynthTensorInfo *p = &plan->tensors[i];
      g_assert_true (lm_gguf_string_eq (t->name, p->name));
      g_assert_cmpint (t->type, ==, p->type);
      g_assert_cmpuint (t->n_dims, ==, p->n_dims);
      for (uint32_t d = 0; d < p->n_dims; d++)
        g_assert_cmpuint (t->ne[d], ==, p->ne[d]);
      g_assert_cmpuint (t->n_bytes, ==, p->n_bytes);
    }
  lm_gguf_close (f);
  LmModel *m = NULL;
  if (lm_model_load (path, &m, &err) != LM_OK)
    g_error ("%s: %s", path, err);
  g_assert_cmpuint (lm_model_decode_bytes (m), ==, plan->decode_bytes);
  g_assert_cmpuint (lm_model_info (m)->n_layer, ==, plan->hp.n_layer);
  lm_model_free (m);
}

static void
test_tiny_plan_matches_file (void)
{
  const LmSynthOptions cases[] = {
    { .arch = LM_SYNTH_QWEN35MOE, .preset = LM_SYNTH_TINY, .type = LM_SYNTH_Q4_K_M, .seed = 3 },
    { .arch = LM_SYNTH_QWEN35, .preset = LM_SYNTH_TINY, .type = LM_SYNTH_F16, .seed = 4 },
    { .arch = LM_SYNTH_QWEN35MOE, .preset = LM_SYNTH_TINY, .type = LM_SYNTH_Q8_0, .n_layer = 8 },
    { .arch = LM_SYNTH_QWEN2, .preset = LM_SYNTH_TINY, .type = LM_SYNTH_Q5_0, .seed = 5 },
    { .arch = LM_SYNTH_QWEN3MOE, .preset = LM_SYNTH_TINY, .type = LM_SYNTH_Q4_0, .seed = 6 },
  };
  for (size_t c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *path = tmp_path ("plan.gguf");
      LmSynthOptions o = cases[c];
      o.overwrite = true;
      LmSynthPlan plan;
      char *err = NULL;
      g_assert_cmpint (lm_synth_plan (&o, &plan, &err), ==, LM_OK);
      if (lm_synth_write (&o, path, &err) != LM_OK)
        g_error ("%s", err);
      assert_file_matches_plan (path, &plan);
      if (o.n_layer)
        g_assert_cmpuint (plan.hp.n_layer, ==, o.n_layer);
      lm_synth_plan_clear (&plan);
    }
  assert_no_leftovers ();
}

static bool
is_expert (const char *name)
{
  return strstr (name, "_exps.") != NULL;
}

/* The full preset: Qwen3.5-35B-A3B's 40 layers and 256 experts; the file
 * size is the header plus every tensor padded to 32 bytes, and the bytes per
 * token are recounted here from the table. */
static void
test_full_plan (void)
{
  LmSynthOptions o = { .arch = LM_SYNTH_QWEN35MOE, .preset = LM_SYNTH_FULL,
                       .type = LM_SYNTH_Q4_K_M };
  LmSynthPlan plan;
  char *err = NULL;
  g_assert_cmpint (lm_synth_plan (&o, &plan, &err), ==, LM_OK);
  const LmSynthHparams *hp = &plan.hp;
  g_assert_cmpuint (hp->n_layer, ==, 40);
  g_assert_cmpuint (hp->n_expert, ==, 256);
  g_assert_cmpuint (hp->n_expert_used, ==, 8);
  g_assert_cmpuint (hp->n_embd, ==, 2048);
  g_assert_cmpuint (hp->n_vocab, ==, 248320);
  /* 3 global tensors; 10 per layer, 6 more per full-attention layer, 9 per linear one */
  g_assert_cmpuint (plan.n_tensors, ==, 3 + 40 * 10 + 10 * 6 + 30 * 9);
  g_assert_cmpuint (plan.n_params, >, 34000000000ull);
  g_assert_cmpuint (plan.n_params, <, 36000000000ull);

  uint64_t data = 0, decode = 0;
  unsigned n_full = 0;
  for (size_t i = 0; i < plan.n_tensors; i++)
    {
      const LmSynthTensorInfo *t = &plan.tensors[i];
      uint64_t bytes = lm_row_bytes (t->type, (int64_t) t->ne[0]) * t->ne[1] * t->ne[2];
      g_assert_cmpuint (t->n_bytes, ==, bytes);
      data = (data + 31) / 32 * 32 + bytes;
      if (strcmp (t->name, "token_embd.weight") == 0)
        decode += lm_row_bytes (t->type, (int64_t) t->ne[0]);
      else if (is_expert (t->name))
        {
          g_assert_cmpuint (t->ne[2], ==, 256);
          decode += bytes / 256 * 8;
        }
      else if (t->n_dims >= 2 && t->type != LM_TYPE_F32)
        decode += bytes;
      else if (strstr (t->name, "ffn_gate_inp.weight"))
        decode += bytes;   /* the router stays F32 */
      int layer, end = 0;
      if (sscanf (t->name, "blk.%d.attn_q.weight%n", &layer, &end) == 1 && end > 0)
        {
          g_assert_cmpint ((layer + 1) % 4, ==, 0);
          n_full++;
        }
    }
  g_assert_cmpuint (n_full, ==, 10);
  g_assert_cmpuint (plan.file_bytes, ==, plan.header_bytes + (data + 31) / 32 * 32);
  g_assert_cmpuint (plan.decode_bytes, ==, decode);
  /* Q4_K_M: the LM head Q6_K, expert ffn_down Q6_K in the "more bits" layers */
  for (size_t i = 0; i < plan.n_tensors; i++)
    {
      const LmSynthTensorInfo *t = &plan.tensors[i];
      if (strcmp (t->name, "output.weight") == 0)
        g_assert_cmpint (t->type, ==, LM_TYPE_Q6_K);
      if (strcmp (t->name, "blk.0.ffn_down_exps.weight") == 0
          || strcmp (t->name, "blk.7.ffn_down_exps.weight") == 0)
        g_assert_cmpint (t->type, ==, LM_TYPE_Q6_K);
      if (strcmp (t->name, "blk.5.ffn_down_exps.weight") == 0
          || strcmp (t->name, "blk.5.ffn_up_exps.weight") == 0)
        g_assert_cmpint (t->type, ==, LM_TYPE_Q4_K);
    }
  lm_synth_plan_clear (&plan);

  /* There is no dense model of this shape. */
  o.arch = LM_SYNTH_QWEN35;
  g_assert_cmpint (lm_synth_plan (&o, &plan, &err), ==, LM_ERR_UNSUPPORTED);
  g_assert_nonnull (strstr (err, "qwen35moe"));
  g_free (err);
}

static bool
stop_at_half (uint64_t done, uint64_t total, void *user_data)
{
  *(int *) user_data += 1;
  return done < total / 2;
}

/* An existing file is kept unless asked to replace it; a stopped write
 * leaves nothing behind. */
static void
test_overwrite_and_stop (void)
{
  g_autofree char *path = tmp_path ("keep.gguf");
  g_assert_true (g_file_set_contents (path, "precious", -1, NULL));
  LmSynthOptions o = { .arch = LM_SYNTH_QWEN35MOE, .preset = LM_SYNTH_TINY,
                       .type = LM_SYNTH_F32 };
  char *err = NULL;
  g_assert_cmpint (lm_synth_write (&o, path, &err), !=, LM_OK);
  g_assert_nonnull (strstr (err, "exists"));
  g_free (err);
  g_assert_cmpuint (file_size (path), ==, 8);
  int calls = 0;
  o.overwrite = true;
  o.progress = stop_at_half;
  o.progress_data = &calls;
  err = NULL;
  g_assert_cmpint (lm_synth_write (&o, path, &err), ==, LM_ERR_CANCELLED);
  g_free (err);
  g_assert_cmpint (calls, >, 1);
  g_assert_cmpuint (file_size (path), ==, 8);   /* the old file, untouched */
  assert_no_leftovers ();
  o.progress = NULL;
  g_assert_cmpint (lm_synth_write (&o, path, NULL), ==, LM_OK);
  g_assert_cmpuint (file_size (path), >, 8);
}

static char *
run_cli (const char *const *args, int *status)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) cli);
  g_ptr_array_add (argv, "make-model");
  for (; *args; args++)
    g_ptr_array_add (argv, (char *) *args);
  g_ptr_array_add (argv, NULL);
  char *out = NULL;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out,
                NULL, status, &error);
  g_assert_no_error (error);
  return out;
}

/* The number after "@key" in make-model --dry-run's output. */
static uint64_t
dry_run_value (const char *out, const char *key)
{
  const char *p = strstr (out, key);
  if (p == NULL)
    g_error ("no \"%s\" in:\n%s", key, out);
  return g_ascii_strtoull (p + strlen (key), NULL, 10);
}

static void
check_dry_run (const char *arch, const char *preset, const char *type, const LmSynthOptions *o)
{
  const char *args[] = { "--arch", arch, "--preset", preset, "--type", type, "--dry-run", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  LmSynthPlan plan;
  g_assert_cmpint (lm_synth_plan (o, &plan, NULL), ==, LM_OK);
  g_assert_cmpuint (dry_run_value (out, "file size:"), ==, plan.file_bytes);
  g_assert_cmpuint (dry_run_value (out, "decode reads:"), ==, plan.decode_bytes);
  g_assert_cmpuint (dry_run_value (out, "tensors:"), ==, plan.n_tensors);
  g_assert_cmpuint (dry_run_value (out, "layers:"), ==, plan.hp.n_layer);
  lm_synth_plan_clear (&plan);
}

/* --dry-run prints the plan and writes nothing; the CLI refuses to replace a
 * file without --force and the full preset for qwen35. */
static void
test_cli (void)
{
  check_dry_run ("qwen35moe", "full", "q4_k_m",
                 &(LmSynthOptions) { .arch = LM_SYNTH_QWEN35MOE, .preset = LM_SYNTH_FULL,
                                     .type = LM_SYNTH_Q4_K_M });
  check_dry_run ("qwen35", "bench", "q8_0",
                 &(LmSynthOptions) { .arch = LM_SYNTH_QWEN35, .preset = LM_SYNTH_BENCH,
                                     .type = LM_SYNTH_Q8_0 });
  g_autofree char *path = tmp_path ("cli.gguf");
  g_assert_true (g_file_set_contents (path, "old", -1, NULL));
  const char *write[] = { "--arch", "qwen35moe", "--preset", "tiny", "--type", "q8_0",
                          "--out", path, NULL, NULL };
  int status;
  g_free (run_cli (write, &status));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (file_size (path), ==, 3);
  write[8] = "--force";
  g_free (run_cli (write, &status));
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (file_size (path), >, 3);
  const char *dense_full[] = { "--arch", "qwen35", "--preset", "full", "--type", "q4_k_m",
                               "--dry-run", NULL };
  g_free (run_cli (dense_full, &status));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  assert_no_leftovers ();
}

/* The bench preset (Qwen3.5-35B-A3B's layers, 2.76 GB in Q4_K_M): --dry-run's
 * numbers against the file make-model writes and the runtime loads. */
static void
test_bench_file (void)
{
  g_autofree char *path = tmp_path ("bench-q4_k_m.gguf");
  const char *dry[] = { "--arch", "qwen35moe", "--preset", "bench", "--type", "q4_k_m",
                        "--dry-run", NULL };
  int status;
  g_autofree char *out = run_cli (dry, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  const char *write[] = { "--arch", "qwen35moe", "--preset", "bench", "--type", "q4_k_m",
                          "--out", path, NULL };
  g_free (run_cli (write, &status));
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (file_size (path), ==, dry_run_value (out, "file size:"));
  LmModel *m = NULL;
  char *err = NULL;
  if (lm_model_load (path, &m, &err) != LM_OK)
    g_error ("%s: %s", path, err);
  g_assert_cmpuint (lm_model_decode_bytes (m), ==, dry_run_value (out, "decode reads:"));
  g_assert_cmpuint (lm_model_info (m)->n_layer, ==, 4);
  lm_model_free (m);
  g_remove (path);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmp_dir = g_dir_make_tmp ("test-make-model-XXXXXX", NULL);
  g_assert_nonnull (tmp_dir);
  g_test_add_func ("/engine/make-model/tiny-plan-matches-file", test_tiny_plan_matches_file);
  g_test_add_func ("/engine/make-model/full-plan", test_full_plan);
  g_test_add_func ("/engine/make-model/overwrite-and-stop", test_overwrite_and_stop);
  g_test_add_func ("/engine/make-model/cli", test_cli);
  /* Writes 2.76 GB: only with `-m slow` (the tiny plans check the same code). */
  if (g_test_slow ())
    g_test_add_func ("/engine/make-model/bench-file", test_bench_file);
  int status = g_test_run ();
  g_autoptr (GDir) dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *p = g_build_filename (tmp_dir, name, NULL);
      g_remove (p);
    }
  g_rmdir (tmp_dir);
  return status;
}
