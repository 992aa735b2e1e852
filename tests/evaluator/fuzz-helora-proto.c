/* fuzz-helora-proto.c: libFuzzer target for the evaluator protocol decoder.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Build with CC=clang meson setup -Dfuzzers=true; run build/tests/evaluator/fuzz-helora-proto.
 * Any input must decode or fail cleanly; whatever decodes must re-encode to
 * the very same bytes (the format has one encoding per frame), a stacked
 * hello must hold what the server relies on, and a decoded privacy status
 * must hold amounts a client can show (finite, not negative, a budget only with its
 * flag).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ts-helora-proto.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check_privacy_status (const TsHeloraPrivacyStatus *p)
{
  g_assert_true (isfinite (p->rho_spent) && p->rho_spent >= 0.0);
  g_assert_true (isfinite (p->epsilon_spent) && p->epsilon_spent >= 0.0);
  if (p->flags & TS_HELORA_PRIVACY_BUDGET)
    g_assert_true (p->epsilon_budget > 0.0 && isfinite (p->epsilon_budget)
                   && p->delta > 0.0 && p->delta < 1.0);
  else
    g_assert_true (p->epsilon_budget == 0.0 && p->delta == 0.0);
}

/* 2 … TS_HELORA_MAX_STACK members, the first being the hello's adapter,
 * finite weights. */
static void
check_stack (const TsHeloraHello *h)
{
  const TsHeloraStackMember *first;

  if (h->stack->len == 0)
    return;
  g_assert_cmpuint (h->stack->len, >=, 2);
  g_assert_cmpuint (h->stack->len, <=, TS_HELORA_MAX_STACK);
  first = &g_array_index (h->stack, TsHeloraStackMember, 0);
  g_assert_cmpstr (first->id, ==, h->adapter_id);
  g_assert_true (memcmp (first->sha256, h->adapter_sha256, TS_HELORA_HASH_SIZE) == 0);
  for (guint i = 0; i < h->stack->len; i++)
    g_assert_true (isfinite (g_array_index (h->stack, TsHeloraStackMember, i).weight));
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GBytes) message = g_bytes_new_static (data, size);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_decode (message, 1 << 20, &error);
  g_autoptr (GBytes) again = NULL;

  if (frame == NULL)
    {
      g_assert_nonnull (error);
      g_assert_true (error->domain == TS_HELORA_ERROR);
      return 0;
    }
  if (frame->type == TS_HELORA_FRAME_PRIVACY_STATUS)
    check_privacy_status (&frame->u.privacy);
  if (frame->type == TS_HELORA_FRAME_HELLO)
    check_stack (&frame->u.hello);
  again = ts_helora_frame_encode (frame, NULL);
  g_assert_nonnull (again);
  g_assert_true (g_bytes_equal (again, message));
  return 0;
}
