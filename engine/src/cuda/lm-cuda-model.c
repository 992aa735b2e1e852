/* lm-cuda-model.c: a model's weights on the GPU, uploaded once and shared.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The device copy mirrors the host LmLayer/LmWeight structures with device
 * pointers, so the forward pass reads shapes and types from the same fields
 * as the CPU code. Matrices keep their GGUF block form (the kernels of
 * lm-cuda-matvec.h dequantise inside the products); each layer is one
 * allocation, so a later session asking for more layers adds them without
 * moving the ones in use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm-cuda-gpu.h"
#include "lm-cuda-matvec.h"

#define PART_ALIGN 256
/* Left free for the kernels' own needs (CUDA graphs, launch resources). */
#define MEMORY_MARGIN ((size_t) 64 << 20)
#define MAX_W 19
#define MAX_F 12

/* The device-resident pieces of one layer (or of the globals): matrices and
 * f32 vectors, as pointers into the mirror structure to be redirected. The
 * ones an architecture lacks (NULL: q/k norms, q/k/v biases, the shared
 * expert) stay NULL in the mirror, which is how the forward pass tells. */
typedef struct {
  LmWeight *w[MAX_W];
  uint32_t n_w;
  const float **f[MAX_F];
  size_t f_count[MAX_F];
  uint32_t n_f;
} Parts;

static size_t
aligned (size_t bytes)
{
  return (bytes + PART_ALIGN - 1) / PART_ALIGN * PART_ALIGN;
}

static size_t
weight_bytes (const LmWeight *w)
{
  return (size_t) w->mat_stride * w->n_mat;
}

static void
add_weight (Parts *p, LmWeight *w)
{
  if (w->data != NULL && p->n_w < MAX_W)
    p->w[p->n_w++] = w;
}

static void
add_floats (Parts *p, const float **f, size_t count)
{
  if (*f != NULL && p->n_f < MAX_F)
    {
      p->f[p->n_f] = f;
      p->f_count[p->n_f++] = count;
    }
}

static void
layer_parts (const LmModelInfo *in, LmLayer *l, Parts *p)
{
  memset (p, 0, sizeof *p);
  LmWeight *ws[] = { &l->wq, &l->wk, &l->wv, &l->wo, &l->wqkv, &l->wgate, &l->walpha,
                     &l->wbeta, &l->wssm_out, &l->ffn_gate, &l->ffn_up, &l->ffn_down,
                     &l->router, &l->exp_gate, &l->exp_up, &l->exp_down, &l->sh_gate,
                     &l->sh_up, &l->sh_down };
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
    add_weight (p, ws[i]);
  add_floats (p, &l->attn_norm, in->n_embd);
  add_floats (p, &l->post_norm, in->n_embd);
  add_floats (p, &l->q_norm, in->head_dim);
  add_floats (p, &l->k_norm, in->head_dim);
  add_floats (p, &l->bq, (size_t) in->head_dim * in->n_head);
  add_floats (p, &l->bk, (size_t) in->head_dim * in->n_head_kv);
  add_floats (p, &l->bv, (size_t) in->head_dim * in->n_head_kv);
  add_floats (p, &l->conv, (size_t) in->ssm_conv_kernel * lm_conv_dim (in));
  add_floats (p, &l->dt_bias, in->ssm_heads);
  add_floats (p, &l->ssm_a, in->ssm_heads);
  add_floats (p, &l->ssm_norm, in->ssm_state);
  add_floats (p, &l->shexp_gate_inp, in->n_embd);
}

static size_t
parts_bytes (const Parts *p)
{
  size_t total = 0;
  for (uint32_t i = 0; i < p->n_w; i++)
    total += aligned (weight_bytes (p->w[i]));
  for (uint32_t i = 0; i < p->n_f; i++)
    total += aligned (p->f_count[i] * sizeof (float));
  return total;
}

/* A matrix type the GPU kernels lack is refused before anything is uploaded. */
static LmStatus
check_types (const Parts *p, const char *where, char **error_out)
{
  for (uint32_t i = 0; i < p->n_w; i++)
    if (!lm_cuda_matvec_supports (p->w[i]->type))
      return lm_fail (error_out, LM_ERR_UNSUPPORTED,
                      "%s: tensor type %s is not supported by the GPU kernels", where,
                      lm_gguf_type_name (p->w[i]->type));
  return LM_OK;
}

