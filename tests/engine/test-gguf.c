/* test-gguf.c: the GGUF reader against the golden models and hostile files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "gguf.h"
#include "ts-test-util.h"

static const char *const golden_models[] = {
  "tiny-qwen35moe-f32", "tiny-qwen35-f32", "tiny-qwen35moe-e256-q8_0",
  "tiny-qwen35moe-e256-q4_k_m",
};

static JsonObject *
load_manifest (const char *model, JsonParser **parser_out)
{
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/manifest.json", model);
  g_autofree char *path = ts_test_data_path (rel);
  JsonParser *parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  *parser_out = parser;
  return json_node_get_object (json_parser_get_root (parser));
}

static GgufFile *
open_model (const char *model)
{
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/%s.gguf", model, model);
  g_autofree char *path = ts_test_data_path (rel);
  GgufFile *f = NULL;
  char *err = NULL;
  LmStatus st = lm_gguf_open (path, &f, &err);
  if (st != LM_OK)
    g_error ("%s: %s", path, err);
  g_assert_null (err);
  return f;
}

static uint32_t
arch_u32 (GgufFile *f, const char *arch, const char *suffix)
{
  g_autofree char *key = g_strdup_printf ("%s.%s", arch, suffix);
  uint32_t v = 0;
  if (!lm_gguf_get_u32 (f, key, &v))
    g_error ("missing key %s", key);
  return v;
}

static void
check_hparams (GgufFile *f, JsonObject *hp)
{
  const char *arch = json_object_get_string_member (hp, "arch");
  GgufString s;
  g_assert_true (lm_gguf_get_string (f, "general.architecture", &s));
  g_assert_true (lm_gguf_string_eq (s, arch));

  struct { const char *json, *key; } u32s[] = {
    { "n_embd", "embedding_length" }, { "n_layer", "block_count" },
    { "n_head", "attention.head_count" }, { "n_head_kv", "attention.head_count_kv" },
    { "head_dim", "attention.key_length" }, { "head_dim", "attention.value_length" },
    { "n_rot", "rope.dimension_count" }, { "n_ctx", "context_length" },
    { "lin_k_heads", "ssm.group_count" }, { "lin_v_heads", "ssm.time_step_rank" },
    { "lin_head_dim", "ssm.state_size" }, { "conv_kernel", "ssm.conv_kernel" },
    { "full_attn_interval", "full_attention_interval" }, { "n_ff", "feed_forward_length" },
    { "n_expert", "expert_count" }, { "n_expert_used", "expert_used_count" },
    { "n_ff_exp", "expert_feed_forward_length" },
    { "n_ff_shexp", "expert_shared_feed_forward_length" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (u32s); i++)
    if (json_object_has_member (hp, u32s[i].json))
      g_assert_cmpuint (arch_u32 (f, arch, u32s[i].key), ==,
                        json_object_get_int_member (hp, u32s[i].json));
  g_assert_cmpuint (arch_u32 (f, arch, "ssm.inner_size"), ==,
                    json_object_get_int_member (hp, "lin_head_dim")
                    * json_object_get_int_member (hp, "lin_v_heads"));

  g_autofree char *k_eps = g_strdup_printf ("%s.attention.layer_norm_rms_epsilon", arch);
  g_autofree char *k_base = g_strdup_printf ("%s.rope.freq_base", arch);
  float eps = 0, base = 0;
  g_assert_true (lm_gguf_get_f32 (f, k_eps, &eps));
  g_assert_true (lm_gguf_get_f32 (f, k_base, &base));
  g_assert_cmpfloat_with_epsilon (eps, json_object_get_double_member (hp, "rms_eps"), 1e-12);
  g_assert_cmpfloat_with_epsilon (base, json_object_get_double_member (hp, "rope_base"), 1.0);

  g_autofree char *k_sec = g_strdup_printf ("%s.rope.dimension_sections", arch);
  GgufValueType et;
  uint64_t n;
  const void *data;
  g_assert_true (lm_gguf_get_array (f, k_sec, &et, &n, &data));
  JsonArray *sections = json_object_get_array_member (hp, "rope_sections");
  g_assert_cmpuint (et, ==, LM_GGUF_TYPE_INT32);
  g_assert_cmpuint (n, ==, json_array_get_length (sections));
  for (uint64_t i = 0; i < n; i++)
    g_assert_cmpint (((const int32_t *) data)[i], ==, json_array_get_int_element (sections, i));

  g_assert_true (lm_gguf_get_array (f, "tokenizer.ggml.tokens", &et, &n, &data));
  g_assert_cmpuint (et, ==, LM_GGUF_TYPE_STRING);
  g_assert_null (data);
  g_assert_cmpuint (n, ==, json_object_get_int_member (hp, "n_vocab"));
  const GgufTensorInfo *emb = lm_gguf_find_tensor (f, "token_embd.weight");
  g_assert_nonnull (emb);
  g_assert_cmpuint (emb->ne[1], ==, n);
  g_assert_cmpint (json_object_get_boolean_member (hp, "tied"), ==,
                   lm_gguf_find_tensor (f, "output.weight") == NULL);
}

static void
check_tensors (GgufFile *f, JsonObject *types)
{
  g_assert_cmpuint (lm_gguf_n_tensors (f), ==, json_object_get_size (types));
  for (uint64_t i = 0; i < lm_gguf_n_tensors (f); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (f, i);
      g_autofree char *name = g_strndup (t->name.data, t->name.len);
      g_assert_true (lm_gguf_find_tensor (f, name) == t);
      JsonObject *want = json_object_get_object_member (types, name);
      g_assert_nonnull (want);
      g_assert_cmpstr (lm_gguf_type_name (t->type), ==, json_object_get_string_member (want, "type"));
      JsonArray *ne = json_object_get_array_member (want, "ne");
      g_assert_cmpuint (t->n_dims, ==, json_array_get_length (ne));
      uint64_t n_values = 1;
      for (uint32_t d = 0; d < t->n_dims; d++)
        {
          g_assert_cmpuint (t->ne[d], ==, json_array_get_int_element (ne, d));
          n_values *= t->ne[d];
        }
      uint32_t bv, bb;
      g_assert_true (lm_gguf_type_layout (t->type, &bv, &bb));
      g_assert_cmpuint (t->n_bytes, ==, n_values / bv * bb);
      g_assert_cmpuint (t->offset % lm_gguf_alignment (f), ==, 0);
      g_assert_true ((const char *) t->data
                     == (const char *) lm_gguf_tensor (f, 0)->data - lm_gguf_tensor (f, 0)->offset
                        + t->offset);
    }
  g_assert_null (lm_gguf_find_tensor (f, "no.such.tensor"));
}

static void
test_golden_models (void)
{
  for (size_t m = 0; m < G_N_ELEMENTS (golden_models); m++)
    {
      g_autoptr (JsonParser) parser = NULL;
      JsonObject *manifest = load_manifest (golden_models[m], &parser);
      GgufFile *f = open_model (golden_models[m]);
      g_assert_cmpuint (lm_gguf_version (f), ==, 3);
      g_assert_cmpuint (lm_gguf_alignment (f), ==, 32);
      g_assert_cmpuint (lm_gguf_data_offset (f) % 32, ==, 0);
      check_hparams (f, json_object_get_object_member (manifest, "hparams"));
      check_tensors (f, json_object_get_object_member (manifest, "tensor_types"));

      JsonObject *special = json_object_get_object_member (manifest, "special_tokens");
      uint32_t id;
      g_assert_true (lm_gguf_get_u32 (f, "tokenizer.ggml.eos_token_id", &id));
      g_assert_cmpuint (id, ==, json_object_get_int_member (special, "eos"));
      g_assert_true (lm_gguf_get_u32 (f, "tokenizer.ggml.bos_token_id", &id));
      g_assert_cmpuint (id, ==, json_object_get_int_member (special, "bos"));
      bool add_bos = true;
      g_assert_true (lm_gguf_get_bool (f, "tokenizer.ggml.add_bos_token", &add_bos));
      g_assert_false (add_bos);
      GgufString tok;
      g_assert_true (lm_gguf_get_array_string (f, "tokenizer.ggml.tokens", 1000, &tok));
      g_assert_true (lm_gguf_string_eq (tok, "<|im_end|>"));
      g_assert_false (lm_gguf_get_array_string (f, "tokenizer.ggml.tokens", 1024, &tok));
      g_assert_false (lm_gguf_get_string (f, "tokenizer.ggml.tokens", &tok));
      g_assert_false (lm_gguf_get_u32 (f, "general.architecture", &id));
      lm_gguf_close (f);
    }
}

/* ---- a small hand-assembled file covering every value type ---- */

