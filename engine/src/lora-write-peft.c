/* lora-write-peft.c: rank reduction of PEFT adapter folders (config + safetensors).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lora-private.h"
#include "lora-write-private.h"
#include "model-private.h"
#include "quant-private.h"
#include "safetensors-json.h"
#include "safetensors.h"

/* ---- adapter_config.json: read, and write back with r and lora_alpha replaced ---- */

static void
write_json_string (FILE *f, const char *s, size_t len)
{
  fputc ('"', f);
  for (size_t i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c == '"' || c == '\\')
        fprintf (f, "\\%c", c);
      else if (c < 0x20)
        fprintf (f, "\\u%04x", c);
      else
        fputc (c, f);
    }
  fputc ('"', f);
}

static void
write_json (FILE *f, const LmJson *v, int depth)
{
  switch (v->type)
    {
    case LM_JSON_NULL: fputs ("null", f); break;
    case LM_JSON_BOOL: fputs (v->boolean ? "true" : "false", f); break;
    case LM_JSON_NUMBER:
      if (v->is_uint)
        fprintf (f, "%llu", (unsigned long long) v->uint);
      else if (v->number == floor (v->number) && fabs (v->number) < 1e15)
        fprintf (f, "%.1f", v->number);   /* keep 0.0 a float for Python readers */
      else
        fprintf (f, "%.17g", v->number);
      break;
    case LM_JSON_STRING: write_json_string (f, v->string, v->len); break;
    case LM_JSON_ARRAY:
    case LM_JSON_OBJECT:
      {
        bool obj = v->type == LM_JSON_OBJECT;
        fputc (obj ? '{' : '[', f);
        for (size_t i = 0; i < v->n_items; i++)
          {
            fprintf (f, "%s\n%*s", i ? "," : "", 2 * (depth + 1), "");
            if (obj)
              {
                write_json_string (f, v->keys[i], v->key_lens[i]);
                fputs (": ", f);
              }
            write_json (f, &v->items[i], depth + 1);
          }
        fprintf (f, "\n%*s%c", 2 * depth, "", obj ? '}' : ']');
      }
      break;
    }
}

/* Sets the top-level numbers "r" and "lora_alpha" of @root to @rank (in place). */
static void
set_rank (LmJson *root, uint32_t rank)
{
  for (size_t i = 0; i < root->n_items; i++)
    if (strcmp (root->keys[i], "r") == 0 || strcmp (root->keys[i], "lora_alpha") == 0)
      root->items[i] = (LmJson) { .type = LM_JSON_NUMBER, .number = rank, .is_uint = true,
                                  .uint = rank };
}

typedef struct {
  LmJson *root;
  LmLoraFactorRule rule;
  uint32_t r;
} PeftConfigFile;

static LmStatus
read_config (const char *dir, PeftConfigFile *cfg, char **error_out)
{
  char path[4096];
  LmStatus loaded = lm_lora_read_config (dir, path, sizeof path, &cfg->root, error_out);
  if (loaded != LM_OK)
    return loaded;
  if (cfg->root->type != LM_JSON_OBJECT)
    return lm_fail (error_out, LM_ERR_FORMAT, "%s: not an object", path);
  uint64_t r = 0;
  double alpha;
  const LmJson *rs = lm_json_get (cfg->root, "use_rslora");
  if (!lm_json_get_uint (cfg->root, "r", &r) || r == 0 || r > 65536)
    return lm_fail (error_out, LM_ERR_FORMAT, "%s: r is missing or invalid", path);
  if (!lm_json_get_number (cfg->root, "lora_alpha", &alpha))
    alpha = (double) r;
  cfg->r = (uint32_t) r;
  cfg->rule = (LmLoraFactorRule) { alpha, rs != NULL && rs->type == LM_JSON_BOOL && rs->boolean };
  return LM_OK;
}

