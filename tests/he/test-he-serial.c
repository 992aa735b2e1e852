/* test-he-serial.c: format round trips; every truncation, an extra byte and
 * flipped bytes are rejected with an error code; sealed keys.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ckks.h"
#include "he-test-common.h"

static GRand *rng;

/* Evaluates with the counts the plan's layout says. */
static CkksStatus
evaluate_all (const CkksHeloraPlan *plan, CkksCiphertext *const *in, CkksCiphertext *const *out)
{
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  return ckks_helora_evaluate (plan, in, ckks_helora_layout_n_inputs (l), out,
                               ckks_helora_layout_n_outputs (l));
}

typedef CkksStatus (*Parse) (const CkksContext *ctx, const uint8_t *data, size_t len);

static CkksStatus
parse_params (const CkksContext *ctx, const uint8_t *data, size_t len)
{
  CkksParams p;
  return ckks_params_deserialize (data, len, &p);
}

static CkksStatus
parse_ct (const CkksContext *ctx, const uint8_t *data, size_t len)
{
  CkksCiphertext *ct = NULL;
  CkksStatus st = ckks_ciphertext_deserialize (ctx, data, len, &ct);
  ckks_ciphertext_free (ct);
  return st;
}

static CkksStatus
parse_pt (const CkksContext *ctx, const uint8_t *data, size_t len)
{
  CkksPlaintext *pt = NULL;
  CkksStatus st = ckks_plaintext_deserialize (ctx, data, len, &pt);
  ckks_plaintext_free (pt);
  return st;
}

static CkksStatus
parse_pk (const CkksContext *ctx, const uint8_t *data, size_t len)
{
  CkksPublicKey *pk = NULL;
  CkksStatus st = ckks_public_key_deserialize (ctx, data, len, &pk);
  ckks_public_key_free (pk);
  return st;
}

static const CkksHeloraLayout *result_layout;

static CkksStatus
parse_result (const CkksContext *ctx, const uint8_t *data, size_t len)
{
  CkksCiphertext **ct = NULL;
  CkksStatus st = ckks_helora_ciphertexts_new (result_layout, 1, &ct);
  if (st == CKKS_OK)
    st = ckks_helora_result_deserialize_into (result_layout, ct[0], data, len);
  ckks_helora_ciphertexts_free (ct, 1);
  return st;
}

