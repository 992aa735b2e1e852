/* model.c: loading a Qwen GGUF and binding every tensor the forward pass uses.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model-hparams.h"
#include "forward-kern.h"

LmStatus
lm_fail (char **error_out, LmStatus status, const char *fmt, ...)
{
  if (error_out == NULL || *error_out != NULL)
    return status;
  va_list ap;
  va_start (ap, fmt);
  if (vasprintf (error_out, fmt, ap) < 0)
    *error_out = NULL;
  va_end (ap);
  return status;
}

typedef struct {
  LmModel *model;
  char **error_out;
  uint32_t layer;
} Binder;

static const GgufTensorInfo *
find_tensor (const Binder *b, const char *stem, char *name, size_t size)
{
  if (strncmp (stem, "blk.", 4) == 0)
    snprintf (name, size, "blk.%u.%s", b->layer, stem + 4);
  else
    snprintf (name, size, "%s", stem);
  return lm_gguf_find_tensor (b->model->gguf, name);
}

/* Binds matrix @stem ("blk.attn_q.weight" is expanded with the layer) of
 * ne = [n_in, n_out, n_mat]. Absent and optional -> data stays NULL. */
static LmStatus
bind_matrix (const Binder *b, const char *stem, uint32_t n_in, uint32_t n_out,
             uint32_t n_mat, bool required, LmWeight *w)
{
  char name[128];
  const GgufTensorInfo *t = find_tensor (b, stem, name, sizeof name);
  memset (w, 0, sizeof *w);
  if (t == NULL)
    return required ? lm_fail (b->error_out, LM_ERR_FORMAT, "tensor %s is missing", name) : LM_OK;
  uint32_t want_dims = n_mat > 1 ? 3 : 2;
  if (t->ne[0] != n_in || t->ne[1] != n_out || t->ne[2] != n_mat || t->ne[3] != 1 ||
      t->n_dims > want_dims)
    return lm_fail (b->error_out, LM_ERR_SHAPE,
                    "tensor %s has shape [%llu, %llu, %llu], expected [%u, %u, %u]", name,
                    (unsigned long long) t->ne[0], (unsigned long long) t->ne[1],
                    (unsigned long long) t->ne[2], n_in, n_out, n_mat);
  size_t row = lm_row_bytes (t->type, n_in);
  if (row == 0)
    return lm_fail (b->error_out, LM_ERR_UNSUPPORTED, "tensor %s: type %d is not supported for %u columns",
                    name, (int) t->type, n_in);
  if (t->n_bytes < row * n_out * n_mat)
    return lm_fail (b->error_out, LM_ERR_FORMAT, "tensor %s is truncated", name);
  w->data = t->data;
  w->type = t->type;
  w->n_in = n_in;
  w->n_out = n_out;
  w->n_mat = n_mat;
  w->mat_stride = row * n_out;
  b->model->weight_bytes += t->n_bytes;
  return LM_OK;
}

/* Binds an F32 tensor of exactly @n elements (norms, conv taps, biases). */
static LmStatus
bind_f32 (const Binder *b, const char *stem, uint64_t n, const float **out)
{
  char name[128];
  const GgufTensorInfo *t = find_tensor (b, stem, name, sizeof name);
  if (t == NULL)
    return lm_fail (b->error_out, LM_ERR_FORMAT, "tensor %s is missing", name);
  if (t->type != LM_TYPE_F32)
    return lm_fail (b->error_out, LM_ERR_UNSUPPORTED, "tensor %s must be F32", name);
  if (t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] != n || t->n_bytes < n * sizeof (float))
    return lm_fail (b->error_out, LM_ERR_SHAPE, "tensor %s has %llu elements, expected %llu", name,
                    (unsigned long long) (t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]),
                    (unsigned long long) n);
  if ((uintptr_t) t->data % sizeof (float) != 0)
    return lm_fail (b->error_out, LM_ERR_FORMAT, "tensor %s is misaligned", name);
  *out = t->data;
  b->model->weight_bytes += t->n_bytes;
  return LM_OK;
}

