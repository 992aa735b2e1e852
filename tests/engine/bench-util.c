/* bench-util.c: random inputs shared by the benchmark programs.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"
#include "quant.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint64_t
bench_next_random (void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

uint8_t *
bench_random_weights (LmTensorType type, size_t bytes)
{
  uint8_t *w = malloc (bytes);
  if (w == NULL)
    return NULL;
  for (size_t i = 0; i + 8 <= bytes; i += 8)
    {
      uint64_t r = bench_next_random ();
      memcpy (w + i, &r, 8);
    }
  size_t bb = lm_type_block_bytes (type);
  uint16_t scale = lm_fp32_to_fp16 (0.01f);
  for (size_t off = 0; off + bb <= bytes; off += bb)
    switch (type)
      {
      case LM_TYPE_F32: { float f = (float) (bench_next_random () % 1000) * 1e-3f; memcpy (w + off, &f, 4); break; }
      case LM_TYPE_F16:
      case LM_TYPE_BF16: w[off + 1] = 0x3c; break;
      case LM_TYPE_Q4_0:
      case LM_TYPE_Q5_0:
      case LM_TYPE_Q8_0: memcpy (w + off, &scale, 2); break;
      case LM_TYPE_Q4_1:
      case LM_TYPE_Q5_1:
      case LM_TYPE_Q4_K:
      case LM_TYPE_Q5_K: memcpy (w + off, &scale, 2); memcpy (w + off + 2, &scale, 2); break;
      case LM_TYPE_Q2_K: memcpy (w + off + 80, &scale, 2); memcpy (w + off + 82, &scale, 2); break;
      case LM_TYPE_Q3_K: memcpy (w + off + 108, &scale, 2); break;
      case LM_TYPE_Q6_K: memcpy (w + off + 208, &scale, 2); break;
      default: break;
      }
  return w;
}
