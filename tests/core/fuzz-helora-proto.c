/* fuzz-helora-proto.c: libFuzzer target for the evaluator protocol decoder.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Build with CC=clang meson setup -Dfuzzers=true; run build/tests/core/fuzz-helora-proto.
 * Any input must decode or fail cleanly; whatever decodes must re-encode to
 * the very same bytes (the format has one encoding per frame).
 */
#include <stdint.h>
#include <string.h>

#include "ts-helora-proto.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

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
  again = ts_helora_frame_encode (frame, NULL);
  g_assert_nonnull (again);
  g_assert_true (g_bytes_equal (again, message));
  return 0;
}
