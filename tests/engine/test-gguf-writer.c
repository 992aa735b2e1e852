/* test-gguf-writer.c: the GGUF writer and the synthetic test models.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "gguf-synth.h"
#include "gguf-writer.h"
#include "gguf.h"
#include "quant.h"
#include "tokenizer.h"
#include "ts-test-util.h"

static char *tmp_dir;

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmp_dir, name, NULL);
}

/* Every value type and a custom alignment survive a write and a read. */
static void
test_roundtrip (void)
{
  g_autofree char *path = tmp_path ("roundtrip.gguf");
  GgufWriter *w = lm_gguf_writer_new ();
  g_assert_cmpint (lm_gguf_writer_set_alignment (w, 64), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_u32 (w, "a.u32", 4000000000u), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_i32 (w, "a.i32", -5), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_u64 (w, "a.u64", 1ull << 50), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_f32 (w, "a.f32", 0.25f), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_bool (w, "a.bool", true), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_string (w, "a.str", "ünï"), ==, LM_OK);
  int16_t arr[3] = { -7, 0, 7 };
  g_assert_cmpint (lm_gguf_writer_add_array (w, "a.arr", LM_GGUF_TYPE_INT16, arr, 3), ==, LM_OK);
  const char *strs[] = { "x y", "", "z" };
  g_assert_cmpint (lm_gguf_writer_add_string_array (w, "a.strs", strs, 3), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_u32 (w, "a.u32", 1), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_gguf_writer_add_array (w, "a.bad", LM_GGUF_TYPE_STRING, arr, 1), ==,
                   LM_ERR_INVALID_ARGUMENT);

  uint64_t ne_a[2] = { 3, 5 }, ne_b[1] = { 64 }, ne_c[3] = { 256, 2, 2 };
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "t.a", LM_TYPE_F32, 2, ne_a), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "t.b", LM_TYPE_Q8_0, 1, ne_b), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "t.c", LM_TYPE_Q4_K, 3, ne_c), ==, LM_OK);
  uint64_t bad_ne[1] = { 33 };
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "t.d", LM_TYPE_Q8_0, 1, bad_ne), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "t.a", LM_TYPE_F32, 2, ne_a), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpuint (lm_gguf_writer_tensor_bytes (w, 2), ==, 4 * 144);

  /* Data streamed in uneven chunks across tensor boundaries. */
  size_t total = 60 + 68 + 576;
  g_autofree uint8_t *data = g_malloc (total);
  for (size_t i = 0; i < total; i++)
    data[i] = (uint8_t) (i * 7 + 1);
  g_assert_cmpint (lm_gguf_writer_begin (w, path, NULL), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, data, 50), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, data + 50, 100), ==, LM_OK);
  char *err = NULL;
  g_assert_cmpint (lm_gguf_writer_finish (w, &err), !=, LM_OK);   /* not all written yet */
  g_assert_nonnull (strstr (err, "incomplete"));
  g_free (err);
  lm_gguf_writer_free (w);

  w = lm_gguf_writer_new ();
  lm_gguf_writer_set_alignment (w, 64);
  lm_gguf_writer_add_string (w, "a.str", "ünï");
  lm_gguf_writer_add_array (w, "a.arr", LM_GGUF_TYPE_INT16, arr, 3);
  lm_gguf_writer_add_string_array (w, "a.strs", strs, 3);
  lm_gguf_writer_add_bool (w, "a.bool", true);
  lm_gguf_writer_add_u64 (w, "a.u64", 1ull << 50);
  lm_gguf_writer_add_i32 (w, "a.i32", -5);
  lm_gguf_writer_add_f32 (w, "a.f32", 0.25f);
  lm_gguf_writer_add_tensor (w, "t.a", LM_TYPE_F32, 2, ne_a);
  lm_gguf_writer_add_tensor (w, "t.b", LM_TYPE_Q8_0, 1, ne_b);
  lm_gguf_writer_add_tensor (w, "t.c", LM_TYPE_Q4_K, 3, ne_c);
  g_assert_cmpint (lm_gguf_writer_begin (w, path, NULL), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, data, 1), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, data + 1, 100), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, data + 101, total - 101), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, data, 1), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_gguf_writer_finish (w, NULL), ==, LM_OK);
  lm_gguf_writer_free (w);

  GgufFile *f = NULL;
  err = NULL;
  if (lm_gguf_open (path, &f, &err) != LM_OK)
    g_error ("%s", err);
  g_assert_cmpuint (lm_gguf_n_kv (f), ==, 8);   /* + general.alignment */
  g_assert_cmpuint (lm_gguf_alignment (f), ==, 64);
  uint64_t u64;
  int32_t i32;
  float f32;
  bool b;
  GgufString s;
  g_assert_true (lm_gguf_get_u64 (f, "a.u64", &u64) && u64 == 1ull << 50);
  g_assert_true (lm_gguf_get_i32 (f, "a.i32", &i32) && i32 == -5);
  g_assert_true (lm_gguf_get_f32 (f, "a.f32", &f32) && f32 == 0.25f);
  g_assert_true (lm_gguf_get_bool (f, "a.bool", &b) && b);
  g_assert_true (lm_gguf_get_string (f, "a.str", &s) && lm_gguf_string_eq (s, "ünï"));
  g_assert_true (lm_gguf_get_array_string (f, "a.strs", 0, &s) && lm_gguf_string_eq (s, "x y"));
  g_assert_true (lm_gguf_get_array_string (f, "a.strs", 1, &s) && s.len == 0);
  GgufValueType et;
  uint64_t n;
  const void *p;
  g_assert_true (lm_gguf_get_array (f, "a.arr", &et, &n, &p));
  g_assert_cmpmem (p, 6, arr, 6);
  size_t off = 0;
  const char *names[] = { "t.a", "t.b", "t.c" };
  for (int i = 0; i < 3; i++)
    {
      const GgufTensorInfo *t = lm_gguf_find_tensor (f, names[i]);
      g_assert_nonnull (t);
      g_assert_cmpuint (t->offset % 64, ==, 0);
      g_assert_cmpmem (t->data, t->n_bytes, data + off, t->n_bytes);
      off += t->n_bytes;
    }
  const GgufTensorInfo *c = lm_gguf_find_tensor (f, "t.c");
  g_assert_cmpuint (c->n_dims, ==, 3);
  g_assert_cmpuint (c->ne[2], ==, 2);
  /* the file ends at the padded end of the last tensor */
  struct stat st;
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpuint (st.st_size, ==, lm_gguf_data_offset (f) + (c->offset + c->n_bytes + 63) / 64 * 64);
  lm_gguf_close (f);
}

