/* test-safetensors.c: the safetensors reader and its JSON parser.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "gguf.h"
#include "safetensors-json.h"
#include "safetensors.h"
#include "ts-test-util.h"

#define PEFT "qwen35/tiny-qwen35moe-f32/lora/peft/adapter_model.safetensors"
#define LORA_GGUF "qwen35/tiny-qwen35moe-f32/lora/tiny-qwen35moe-lora-f32.gguf"

/* The PEFT adapter holds the same B matrices (and o_proj A) as the GGUF
 * adapter, written by another tool: both readers must agree bit for bit. */
static void
test_peft_adapter (void)
{
  g_autofree char *path = ts_test_data_path (PEFT);
  SafetensorsFile *f = NULL;
  char *err = NULL;
  if (lm_safetensors_open (path, &f, &err) != LM_OK)
    g_error ("%s", err);
  g_autofree char *gpath = ts_test_data_path (LORA_GGUF);
  GgufFile *g = NULL;
  g_assert_cmpint (lm_gguf_open (gpath, &g, NULL), ==, LM_OK);

  g_assert_cmpuint (lm_safetensors_n_tensors (f), ==, 8);
  g_assert_cmpstr (lm_safetensors_metadata (f, "format"), ==, "pt");
  g_assert_null (lm_safetensors_metadata (f, "absent"));
  for (int layer = 0; layer < 4; layer++)
    {
      const char *module = layer < 3 ? "linear_attn.out_proj" : "self_attn.o_proj";
      const char *base = layer < 3 ? "ssm_out" : "attn_output";
      for (int ab = 0; ab < 2; ab++)
        {
          g_autofree char *name = g_strdup_printf ("base_model.model.model.layers.%d.%s.lora_%s"
                                                   ".weight", layer, module, ab ? "B" : "A");
          const SafetensorsTensor *t = lm_safetensors_find (f, name);
          g_assert_nonnull (t);
          g_assert_cmpint (t->dtype, ==, SAFETENSORS_F32);
          g_assert_cmpuint (t->n_dims, ==, 2);
          g_assert_cmpuint (t->shape[0], ==, ab ? 128 : 8);
          g_assert_cmpuint (t->shape[1], ==, ab ? 8 : 128);
          g_assert_cmpuint (t->n_bytes, ==, 8 * 128 * 4);
          g_autofree float *vals = g_new (float, t->n_elements);
          g_assert_cmpint (lm_safetensors_read_f32 (t, vals), ==, LM_OK);
          g_autofree char *gname = g_strdup_printf ("blk.%d.%s.weight.lora_%s", layer, base,
                                                    ab ? "b" : "a");
          const GgufTensorInfo *gt = lm_gguf_find_tensor (g, gname);
          g_assert_nonnull (gt);
          g_assert_cmpuint (gt->n_bytes, ==, t->n_bytes);
          /* B everywhere and A of o_proj are identical; linear_attn A differs by
           * the value-head column permutation (FORMAT.md 7.3). */
          bool same = memcmp (gt->data, vals, t->n_bytes) == 0;
          g_assert_true (same == (ab == 1 || layer == 3));
        }
    }
  g_assert_null (lm_safetensors_find (f, "__metadata__"));
  /* tensors come sorted by offset */
  for (size_t i = 1; i < lm_safetensors_n_tensors (f); i++)
    g_assert_true ((const char *) lm_safetensors_tensor (f, i)->data
                   >= (const char *) lm_safetensors_tensor (f, i - 1)->data
                      + lm_safetensors_tensor (f, i - 1)->n_bytes);
  g_assert_null (lm_safetensors_tensor (f, 8));
  lm_gguf_close (g);
  lm_safetensors_close (f);
}

static GByteArray *
build_file (const char *header, const void *data, size_t data_len)
{
  GByteArray *b = g_byte_array_new ();
  uint64_t n = strlen (header);
  g_byte_array_append (b, (const guint8 *) &n, 8);
  g_byte_array_append (b, (const guint8 *) header, (guint) n);
  g_byte_array_append (b, data, (guint) data_len);
  return b;
}