static const uint8_t seal_key[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

static CkksStatus
parse_sealed (const CkksContext *ctx, const uint8_t *data, size_t len)
{
  CkksSecretKey *sk = NULL;
  CkksStatus st = ckks_secret_key_unseal (ctx, seal_key, data, len, &sk);
  ckks_secret_key_free (sk);
  return st;
}

/* The blob parses; every shorter prefix, one extra byte and flipped bytes
 * (all of them if @all_flips, else the first and last 64 and 3000 random
 * ones) give an error, never a crash. */
static void
check_rejections (const CkksContext *ctx, Parse parse, const uint8_t *blob, size_t len,
                  gboolean all_flips)
{
  g_assert_cmpint (parse (ctx, blob, len), ==, CKKS_OK);
  for (size_t cut = 0; cut < len; cut++)
    {
      uint8_t *copy = g_memdup2 (blob, cut ? cut : 1);   /* exact-size buffer for ASan */
      g_assert_cmpint (parse (ctx, copy, cut), !=, CKKS_OK);
      g_free (copy);
    }
  uint8_t *longer = g_malloc (len + 1);
  memcpy (longer, blob, len);
  longer[len] = 0;
  g_assert_cmpint (parse (ctx, longer, len + 1), ==, CKKS_ERR_FORMAT);
  g_free (longer);
  uint8_t *copy = g_memdup2 (blob, len);
  size_t n_flips = all_flips ? len : 3128;
  for (size_t f = 0; f < n_flips; f++)
    {
      size_t pos = all_flips ? f : f < 64 ? f : f < 128 ? len - 1 - (f - 64)
                                                : (size_t) g_rand_int_range (rng, 0, (gint32) len);
      uint8_t mask = (uint8_t) (1u << g_rand_int_range (rng, 0, 8));
      copy[pos] ^= mask;
      CkksStatus st = parse (ctx, copy, len);
      if (st == CKKS_OK)
        g_error ("flipping bit %#x of byte %zu of %zu was accepted", mask, pos, len);
      copy[pos] ^= mask;
    }
  g_free (copy);
}

static CkksContext *
small_context (void)
{
  const unsigned bits[] = { 50 };
  CkksParams p;
  CkksContext *ctx;
  g_assert_cmpint (ckks_params_generate (12, bits, 1, &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &ctx), ==, CKKS_OK);
  return ctx;
}

static uint8_t *
serialize_ct (const CkksCiphertext *ct, size_t *len)
{
  *len = ckks_ciphertext_serialized_size (ct);
  uint8_t *buf = g_malloc (*len);
  g_assert_cmpint (ckks_ciphertext_serialize (ct, buf, *len), ==, CKKS_OK);
  return buf;
}

static void
test_params (void)
{
  CkksParams p, back;
  g_assert_cmpint (ckks_params_preset ("default", &p), ==, CKKS_OK);
  size_t len = ckks_params_serialized_size (&p);
  uint8_t *buf = g_malloc (len);
  g_assert_cmpint (ckks_params_serialize (&p, buf, len), ==, CKKS_OK);
  g_assert_cmpint (ckks_params_deserialize (buf, len, &back), ==, CKKS_OK);
  g_assert_cmpmem (&p, sizeof p, &back, sizeof back);
  check_rejections (NULL, parse_params, buf, len, TRUE);
  g_free (buf);
  /* a well-formed blob of insecure parameters is refused as such */
  const unsigned bits[] = { 60, 60, 60 };
  g_assert_cmpint (ckks_params_generate (12, bits, 1, &p), ==, CKKS_OK);
  CkksParams big = p;
  big.n_moduli = 2;
  big.moduli[1] = 1152921504606830593ull;  /* another 60-bit prime = 1 mod 8192 */
  len = ckks_params_serialized_size (&big);
  buf = g_malloc (len);
  g_assert_cmpint (ckks_params_serialize (&big, buf, len), ==, CKKS_OK);
  CkksStatus st = ckks_params_deserialize (buf, len, &back);
  g_assert_true (st == CKKS_ERR_INSECURE_PARAMETERS || st == CKKS_ERR_FORMAT);
  g_free (buf);
}

static void
test_ciphertexts (void)
{
  CkksContext *ctx = small_context ();
  size_t slots = ckks_context_slots (ctx);
  double *x = he_test_uniform (rng, slots, 1), *out = g_new (double, slots);
  CkksSecretKey *sk;
  CkksCiphertext *ct, *back;
  CkksPlaintext *pt;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_ciphertext_new (ctx, 1, &ct), ==, CKKS_OK);
  g_assert_cmpint (ckks_plaintext_new (ctx, 1, &pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_encrypt_values_sk (sk, x, NULL, slots, 0x1p30, ct), ==, CKKS_OK);
  size_t len, plain_len;
  uint8_t *seeded = serialize_ct (ct, &len);
  g_assert_cmpint (ckks_ciphertext_deserialize (ctx, seeded, len, &back), ==, CKKS_OK);
  g_assert_true (ckks_ciphertext_is_seeded (back));
  g_assert_cmpint (ckks_decrypt (sk, back, pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_decode (pt, out, NULL, slots), ==, CKKS_OK);
  g_assert_cmpfloat (he_test_max_abs_diff (out, x, slots), <, 1e-4);
  check_rejections (ctx, parse_ct, seeded, len, TRUE);
  /* an unseeded ciphertext (after an operation) carries c1 instead of a seed */
  g_assert_cmpint (ckks_add (back, back, ct), ==, CKKS_OK);
  uint8_t *full = serialize_ct (back, &plain_len);
  g_assert_cmpuint (plain_len, ==, len - 32 + 4096 * 8);
  CkksCiphertext *back2;
  g_assert_cmpint (ckks_ciphertext_deserialize (ctx, full, plain_len, &back2), ==, CKKS_OK);
  g_assert_cmpint (ckks_decrypt (sk, back2, pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_decode (pt, out, NULL, slots), ==, CKKS_OK);
  for (size_t i = 0; i < slots; i++)
    x[i] *= 2;
  g_assert_cmpfloat (he_test_max_abs_diff (out, x, slots), <, 1e-4);
  check_rejections (ctx, parse_ct, full, plain_len, FALSE);
  /* plaintexts */
  size_t pt_len = ckks_plaintext_serialized_size (pt);
  uint8_t *pt_blob = g_malloc (pt_len);
  g_assert_cmpint (ckks_plaintext_serialize (pt, pt_blob, pt_len), ==, CKKS_OK);
  check_rejections (ctx, parse_pt, pt_blob, pt_len, TRUE);
  /* another context's objects are refused */
  CkksContext *other;
  CkksParams p;
  g_assert_cmpint (ckks_params_preset ("fast", &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &other), ==, CKKS_OK);
  g_assert_cmpint (parse_ct (other, seeded, len), ==, CKKS_ERR_MISMATCH);
  ckks_context_free (other);
  g_free (pt_blob);
  g_free (seeded);
  g_free (full);
  ckks_ciphertext_free (back2);
  ckks_ciphertext_free (back);
  ckks_ciphertext_free (ct);
  ckks_plaintext_free (pt);
  ckks_secret_key_free (sk);
  g_free (x); g_free (out);
  ckks_context_free (ctx);
}

static void
test_keys (void)
{
  CkksContext *ctx = small_context ();
  size_t slots = ckks_context_slots (ctx);
  double *x = he_test_uniform (rng, slots, 1), *out = g_new (double, slots);
  CkksSecretKey *sk, *sk2;
  CkksPublicKey *pk, *pk2;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_public_key_new (sk, &pk), ==, CKKS_OK);
  size_t len = ckks_public_key_serialized_size (pk);
  uint8_t *blob = g_malloc (len);
  g_assert_cmpint (ckks_public_key_serialize (pk, blob, len), ==, CKKS_OK);
  g_assert_cmpint (ckks_public_key_deserialize (ctx, blob, len, &pk2), ==, CKKS_OK);
  check_rejections (ctx, parse_pk, blob, len, FALSE);

  uint8_t *sealed;
  size_t sealed_len;
  g_assert_cmpint (ckks_secret_key_seal (sk, seal_key, &sealed, &sealed_len), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_unseal (ctx, seal_key, sealed, sealed_len, &sk2), ==, CKKS_OK);
  check_rejections (ctx, parse_sealed, sealed, sealed_len, TRUE);
  uint8_t wrong[32];
  memcpy (wrong, seal_key, 32);
  wrong[31] ^= 1;
  CkksSecretKey *none = NULL;
  g_assert_cmpint (ckks_secret_key_unseal (ctx, wrong, sealed, sealed_len, &none), ==, CKKS_ERR_AUTH);
  g_assert_null (none);

  /* encrypt with the deserialised pk, decrypt with the unsealed sk */
  CkksCiphertext *ct;
  CkksPlaintext *pt;
  g_assert_cmpint (ckks_ciphertext_new (ctx, 1, &ct), ==, CKKS_OK);
  g_assert_cmpint (ckks_plaintext_new (ctx, 1, &pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_encrypt_values_pk (pk2, x, NULL, slots, 0x1p30, ct), ==, CKKS_OK);
  g_assert_cmpint (ckks_decrypt (sk2, ct, pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_decode (pt, out, NULL, slots), ==, CKKS_OK);
  g_assert_cmpfloat (he_test_max_abs_diff (out, x, slots), <, 1e-3);
  ckks_ciphertext_free (ct);
  ckks_plaintext_free (pt);
  free (sealed);
  g_free (blob);
  ckks_public_key_free (pk);
  ckks_public_key_free (pk2);
  ckks_secret_key_free (sk);
  ckks_secret_key_free (sk2);
  g_free (x); g_free (out);
  ckks_context_free (ctx);
}

/* Compact HE-LoRA results decrypt to exactly the same u, are about half the
 * size, are refused by every other operation, and reject corruption. */
static void
test_helora_results (void)
{
  const unsigned bits[] = { 50, 50 };
  CkksParams p;
  CkksContext *ctx;
  g_assert_cmpint (ckks_params_generate (12, bits, 2, &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &ctx), ==, CKKS_OK);
  const size_t d = 1000, r = 3;
  float *a = g_new (float, r * d), *h = g_new (float, d);
  for (size_t i = 0; i < r * d; i++)
    a[i] = (float) g_rand_double_range (rng, -0.1, 0.1);
  for (size_t i = 0; i < d; i++)
    h[i] = (float) g_rand_double_range (rng, -1, 1);
  CkksSecretKey *sk;
  CkksHeloraPlan *plan;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  size_t b = ckks_helora_layout_n_outputs (l);
  CkksCiphertext **in, **out, **back;
  double factor, u[3], u_back[3];
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, 1, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &back), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (l, sk, h, in, ckks_helora_layout_n_inputs (l), &factor), ==, CKKS_OK);
  g_assert_cmpint (evaluate_all (plan, in, out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt (l, sk, out, ckks_helora_layout_n_outputs (l), factor, u), ==, CKKS_OK);
  size_t len = ckks_helora_result_serialized_size (l);
  g_assert_cmpuint (len, <, ckks_ciphertext_serialized_size (out[0]) / 2 + 256);
  uint8_t *blob = g_malloc (len);
  for (size_t i = 0; i < b; i++)
    {
      g_assert_cmpint (ckks_helora_result_serialize (l, out[i], blob, len), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_result_deserialize_into (l, back[i], blob, len), ==, CKKS_OK);
    }
  g_assert_cmpint (ckks_helora_decrypt (l, sk, back, ckks_helora_layout_n_outputs (l), factor, u_back), ==, CKKS_OK);
  g_assert_cmpmem (u, sizeof u, u_back, sizeof u_back);
  /* a trace-only ciphertext is good for nothing else */
  CkksPlaintext *pt;
  g_assert_cmpint (ckks_plaintext_new (ctx, 2, &pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_decrypt (sk, back[0], pt), ==, CKKS_ERR_MISMATCH);
  g_assert_cmpint (ckks_add (out[0], back[0], out[0]), ==, CKKS_ERR_MISMATCH);
  g_assert_cmpint (ckks_rescale (back[0]), ==, CKKS_ERR_MISMATCH);
  g_assert_cmpint (evaluate_all (plan, back, out), ==, CKKS_ERR_MISMATCH);
  size_t full = ckks_ciphertext_serialized_size (back[0]);
  uint8_t *full_blob = g_malloc (full);
  g_assert_cmpint (ckks_ciphertext_serialize (back[0], full_blob, full), ==, CKKS_ERR_MISMATCH);
  g_free (full_blob);
  ckks_plaintext_free (pt);
  result_layout = l;
  check_rejections (ctx, parse_result, blob, len, FALSE);
  /* layouts decoded in full have no compact form */
  CkksHeloraLayout *tiny;
  g_assert_cmpint (ckks_helora_layout_new (ctx, 3, 2, &tiny), ==, CKKS_OK);
  g_assert_cmpuint (ckks_helora_result_serialized_size (tiny), ==, 0);
  ckks_helora_layout_free (tiny);
  g_free (blob);
  ckks_helora_ciphertexts_free (in, 1);
  ckks_helora_ciphertexts_free (out, b);
  ckks_helora_ciphertexts_free (back, b);
  ckks_helora_plan_free (plan);
  ckks_secret_key_free (sk);
  g_free (a); g_free (h);
  ckks_context_free (ctx);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = he_test_rng_new ();
  g_test_add_func ("/he/serial/params", test_params);
  g_test_add_func ("/he/serial/ciphertexts", test_ciphertexts);
  g_test_add_func ("/he/serial/keys", test_keys);
  g_test_add_func ("/he/serial/helora-results", test_helora_results);
  int rc = g_test_run ();
  g_rand_free (rng);
  return rc;
}