static LmStatus
bind_full_attention (const Binder *b, LmLayer *l)
{
  const LmModelInfo *in = &b->model->info;
  uint32_t E = in->n_embd, hd = in->head_dim;
  uint32_t qd = hd * in->n_head, kvd = hd * in->n_head_kv;
  LmStatus st;
  if ((st = bind_matrix (b, "blk.attn_q.weight", E, lm_q_stride (in) * in->n_head, 1, true, &l->wq)) ||
      (st = bind_matrix (b, "blk.attn_k.weight", E, kvd, 1, true, &l->wk)) ||
      (st = bind_matrix (b, "blk.attn_v.weight", E, kvd, 1, true, &l->wv)) ||
      (st = bind_matrix (b, "blk.attn_output.weight", qd, E, 1, true, &l->wo)))
    return st;
  if (in->attn_qk_norm &&
      ((st = bind_f32 (b, "blk.attn_q_norm.weight", hd, &l->q_norm)) ||
       (st = bind_f32 (b, "blk.attn_k_norm.weight", hd, &l->k_norm))))
    return st;
  if (in->attn_qkv_bias &&
      ((st = bind_f32 (b, "blk.attn_q.bias", qd, &l->bq)) ||
       (st = bind_f32 (b, "blk.attn_k.bias", kvd, &l->bk)) ||
       (st = bind_f32 (b, "blk.attn_v.bias", kvd, &l->bv))))
    return st;
  return LM_OK;
}

static LmStatus
bind_linear_attention (const Binder *b, LmLayer *l)
{
  const LmModelInfo *in = &b->model->info;
  uint32_t E = in->n_embd, Hv = in->ssm_heads;
  LmStatus st;
  if ((st = bind_matrix (b, "blk.attn_qkv.weight", E, lm_conv_dim (in), 1, true, &l->wqkv)) ||
      (st = bind_matrix (b, "blk.attn_gate.weight", E, lm_value_dim (in), 1, true, &l->wgate)) ||
      (st = bind_matrix (b, "blk.ssm_alpha.weight", E, Hv, 1, true, &l->walpha)) ||
      (st = bind_matrix (b, "blk.ssm_beta.weight", E, Hv, 1, true, &l->wbeta)) ||
      (st = bind_matrix (b, "blk.ssm_out.weight", lm_value_dim (in), E, 1, true, &l->wssm_out)) ||
      (st = bind_f32 (b, "blk.ssm_conv1d.weight", (uint64_t) in->ssm_conv_kernel * lm_conv_dim (in),
                      &l->conv)) ||
      (st = bind_f32 (b, "blk.ssm_dt.bias", Hv, &l->dt_bias)) ||
      (st = bind_f32 (b, "blk.ssm_a", Hv, &l->ssm_a)) ||
      (st = bind_f32 (b, "blk.ssm_norm.weight", in->ssm_state, &l->ssm_norm)))
    return st;
  return LM_OK;
}

static LmStatus
bind_shared_expert (const Binder *b, LmLayer *l)
{
  const LmModelInfo *in = &b->model->info;
  uint32_t E = in->n_embd, ns = in->n_ff_shexp;
  LmStatus st;
  if ((st = bind_f32 (b, "blk.ffn_gate_inp_shexp.weight", E, &l->shexp_gate_inp)) ||
      (st = bind_matrix (b, "blk.ffn_gate_shexp.weight", E, ns, 1, true, &l->sh_gate)) ||
      (st = bind_matrix (b, "blk.ffn_up_shexp.weight", E, ns, 1, true, &l->sh_up)) ||
      (st = bind_matrix (b, "blk.ffn_down_shexp.weight", ns, E, 1, true, &l->sh_down)))
    return st;
  return LM_OK;
}