static void
test_half_types (void)
{
  /* f16: 1, -2, 65504, 2^-24 (smallest subnormal), -0, inf; bf16: 1, -3 */
  uint16_t data[8] = { 0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0x3F80, 0xC040 };
  g_autoptr (GByteArray) b = build_file (
    "{\"h\\u00e9\\\"x\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
    " \"b\" : {\"data_offsets\":[12,16],\"shape\":[2],\"dtype\":\"BF16\",\"extra\":[null,true]},"
    "\"s\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[16,16]}}   ", data, 16);
  /* the scalar I32 needs 4 bytes but spans 0: wrong size */
  SafetensorsFile *f = NULL;
  char *err = NULL;
  g_assert_cmpint (lm_safetensors_open_memory (b->data, b->len, &f, &err), !=, LM_OK);
  g_assert_nonnull (strstr (err, "need 4"));
  free (err);
  err = NULL;

  g_autoptr (GByteArray) c = build_file (
    "{\"h\\u00e9\\\"x\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
    " \"b\" : {\"data_offsets\":[12,16],\"shape\":[2],\"dtype\":\"BF16\",\"extra\":[null,true]},"
    "\"e\":{\"dtype\":\"U8\",\"shape\":[0,5],\"data_offsets\":[16,16]}}   ", data, 16);
  if (lm_safetensors_open_memory (c->data, c->len, &f, &err) != LM_OK)
    g_error ("%s", err);
  const SafetensorsTensor *h = lm_safetensors_find (f, "h\xc3\xa9\"x");
  g_assert_nonnull (h);
  g_assert_cmpuint (h->n_elements, ==, 6);
  float v[6];
  g_assert_cmpint (lm_safetensors_read_f32 (h, v), ==, LM_OK);
  g_assert_cmpfloat (v[0], ==, 1.0f);
  g_assert_cmpfloat (v[1], ==, -2.0f);
  g_assert_cmpfloat (v[2], ==, 65504.0f);
  g_assert_cmpfloat (v[3], ==, ldexpf (1.0f, -24));
  g_assert_true (v[4] == 0.0f && signbit (v[4]));
  g_assert_true (isinf (v[5]) && v[5] > 0);
  const SafetensorsTensor *bt = lm_safetensors_find (f, "b");
  g_assert_cmpint (lm_safetensors_read_f32 (bt, v), ==, LM_OK);
  g_assert_cmpfloat (v[0], ==, 1.0f);
  g_assert_cmpfloat (v[1], ==, -3.0f);
  const SafetensorsTensor *e = lm_safetensors_find (f, "e");
  g_assert_cmpuint (e->n_elements, ==, 0);
  g_assert_cmpint (lm_safetensors_read_f32 (e, v), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpstr (lm_safetensors_dtype_name (e->dtype), ==, "U8");
  g_assert_true (isnan (lm_safetensors_f16_to_f32 (0x7E00)));
  lm_safetensors_close (f);
}

static void
expect_reject (const char *header, size_t data_len, const char *expect)
{
  g_autofree uint8_t *data = g_malloc0 (data_len + 1);
  g_autoptr (GByteArray) b = build_file (header, data, data_len);
  SafetensorsFile *f = NULL;
  char *err = NULL;
  LmStatus st = lm_safetensors_open_memory (b->data, b->len, &f, &err);
  g_assert_cmpint (st, ==, strstr (expect, "dtype") ? LM_ERR_UNSUPPORTED : LM_ERR_FORMAT);
  g_assert_null (f);
  g_assert_nonnull (err);
  if (strstr (err, expect) == NULL)
    g_error ("header %s: message '%s' does not mention '%s'", header, err, expect);
  free (err);
}

static void
test_named_errors (void)
{
  const char *ok = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  expect_reject (ok, 7, "outside");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need 12");
  expect_reject ("{\"t\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                 "unknown dtype");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
                 "not a size");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8,
                 "not a size");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
                 "\"data_offsets\":[0,8]}}", 8, "overflows");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                 "outside");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                 "two sizes");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "lacks");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}", 8, "overlap");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                 "duplicate key 't'");
  expect_reject ("{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                 "\"data_offsets\":[0,4]}}", 8, "dimensions");
  expect_reject ("[1,2]", 0, "not a JSON object");
  expect_reject ("{\"__metadata__\":{\"a\":1}}", 0, "not a string");
  expect_reject ("{\"t\":", 0, "unexpected end");
  expect_reject ("{\"t\":{}} x", 0, "trailing");
  GString *deep = g_string_new ("{\"t\":");
  for (int i = 0; i < 100; i++)
    g_string_append_c (deep, '[');
  expect_reject (deep->str, 0, "nested deeper");
  g_string_free (deep, TRUE);

  SafetensorsFile *f = NULL;
  char *err = NULL;
  uint8_t big[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
  g_assert_cmpint (lm_safetensors_open_memory (big, sizeof big, &f, &err), !=, LM_OK);
  g_assert_nonnull (strstr (err, "100 MB"));
  free (err);
  uint8_t small[16] = { 200 };
  g_assert_cmpint (lm_safetensors_open_memory (small, sizeof small, &f, &err), !=, LM_OK);
  g_assert_nonnull (strstr (err, "truncated"));
  free (err);
  g_assert_cmpint (lm_safetensors_open ("/nonexistent.safetensors", &f, &err), ==, LM_ERR_IO);
  g_assert_nonnull (strstr (err, "/nonexistent.safetensors"));
  free (err);
}