static LmStatus
write_config (const char *dir, LmJson *root, uint32_t rank, char **error_out)
{
  char path[4096], *tmp = NULL;
  snprintf (path, sizeof path, "%s/adapter_config.json", dir);
  set_rank (root, rank);
  FILE *f = lm_open_temp (path, &tmp);
  if (f == NULL)
    return lm_fail (error_out, LM_ERR_IO, "cannot write %s: %s", path, strerror (errno));
  write_json (f, root, 0);
  fputc ('\n', f);
  return lm_commit_temp (f, tmp, path, error_out);
}

/* ---- adapter_model.safetensors ---- */

typedef struct {
  const SafetensorsFile *st;
  LmReducedModule *mods;   /* by the lora_A tensor's index */
  int64_t *pair;           /* tensor index -> its module's lora_A index */
} PeftReduction;

static bool
ends_with (const char *s, const char *suffix)
{
  size_t n = strlen (s), k = strlen (suffix);
  return n > k && strcmp (s + n - k, suffix) == 0;
}

static LmStatus
reduce_peft_pair (PeftReduction *red, size_t ia, const LmLoraFactorRule *old_rule,
                  LmLoraFactorRule *new_rule, uint32_t rank, LmLoraReduceReportFunc report,
                  void *user_data, char **error_out)
{
  const SafetensorsTensor *ta = lm_safetensors_tensor (red->st, ia);
  char name[512], key_b[540];
  size_t base = strlen (ta->name) - strlen (".lora_A.weight");
  if (base >= sizeof name)
    return lm_fail (error_out, LM_ERR_FORMAT, "PEFT key too long");
  snprintf (name, sizeof name, "%.*s", (int) base, ta->name);
  snprintf (key_b, sizeof key_b, "%s.lora_B.weight", name);
  const SafetensorsTensor *tb = lm_safetensors_find (red->st, key_b);
  float *a = NULL, *b = NULL;
  uint32_t r, d_in, d_out, r_b;
  LmStatus st = tb == NULL ? LM_ERR_FORMAT : lm_lora_read_matrix (ta, &r, &d_in, &a);
  if (st == LM_OK)
    st = lm_lora_read_matrix (tb, &d_out, &r_b, &b);
  if (st == LM_OK && r_b != r)
    st = LM_ERR_SHAPE;
  if (st == LM_OK)
    {
      for (size_t i = 0; i < lm_safetensors_n_tensors (red->st); i++)
        if (lm_safetensors_tensor (red->st, i) == tb)
          red->pair[i] = (int64_t) ia;
      st = lm_reduce_one (name, a, b, r, d_in, d_out, old_rule, new_rule, rank, &red->mods[ia],
                          report, user_data, error_out);
    }
  else
    st = lm_fail (error_out, st, "PEFT module %s: lora_A/lora_B cannot be read as matching "
                  "f32 matrices", name);
  free (a);
  free (b);
  return st;
}

/* The output keeps a half-precision input's dtype (a rank-R/2 copy of an
 * F16 adapter written in F32 would be as big as it); anything else is F32. */
static SafetensorsDtype
output_dtype (const SafetensorsTensor *input)
{
  return input->dtype == SAFETENSORS_F16 || input->dtype == SAFETENSORS_BF16
         ? input->dtype : SAFETENSORS_F32;
}

/* @count floats in @dtype (output_dtype()), converted in slices. */
static void
write_floats (FILE *f, const float *data, size_t count, SafetensorsDtype dtype)
{
  enum { SLICE = 4096 };
  uint16_t h[SLICE];
  if (dtype == SAFETENSORS_F32)
    {
      fwrite (data, sizeof (float), count, f);   /* little-endian hosts */
      return;
    }
  for (size_t done = 0; done < count; done += SLICE)
    {
      size_t n = count - done < SLICE ? count - done : SLICE;
      if (dtype == SAFETENSORS_F16)
        lm_quantize_row_f16 (data + done, h, (int64_t) n);
      else
        lm_quantize_row_bf16 (data + done, h, (int64_t) n);
      fwrite (h, sizeof *h, n, f);
    }
}