/* Copies every part into one new device allocation and points the mirror's
 * fields at the copies. */
static LmStatus
upload_parts (Parts *p, void **mem_out, size_t *bytes_out, char **error_out)
{
  size_t total = parts_bytes (p);
  char *mem = NULL;
  LmStatus st = lm_cuda_rt_malloc ((void **) &mem, total);
  size_t off = 0;
  for (uint32_t i = 0; st == LM_OK && i < p->n_w; i++)
    {
      size_t bytes = weight_bytes (p->w[i]);
      st = lm_cuda_rt_upload (mem + off, p->w[i]->data, bytes);
      p->w[i]->data = mem + off;
      off += aligned (bytes);
    }
  for (uint32_t i = 0; st == LM_OK && i < p->n_f; i++)
    {
      size_t bytes = p->f_count[i] * sizeof (float);
      st = lm_cuda_rt_upload (mem + off, *p->f[i], bytes);
      *p->f[i] = (const float *) (mem + off);
      off += aligned (bytes);
    }
  if (st != LM_OK)
    {
      lm_cuda_rt_free (mem);
      return lm_fail (error_out, st, "uploading the weights to the GPU failed (%s)",
                      lm_cuda_rt_error ());
    }
  *mem_out = mem;
  *bytes_out += total;
  return LM_OK;
}

size_t
lm_gpu_layer_bytes (const LmModel *model, uint32_t il)
{
  LmLayer copy = model->layers[il];
  Parts p;
  layer_parts (&model->info, &copy, &p);
  return parts_bytes (&p);
}

static void
embd_parts (LmGpuModel *dm, Parts *p)
{
  memset (p, 0, sizeof *p);
  add_weight (p, &dm->tok_embd);
}

/* The head: its norm, and the output matrix unless it is the (already
 * uploaded) embedding table. */
static void
head_parts (const LmModel *m, LmGpuModel *dm, Parts *p)
{
  memset (p, 0, sizeof *p);
  add_floats (p, &dm->output_norm, m->info.n_embd);
  if (!m->info.tied_embeddings)
    add_weight (p, &dm->output);
}

static void
model_free (LmGpuModel *dm, uint32_t n_layer)
{
  if (dm == NULL)
    return;
  for (uint32_t il = 0; dm->layer_mem != NULL && il < n_layer; il++)
    lm_cuda_rt_free (dm->layer_mem[il]);
  lm_cuda_rt_free (dm->embd_mem);
  lm_cuda_rt_free (dm->head_mem);
  free (dm->layers);
  free (dm->layer_mem);
  free (dm);
}

static LmGpuModel *
model_new (const LmModel *m)
{
  LmGpuModel *dm = calloc (1, sizeof *dm);
  if (dm == NULL)
    return NULL;
  dm->layers = calloc (m->info.n_layer, sizeof *dm->layers);
  dm->layer_mem = calloc (m->info.n_layer, sizeof *dm->layer_mem);
  if (dm->layers == NULL || dm->layer_mem == NULL)
    {
      model_free (dm, 0);
      return NULL;
    }
  dm->tok_embd = m->tok_embd;
  dm->output = m->output;
  dm->output_norm = m->output_norm;
  return dm;
}

/* What is still to upload: its bytes, after checking the types. */
static LmStatus
missing_bytes (const LmModel *m, LmGpuModel *dm, uint32_t n_layers, bool head, size_t *bytes,
               char **error_out)
{
  Parts p;
  LmStatus st = LM_OK;
  *bytes = 0;
  if (dm->embd_mem == NULL)
    {
      embd_parts (dm, &p);
      *bytes += parts_bytes (&p);
      st = check_types (&p, "token_embd.weight", error_out);
    }
  for (uint32_t il = dm->n_layers; st == LM_OK && il < n_layers; il++)
    {
      LmLayer copy = m->layers[il];
      char where[32];
      snprintf (where, sizeof where, "layer %u", il);
      layer_parts (&m->info, &copy, &p);
      *bytes += parts_bytes (&p);
      st = check_types (&p, where, error_out);
    }
  if (st == LM_OK && head && !dm->has_head)
    {
      LmGpuModel tmp = *dm;
      head_parts (m, &tmp, &p);
      *bytes += parts_bytes (&p);
      st = check_types (&p, "output.weight", error_out);
    }
  return st;
}

