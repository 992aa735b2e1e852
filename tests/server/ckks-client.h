/* ckks-client.h: a test client with a real CKKS key talking to the evaluator server.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-helora.h"
#include "ckks-keys.h"
#include "ts-helora-remote.h"

G_BEGIN_DECLS

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  char *preset;
  char *adapter_path;
  GPtrArray *modules;          /* of TsHeloraAdapterModule *: A, for references */
  GPtrArray *layouts;          /* of CkksHeloraLayout *, per module */
  GStrv stack_paths;           /* a stacked client's adapters; NULL: one adapter */
  float *stack_weights;
  /* the adapters' SHA-256 when the client was made: its hellos name those
   * versions even after a file is replaced */
  guint8 (*sha256)[TS_HELORA_HASH_SIZE];
} CkksClient;

/* A fresh key under @preset; the adapter's A matrices read from @adapter_path. */
CkksClient *ckks_client_new (const char *preset, const char *adapter_path);
/* The same for a stack of the NULL-ended @paths with @weights: its hello
 * names them all, and the reference A of a module is its adapters' A rows
 * one after another (built here, not by the engine's stacking). */
CkksClient *ckks_client_new_stack (const char *preset, const char *const *paths,
                                   const float *weights);
void ckks_client_free (CkksClient *self);

/* Layouts at @scales from now on (plain after ckks_client_new; private for
 * a private hello with split scales). */
void ckks_client_use_scales (CkksClient *self, CkksHeloraScales scales);

/* A hello for every module of the adapter. */
TsHeloraFrame *ckks_client_hello (CkksClient *self);
/* Connects to @url and says hello; asserts success. */
TsHeloraRemote *ckks_client_connect (CkksClient *self, const char *url);

/* Random h for @module (|h| <= 1, length d_in). */
float *ckks_client_random_h (CkksClient *self, guint module, GRand *rng);
/* Encrypts h under the client's key: serialised input ciphertexts. */
GPtrArray *ckks_client_encrypt (CkksClient *self, guint module, const float *h, double *h_factor);
/* Decrypts @blobs (a result's ciphertexts) with @key (NULL: own key) into u. */
void ckks_client_decrypt (CkksClient *self, const CkksSecretKey *key, guint module,
                          GPtrArray *blobs, double h_factor, double *u);
/* max |u − A·h| against a schoolbook product. */
double ckks_client_error (CkksClient *self, guint module, const float *h, const double *u);

/* Encrypt, evaluate remotely, decrypt, compare: asserts error < 1e-6. */
void ckks_client_assert_evaluates (CkksClient *self, TsHeloraRemote *remote, guint module,
                                   GRand *rng);

G_END_DECLS