static void put (GByteArray *b, const void *p, size_t n) { g_byte_array_append (b, p, n); }
static void put_u32 (GByteArray *b, uint32_t v) { put (b, &v, 4); }
static void put_u64 (GByteArray *b, uint64_t v) { put (b, &v, 8); }

static void
put_str (GByteArray *b, const char *s)
{
  put_u64 (b, strlen (s));
  put (b, s, strlen (s));
}

static void
put_key (GByteArray *b, const char *key, GgufValueType type)
{
  put_str (b, key);
  put_u32 (b, type);
}

/* Builds a v3 file with 15 keys (every scalar type, a string, numeric, string
 * and nested arrays, a custom alignment of 64) and two tensors. */
static GByteArray *
build_small_file (void)
{
  GByteArray *b = g_byte_array_new ();
  put (b, "GGUF", 4);
  put_u32 (b, 3);
  put_u64 (b, 2);   /* tensors */
  put_u64 (b, 15);  /* kv */
  uint8_t u8 = 200; int8_t i8 = -100; uint16_t u16 = 60000; int16_t i16 = -30000;
  int32_t i32 = -2000000000; float f32 = 1.5f; uint8_t bl = 1; uint64_t u64 = 1ull << 40;
  int64_t i64 = -(1ll << 40); double f64 = 2.25;
  put_key (b, "t.u8", LM_GGUF_TYPE_UINT8); put (b, &u8, 1);
  put_key (b, "t.i8", LM_GGUF_TYPE_INT8); put (b, &i8, 1);
  put_key (b, "t.u16", LM_GGUF_TYPE_UINT16); put (b, &u16, 2);
  put_key (b, "t.i16", LM_GGUF_TYPE_INT16); put (b, &i16, 2);
  put_key (b, "t.u32", LM_GGUF_TYPE_UINT32); put_u32 (b, 4000000000u);
  put_key (b, "t.i32", LM_GGUF_TYPE_INT32); put (b, &i32, 4);
  put_key (b, "t.f32", LM_GGUF_TYPE_FLOAT32); put (b, &f32, 4);
  put_key (b, "t.bool", LM_GGUF_TYPE_BOOL); put (b, &bl, 1);
  put_key (b, "t.u64", LM_GGUF_TYPE_UINT64); put (b, &u64, 8);
  put_key (b, "t.i64", LM_GGUF_TYPE_INT64); put (b, &i64, 8);
  put_key (b, "t.f64", LM_GGUF_TYPE_FLOAT64); put (b, &f64, 8);
  put_key (b, "t.str", LM_GGUF_TYPE_STRING); put_str (b, "héllo");
  put_key (b, "t.arr_i16", LM_GGUF_TYPE_ARRAY); put_u32 (b, LM_GGUF_TYPE_INT16); put_u64 (b, 3);
  for (int16_t v = -1; v <= 1; v++) put (b, &v, 2);
  put_key (b, "t.arr_str", LM_GGUF_TYPE_ARRAY); put_u32 (b, LM_GGUF_TYPE_STRING); put_u64 (b, 2);
  put_str (b, "a b"); put_str (b, "");
  put_key (b, "general.alignment", LM_GGUF_TYPE_UINT32); put_u32 (b, 64);
  /* tensor infos: a [4, 2] F32 at 0 and a [32] Q8_0 at 64 */
  put_str (b, "w.f4"); put_u32 (b, 2); put_u64 (b, 4); put_u64 (b, 2);
  put_u32 (b, LM_TYPE_F32); put_u64 (b, 0);
  put_str (b, "w.q8"); put_u32 (b, 1); put_u64 (b, 32); put_u32 (b, LM_TYPE_Q8_0);
  put_u64 (b, 64);
  while (b->len % 64)
    put (b, "", 1);
  for (int i = 0; i < 8; i++)
    {
      float v = (float) i;
      put (b, &v, 4);
    }
  while (b->len % 64)
    put (b, "\xAA", 1);
  for (int i = 0; i < 34; i++)
    put (b, "\x01", 1);
  return b;
}

