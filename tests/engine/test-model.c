/* test-model.c: model loading: hyper-parameters against each manifest, and
 * clean refusal of files that are not a usable Qwen3.5 model.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model-private.h"
#include "test-forward-util.h"
#include "test-lora-util.h"
#include "ts-test-util.h"

static const char *const models[] = {
  "tiny-qwen35moe-f32", "tiny-qwen35-f32", "tiny-qwen35moe-e256-q8_0",
  "tiny-qwen35moe-e256-q4_k_m",
};

static gint64
member_int (JsonObject *o, const char *key)
{
  g_assert_true (json_object_has_member (o, key));
  return json_object_get_int_member (o, key);
}

static void
test_hparams (gconstpointer data)
{
  const char *name = data;
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/manifest.json", name);
  g_autofree char *path = ts_test_data_path (rel);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (parser, path, NULL));
  JsonObject *hp = json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                                  "hparams");
  LmModel *m = golden_model (name);
  const LmModelInfo *in = lm_model_info (m);
  const char *arch = json_object_get_string_member (hp, "arch");
  g_assert_cmpint (in->arch, ==, strcmp (arch, "qwen35") == 0 ? LM_ARCH_QWEN35 : LM_ARCH_QWEN35MOE);
  g_assert_cmpint (in->n_vocab, ==, member_int (hp, "n_vocab"));
  g_assert_cmpint (in->n_embd, ==, member_int (hp, "n_embd"));
  g_assert_cmpint (in->n_layer, ==, member_int (hp, "n_layer"));
  g_assert_cmpint (in->n_head, ==, member_int (hp, "n_head"));
  g_assert_cmpint (in->n_head_kv, ==, member_int (hp, "n_head_kv"));
  g_assert_cmpint (in->head_dim, ==, member_int (hp, "head_dim"));
  g_assert_cmpint (in->n_rot, ==, member_int (hp, "n_rot"));
  g_assert_cmpint (in->n_ctx_train, ==, member_int (hp, "n_ctx"));
  g_assert_cmpint (in->ssm_groups, ==, member_int (hp, "lin_k_heads"));
  g_assert_cmpint (in->ssm_heads, ==, member_int (hp, "lin_v_heads"));
  g_assert_cmpint (in->ssm_state, ==, member_int (hp, "lin_head_dim"));
  g_assert_cmpint (in->ssm_conv_kernel, ==, member_int (hp, "conv_kernel"));
  g_assert_cmpfloat_with_epsilon (in->rope_base, json_object_get_double_member (hp, "rope_base"), 1.0);
  g_assert_cmpfloat_with_epsilon (in->rms_eps, json_object_get_double_member (hp, "rms_eps"), 1e-12);
  g_assert_cmpint (in->tied_embeddings, ==, json_object_get_boolean_member (hp, "tied"));
  JsonArray *sections = json_object_get_array_member (hp, "rope_sections");
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint (in->rope_sections[i], ==, json_array_get_int_element (sections, i));
  if (in->arch == LM_ARCH_QWEN35)
    g_assert_cmpint (in->n_ff, ==, member_int (hp, "n_ff"));
  else
    {
      g_assert_cmpint (in->n_expert, ==, member_int (hp, "n_expert"));
      g_assert_cmpint (in->n_expert_used, ==, member_int (hp, "n_expert_used"));
      g_assert_cmpint (in->n_ff_exp, ==, member_int (hp, "n_ff_exp"));
      g_assert_cmpint (in->n_ff_shexp, ==, member_int (hp, "n_ff_shexp"));
    }
  JsonArray *linear = json_object_get_array_member (hp, "recurrent_layers");
  guint n_linear = 0;
  for (uint32_t il = 0; il < in->n_layer; il++)
    n_linear += in->is_linear[il];
  g_assert_cmpuint (n_linear, ==, json_array_get_length (linear));
  for (guint i = 0; i < json_array_get_length (linear); i++)
    g_assert_true (in->is_linear[json_array_get_int_element (linear, i)]);
  g_assert_cmpuint (lm_model_weight_bytes (m), >, 0);
  lm_model_free (m);
}

static void
expect_failure (const char *path, const char *needle)
{
  LmModel *m = NULL;
  char *error = NULL;
  LmStatus st = lm_model_load (path, &m, &error);
  g_test_message ("%s: %s (%s)", path, lm_status_message (st), error ? error : "");
  g_assert_cmpint (st, !=, LM_OK);
  g_assert_null (m);
  g_assert_nonnull (error);
  if (needle != NULL)
    g_assert_nonnull (strstr (error, needle));
  free (error);
}

/* Missing, truncated, and non-model files: an error with a message, no crash. */
static void
test_rejects (void)
{
  expect_failure ("/nonexistent/model.gguf", NULL);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-model-XXXXXX", NULL);
  g_autofree char *adapter = g_build_filename (dir, "adapter.gguf", NULL);
  write_lora_gguf (adapter, "blk.3.attn_output.weight", 128, 4, 128);
  expect_failure (adapter, "qwen35moe.embedding_length");
  gsize len;
  g_autofree guint8 *model = ts_test_read_data ("qwen35/tiny-qwen35-f32/tiny-qwen35-f32.gguf", &len);
  g_autofree char *cut = g_build_filename (dir, "cut.gguf", NULL);
  const gsize sizes[] = { 0, 3, 24, 1000, len / 2, len - 1 };
  for (size_t i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_assert_true (g_file_set_contents (cut, (const char *) model, (gssize) sizes[i], NULL));
      expect_failure (cut, NULL);
    }
  g_remove (adapter);
  g_remove (cut);
  g_rmdir (dir);
}