static LmStatus
write_safetensors (const PeftReduction *red, const char *dir, char **error_out)
{
  char path[4096], *tmp = NULL;
  snprintf (path, sizeof path, "%s/adapter_model.safetensors", dir);
  size_t n = lm_safetensors_n_tensors (red->st);
  /* header: one entry per tensor in the input's order, then the metadata */
  char *header = NULL;
  size_t header_len = 0;
  FILE *h = open_memstream (&header, &header_len);
  if (h == NULL)
    return LM_ERR_NO_MEMORY;
  uint64_t offset = 0;
  fputc ('{', h);
  for (size_t i = 0; i < n; i++)
    {
      const LmReducedModule *m = &red->mods[red->pair[i]];
      bool is_a = (int64_t) i == red->pair[i];
      uint64_t rows = is_a ? m->rank : m->d_out, cols = is_a ? m->d_in : m->rank;
      const SafetensorsTensor *t = lm_safetensors_tensor (red->st, i);
      SafetensorsDtype dtype = output_dtype (t);
      uint64_t bytes = rows * cols * lm_safetensors_dtype_size (dtype);
      write_json_string (h, t->name, strlen (t->name));
      fprintf (h, ":{\"dtype\":\"%s\",\"shape\":[%llu,%llu],\"data_offsets\":[%llu,%llu]},",
               lm_safetensors_dtype_name (dtype), (unsigned long long) rows, (unsigned long long) cols,
               (unsigned long long) offset, (unsigned long long) (offset + bytes));
      offset += bytes;
    }
  fputs ("\"__metadata__\":{\"format\":\"pt\"}}", h);
  while ((ftell (h) & 7) != 0)
    fputc (' ', h);
  fclose (h);
  FILE *f = lm_open_temp (path, &tmp);
  if (f == NULL)
    {
      free (header);
      return lm_fail (error_out, LM_ERR_IO, "cannot write %s: %s", path, strerror (errno));
    }
  uint8_t len_le[8];
  for (int k = 0; k < 8; k++)
    len_le[k] = (uint8_t) ((uint64_t) header_len >> (8 * k));
  fwrite (len_le, 1, 8, f);
  fwrite (header, 1, header_len, f);
  free (header);
  for (size_t i = 0; i < n; i++)
    {
      const LmReducedModule *m = &red->mods[red->pair[i]];
      bool is_a = (int64_t) i == red->pair[i];
      size_t count = (size_t) m->rank * (is_a ? m->d_in : m->d_out);
      write_floats (f, is_a ? m->a : m->b, count, output_dtype (lm_safetensors_tensor (red->st, i)));
    }
  return lm_commit_temp (f, tmp, path, error_out);
}

static LmStatus
reduce_tensors (PeftReduction *red, const PeftConfigFile *cfg, LmLoraFactorRule *new_rule,
                uint32_t rank, uint32_t *new_rank, LmLoraReduceReportFunc report,
                void *user_data, char **error_out)
{
  size_t n = lm_safetensors_n_tensors (red->st);
  LmStatus st = LM_OK;
  *new_rank = 0;
  for (size_t i = 0; st == LM_OK && i < n; i++)
    {
      const SafetensorsTensor *t = lm_safetensors_tensor (red->st, i);
      red->pair[i] = -1;
      if (ends_with (t->name, ".lora_A.weight") && t->n_dims == 2)
        {
          uint64_t k = t->shape[0] < rank ? t->shape[0] : rank;
          *new_rank = k > *new_rank ? (uint32_t) k : *new_rank;
        }
      else if (!ends_with (t->name, ".lora_B.weight"))
        st = lm_fail (error_out, LM_ERR_UNSUPPORTED, "PEFT tensor %s is not a LoRA factor", t->name);
    }
  *new_rule = (LmLoraFactorRule) { *new_rank, cfg->rule.rslora };
  for (size_t i = 0; st == LM_OK && i < n; i++)
    if (ends_with (lm_safetensors_tensor (red->st, i)->name, ".lora_A.weight"))
      {
        red->pair[i] = (int64_t) i;
        st = reduce_peft_pair (red, i, &cfg->rule, new_rule, rank, report, user_data, error_out);
      }
  for (size_t i = 0; st == LM_OK && i < n; i++)
    if (red->pair[i] < 0)
      st = lm_fail (error_out, LM_ERR_FORMAT, "PEFT tensor %s has no lora_A",
                    lm_safetensors_tensor (red->st, i)->name);
  if (st == LM_OK && *new_rank == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "the adapter has no LoRA tensors");
  return st;
}

