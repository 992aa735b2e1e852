/* he-evaluator-link.c: an evaluator built like tensafe-he-server: parameters,
 * a plan, deserialise, evaluate, serialise. The test that runs `nm` on it
 * checks that no secret-key code was linked in.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <stdlib.h>

#include "ckks-helora.h"
#include "ckks-params.h"
#include "ckks-serial.h"

int
main (int argc, char **argv)
{
  CkksParams p;
  CkksContext *ctx;
  CkksHeloraPlan *plan;
  CkksCiphertext **in, **out;
  float *a = calloc (4 * 2048, sizeof (float));
  if (!a)
    return 1;
  a[0] = 0.5f;
  a[2049] = -0.25f;
  if (ckks_params_preset ("fast", &p) != CKKS_OK || ckks_context_new (&p, &ctx) != CKKS_OK
      || ckks_helora_plan_new (ctx, 2048, 4, a, &plan) != CKKS_OK)
    return 1;
  free (a);
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  size_t n_out = ckks_helora_layout_n_outputs (l);
  if (ckks_helora_ciphertexts_new (l, 1, &in) != CKKS_OK
      || ckks_helora_ciphertexts_new (l, n_out, &out) != CKKS_OK)
    return 1;
  /* a request that is not a ciphertext is refused, the server goes on */
  const uint8_t junk[16] = "not a ciphertex";
  if (ckks_ciphertext_deserialize_into (in[0], junk, sizeof junk) == CKKS_OK)
    return 1;
  /* an all-zero input at the layout's scale (a client sends an encryption
   * of h there); the evaluator refuses any other scale */
  if (ckks_helora_evaluate (plan, in, 1, out, n_out) != CKKS_ERR_SCALE
      || ckks_mul_scalar (in[0], in[0], 1.0, 0x1p48) != CKKS_OK)
    return 1;
  size_t len = ckks_ciphertext_serialized_size (in[0]);
  uint8_t *buf = malloc (len);
  if (!buf || ckks_ciphertext_serialize (in[0], buf, len) != CKKS_OK
      || ckks_ciphertext_deserialize_into (in[0], buf, len) != CKKS_OK
      || ckks_helora_evaluate (plan, in, 1, out, n_out) != CKKS_OK)
    return 1;
  free (buf);
  /* results go back in the compact format */
  len = ckks_helora_result_serialized_size (l);
  buf = malloc (len);
  if (!buf || ckks_helora_result_serialize (l, out[0], buf, len) != CKKS_OK)
    return 1;
  free (buf);
  ckks_helora_ciphertexts_free (in, 1);
  ckks_helora_ciphertexts_free (out, n_out);
  ckks_helora_plan_free (plan);
  ckks_context_free (ctx);
  puts ("evaluator ok");
  return 0;
}