static GgufFile *
synth (const char *name, LmSynthArch arch, LmSynthType type, uint64_t seed, int threads,
       char **path_out)
{
  char *path = tmp_path (name);
  LmSynthOptions o = { .arch = arch, .preset = LM_SYNTH_TINY, .type = type, .seed = seed,
                       .threads = threads };
  char *err = NULL;
  if (lm_synth_write (&o, path, &err) != LM_OK)
    g_error ("%s", err);
  GgufFile *f = NULL;
  if (lm_gguf_open (path, &f, &err) != LM_OK)
    g_error ("%s: %s", path, err);
  if (path_out)
    *path_out = path;
  else
    g_free (path);
  return f;
}

/* The tiny qwen35moe preset has the shapes of the golden e256 models, and
 * for Q8_0 / Q4_K_M the tensor types llama-quantize chose for them. */
static void
check_against_manifest (GgufFile *f, const char *manifest, bool check_types)
{
  g_autofree char *path = ts_test_data_path (manifest);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (parser, path, NULL));
  JsonObject *m = json_node_get_object (json_parser_get_root (parser));
  JsonObject *types = json_object_get_object_member (m, "tensor_types");
  g_assert_cmpuint (lm_gguf_n_tensors (f), ==, json_object_get_size (types));
  for (uint64_t i = 0; i < lm_gguf_n_tensors (f); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (f, i);
      g_autofree char *name = g_strndup (t->name.data, t->name.len);
      JsonObject *want = json_object_get_object_member (types, name);
      if (want == NULL)
        g_error ("%s not in %s", name, manifest);
      JsonArray *ne = json_object_get_array_member (want, "ne");
      g_assert_cmpuint (t->n_dims, ==, json_array_get_length (ne));
      for (uint32_t d = 0; d < t->n_dims; d++)
        g_assert_cmpuint (t->ne[d], ==, json_array_get_int_element (ne, d));
      if (check_types && strcmp (lm_gguf_type_name (t->type),
                                 json_object_get_string_member (want, "type")) != 0)
        g_error ("%s: %s, llama-quantize chose %s", name, lm_gguf_type_name (t->type),
                 json_object_get_string_member (want, "type"));
    }
  /* hparams as in the manifest */
  JsonObject *hp = json_object_get_object_member (m, "hparams");
  uint32_t v;
  g_assert_true (lm_gguf_get_u32 (f, "qwen35moe.embedding_length", &v));
  g_assert_cmpuint (v, ==, json_object_get_int_member (hp, "n_embd"));
  g_assert_true (lm_gguf_get_u32 (f, "qwen35moe.rope.dimension_count", &v));
  g_assert_cmpuint (v, ==, json_object_get_int_member (hp, "n_rot"));
  g_assert_true (lm_gguf_get_u32 (f, "qwen35moe.ssm.time_step_rank", &v));
  g_assert_cmpuint (v, ==, json_object_get_int_member (hp, "lin_v_heads"));
  g_assert_true (lm_gguf_get_u32 (f, "qwen35moe.expert_feed_forward_length", &v));
  g_assert_cmpuint (v, ==, json_object_get_int_member (hp, "n_ff_exp"));
}

