/* ckks-client.c: a test client with a real CKKS key talking to the evaluator server.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-client.h"
#include "ckks-serial.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks.h"
#include "ts-helora-evaluator.h"

/* Appends @add's rows of A to @m (same module, same d_in). */
static void
append_rows (TsHeloraAdapterModule *m, const TsHeloraAdapterModule *add)
{
  gsize old = (gsize) m->rank * m->d_in, more = (gsize) add->rank * add->d_in;

  g_assert_cmpuint (add->d_in, ==, m->d_in);
  m->a = g_renew (float, m->a, old + more);
  memcpy (m->a + old, add->a, more * sizeof (float));
  m->rank += add->rank;
}

/* The union of the adapters' modules, in order of first appearance. */
static GPtrArray *
read_stack (const char *const *paths)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_helora_adapter_module_free);
  g_autoptr (GHashTable) by_name = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint k = 0; paths[k] != NULL; k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GPtrArray) member = ts_helora_adapter_read (paths[k], &error);

      g_assert_no_error (error);
      while (member->len > 0)
        {
          TsHeloraAdapterModule *m = g_ptr_array_steal_index (member, 0);
          TsHeloraAdapterModule *have = g_hash_table_lookup (by_name, m->name);
          if (have != NULL)
            {
              append_rows (have, m);
              ts_helora_adapter_module_free (m);
              continue;
            }
          g_ptr_array_add (out, m);
          g_hash_table_insert (by_name, m->name, m);
        }
    }
  return out;
}

CkksClient *
ckks_client_new_stack (const char *preset, const char *const *paths, const float *weights)
{
  CkksClient *self = g_new0 (CkksClient, 1);
  g_autoptr (GError) error = NULL;
  guint n = g_strv_length ((GStrv) paths);

  self->preset = g_strdup (preset);
  self->adapter_path = g_strdup (paths[0]);
  self->sha256 = g_malloc (n * sizeof *self->sha256);
  for (guint k = 0; k < n; k++)
    g_assert_true (ts_helora_adapter_sha256 (paths[k], self->sha256[k], NULL));
  if (n > 1)
    {
      self->stack_paths = g_strdupv ((GStrv) paths);
      self->stack_weights = g_memdup2 (weights, n * sizeof (float));
    }
  self->ctx = ts_helora_ckks_context_new (preset, &error);
  g_assert_no_error (error);
  g_assert_cmpint (ckks_secret_key_new (self->ctx, &self->sk), ==, CKKS_OK);
  self->modules = read_stack (paths);
  ckks_client_use_scales (self, CKKS_HELORA_SCALES_PLAIN);
  return self;
}

void
ckks_client_use_scales (CkksClient *self, CkksHeloraScales scales)
{
  g_clear_pointer (&self->layouts, g_ptr_array_unref);
  self->layouts = g_ptr_array_new_with_free_func ((GDestroyNotify) ckks_helora_layout_free);
  for (guint i = 0; i < self->modules->len; i++)
    {
      TsHeloraAdapterModule *m = g_ptr_array_index (self->modules, i);
      CkksHeloraLayout *l = NULL;
      g_assert_cmpint (ckks_helora_layout_new_scaled (self->ctx, m->d_in, m->rank, scales, &l),
                       ==, CKKS_OK);
      g_ptr_array_add (self->layouts, l);
    }
}

CkksClient *
ckks_client_new (const char *preset, const char *adapter_path)
{
  const char *paths[] = { adapter_path, NULL };
  const float weight = 1.0f;

  return ckks_client_new_stack (preset, paths, &weight);
}

void
ckks_client_free (CkksClient *self)
{
  g_ptr_array_unref (self->layouts);
  g_ptr_array_unref (self->modules);
  ckks_secret_key_free (self->sk);
  ckks_context_free (self->ctx);
  g_free (self->preset);
  g_free (self->adapter_path);
  g_strfreev (self->stack_paths);
  g_free (self->stack_weights);
  g_free (self->sha256);
  g_free (self);
}

TsHeloraFrame *
ckks_client_hello (CkksClient *self)
{
  TsHeloraFrame *frame = ts_helora_frame_new (TS_HELORA_FRAME_HELLO, 0);
  TsHeloraHello *h = &frame->u.hello;

  h->params_id = g_strdup (self->preset);
  memcpy (h->params_sha256, ckks_context_fingerprint (self->ctx), TS_HELORA_HASH_SIZE);
  h->adapter_id = ts_helora_adapter_id (self->adapter_path);
  memcpy (h->adapter_sha256, self->sha256[0], TS_HELORA_HASH_SIZE);
  for (guint k = 0; self->stack_paths != NULL && self->stack_paths[k] != NULL; k++)
    {
      g_autofree char *id = ts_helora_adapter_id (self->stack_paths[k]);
      ts_helora_hello_add_stacked (h, id, self->sha256[k], self->stack_weights[k]);
    }
  for (guint i = 0; i < self->modules->len; i++)
    g_ptr_array_add (h->modules,
                     g_strdup (((TsHeloraAdapterModule *) g_ptr_array_index (self->modules, i))->name));
  return frame;
}