static LmStatus
bind_ffn (const Binder *b, LmLayer *l)
{
  const LmModelInfo *in = &b->model->info;
  uint32_t E = in->n_embd;
  LmStatus st;
  if (!in->is_moe)
    {
      if ((st = bind_matrix (b, "blk.ffn_gate.weight", E, in->n_ff, 1, true, &l->ffn_gate)) ||
          (st = bind_matrix (b, "blk.ffn_up.weight", E, in->n_ff, 1, true, &l->ffn_up)) ||
          (st = bind_matrix (b, "blk.ffn_down.weight", in->n_ff, E, 1, true, &l->ffn_down)))
        return st;
      return LM_OK;
    }
  uint32_t ne = in->n_expert, nf = in->n_ff_exp;
  if ((st = bind_matrix (b, "blk.ffn_gate_inp.weight", E, ne, 1, true, &l->router)) ||
      (st = bind_matrix (b, "blk.ffn_gate_exps.weight", E, nf, ne, true, &l->exp_gate)) ||
      (st = bind_matrix (b, "blk.ffn_up_exps.weight", E, nf, ne, true, &l->exp_up)) ||
      (st = bind_matrix (b, "blk.ffn_down_exps.weight", nf, E, ne, true, &l->exp_down)))
    return st;
  return in->n_ff_shexp > 0 ? bind_shared_expert (b, l) : LM_OK;
}

/* The norm before the FFN: qwen35 files name it post_attention_norm, the
 * other architectures ffn_norm (llama.cpp's names for the same tensor). */
static LmStatus
bind_ffn_norm (const Binder *b, LmLayer *l)
{
  char name[128];
  const char *stem = find_tensor (b, "blk.post_attention_norm.weight", name, sizeof name)
                     ? "blk.post_attention_norm.weight" : "blk.ffn_norm.weight";
  return bind_f32 (b, stem, b->model->info.n_embd, &l->post_norm);
}

static LmStatus
bind_layers (LmModel *m, char **error_out)
{
  m->layers = calloc (m->info.n_layer, sizeof *m->layers);
  if (m->layers == NULL)
    return LM_ERR_NO_MEMORY;
  for (uint32_t il = 0; il < m->info.n_layer; il++)
    {
      Binder b = { m, error_out, il };
      LmLayer *l = &m->layers[il];
      LmStatus st;
      l->is_linear = m->info.is_linear[il];
      l->state_index = l->is_linear ? m->n_linear++ : m->n_full++;
      if ((st = bind_f32 (&b, "blk.attn_norm.weight", m->info.n_embd, &l->attn_norm)) ||
          (st = bind_ffn_norm (&b, l)) ||
          (st = l->is_linear ? bind_linear_attention (&b, l) : bind_full_attention (&b, l)) ||
          (st = bind_ffn (&b, l)))
        return st;
    }
  return LM_OK;
}

static LmStatus
bind_globals (LmModel *m, char **error_out)
{
  Binder b = { m, error_out, 0 };
  const GgufTensorInfo *t = lm_gguf_find_tensor (m->gguf, "token_embd.weight");
  if (t == NULL)
    return lm_fail (error_out, LM_ERR_FORMAT, "tensor token_embd.weight is missing");
  if (t->ne[1] == 0 || t->ne[1] > (1u << 24))
    return lm_fail (error_out, LM_ERR_SHAPE, "token_embd.weight has a bad vocabulary size");
  m->info.n_vocab = (uint32_t) t->ne[1];
  LmStatus st;
  if ((st = bind_matrix (&b, "token_embd.weight", m->info.n_embd, m->info.n_vocab, 1, true,
                         &m->tok_embd)) ||
      (st = bind_matrix (&b, "output.weight", m->info.n_embd, m->info.n_vocab, 1, false,
                         &m->output)) ||
      (st = bind_f32 (&b, "output_norm.weight", m->info.n_embd, &m->output_norm)))
    return st;
  m->info.tied_embeddings = m->output.data == NULL;
  if (m->info.tied_embeddings)
    m->output = m->tok_embd;
  return LM_OK;
}

/* The file stays open for the copy of the dense weights that the first
 * session on the CPU makes (model-resident.c). */
static LmStatus
keep_file (LmModel *m, const char *path, char **error_out)
{
  m->path = strdup (path);
  if (m->path == NULL)
    return LM_ERR_NO_MEMORY;
  m->fd = open (path, O_RDONLY | O_CLOEXEC);
  if (m->fd < 0)
    return lm_fail (error_out, LM_ERR_IO, "cannot open %s: %s", path, strerror (errno));
  return LM_OK;
}

