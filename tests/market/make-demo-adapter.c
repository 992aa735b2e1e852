/* make-demo-adapter.c: writes a small seeded PEFT LoRA folder for the tiny Qwen3.5 test model.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Usage: make-demo-adapter OUT_DIR SEED RANK ALPHA TARGETS
 *   TARGETS is a comma list of o_proj (layer 3, full attention) and out_proj
 *   (layers 0-2, Gated DeltaNet).  The tiny model's hidden size and both
 *   projections' input widths are 128.  Output is byte-for-byte reproducible. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIDDEN 128
#define N_LINEAR_LAYERS 3
#define ATTN_LAYER 3

typedef struct
{
  char   name[128];
  int    rows, cols;
} Tensor;

/* xorshift64*: a fixed, documented generator so the bytes never depend on libc. */
static guint64
next_random (guint64 *state)
{
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * G_GUINT64_CONSTANT (2685821657736338717);
}

/* Uniform in [-scale, scale). */
static float
uniform (guint64 *state, float scale)
{
  return ((float) (next_random (state) >> 40) / (float) (1 << 24) * 2.0f - 1.0f) * scale;
}

static void
add_module (GArray *tensors, const char *module_path, int rank)
{
  Tensor a = { .rows = rank, .cols = HIDDEN }, b = { .rows = HIDDEN, .cols = rank };

  g_snprintf (a.name, sizeof a.name, "base_model.model.model.%s.lora_A.weight", module_path);
  g_snprintf (b.name, sizeof b.name, "base_model.model.model.%s.lora_B.weight", module_path);
  g_array_append_val (tensors, a);
  g_array_append_val (tensors, b);
}

static GArray *
plan_tensors (char **targets, int rank)
{
  GArray *tensors = g_array_new (FALSE, TRUE, sizeof (Tensor));
  gboolean out_proj = g_strv_contains ((const char * const *) targets, "out_proj");
  gboolean o_proj = g_strv_contains ((const char * const *) targets, "o_proj");
  char path[96];

  for (int layer = 0; layer < N_LINEAR_LAYERS && out_proj; layer++)
    {
      g_snprintf (path, sizeof path, "layers.%d.linear_attn.out_proj", layer);
      add_module (tensors, path, rank);
    }
  if (o_proj)
    {
      g_snprintf (path, sizeof path, "layers.%d.self_attn.o_proj", ATTN_LAYER);
      add_module (tensors, path, rank);
    }
  return tensors;
}

/* safetensors: u64 LE header length, JSON header padded with spaces to 8 bytes, data. */
static gboolean
write_safetensors (const char *path, GArray *tensors, guint64 seed)
{
  GString *header = g_string_new ("{\"__metadata__\":{\"format\":\"pt\"}");
  GByteArray *data = g_byte_array_new ();
  guint64 state = seed * 0x9E3779B97F4A7C15ull + 1, len;
  guint8 len_le[8];
  gboolean ok;

  for (guint t = 0; t < tensors->len; t++)
    {
      Tensor *x = &g_array_index (tensors, Tensor, t);
      gsize start = data->len;
      for (int i = 0; i < x->rows * x->cols; i++)
        {
          float v = uniform (&state, 0.05f);
          g_byte_array_append (data, (guint8 *) &v, sizeof v);  /* x86-64/aarch64: LE */
        }
      g_string_append_printf (header, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,%d],"
                              "\"data_offsets\":[%" G_GSIZE_FORMAT ",%u]}",
                              x->name, x->rows, x->cols, start, data->len);
    }
  g_string_append_c (header, '}');
  while (header->len % 8)
    g_string_append_c (header, ' ');
  len = header->len;
  for (int i = 0; i < 8; i++)
    len_le[i] = (guint8) (len >> (8 * i));
  g_byte_array_prepend (data, (guint8 *) header->str, header->len);
  g_byte_array_prepend (data, len_le, 8);
  ok = g_file_set_contents (path, (const char *) data->data, data->len, NULL);
  g_string_free (header, TRUE);
  g_byte_array_unref (data);
  return ok;
}

static gboolean
write_config (const char *path, char **targets, int rank, double alpha)
{
  GString *json = g_string_new (NULL);
  char alpha_text[G_ASCII_DTOSTR_BUF_SIZE];
  gboolean ok;

  g_string_append_printf (json,
      "{\n  \"peft_type\": \"LORA\",\n  \"task_type\": \"CAUSAL_LM\",\n"
      "  \"base_model_name_or_path\": \"tiny-qwen35moe-f32\",\n"
      "  \"r\": %d,\n  \"lora_alpha\": %s,\n  \"lora_dropout\": 0.0,\n"
      "  \"bias\": \"none\",\n  \"fan_in_fan_out\": false,\n  \"use_rslora\": false,\n"
      "  \"use_dora\": false,\n  \"inference_mode\": true,\n  \"target_modules\": [",
      rank, g_ascii_formatd (alpha_text, sizeof alpha_text, "%g", alpha));
  for (char **t = targets; *t; t++)
    g_string_append_printf (json, "%s\"%s\"", t == targets ? "" : ", ", *t);
  g_string_append (json, "]\n}\n");
  ok = g_file_set_contents (path, json->str, json->len, NULL);
  g_string_free (json, TRUE);
  return ok;
}

int
main (int argc, char **argv)
{
  g_auto(GStrv) targets = NULL;
  g_autofree char *config = NULL, *model = NULL;
  GArray *tensors;
  int rank;
  gboolean ok;

  if (argc != 6)
    {
      fprintf (stderr, "usage: %s OUT_DIR SEED RANK ALPHA TARGETS\n", argv[0]);
      return 2;
    }
  rank = atoi (argv[3]);
  targets = g_strsplit (argv[5], ",", -1);
  tensors = plan_tensors (targets, rank);
  if (rank < 1 || rank > 64 || tensors->len == 0 || g_mkdir_with_parents (argv[1], 0755) != 0)
    {
      fprintf (stderr, "bad rank, targets or output folder\n");
      return 2;
    }
  config = g_build_filename (argv[1], "adapter_config.json", NULL);
  model = g_build_filename (argv[1], "adapter_model.safetensors", NULL);
  ok = write_config (config, targets, rank, g_ascii_strtod (argv[4], NULL))
       && write_safetensors (model, tensors, g_ascii_strtoull (argv[2], NULL, 10));
  g_array_unref (tensors);
  return ok ? 0 : 1;
}
