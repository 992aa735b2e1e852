/* lm.h: public API of libtensafe-engine, a Qwen3.5 runtime.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Plain C17 + pthreads; no GLib. Functions return an LmStatus; lm_status_message()
 * turns one into text.
 */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LM_OK = 0,
  LM_ERR_INVALID_ARGUMENT,
  LM_ERR_NO_MEMORY,
} LmStatus;

/* Returns a static, human-readable description of @status. */
const char *lm_status_message (LmStatus status);

#ifdef __cplusplus
}
#endif
