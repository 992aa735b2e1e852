/* lora-peft.c: Hugging Face PEFT LoRA adapters (FORMAT.md 7.3).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A PEFT folder holds adapter_config.json and adapter_model.safetensors with
 * ...layers.{i}.{module}.lora_A.weight [r, in] and .lora_B.weight [out, r] in
 * Hugging Face weight order. Linear-attention tensors indexed by value head are
 * converted to the GGUF (tiled) head order of FORMAT.md 5.3 here, so the module
 * table holds A and B exactly as they act on the GGUF model.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lora-private.h"
#include "safetensors-json.h"
#include "safetensors.h"

/* How a module's value-head dimension is laid out in HF order. */
typedef enum {
  PERMUTE_NONE,
  PERMUTE_A_COLUMNS,   /* out_proj: the input (A's columns) is indexed by value head */
  PERMUTE_B_ROWS,      /* in_proj_z/a/b and the v part of in_proj_qkv: B's rows */
} Permutation;

typedef struct {
  const char *hf;       /* module path after "layers.{i}." */
  LmModuleKind kind;
  Permutation permute;
} PeftModule;

static const PeftModule peft_modules[] = {
  { "self_attn.q_proj", LM_MODULE_ATTN_Q, PERMUTE_NONE },
  { "self_attn.k_proj", LM_MODULE_ATTN_K, PERMUTE_NONE },
  { "self_attn.v_proj", LM_MODULE_ATTN_V, PERMUTE_NONE },
  { "self_attn.o_proj", LM_MODULE_ATTN_OUTPUT, PERMUTE_NONE },
  { "linear_attn.in_proj_qkv", LM_MODULE_ATTN_QKV, PERMUTE_B_ROWS },
  { "linear_attn.in_proj_z", LM_MODULE_ATTN_GATE, PERMUTE_B_ROWS },
  { "linear_attn.in_proj_a", LM_MODULE_SSM_ALPHA, PERMUTE_B_ROWS },
  { "linear_attn.in_proj_b", LM_MODULE_SSM_BETA, PERMUTE_B_ROWS },
  { "linear_attn.out_proj", LM_MODULE_SSM_OUT, PERMUTE_A_COLUMNS },
  { "mlp.gate_proj", LM_MODULE_FFN_GATE, PERMUTE_NONE },
  { "mlp.up_proj", LM_MODULE_FFN_UP, PERMUTE_NONE },
  { "mlp.down_proj", LM_MODULE_FFN_DOWN, PERMUTE_NONE },
  { "mlp.shared_expert.gate_proj", LM_MODULE_FFN_GATE_SHEXP, PERMUTE_NONE },
  { "mlp.shared_expert.up_proj", LM_MODULE_FFN_UP_SHEXP, PERMUTE_NONE },
  { "mlp.shared_expert.down_proj", LM_MODULE_FFN_DOWN_SHEXP, PERMUTE_NONE },
};

typedef struct {
  float alpha;
  uint32_t rank;
  bool rslora;
} PeftConfig;

/* A file of at most 1 MiB as a new NUL-terminated buffer, or NULL. */
static char *
read_small_file (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    return NULL;
  char *buf = malloc (1 << 20);
  size_t n = buf ? fread (buf, 1, (1 << 20) - 1, f) : 0;
  bool too_big = buf && !feof (f);
  fclose (f);
  if (buf == NULL || too_big)
    {
      free (buf);
      return NULL;
    }
  buf[n] = '\0';
  *len = n;
  return buf;
}

LmStatus
lm_lora_read_config (const char *dir, char *path, size_t path_size, LmJson **root,
                     char **error_out)
{
  snprintf (path, path_size, "%s/adapter_config.json", dir);
  size_t len = 0;
  char *text = read_small_file (path, &len);
  if (text == NULL)
    return lm_fail (error_out, LM_ERR_IO, "cannot read %s", path);
  char *msg = NULL;
  *root = lm_json_parse (text, len, &msg);
  free (text);
  if (*root == NULL)
    {
      LmStatus st = lm_fail (error_out, LM_ERR_FORMAT, "%s: %s", path, msg ? msg : "bad JSON");
      free (msg);
      return st;
    }
  return LM_OK;
}