/* Writes @bytes to a temporary GGUF and expects loading it to fail with a
 * message that contains @needle. */
static void
expect_bytes_failure (const guint8 *bytes, gsize len, const char *needle)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-model-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "patched.gguf", NULL);

  g_assert_true (g_file_set_contents (path, (const char *) bytes, (gssize) len, NULL));
  expect_failure (path, needle);
  g_remove (path);
  g_rmdir (dir);
}

/* Loads tests/data/@rel after replacing the first @from after @after (both
 * byte strings of equal length) with @to, and expects a failure whose
 * message contains @needle. */
static void
expect_patched_failure (const char *rel, const char *after, const char *from, const char *to,
                        const char *needle)
{
  gsize len;
  g_autofree guint8 *bytes = ts_test_read_data (rel, &len);
  const char *start = memmem (bytes, len, after, strlen (after));
  g_assert_nonnull (start);
  char *hit = memmem (start, len - (gsize) ((const guint8 *) start - bytes), from, strlen (from));
  g_assert_nonnull (hit);
  g_assert_cmpuint (strlen (from), ==, strlen (to));
  memcpy (hit, to, strlen (to));
  expect_bytes_failure (bytes, len, needle);
}

/* Loads tests/data/@rel with the 4-byte value of metadata key @key replaced
 * by @value (an f32 or u32 key: the value follows the key's name and its
 * u32 type), and expects a failure whose message contains @needle. */
static void
expect_value_failure (const char *rel, const char *key, const void *value, const char *needle)
{
  gsize len;
  g_autofree guint8 *bytes = ts_test_read_data (rel, &len);
  guint8 *hit = memmem (bytes, len, key, strlen (key));
  g_assert_nonnull (hit);
  g_assert_cmpuint ((gsize) (hit - bytes) + strlen (key) + 8, <=, len);
  memcpy (hit + strlen (key) + 4, value, 4);
  expect_bytes_failure (bytes, len, needle);
}

/* Hyperparameters that would load and print garbage are refused by name:
 * a NaN, infinite, zero or negative rope base or norm epsilon, a zero
 * context length. */