TsHeloraRemote *
ckks_client_connect (CkksClient *self, const char *url)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) hello = ckks_client_hello (self);
  g_autoptr (TsHeloraFrame) ack = NULL;
  TsHeloraRemote *remote = ts_helora_remote_connect (url, 10000, &error);

  g_assert_no_error (error);
  ack = ts_helora_remote_hello (remote, &hello->u.hello, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (ack->u.ack.modules->len, ==, self->modules->len);
  return remote;
}

float *
ckks_client_random_h (CkksClient *self, guint module, GRand *rng)
{
  TsHeloraAdapterModule *m = g_ptr_array_index (self->modules, module);
  float *h = g_new (float, m->d_in);

  for (guint j = 0; j < m->d_in; j++)
    h[j] = (float) g_rand_double_range (rng, -1, 1);
  return h;
}

GPtrArray *
ckks_client_encrypt (CkksClient *self, guint module, const float *h, double *h_factor)
{
  const CkksHeloraLayout *l = g_ptr_array_index (self->layouts, module);
  gsize n = ckks_helora_layout_n_inputs (l);
  CkksCiphertext **in = NULL;
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);

  g_assert_cmpint (ckks_helora_ciphertexts_new (l, n, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (l, self->sk, h, in, n, h_factor), ==, CKKS_OK);
  for (gsize k = 0; k < n; k++)
    g_ptr_array_add (out, ts_helora_ckks_ciphertext_to_bytes (in[k], NULL));
  ckks_helora_ciphertexts_free (in, n);
  return out;
}

void
ckks_client_decrypt (CkksClient *self, const CkksSecretKey *key, guint module,
                     GPtrArray *blobs, double h_factor, double *u)
{
  const CkksHeloraLayout *l = g_ptr_array_index (self->layouts, module);
  gsize n = ckks_helora_layout_n_outputs (l);
  CkksCiphertext **out = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_cmpuint (blobs->len, ==, n);
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, n, &out), ==, CKKS_OK);
  for (gsize b = 0; b < n; b++)
    {
      g_assert_true (ts_helora_ckks_result_from_bytes (l, g_ptr_array_index (blobs, b), out[b],
                                                       &error));
      g_assert_no_error (error);
    }
  g_assert_cmpint (ckks_helora_decrypt (l, key ? key : self->sk, out, n, h_factor, u), ==, CKKS_OK);
  ckks_helora_ciphertexts_free (out, n);
}

double
ckks_client_error (CkksClient *self, guint module, const float *h, const double *u)
{
  TsHeloraAdapterModule *m = g_ptr_array_index (self->modules, module);
  double err = 0;

  for (guint i = 0; i < m->rank; i++)
    {
      double ref = 0;
      for (guint j = 0; j < m->d_in; j++)
        ref += (double) m->a[(gsize) i * m->d_in + j] * h[j];
      err = fmax (err, fabs (u[i] - ref));
    }
  return err;
}

void
ckks_client_assert_evaluates (CkksClient *self, TsHeloraRemote *remote, guint module,
                              GRand *rng)
{
  TsHeloraAdapterModule *m = g_ptr_array_index (self->modules, module);
  g_autofree float *h = ckks_client_random_h (self, module, rng);
  g_autofree double *u = g_new0 (double, m->rank);
  double hf = 1;
  g_autoptr (GPtrArray) cts = ckks_client_encrypt (self, module, h, &hf);
  g_autoptr (GError) error = NULL;
  guint16 index = (guint16) module;
  g_autoptr (TsHeloraFrame) result = ts_helora_remote_evaluate (remote, 7, &index, 1, cts, &error);
  TsHeloraModuleResult *mr;

  g_assert_no_error (error);
  mr = &g_array_index (result->u.result.modules, TsHeloraModuleResult, 0);
  g_assert_cmpuint (mr->module, ==, module);
  ckks_client_decrypt (self, NULL, module, mr->blobs, hf, u);
  g_assert_cmpfloat (ckks_client_error (self, module, h, u), <, 1e-6);
}