static LmStatus
read_config (const char *dir, PeftConfig *cfg, char **error_out)
{
  char path[4096];
  LmJson *root = NULL;
  LmStatus loaded = lm_lora_read_config (dir, path, sizeof path, &root, error_out);
  if (loaded != LM_OK)
    return loaded;
  const char *type = NULL;
  uint64_t r = 0;
  double alpha = 0.0;
  const LmJson *rs = lm_json_get (root, "use_rslora"), *dora = lm_json_get (root, "use_dora");
  LmStatus st = LM_OK;
  if (!lm_json_get_string (root, "peft_type", &type) || strcmp (type, "LORA") != 0)
    st = lm_fail (error_out, LM_ERR_UNSUPPORTED, "%s: peft_type is not LORA", path);
  else if (!lm_json_get_uint (root, "r", &r) || r == 0 || r > 65536)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: r is missing or invalid", path);
  else if (dora != NULL && dora->type == LM_JSON_BOOL && dora->boolean)
    st = lm_fail (error_out, LM_ERR_UNSUPPORTED, "%s: DoRA adapters are not supported", path);
  const LmJson *alpha_value = lm_json_get (root, "lora_alpha");
  if (st == LM_OK && alpha_value == NULL)
    alpha = (double) r;   /* PEFT's default lora_alpha is 8 = a common r; use r -> factor 1 */
  else if (st == LM_OK
           && (!lm_json_get_number (root, "lora_alpha", &alpha) || !(alpha > 0.0 && alpha <= 1e6)))
    st = lm_fail (error_out, LM_ERR_FORMAT,
                  "%s: lora_alpha must be a number above 0 and at most 1e6", path);
  *cfg = (PeftConfig) { (float) alpha, (uint32_t) r,
                        rs != NULL && rs->type == LM_JSON_BOOL && rs->boolean };
  lm_json_free (root);
  return st;
}

/* "…layers.12.linear_attn.out_proj.lora_A.weight" -> layer 12, the module, is_a. */
static const PeftModule *
parse_key (const char *key, uint32_t *layer, bool *is_a)
{
  const char *p = strstr (key, "layers.");
  if (p == NULL)
    return NULL;
  char *end;
  unsigned long il = strtoul (p + 7, &end, 10);
  if (end == p + 7 || *end != '.' || il >= LM_MAX_LAYERS)
    return NULL;
  const char *module = end + 1;
  const char *suffix = strstr (module, ".lora_");
  if (suffix == NULL)
    return NULL;
  if (strcmp (suffix, ".lora_A.weight") == 0)
    *is_a = true;
  else if (strcmp (suffix, ".lora_B.weight") == 0)
    *is_a = false;
  else
    return NULL;
  size_t len = (size_t) (suffix - module);
  for (size_t i = 0; i < sizeof peft_modules / sizeof peft_modules[0]; i++)
    if (strlen (peft_modules[i].hf) == len && memcmp (module, peft_modules[i].hf, len) == 0)
      {
        *layer = (uint32_t) il;
        return &peft_modules[i];
      }
  return NULL;
}

/* HF value head of GGUF value head @g: g = t*Hk + m  <-  m*(Hv/Hk) + t. */
static uint32_t
hf_head (uint32_t g, uint32_t Hk, uint32_t Hv)
{
  return (g % Hk) * (Hv / Hk) + g / Hk;
}

/* Reorders @n_heads blocks of @block indices starting at @first, in the
 * columns of A (rank x n) or the rows of B (n x rank); @m is rewritten. */
static void
permute_heads (float *m, float *tmp, uint32_t rows, uint32_t cols, bool columns,
               uint32_t first, uint32_t block, const LmModelInfo *in)
{
  uint32_t Hk = in->ssm_groups, Hv = in->ssm_heads;
  memcpy (tmp, m, (size_t) rows * cols * sizeof (float));
  for (uint32_t g = 0; g < Hv; g++)
    for (uint32_t s = 0; s < block; s++)
      {
        uint32_t dst = first + g * block + s, src = first + hf_head (g, Hk, Hv) * block + s;
        if (columns)
          for (uint32_t r = 0; r < rows; r++)
            m[(size_t) r * cols + dst] = tmp[(size_t) r * cols + src];
        else
          memcpy (m + (size_t) dst * cols, tmp + (size_t) src * cols, cols * sizeof (float));
      }
}

static void
to_gguf_order (const PeftModule *pm, float *a, float *b, uint32_t rank, uint32_t d_in,
               uint32_t d_out, const LmModelInfo *in, float *tmp)
{
  uint32_t S = in->ssm_state;
  if (pm->permute == PERMUTE_A_COLUMNS)
    permute_heads (a, tmp, rank, d_in, true, 0, S, in);
  else if (pm->kind == LM_MODULE_ATTN_QKV)
    permute_heads (b, tmp, d_out, rank, false, 2 * lm_key_dim (in), S, in);
  else if (pm->kind == LM_MODULE_ATTN_GATE)
    permute_heads (b, tmp, d_out, rank, false, 0, S, in);
  else if (pm->permute == PERMUTE_B_ROWS)
    permute_heads (b, tmp, d_out, rank, false, 0, 1, in);
}

