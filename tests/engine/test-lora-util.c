/* test-lora-util.c: writes small LoRA adapter files for the rejection tests.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The GGUF v3 layout written here follows FORMAT.md 5.1 field by field so the
 * tests do not depend on the writer they would be testing. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "test-lora-util.h"

static void
put (GByteArray *b, const void *p, size_t n)
{
  g_byte_array_append (b, p, (guint) n);
}

static void
put_u32 (GByteArray *b, uint32_t v)
{
  put (b, &v, 4);
}

static void
put_u64 (GByteArray *b, uint64_t v)
{
  put (b, &v, 8);
}

static void
put_str (GByteArray *b, const char *s)
{
  put_u64 (b, strlen (s));
  put (b, s, strlen (s));
}

static void
put_kv_str (GByteArray *b, const char *key, const char *value)
{
  put_str (b, key);
  put_u32 (b, 8);  /* string */
  put_str (b, value);
}

static void
put_tensor_info (GByteArray *b, const char *name, uint64_t ne0, uint64_t ne1, uint64_t offset)
{
  put_str (b, name);
  put_u32 (b, 2);
  put_u64 (b, ne0);
  put_u64 (b, ne1);
  put_u32 (b, 0);  /* F32 */
  put_u64 (b, offset);
}

static void
put_values (GByteArray *b, size_t n, float step)
{
  for (size_t i = 0; i < n; i++)
    {
      float v = step * (float) ((int) (i % 7) - 3);
      put (b, &v, 4);
    }
}

void
write_lora_gguf (const char *path, const char *target, uint32_t d_in, uint32_t rank,
                 uint32_t d_out)
{
  GByteArray *b = g_byte_array_new ();
  put (b, "GGUF", 4);
  put_u32 (b, 3);
  put_u64 (b, 2);   /* tensors */
  put_u64 (b, 4);   /* key-value pairs */
  put_kv_str (b, "general.architecture", "qwen35moe");
  put_kv_str (b, "general.type", "adapter");
  put_kv_str (b, "adapter.type", "lora");
  put_str (b, "adapter.lora.alpha");
  put_u32 (b, 6);   /* f32 */
  float alpha = 16.0f;
  put (b, &alpha, 4);
  char name[160];
  size_t a_bytes = (size_t) d_in * rank * 4;
  snprintf (name, sizeof name, "%s.lora_a", target);
  put_tensor_info (b, name, d_in, rank, 0);
  snprintf (name, sizeof name, "%s.lora_b", target);
  put_tensor_info (b, name, rank, d_out, (a_bytes + 31) / 32 * 32);
  while (b->len % 32 != 0)
    g_byte_array_append (b, (const guint8 *) "", 1);
  put_values (b, (size_t) d_in * rank, 0.01f);
  while (b->len % 32 != 0)
    g_byte_array_append (b, (const guint8 *) "", 1);
  put_values (b, (size_t) rank * d_out, 0.02f);
  g_assert_true (g_file_set_contents (path, (const char *) b->data, b->len, NULL));
  g_byte_array_unref (b);
}

void
write_lora_peft (const char *dir, const char *module, uint32_t d_in, uint32_t rank,
                 uint32_t d_out)
{
  g_autofree char *config = g_strdup_printf (
    "{\"peft_type\": \"LORA\", \"r\": %u, \"lora_alpha\": 16, \"target_modules\": []}", rank);
  g_autofree char *config_path = g_build_filename (dir, "adapter_config.json", NULL);
  g_assert_true (g_file_set_contents (config_path, config, -1, NULL));
  size_t a_bytes = (size_t) rank * d_in * 4, b_bytes = (size_t) d_out * rank * 4;
  g_autofree char *header = g_strdup_printf (
    "{\"base_model.model.model.%s.lora_A.weight\": {\"dtype\": \"F32\", \"shape\": [%u, %u], "
    "\"data_offsets\": [0, %zu]}, \"base_model.model.model.%s.lora_B.weight\": {\"dtype\": "
    "\"F32\", \"shape\": [%u, %u], \"data_offsets\": [%zu, %zu]}}",
    module, rank, d_in, a_bytes, module, d_out, rank, a_bytes, a_bytes + b_bytes);
  GByteArray *b = g_byte_array_new ();
  put_u64 (b, strlen (header));
  put (b, header, strlen (header));
  put_values (b, (size_t) rank * d_in, 0.01f);
  put_values (b, (size_t) d_out * rank, 0.02f);
  g_autofree char *path = g_build_filename (dir, "adapter_model.safetensors", NULL);
  g_assert_true (g_file_set_contents (path, (const char *) b->data, b->len, NULL));
  g_byte_array_unref (b);
}