static void
test_small_file_values (void)
{
  g_autoptr (GByteArray) b = build_small_file ();
  GgufFile *f = NULL;
  char *err = NULL;
  g_assert_cmpint (lm_gguf_open_memory (b->data, b->len, &f, &err), ==, LM_OK);
  g_assert_null (err);
  g_assert_cmpuint (lm_gguf_n_kv (f), ==, 15);
  g_assert_cmpuint (lm_gguf_alignment (f), ==, 64);
  g_assert_cmpuint (lm_gguf_data_offset (f) % 64, ==, 0);

  uint32_t u32; uint64_t u64; int32_t i32; float f32; bool bl; GgufString s;
  g_assert_true (lm_gguf_get_u32 (f, "t.u8", &u32)); g_assert_cmpuint (u32, ==, 200);
  g_assert_true (lm_gguf_get_i32 (f, "t.i8", &i32)); g_assert_cmpint (i32, ==, -100);
  g_assert_false (lm_gguf_get_u32 (f, "t.i8", &u32));       /* negative does not fit */
  g_assert_true (lm_gguf_get_u32 (f, "t.u16", &u32)); g_assert_cmpuint (u32, ==, 60000);
  g_assert_true (lm_gguf_get_i32 (f, "t.i16", &i32)); g_assert_cmpint (i32, ==, -30000);
  g_assert_true (lm_gguf_get_u32 (f, "t.u32", &u32)); g_assert_cmpuint (u32, ==, 4000000000u);
  g_assert_false (lm_gguf_get_i32 (f, "t.u32", &i32));      /* too large for i32 */
  g_assert_true (lm_gguf_get_i32 (f, "t.i32", &i32)); g_assert_cmpint (i32, ==, -2000000000);
  g_assert_true (lm_gguf_get_f32 (f, "t.f32", &f32)); g_assert_cmpfloat (f32, ==, 1.5f);
  g_assert_true (lm_gguf_get_bool (f, "t.bool", &bl)); g_assert_true (bl);
  g_assert_true (lm_gguf_get_u64 (f, "t.u64", &u64)); g_assert_cmpuint (u64, ==, 1ull << 40);
  g_assert_false (lm_gguf_get_u32 (f, "t.u64", &u32));
  g_assert_false (lm_gguf_get_u64 (f, "t.i64", &u64));
  g_assert_true (lm_gguf_get_f32 (f, "t.f64", &f32)); g_assert_cmpfloat (f32, ==, 2.25f);
  g_assert_false (lm_gguf_get_f32 (f, "t.u8", &f32));
  g_assert_true (lm_gguf_get_string (f, "t.str", &s));
  g_assert_true (lm_gguf_string_eq (s, "héllo"));
  g_assert_false (lm_gguf_get_u32 (f, "absent", &u32));
  g_assert_cmpint (lm_gguf_find_key (f, "absent"), ==, -1);
  int64_t k = lm_gguf_find_key (f, "t.str");
  g_assert_cmpint (k, ==, 11);
  g_assert_true (lm_gguf_string_eq (lm_gguf_key_name (f, k), "t.str"));
  g_assert_cmpint (lm_gguf_value_type (f, k), ==, LM_GGUF_TYPE_STRING);

  GgufValueType et; uint64_t n; const void *data;
  g_assert_true (lm_gguf_get_array (f, "t.arr_i16", &et, &n, &data));
  g_assert_cmpint (et, ==, LM_GGUF_TYPE_INT16);
  g_assert_cmpuint (n, ==, 3);
  g_assert_cmpint (((const int16_t *) data)[0], ==, -1);
  g_assert_cmpint (((const int16_t *) data)[2], ==, 1);
  g_assert_true (lm_gguf_get_array_string (f, "t.arr_str", 0, &s));
  g_assert_true (lm_gguf_string_eq (s, "a b"));
  g_assert_true (lm_gguf_get_array_string (f, "t.arr_str", 1, &s));
  g_assert_cmpuint (s.len, ==, 0);
  g_assert_false (lm_gguf_get_array_string (f, "t.arr_str", 2, &s));
  g_assert_false (lm_gguf_get_array_string (f, "t.arr_i16", 0, &s));

  const GgufTensorInfo *t = lm_gguf_find_tensor (f, "w.f4");
  g_assert_nonnull (t);
  g_assert_cmpuint (t->ne[0], ==, 4);
  g_assert_cmpuint (t->ne[1], ==, 2);
  g_assert_cmpuint (t->ne[2], ==, 1);
  g_assert_cmpuint (t->n_bytes, ==, 32);
  float v7;
  memcpy (&v7, (const char *) t->data + 28, 4);
  g_assert_cmpfloat (v7, ==, 7.0f);
  t = lm_gguf_find_tensor (f, "w.q8");
  g_assert_cmpuint (t->n_bytes, ==, 34);
  g_assert_cmpuint ((const uint8_t *) t->data - b->data, ==, lm_gguf_data_offset (f) + 64);
  g_assert_cmpuint (((const uint8_t *) t->data)[33], ==, 1);
  lm_gguf_close (f);
}

