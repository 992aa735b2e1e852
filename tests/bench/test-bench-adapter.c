/* test-bench-adapter.c: an adapter resized to another rank keeps its rows, pads with zeros.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>

#include "ts-bench-adapter.h"
#include "ts-test-util.h"

#define GOLDEN_DIR "qwen35/tiny-qwen35moe-f32/"

static void
check_resized (const LmLora *lora, const LmLora *resized, guint rank)
{
  g_assert_cmpuint (lm_lora_n_modules (resized), ==, lm_lora_n_modules (lora));
  for (size_t i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (lora, i);
      const LmLoraModule *r = lm_lora_module (resized, (size_t) lm_lora_find (resized, m->name));
      guint keep = MIN (rank, m->rank);

      g_assert_cmpstr (r->name, ==, m->name);
      g_assert_cmpuint (r->rank, ==, rank);
      g_assert_cmpuint (r->d_in, ==, m->d_in);
      g_assert_cmpuint (r->d_out, ==, m->d_out);
      g_assert_cmpfloat_with_epsilon (r->scale, m->scale, 1e-6 * m->scale);
      g_assert_cmpmem (r->a, keep * m->d_in * 4, m->a, keep * m->d_in * 4);
      for (gsize k = (gsize) keep * m->d_in; k < (gsize) rank * m->d_in; k++)
        g_assert_cmpfloat (r->a[k], ==, 0.0f);
      for (guint o = 0; o < m->d_out; o++)
        {
          g_assert_cmpmem (r->b + (gsize) o * rank, keep * 4, m->b + (gsize) o * m->rank, keep * 4);
          for (guint j = keep; j < rank; j++)
            g_assert_cmpfloat (r->b[(gsize) o * rank + j], ==, 0.0f);
        }
    }
}

static void
test_resize (void)
{
  g_autofree char *model_path = ts_test_data_path (GOLDEN_DIR "tiny-qwen35moe-f32.gguf");
  g_autofree char *lora_path = ts_test_data_path (GOLDEN_DIR "lora/tiny-qwen35moe-lora-f32.gguf");
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("ts-bench-adapter-XXXXXX", &error);
  g_autofree char *out = g_build_filename (dir, "resized.gguf", NULL);
  LmModel *model = NULL;
  LmLora *lora = NULL;
  char *msg = NULL;
  guint rank;

  g_assert_cmpint (lm_model_load (model_path, &model, &msg), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (model, lora_path, 1.0f, &lora, &msg), ==, LM_OK);
  rank = lm_lora_module (lora, 0)->rank;
  for (guint target = 1; target <= rank * 2 + 1; target += MAX (1u, rank / 2))
    {
      LmLora *resized = NULL;

      g_assert_true (ts_bench_write_adapter_rank (lora, target, out, &error));
      g_assert_no_error (error);
      g_assert_cmpint (lm_lora_load (model, out, 1.0f, &resized, &msg), ==, LM_OK);
      check_resized (lora, resized, target);
      lm_lora_free (resized);
    }
  g_assert_false (ts_bench_write_adapter_rank (lora, 0, out, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  lm_lora_free (lora);
  lm_model_free (model);
  g_unlink (out);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/bench-adapter/resize", test_resize);
  return g_test_run ();
}