LmStatus
lm_model_load (const char *path, LmModel **out, char **error_out)
{
  if (path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  LmModel *m = calloc (1, sizeof *m);
  if (m == NULL)
    return LM_ERR_NO_MEMORY;
  pthread_mutex_init (&m->gpu_lock, NULL);
  pthread_mutex_init (&m->resident_lock, NULL);
  m->fd = -1;
  LmStatus st = lm_gguf_open (path, &m->gguf, error_out);
  if (st == LM_OK)
    st = lm_read_hparams (m->gguf, &m->info, error_out);
  if (st == LM_OK)
    st = bind_globals (m, error_out);
  if (st == LM_OK)
    st = bind_layers (m, error_out);
  if (st == LM_OK)
    st = keep_file (m, path, error_out);
  if (st != LM_OK)
    {
      lm_model_free (m);
      return st;
    }
  *out = m;
  return LM_OK;
}

void
lm_model_free (LmModel *model)
{
  if (model == NULL)
    return;
  /* Every GPU session (which holds the device weights) is gone by now. */
  pthread_mutex_destroy (&model->gpu_lock);
  pthread_mutex_destroy (&model->resident_lock);
  lm_model_free_resident (model);
  if (model->fd >= 0)
    close (model->fd);
  free (model->path);
  free (model->layers);
  lm_gguf_close (model->gguf);
  free (model);
}

const LmModelInfo *
lm_model_info (const LmModel *model)
{
  return &model->info;
}

const struct GgufFile *
lm_model_gguf (const LmModel *model)
{
  return model->gguf;
}

size_t
lm_model_weight_bytes (const LmModel *model)
{
  return model->weight_bytes;
}

static size_t
weight_bytes (const LmWeight *w, uint32_t n_mat)
{
  return w->data != NULL ? w->mat_stride * n_mat : 0;
}

size_t
lm_model_decode_bytes (const LmModel *model)
{
  const LmModelInfo *in = &model->info;
  size_t total = weight_bytes (&model->output, 1)
                 + lm_row_bytes (model->tok_embd.type, in->n_embd);
  for (uint32_t il = 0; il < in->n_layer; il++)
    {
      const LmLayer *l = &model->layers[il];
      const LmWeight *dense[] = LM_LAYER_DENSE_WEIGHTS (l);
      for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++)
        total += weight_bytes (dense[i], 1);
      total += weight_bytes (&l->exp_gate, in->n_expert_used)
               + weight_bytes (&l->exp_up, in->n_expert_used)
               + weight_bytes (&l->exp_down, in->n_expert_used);
    }
  return total;
}

const LmWeight *
lm_model_module_weight (const LmModel *model, uint32_t layer, LmModuleKind kind)
{
  if (layer >= model->info.n_layer)
    return NULL;
  const LmLayer *l = &model->layers[layer];
  const LmWeight *w = NULL;
  switch (kind)
    {
    case LM_MODULE_ATTN_Q: w = &l->wq; break;
    case LM_MODULE_ATTN_K: w = &l->wk; break;
    case LM_MODULE_ATTN_V: w = &l->wv; break;
    case LM_MODULE_ATTN_OUTPUT: w = &l->wo; break;
    case LM_MODULE_ATTN_QKV: w = &l->wqkv; break;
    case LM_MODULE_ATTN_GATE: w = &l->wgate; break;
    case LM_MODULE_SSM_ALPHA: w = &l->walpha; break;
    case LM_MODULE_SSM_BETA: w = &l->wbeta; break;
    case LM_MODULE_SSM_OUT: w = &l->wssm_out; break;
    case LM_MODULE_FFN_GATE: w = &l->ffn_gate; break;
    case LM_MODULE_FFN_UP: w = &l->ffn_up; break;
    case LM_MODULE_FFN_DOWN: w = &l->ffn_down; break;
    case LM_MODULE_FFN_GATE_SHEXP: w = &l->sh_gate; break;
    case LM_MODULE_FFN_UP_SHEXP: w = &l->sh_up; break;
    case LM_MODULE_FFN_DOWN_SHEXP: w = &l->sh_down; break;
    case LM_N_MODULE_KINDS: break;
    }
  return w != NULL && w->data != NULL ? w : NULL;
}