/* Opens @data; on failure checks that a non-empty message came back. */
static LmStatus
try_open (const void *data, size_t len, char **msg_out)
{
  GgufFile *f = NULL;
  char *err = NULL;
  LmStatus st = lm_gguf_open_memory (data, len, &f, &err);
  if (st == LM_OK)
    {
      g_assert_nonnull (f);
      g_assert_null (err);
      /* Touch every tensor byte so ASan sees any out-of-bounds pointer. */
      volatile uint8_t sink = 0;
      for (uint64_t i = 0; i < lm_gguf_n_tensors (f); i++)
        {
          const GgufTensorInfo *t = lm_gguf_tensor (f, i);
          if (t->n_bytes)
            sink ^= ((const uint8_t *) t->data)[0] ^ ((const uint8_t *) t->data)[t->n_bytes - 1];
        }
      (void) sink;
      lm_gguf_close (f);
    }
  else
    {
      g_assert_null (f);
      g_assert_nonnull (err);
      g_assert_cmpuint (strlen (err), >, 0);
    }
  if (msg_out)
    *msg_out = err;
  else
    free (err);
  return st;
}

static void
check_all_truncations (const uint8_t *data, size_t len)
{
  for (size_t n = 0; n < len; n++)
    {
      /* A fresh heap copy of exactly n bytes, so ASan catches any read past it. */
      g_autofree uint8_t *copy = g_memdup2 (data, n ? n : 1);
      g_assert_cmpint (try_open (copy, n, NULL), !=, LM_OK);
    }
}