static LmStatus
check_fits (const LmModel *m, size_t weights, size_t extra, uint32_t n_layers, char **error_out)
{
  size_t free_bytes, total_bytes;
  if (lm_cuda_rt_mem_info (&free_bytes, &total_bytes) != LM_OK)
    return lm_fail (error_out, LM_ERR_DEVICE, "cannot query the GPU's memory (%s)",
                    lm_cuda_rt_error ());
  if (weights + extra + MEMORY_MARGIN <= free_bytes)
    return LM_OK;
  return lm_fail (error_out, LM_ERR_DEVICE,
                  "not enough GPU memory: %u of %u layers need %.0f MiB of weights and the "
                  "session %.0f MiB, but only %.0f MiB of %.0f MiB are free (run fewer "
                  "layers on the GPU)",
                  n_layers, m->info.n_layer, weights / 1048576.0, extra / 1048576.0,
                  free_bytes / 1048576.0, total_bytes / 1048576.0);
}

static LmStatus
upload_missing (const LmModel *m, LmGpuModel *dm, uint32_t n_layers, bool head,
                char **error_out)
{
  Parts p;
  LmStatus st = LM_OK;
  if (dm->embd_mem == NULL)
    {
      embd_parts (dm, &p);
      st = upload_parts (&p, &dm->embd_mem, &dm->bytes, error_out);
      if (st == LM_OK && m->info.tied_embeddings)
        dm->output = dm->tok_embd;
    }
  for (uint32_t il = dm->n_layers; st == LM_OK && il < n_layers; il++)
    {
      dm->layers[il] = m->layers[il];
      layer_parts (&m->info, &dm->layers[il], &p);
      st = upload_parts (&p, &dm->layer_mem[il], &dm->bytes, error_out);
      if (st == LM_OK)
        dm->n_layers = il + 1;
    }
  if (st == LM_OK && head && !dm->has_head)
    {
      head_parts (m, dm, &p);
      st = upload_parts (&p, &dm->head_mem, &dm->bytes, error_out);
      dm->has_head = st == LM_OK;
      if (st != LM_OK)
        {
          /* The failed upload redirected the mirror's fields: back to the host. */
          dm->output_norm = m->output_norm;
          dm->output = m->info.tied_embeddings ? dm->tok_embd : m->output;
        }
    }
  return st;
}

static LmStatus
acquire_locked (LmModel *m, uint32_t n_layers, bool head, size_t extra, LmGpuModel **out,
                char **error_out)
{
  LmGpuModel *dm = m->gpu;
  bool fresh = dm == NULL;
  if (fresh && (dm = model_new (m)) == NULL)
    return LM_ERR_NO_MEMORY;
  size_t need = 0;
  LmStatus st = missing_bytes (m, dm, n_layers, head, &need, error_out);
  if (st == LM_OK)
    st = check_fits (m, need, extra, n_layers, error_out);
  if (st == LM_OK)
    st = upload_missing (m, dm, n_layers, head, error_out);
  if (st != LM_OK)
    {
      /* A shared copy keeps what it had; layers uploaded in vain stay until
       * the last session ends. */
      if (fresh)
        model_free (dm, m->info.n_layer);
      return st;
    }
  dm->refs++;
  m->gpu = dm;
  *out = dm;
  return LM_OK;
}

LmStatus
lm_gpu_model_acquire (LmModel *model, uint32_t n_layers, bool head, size_t extra_bytes,
                      LmGpuModel **out, char **error_out)
{
  *out = NULL;
  pthread_mutex_lock (&model->gpu_lock);
  LmStatus st = acquire_locked (model, n_layers, head, extra_bytes, out, error_out);
  pthread_mutex_unlock (&model->gpu_lock);
  return st;
}

void
lm_gpu_model_release (LmModel *model)
{
  pthread_mutex_lock (&model->gpu_lock);
  LmGpuModel *dm = model->gpu;
  if (dm != NULL && --dm->refs == 0)
    {
      model_free (dm, model->info.n_layer);
      model->gpu = NULL;
    }
  pthread_mutex_unlock (&model->gpu_lock);
}