LmStatus
lm_lora_read_matrix (const SafetensorsTensor *t, uint32_t *rows, uint32_t *cols, float **out)
{
  if (t->n_dims != 2 || t->shape[0] == 0 || t->shape[1] == 0 || t->shape[0] > UINT32_MAX ||
      t->shape[1] > UINT32_MAX)
    return LM_ERR_SHAPE;
  float *m = malloc ((size_t) t->n_elements * sizeof (float));
  if (m == NULL)
    return LM_ERR_NO_MEMORY;
  if (lm_safetensors_read_f32 (t, m) != LM_OK)
    {
      free (m);
      return LM_ERR_UNSUPPORTED;
    }
  *rows = (uint32_t) t->shape[0];
  *cols = (uint32_t) t->shape[1];
  *out = m;
  return LM_OK;
}

static LmStatus
add_module (LmLora *lora, const SafetensorsFile *st, const SafetensorsTensor *ta,
            const PeftModule *pm, uint32_t layer, const PeftConfig *cfg, float user_scale,
            char **error_out)
{
  char key_b[512];
  size_t base = strlen (ta->name) - strlen (".lora_A.weight");
  if (base + 16 > sizeof key_b)
    return lm_fail (error_out, LM_ERR_FORMAT, "PEFT key too long");
  snprintf (key_b, sizeof key_b, "%.*s.lora_B.weight", (int) base, ta->name);
  const SafetensorsTensor *tb = lm_safetensors_find (st, key_b);
  if (tb == NULL)
    return lm_fail (error_out, LM_ERR_FORMAT, "PEFT tensor %s has no lora_B", ta->name);
  float *a = NULL, *b = NULL, *tmp = NULL;
  uint32_t rank, d_in, d_out, rank_b;
  LmStatus s = lm_lora_read_matrix (ta, &rank, &d_in, &a);
  if (s == LM_OK)
    s = lm_lora_read_matrix (tb, &d_out, &rank_b, &b);
  if (s != LM_OK || rank_b != rank)
    s = lm_fail (error_out, s != LM_OK ? s : LM_ERR_SHAPE,
                 "PEFT module %s: lora_A/lora_B cannot be read as matching f32 matrices", key_b);
  const LmWeight *w = lm_model_module_weight (lora->model, layer, pm->kind);
  if (s == LM_OK && w != NULL && d_in == w->n_in && d_out == w->n_out && pm->permute != PERMUTE_NONE)
    {
      tmp = malloc ((size_t) (d_in > d_out ? d_in : d_out) * rank * sizeof (float));
      if (tmp == NULL)
        s = LM_ERR_NO_MEMORY;
      else
        to_gguf_order (pm, a, b, rank, d_in, d_out, &lora->model->info, tmp);
    }
  if (s == LM_OK)
    {
      float factor = cfg->rslora ? cfg->alpha / sqrtf ((float) rank) : cfg->alpha / (float) rank;
      s = lm_lora_add (lora, layer, pm->kind, rank, d_in, d_out, a, b, user_scale * factor,
                       error_out);
    }
  free (a);
  free (b);
  free (tmp);
  return s;
}

static LmStatus
load_tensors (LmLora *lora, const SafetensorsFile *st, const PeftConfig *cfg, float user_scale,
              char **error_out)
{
  for (size_t i = 0; i < lm_safetensors_n_tensors (st); i++)
    {
      const SafetensorsTensor *t = lm_safetensors_tensor (st, i);
      uint32_t layer;
      bool is_a;
      const PeftModule *pm = parse_key (t->name, &layer, &is_a);
      if (pm == NULL && strstr (t->name, ".mlp.experts.") != NULL)
        return lm_fail (error_out, LM_ERR_UNSUPPORTED,
                        "PEFT tensor %s adapts the routed experts, which this runtime cannot "
                        "adapt (attention, dense FFN and shared-expert projections only)", t->name);
      if (pm == NULL)
        return lm_fail (error_out, LM_ERR_UNSUPPORTED, "PEFT tensor %s is not a supported LoRA module",
                        t->name);
      if (is_a)
        {
          LmStatus s = add_module (lora, st, t, pm, layer, cfg, user_scale, error_out);
          if (s != LM_OK)
            return s;
        }
    }
  return LM_OK;
}

LmStatus
lm_lora_load_peft (const LmModel *model, const char *dir, float user_scale, LmLora **out,
                   char **error_out)
{
  if (model == NULL || dir == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  PeftConfig cfg = { 0 };
  LmStatus s = read_config (dir, &cfg, error_out);
  if (s != LM_OK)
    return s;
  char path[4096];
  snprintf (path, sizeof path, "%s/adapter_model.safetensors", dir);
  SafetensorsFile *st = NULL;
  if ((s = lm_safetensors_open (path, &st, error_out)) != LM_OK)
    return s;
  LmLora *lora = lm_lora_new (model);
  s = lora == NULL ? LM_ERR_NO_MEMORY : load_tensors (lora, st, &cfg, user_scale, error_out);
  if (s == LM_OK && lora->n_modules == 0)
    s = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", path);
  lm_safetensors_close (st);
  if (s != LM_OK)
    {
      lm_lora_free (lora);
      return s;
    }
  *out = lora;
  return LM_OK;
}