static void
test_small_file_truncations (void)
{
  g_autoptr (GByteArray) b = build_small_file ();
  check_all_truncations (b->data, b->len);
}

static void
test_lora_file_truncations (void)
{
  gsize len;
  g_autofree guint8 *data =
    ts_test_read_data ("qwen35/tiny-qwen35moe-f32/lora/tiny-qwen35moe-lora-f32.gguf", &len);
  g_assert_cmpint (try_open (data, len, NULL), ==, LM_OK);
  check_all_truncations (data, len);
}

/* A golden model cut anywhere in its header or tensor infos, and at sampled
 * points in the data section, is rejected. */
static void
test_model_truncations (void)
{
  gsize len;
  g_autofree guint8 *data =
    ts_test_read_data ("qwen35/tiny-qwen35-f32/tiny-qwen35-f32.gguf", &len);
  GgufFile *f = NULL;
  g_assert_cmpint (lm_gguf_open_memory (data, len, &f, NULL), ==, LM_OK);
  size_t header = lm_gguf_data_offset (f);
  lm_gguf_close (f);
  for (size_t n = 0; n < header; n += 1 + n / 512)
    g_assert_cmpint (try_open (data, n, NULL), !=, LM_OK);
  for (size_t n = header; n < len; n += 4093)
    g_assert_cmpint (try_open (data, n, NULL), !=, LM_OK);
  g_assert_cmpint (try_open (data, len - 1, NULL), !=, LM_OK);
}

static void
test_flipped_bytes (void)
{
  g_autoptr (GByteArray) b = build_small_file ();
  g_autofree uint8_t *copy = g_malloc (b->len);
  guint64 seed = ts_test_seed ();
  GRand *rng = g_rand_new_with_seed ((guint32) seed);
  for (size_t pos = 0; pos < b->len; pos++)
    for (int trial = 0; trial < 4; trial++)
      {
        memcpy (copy, b->data, b->len);
        copy[pos] ^= trial == 0 ? 0xff : (uint8_t) (1u << g_rand_int_range (rng, 0, 8));
        try_open (copy, b->len, NULL);   /* either outcome, but no crash or OOB */
      }
  g_rand_free (rng);
}

static size_t
find_bytes (GByteArray *b, const char *needle)
{
  size_t n = strlen (needle);
  for (size_t i = 0; i + n <= b->len; i++)
    if (memcmp (b->data + i, needle, n) == 0)
      return i;
  g_assert_not_reached ();
}

static void
expect_error (GByteArray *b, size_t offset, const void *bytes, size_t n, const char *expect)
{
  g_autofree uint8_t *copy = g_memdup2 (b->data, b->len);
  memcpy (copy + offset, bytes, n);
  char *msg = NULL;
  LmStatus st = try_open (copy, b->len, &msg);
  /* a tensor type we lack is "unsupported", everything else a format error */
  g_assert_cmpint (st, ==, strstr (msg, "cannot read") ? LM_ERR_UNSUPPORTED : LM_ERR_FORMAT);
  if (strstr (msg, expect) == NULL)
    g_error ("message '%s' does not mention '%s'", msg, expect);
  free (msg);
}