static void
test_tiny_matches_golden_layout (void)
{
  GgufFile *f32 = synth ("moe-f32.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_F32, 1, 2, NULL);
  check_against_manifest (f32, "qwen35/tiny-qwen35moe-e256-q8_0/manifest.json", false);
  for (uint64_t i = 0; i < lm_gguf_n_tensors (f32); i++)
    g_assert_cmpint (lm_gguf_tensor (f32, i)->type, ==, LM_TYPE_F32);
  GgufFile *q8 = synth ("moe-q8.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_Q8_0, 1, 2, NULL);
  check_against_manifest (q8, "qwen35/tiny-qwen35moe-e256-q8_0/manifest.json", true);
  GgufFile *q4 = synth ("moe-q4km.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_Q4_K_M, 1, 2, NULL);
  check_against_manifest (q4, "qwen35/tiny-qwen35moe-e256-q4_k_m/manifest.json", true);
  uint32_t ft;
  g_assert_true (lm_gguf_get_u32 (q4, "general.file_type", &ft));
  g_assert_cmpuint (ft, ==, 15);

  /* Quantised tensors hold the same weights as the F32 file, to within the
   * rounding of their type. */
  for (uint64_t i = 0; i < lm_gguf_n_tensors (f32); i++)
    {
      const GgufTensorInfo *a = lm_gguf_tensor (f32, i);
      g_autofree char *name = g_strndup (a->name.data, a->name.len);
      for (int k = 0; k < 2; k++)
        {
          const GgufTensorInfo *q = lm_gguf_find_tensor (k ? q4 : q8, name);
          int64_t n = (int64_t) a->ne[0];
          g_autofree float *row = g_new (float, n);
          const float *ref = a->data;
          g_assert_cmpint (lm_dequantize_row (q->type, q->data, row, n), ==, LM_OK);
          float amax = 0, err = 0;
          for (int64_t j = 0; j < n; j++)
            {
              amax = fmaxf (amax, fabsf (ref[j]));
              err = fmaxf (err, fabsf (row[j] - ref[j]));
            }
          /* Q8_0 is within amax/127 per block; 4-bit types within a few steps of amax/15 */
          g_assert_cmpfloat (err, <=, amax * (q->type == LM_TYPE_Q8_0 ? 1.0f / 127 : 0.25f)
                                      + 1e-7f);
        }
    }
  lm_gguf_close (f32);
  lm_gguf_close (q8);
  lm_gguf_close (q4);
}

static void
test_dense_and_f16 (void)
{
  GgufFile *f = synth ("dense-f16.gguf", LM_SYNTH_QWEN35, LM_SYNTH_F16, 9, 1, NULL);
  GgufString arch;
  g_assert_true (lm_gguf_get_string (f, "general.architecture", &arch));
  g_assert_true (lm_gguf_string_eq (arch, "qwen35"));
  uint32_t n_ff;
  g_assert_true (lm_gguf_get_u32 (f, "qwen35.feed_forward_length", &n_ff));
  g_assert_cmpuint (n_ff, ==, 512);
  g_assert_false (lm_gguf_get_u32 (f, "qwen35.expert_count", &n_ff));
  const GgufTensorInfo *down = lm_gguf_find_tensor (f, "blk.3.ffn_down.weight");
  g_assert_nonnull (down);
  g_assert_cmpuint (down->ne[0], ==, 512);
  g_assert_cmpuint (down->ne[1], ==, 256);
  g_assert_cmpint (down->type, ==, LM_TYPE_F16);
  g_assert_cmpint (lm_gguf_find_tensor (f, "blk.3.attn_q_norm.weight")->type, ==, LM_TYPE_F32);
  g_assert_cmpint (lm_gguf_find_tensor (f, "blk.0.ssm_conv1d.weight")->type, ==, LM_TYPE_F32);
  g_assert_null (lm_gguf_find_tensor (f, "blk.0.ffn_gate_exps.weight"));
  g_assert_null (lm_gguf_find_tensor (f, "blk.0.attn_q.weight"));   /* layer 0 is linear */
  /* ssm_a is negative, norms are near 1 */
  const GgufTensorInfo *a = lm_gguf_find_tensor (f, "blk.1.ssm_a");
  for (uint64_t i = 0; i < a->ne[0]; i++)
    g_assert_cmpfloat (((const float *) a->data)[i], <, 0.0f);
  lm_gguf_close (f);
}

/* Same seed: the same bytes, whatever the thread count; another seed differs. */
static void
test_determinism (void)
{
  char *p1, *p2, *p3;
  lm_gguf_close (synth ("det1.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_Q4_K_M, 42, 1, &p1));
  lm_gguf_close (synth ("det2.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_Q4_K_M, 42, 3, &p2));
  lm_gguf_close (synth ("det3.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_Q4_K_M, 43, 2, &p3));
  gsize n1, n2, n3;
  g_autofree char *a = NULL, *b = NULL, *c = NULL;
  g_assert_true (g_file_get_contents (p1, &a, &n1, NULL));
  g_assert_true (g_file_get_contents (p2, &b, &n2, NULL));
  g_assert_true (g_file_get_contents (p3, &c, &n3, NULL));
  g_assert_cmpmem (a, n1, b, n2);
  g_assert_true (n1 != n3 || memcmp (a, c, n1) != 0);
  g_free (p1);
  g_free (p2);
  g_free (p3);
}

/* The synthetic vocabulary is a working byte-level BPE with the Qwen specials. */
static void
test_vocab (void)
{
  GgufFile *f = synth ("vocab.gguf", LM_SYNTH_QWEN35MOE, LM_SYNTH_F32, 5, 2, NULL);
  LmTokenizer *tok = NULL;
  char *err = NULL;
  if (lm_tokenizer_new_from_gguf (f, &tok, &err) != LM_OK)
    g_error ("%s", err);
  g_assert_cmpint (lm_tokenizer_n_vocab (tok), ==, 1024);
  g_assert_cmpint (lm_tokenizer_find (tok, "<|endoftext|>"), ==, 998);
  g_assert_cmpint (lm_tokenizer_find (tok, "<|im_end|>"), ==, lm_tokenizer_eos (tok));
  g_assert_cmpint (lm_tokenizer_find (tok, "</think>"), ==, 1023);
  g_assert_cmpint (lm_tokenizer_token_type (tok, 1022), ==, LM_TOKEN_USER_DEFINED);
  GgufValueType et;
  uint64_t n_merges;
  g_assert_true (lm_gguf_get_array (f, "tokenizer.ggml.merges", &et, &n_merges, NULL));
  g_assert_cmpuint (n_merges, ==, 1024 - 256 - 26);
  const char *text = "<|im_start|>user\nthe quick brown fox, 42 times!<|im_end|>";
  int32_t *ids;
  size_t n;
  g_assert_cmpint (lm_tokenize (tok, text, strlen (text), true, &ids, &n), ==, LM_OK);
  g_assert_cmpint (ids[0], ==, 999);
  g_assert_cmpuint (n, <, strlen (text) - 20);   /* merges do apply */
  char *back;
  size_t len;
  g_assert_cmpint (lm_detokenize (tok, ids, n, true, &back, &len), ==, LM_OK);
  g_assert_cmpstr (back, ==, text);
  free (back);
  free (ids);
  lm_tokenizer_free (tok);
  lm_gguf_close (f);
}

/* make-model on the command line, with the tokenizer copied from a golden model. */
static void
test_cli (void)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_autofree char *out = tmp_path ("cli.gguf");
  g_autofree char *golden =
    ts_test_data_path ("qwen35/tiny-qwen35moe-e256-q8_0/tiny-qwen35moe-e256-q8_0.gguf");
  const char *argv[] = { cli, "make-model", "--arch", "qwen35moe", "--preset", "tiny", "--type",
                         "q8_0", "--seed", "7", "--vocab", golden, "--out", out, NULL };
  int status;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv, NULL, 0, NULL, NULL, NULL, NULL, &status, &error);
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  GgufFile *f = NULL, *g = NULL;
  g_assert_cmpint (lm_gguf_open (out, &f, NULL), ==, LM_OK);
  g_assert_cmpint (lm_gguf_open (golden, &g, NULL), ==, LM_OK);
  const char *keys[] = { "tokenizer.ggml.tokens", "tokenizer.ggml.merges" };
  for (int k = 0; k < 2; k++)
    {
      uint64_t n1, n2;
      GgufValueType et;
      g_assert_true (lm_gguf_get_array (f, keys[k], &et, &n1, NULL));
      g_assert_true (lm_gguf_get_array (g, keys[k], &et, &n2, NULL));
      g_assert_cmpuint (n1, ==, n2);
      for (uint64_t i = 0; i < n1; i++)
        {
          GgufString a, b;
          lm_gguf_get_array_string (f, keys[k], i, &a);
          lm_gguf_get_array_string (g, keys[k], i, &b);
          g_assert_cmpmem (a.data, a.len, b.data, b.len);
        }
    }
  lm_gguf_close (f);
  lm_gguf_close (g);

  const char *bad[] = { cli, "make-model", "--arch", "llama", "--preset", "tiny", "--type", "f32",
                        "--out", out, NULL };
  g_spawn_sync (NULL, (char **) bad, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL,
                &status, NULL);
  g_assert_false (g_spawn_check_wait_status (status, NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmp_dir = g_dir_make_tmp ("test-gguf-writer-XXXXXX", NULL);
  g_assert_nonnull (tmp_dir);
  g_test_add_func ("/engine/gguf-writer/roundtrip", test_roundtrip);
  g_test_add_func ("/engine/gguf-writer/tiny-matches-golden-layout",
                   test_tiny_matches_golden_layout);
  g_test_add_func ("/engine/gguf-writer/dense-and-f16", test_dense_and_f16);
  g_test_add_func ("/engine/gguf-writer/determinism", test_determinism);
  g_test_add_func ("/engine/gguf-writer/vocab", test_vocab);
  g_test_add_func ("/engine/gguf-writer/cli", test_cli);
  int status = g_test_run ();
  g_autoptr (GDir) dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *p = g_build_filename (tmp_dir, name, NULL);
      g_unlink (p);
    }
  g_rmdir (tmp_dir);
  g_free (tmp_dir);
  return status;
}
