/* ckks-cuda-tables.cu: a context's NTT and rescale constants on the GPU.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <string.h>

#include "ckks-cuda-kernels.h"
#include "ckks-cuda-tables.cuh"

/* The scalar backend stores floor(w * 2^64 / q); the IFMA backend 52-bit
 * companions, which the kernels cannot use: those are recomputed. */
static void
copy_companions (uint64_t *dst, const uint64_t *values, const uint64_t *comp, uint64_t q,
                 size_t n, bool same_form)
{
  if (same_form)
    {
      memcpy (dst, comp, n * sizeof (uint64_t));
      return;
    }
  for (size_t i = 0; i < n; i++)
    dst[i] = ckks_shoup_precompute (values[i], q);
}

CkksStatus
ckks_cu_table_data_build (const CkksContext *ctx, CkksCuTableData *out, uint64_t **words)
{
  if (!ctx || !out || !words)
    return CKKS_ERR_INVALID_ARGUMENT;
  const size_t n = ctx->n;
  const uint32_t limbs = ctx->params.n_moduli;
  const bool scalar = strcmp (ctx->k.name, "scalar") == 0;
  uint64_t *w = (uint64_t *) ckks_alloc (4 * limbs * n * sizeof (uint64_t));
  if (!w)
    return CKKS_ERR_NO_MEMORY;
  memset (out, 0, sizeof *out);
  uint64_t *psi = w, *psi_s = w + limbs * n, *ipsi = w + 2 * limbs * n,
           *ipsi_s = w + 3 * limbs * n;
  CkksCudaNttView *v = &out->view;
  v->log_n = ctx->params.log_n;
  v->limbs = limbs;
  for (uint32_t i = 0; i < limbs; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      const uint64_t q = t->mod.q;
      memcpy (psi + i * n, t->psi_rev, n * sizeof (uint64_t));
      memcpy (ipsi + i * n, t->ipsi_rev, n * sizeof (uint64_t));
      copy_companions (psi_s + i * n, t->psi_rev, t->psi_rev_shoup, q, n, scalar);
      copy_companions (ipsi_s + i * n, t->ipsi_rev, t->ipsi_rev_shoup, q, n, scalar);
      v->q[i] = q;
      v->n_inv[i] = t->n_inv;
      v->n_inv_shoup[i] = ckks_shoup_precompute (t->n_inv, q);
      v->w_n_inv[i] = t->w_n_inv;
      v->w_n_inv_shoup[i] = ckks_shoup_precompute (t->w_n_inv, q);
      out->ratio_lo[i] = t->mod.ratio_lo;
      out->ratio_hi[i] = t->mod.ratio_hi;
      for (uint32_t j = 0; j < limbs; j++)
        {
          out->garner[i][j] = ctx->garner[i][j];
          out->garner_shoup[i][j] = ckks_shoup_precompute (ctx->garner[i][j], q);
        }
    }
  v->psi = psi;
  v->psi_shoup = psi_s;
  v->ipsi = ipsi;
  v->ipsi_shoup = ipsi_s;
  *words = w;
  return CKKS_OK;
}

extern "C" CkksStatus
ckks_cuda_tables_new (const CkksContext *ctx, CkksCudaTables **out)
{
  if (!ctx || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksCudaTables *t = (CkksCudaTables *) ckks_alloc0 (sizeof *t);
  uint64_t *host = NULL;
  if (!t)
    return CKKS_ERR_NO_MEMORY;
  CkksStatus st = ckks_cu_table_data_build (ctx, &t->data, &host);
  if (st != CKKS_OK)
    {
      ckks_free (t);
      return st;
    }
  const size_t quarter = (size_t) t->data.view.limbs * ctx->n;
  const size_t bytes = 4 * quarter * sizeof (uint64_t);
  if (cudaMalloc ((void **) &t->device_words, bytes) != cudaSuccess
      || cudaMemcpy (t->device_words, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
    {
      cudaGetLastError ();
      ckks_free (host);
      ckks_cuda_tables_free (t);
      return CKKS_ERR_DEVICE;
    }
  ckks_free (host);
  t->data.view.psi = t->device_words;
  t->data.view.psi_shoup = t->device_words + quarter;
  t->data.view.ipsi = t->device_words + 2 * quarter;
  t->data.view.ipsi_shoup = t->device_words + 3 * quarter;
  *out = t;
  return CKKS_OK;
}

extern "C" void
ckks_cuda_tables_free (CkksCudaTables *tables)
{
  if (!tables)
    return;
  if (tables->device_words)
    cudaFree (tables->device_words);
  ckks_free (tables);
}

extern "C" size_t
ckks_cuda_tables_ring_degree (const CkksCudaTables *tables)
{
  return (size_t) 1 << tables->data.view.log_n;
}

extern "C" uint32_t
ckks_cuda_tables_limbs (const CkksCudaTables *tables)
{
  return tables->data.view.limbs;
}