static void
test_named_errors (void)
{
  g_autoptr (GByteArray) b = build_small_file ();
  uint32_t v;
  uint64_t big = UINT64_MAX / 2;
  expect_error (b, 0, "GGUX", 4, "not a GGUF file");
  v = 1; expect_error (b, 4, &v, 4, "version 1");
  v = 0x03000000; expect_error (b, 4, &v, 4, "big-endian");
  expect_error (b, 8, &big, 8, "tensor count");
  expect_error (b, 16, &big, 8, "metadata count");
  size_t key_u16 = find_bytes (b, "t.u16");
  expect_error (b, key_u16, "t.i16", 5, "appears twice");
  v = 99; expect_error (b, key_u16 + 5, &v, 4, "unknown value type 99");
  size_t bool_val = find_bytes (b, "t.bool") + 6 + 4;
  expect_error (b, bool_val, "\x07", 1, "bool value 7");
  size_t align_val = find_bytes (b, "general.alignment") + 17 + 4;
  v = 48; expect_error (b, align_val, &v, 4, "not a power of two");
  size_t str_len = find_bytes (b, "t.str") + 5 + 4;
  uint64_t huge = 1ull << 40;
  expect_error (b, str_len, &huge, 8, "truncated");
  size_t arr = find_bytes (b, "t.arr_i16") + 9 + 4;
  v = 77; expect_error (b, arr, &v, 4, "unknown array element type 77");
  expect_error (b, arr + 4, &huge, 8, "exceed");
  size_t t0 = find_bytes (b, "w.f4") + 4;  /* n_dims */
  v = 5; expect_error (b, t0, &v, 4, "5 dimensions");
  uint64_t zero = 0; expect_error (b, t0 + 4, &zero, 8, "dimension 0 has invalid size");
  v = 20; expect_error (b, t0 + 20, &v, 4, "IQ4_NL");
  v = 2; expect_error (b, t0 + 20, &v, 4, "not a multiple of the Q4_0 block");
  v = 1234; expect_error (b, t0 + 20, &v, 4, "cannot read");
  uint64_t off = 8; expect_error (b, t0 + 24, &off, 8, "not a multiple of the alignment");
  off = 64; expect_error (b, t0 + 24, &off, 8, "overlap");
  off = 1ull << 20; expect_error (b, t0 + 24, &off, 8, "truncated: tensor 'w.f4'");
  size_t t1 = find_bytes (b, "w.q8") + 4;
  uint64_t ne = 33; expect_error (b, t1 + 4, &ne, 8, "not a multiple of the Q8_0 block");
  expect_error (b, t1 - 4, "w.f4", 4, "appears twice");
}

static void
test_open_errors (void)
{
  GgufFile *f = NULL;
  char *err = NULL;
  g_assert_cmpint (lm_gguf_open ("/nonexistent/model.gguf", &f, &err), ==, LM_ERR_IO);
  g_assert_null (f);
  g_assert_nonnull (strstr (err, "/nonexistent/model.gguf"));
  free (err);
  err = NULL;
  g_autofree char *dir = ts_test_data_path ("qwen35");
  g_assert_cmpint (lm_gguf_open (dir, &f, &err), ==, LM_ERR_IO);
  g_assert_nonnull (err);
  free (err);
  err = NULL;
  g_assert_cmpint (lm_gguf_open_memory (NULL, 0, &f, &err), ==, LM_ERR_FORMAT);
  g_assert_nonnull (strstr (err, "truncated"));
  free (err);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/gguf/golden-models", test_golden_models);
  g_test_add_func ("/engine/gguf/small-file-values", test_small_file_values);
  g_test_add_func ("/engine/gguf/small-file-truncations", test_small_file_truncations);
  g_test_add_func ("/engine/gguf/lora-file-truncations", test_lora_file_truncations);
  g_test_add_func ("/engine/gguf/model-truncations", test_model_truncations);
  g_test_add_func ("/engine/gguf/flipped-bytes", test_flipped_bytes);
  g_test_add_func ("/engine/gguf/named-errors", test_named_errors);
  g_test_add_func ("/engine/gguf/open-errors", test_open_errors);
  return g_test_run ();
}