static void
test_truncations_and_flips (void)
{
  gsize len;
  g_autofree guint8 *data = ts_test_read_data (PEFT, &len);
  for (size_t n = 0; n < len; n++)
    {
      g_autofree uint8_t *copy = g_memdup2 (data, n ? n : 1);
      SafetensorsFile *f = NULL;
      char *err = NULL;
      g_assert_cmpint (lm_safetensors_open_memory (copy, n, &f, &err), !=, LM_OK);
      g_assert_nonnull (err);
      free (err);
    }
  /* Flip every header byte (and a few bit patterns): no crash, no OOB. */
  uint64_t hlen;
  memcpy (&hlen, data, 8);
  g_autofree uint8_t *copy = g_malloc (len);
  for (size_t pos = 0; pos < 8 + hlen; pos++)
    for (int bit = 0; bit < 8; bit += 3)
      {
        memcpy (copy, data, len);
        copy[pos] ^= (uint8_t) (1u << bit);
        SafetensorsFile *f = NULL;
        char *err = NULL;
        if (lm_safetensors_open_memory (copy, len, &f, &err) == LM_OK)
          {
            for (size_t i = 0; i < lm_safetensors_n_tensors (f); i++)
              {
                const SafetensorsTensor *t = lm_safetensors_tensor (f, i);
                g_assert_true ((const uint8_t *) t->data + t->n_bytes <= copy + len);
              }
            lm_safetensors_close (f);
          }
        else
          g_assert_nonnull (err);
        free (err);
      }
}

static void
test_json (void)
{
  const char *text = " {\"a\": [1, -2.5e3, 18446744073709551615, 18446744073709551616, 0],"
                     " \"s\": \"\\ud83d\\ude00\\n\\t\\/\\\\\", \"t\": true, \"f\": false,"
                     " \"n\": null, \"o\": {}} ";
  char *err = NULL;
  LmJson *j = lm_json_parse (text, strlen (text), &err);
  g_assert_nonnull (j);
  const LmJson *a = lm_json_get (j, "a");
  g_assert_cmpuint (a->n_items, ==, 5);
  g_assert_true (a->items[0].is_uint && a->items[0].uint == 1);
  g_assert_false (a->items[1].is_uint);
  g_assert_cmpfloat (a->items[1].number, ==, -2500.0);
  g_assert_true (a->items[2].is_uint && a->items[2].uint == UINT64_MAX);
  g_assert_false (a->items[3].is_uint);
  g_assert_true (a->items[4].is_uint && a->items[4].uint == 0);
  const char *s;
  g_assert_true (lm_json_get_string (j, "s", &s));
  g_assert_cmpstr (s, ==, "\xf0\x9f\x98\x80\n\t/\\");
  g_assert_true (lm_json_get (j, "t")->boolean);
  g_assert_false (lm_json_get (j, "f")->boolean);
  g_assert_cmpint (lm_json_get (j, "n")->type, ==, LM_JSON_NULL);
  g_assert_cmpint (lm_json_get (j, "o")->type, ==, LM_JSON_OBJECT);
  uint64_t u;
  double d;
  g_assert_false (lm_json_get_uint (j, "s", &u));
  g_assert_false (lm_json_get_number (j, "absent", &d));
  lm_json_free (j);

  const char *bad[] = { "", "01", "1.", "-", "1e", "\"abc", "\"\\x\"", "\"\\ud800\"",
                        "\"\\udc00\"", "\"a\x01\"", "[1,]", "{\"a\" 1}", "{1:2}", "tru",
                        "[1 2]", "{\"a\":1,}", "\"\\u12\"" };
  for (size_t i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      err = NULL;
      g_assert_null (lm_json_parse (bad[i], strlen (bad[i]), &err));
      g_assert_nonnull (err);
      free (err);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/safetensors/peft-adapter", test_peft_adapter);
  g_test_add_func ("/engine/safetensors/half-types", test_half_types);
  g_test_add_func ("/engine/safetensors/named-errors", test_named_errors);
  g_test_add_func ("/engine/safetensors/truncations-and-flips", test_truncations_and_flips);
  g_test_add_func ("/engine/safetensors/json", test_json);
  return g_test_run ();
}