LmStatus
lm_lora_reduce_peft (const char *in, const char *out, uint32_t rank,
                     LmLoraReduceReportFunc report, void *user_data, char **error_out)
{
  PeftConfigFile cfg = { 0 };
  LmStatus st = read_config (in, &cfg, error_out);
  char path[4096];
  snprintf (path, sizeof path, "%s/adapter_model.safetensors", in);
  SafetensorsFile *sf = NULL;
  if (st == LM_OK)
    st = lm_safetensors_open (path, &sf, error_out);
  size_t n = sf ? lm_safetensors_n_tensors (sf) : 0;
  PeftReduction red = { sf, calloc (n + 1, sizeof (LmReducedModule)),
                        malloc ((n + 1) * sizeof (int64_t)) };
  if (st == LM_OK && (red.mods == NULL || red.pair == NULL))
    st = LM_ERR_NO_MEMORY;
  LmLoraFactorRule new_rule;
  uint32_t new_rank = 0;
  if (st == LM_OK)
    st = reduce_tensors (&red, &cfg, &new_rule, rank, &new_rank, report, user_data, error_out);
  if (st == LM_OK && mkdir (out, 0755) != 0 && errno != EEXIST)
    st = lm_fail (error_out, LM_ERR_IO, "cannot create %s: %s", out, strerror (errno));
  if (st == LM_OK)
    st = write_safetensors (&red, out, error_out);
  if (st == LM_OK)
    st = write_config (out, cfg.root, new_rank, error_out);
  for (size_t i = 0; red.mods && i < n; i++)
    {
      free (red.mods[i].a);
      free (red.mods[i].b);
    }
  free (red.mods);
  free (red.pair);
  if (sf)
    lm_safetensors_close (sf);
  lm_json_free (cfg.root);
  return st;
}

LmStatus
lm_lora_probe_peft (const char *dir, LmLoraShape *out, char **error_out)
{
  PeftConfigFile cfg = { 0 };
  LmStatus st = read_config (dir, &cfg, error_out);
  char path[4096];
  snprintf (path, sizeof path, "%s/adapter_model.safetensors", dir);
  SafetensorsFile *sf = NULL;
  if (st == LM_OK)
    st = lm_safetensors_open (path, &sf, error_out);
  for (size_t i = 0; st == LM_OK && i < lm_safetensors_n_tensors (sf); i++)
    {
      const SafetensorsTensor *ta = lm_safetensors_tensor (sf, i);
      char key_b[540];
      if (!ends_with (ta->name, ".lora_A.weight"))
        continue;
      size_t base = strlen (ta->name) - strlen (".lora_A.weight");
      snprintf (key_b, sizeof key_b, "%.*s.lora_B.weight", (int) base, ta->name);
      const SafetensorsTensor *tb = lm_safetensors_find (sf, key_b);
      if (tb == NULL || ta->n_dims != 2 || tb->n_dims != 2 || tb->shape[1] != ta->shape[0] ||
          ta->shape[0] == 0 || ta->shape[0] > 65536)
        st = lm_fail (error_out, LM_ERR_SHAPE, "PEFT module %.*s: no matching lora_B",
                      (int) base, ta->name);
      else
        lm_lora_shape_add (out, ta->shape[0], ta->shape[1], tb->shape[0]);
    }
  if (st == LM_OK && out->n_modules == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", path);
  if (sf)
    lm_safetensors_close (sf);
  lm_json_free (cfg.root);
  return st;
}