static void
test_rejects_bad_values (void)
{
  const char *rel = "hf/qwen2/qwen2.gguf";
  const float bad_base[] = { NAN, -10000.0f, INFINITY, 0.0f, 1.0f };
  const float bad_eps[] = { NAN, -1e-6f, INFINITY, 2.0f };
  const guint32 zero = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (bad_base); i++)
    expect_value_failure (rel, "qwen2.rope.freq_base", &bad_base[i], "rope.freq_base");
  for (gsize i = 0; i < G_N_ELEMENTS (bad_eps); i++)
    expect_value_failure (rel, "qwen2.attention.layer_norm_rms_epsilon", &bad_eps[i],
                          "layer_norm_rms_epsilon");
  expect_value_failure (rel, "qwen2.context_length", &zero, "context_length is 0");
}

/* The architectures converted from Hugging Face checkpoints (tests/data/hf):
 * what the loader reads from each, and a clear refusal when a tensor the
 * architecture needs is missing or the architecture is unknown. */
static void
test_converted_architectures (void)
{
  static const struct {
    const char *name;
    LmArch arch;
    gboolean bias, qk_norm, moe;
    const char *needed;     /* a tensor the architecture cannot do without */
  } cases[] = {
    { "qwen2", LM_ARCH_QWEN2, TRUE, FALSE, FALSE, "blk.1.attn_k.bias" },
    { "qwen3", LM_ARCH_QWEN3, FALSE, TRUE, FALSE, "blk.1.attn_k_norm.weight" },
    { "qwen3moe", LM_ARCH_QWEN3MOE, FALSE, TRUE, TRUE, "blk.1.ffn_up_exps.weight" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *rel = g_strdup_printf ("hf/%s/%s.gguf", cases[i].name, cases[i].name);
      g_autofree char *path = ts_test_data_path (rel);
      LmModel *m = NULL;
      char *error = NULL;
      g_assert_cmpint (lm_model_load (path, &m, &error), ==, LM_OK);
      const LmModelInfo *in = lm_model_info (m);
      g_assert_cmpint (in->arch, ==, cases[i].arch);
      g_assert_cmpstr (lm_arch_name (in->arch), ==, cases[i].name);
      g_assert_false (in->hybrid);
      g_assert_false (in->attn_gated);
      g_assert_cmpint (in->attn_qkv_bias, ==, cases[i].bias);
      g_assert_cmpint (in->attn_qk_norm, ==, cases[i].qk_norm);
      g_assert_cmpint (in->is_moe, ==, cases[i].moe);
      g_assert_cmpuint (in->n_ff_shexp, ==, 0);
      for (uint32_t il = 0; il < in->n_layer; il++)
        g_assert_false (in->is_linear[il]);
      lm_model_free (m);

      /* the same length, so the file stays well-formed */
      g_autofree char *renamed = g_strdup (cases[i].needed);
      renamed[strlen (renamed) - 1] = 'X';
      g_autofree char *needle = g_strdup_printf ("tensor %s is missing", cases[i].needed);
      expect_patched_failure (rel, "blk.", cases[i].needed, renamed, needle);
    }
  expect_patched_failure ("hf/qwen3/qwen3.gguf", "general.architecture", "qwen3", "qwenZ",
                          "architecture 'qwenZ' is not supported");
}

static bool
in_region (const void *p, const LmModel *m)
{
  const uint8_t *q = p, *r = m->resident;
  return r != NULL && q >= r && q < r + m->resident_bytes;
}

/* The file's bytes of tensor @name equal @w's, wherever @w now lies. */
static void
assert_same_bytes (const LmModel *m, const char *name, const LmWeight *w)
{
  const GgufTensorInfo *t = lm_gguf_find_tensor (lm_model_gguf (m), name);
  g_assert_nonnull (t);
  g_assert_cmpmem (w->data, w->mat_stride * w->n_mat, t->data, t->n_bytes);
}

/* Where @m's weights lie: the dense ones in the huge-page copy when
 * @expect_copy (with the file's bytes), else all in the file mapping; the
 * experts and (untied) token embeddings always in the mapping. */
static void
check_residence (const LmModel *m, bool expect_copy)
{
  const GgufFile *g = lm_model_gguf (m);
  uint64_t offset;
  g_assert_true (expect_copy == (m->resident != NULL));
  g_assert_true (in_region (m->output.data, m) == expect_copy);
  g_assert_true (lm_gguf_file_offset (g, m->output.data, &offset) == !expect_copy);
  assert_same_bytes (m, m->info.tied_embeddings ? "token_embd.weight" : "output.weight",
                     &m->output);
  if (!m->info.tied_embeddings)
    g_assert_true (lm_gguf_file_offset (g, m->tok_embd.data, &offset));
  for (uint32_t il = 0; il < m->info.n_layer; il++)
    {
      LmLayer *l = &m->layers[il];
      const LmWeight *dense[] = LM_LAYER_DENSE_WEIGHTS (l);
      for (size_t i = 0; i < G_N_ELEMENTS (dense); i++)
        if (dense[i]->data != NULL)
          g_assert_true (in_region (dense[i]->data, m) == expect_copy);
      for (int k = 0; k < LM_N_MODULE_KINDS; k++)
        {
          const LmWeight *w = lm_model_module_weight (m, il, (LmModuleKind) k);
          g_autofree char *name = g_strdup_printf ("blk.%u.%s.weight", il,
                                                   lm_module_kind_name ((LmModuleKind) k));
          if (w != NULL)
            assert_same_bytes (m, name, w);
        }
      if (l->exp_gate.data != NULL)
        g_assert_true (lm_gguf_file_offset (g, l->exp_gate.data, &offset));
    }
}

/* A CPU session on @m (the copy of the dense weights is made by the
 * first). */
static void
open_cpu_session (const LmModel *m)
{
  LmSessionParams p = { .n_ctx = 16, .n_threads = 1, .backend = LM_BACKEND_CPU };
  LmSession *s = NULL;
  g_assert_cmpint (lm_session_new (m, &p, &s), ==, LM_OK);
  lm_session_free (s);
}

/* The dense weights are copied into huge pages (model-resident.c) when the
 * first CPU session is created, not at load, unless TENSAFE_WEIGHTS=mapped;
 * the copy holds the file's bytes, and survives its session. */
static void
test_resident_weights (void)
{
  g_autofree char *thp = NULL;
  if (!g_file_get_contents ("/sys/kernel/mm/transparent_hugepage/enabled", &thp, NULL, NULL)
      || strstr (thp, "[never]") != NULL)
    {
      g_test_skip ("transparent huge pages are off here: nothing is copied");
      return;
    }
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      LmModel *m = golden_model (models[i]);
      check_residence (m, false);
      open_cpu_session (m);
      check_residence (m, true);
      const void *copy = m->resident;
      open_cpu_session (m);
      g_assert_true (m->resident == copy);
      lm_model_free (m);
      g_setenv ("TENSAFE_WEIGHTS", "mapped", TRUE);
      m = golden_model (models[i]);
      open_cpu_session (m);
      g_unsetenv ("TENSAFE_WEIGHTS");
      check_residence (m, false);
      lm_model_free (m);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *p = g_strdup_printf ("/engine/model/%s/hparams", models[i]);
      g_test_add_data_func (p, models[i], test_hparams);
    }
  g_test_add_func ("/engine/model/rejects", test_rejects);
  g_test_add_func ("/engine/model/converted-architectures", test_converted_architectures);
  g_test_add_func ("/engine/model/rejects-bad-values", test_rejects_bad_values);
  g_test_add_func ("/engine/model/resident-weights", test_resident_weights);
  return g_test_run ();
}
