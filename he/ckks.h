/* ckks.h: public API of libtensafe-he, an RNS-CKKS engine for HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Plain C17; no GLib. Every function returns a CkksStatus; ckks_status_message()
 * turns one into text. Contexts are read-only after creation and safe to share
 * between threads.
 */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CKKS_OK = 0,
  CKKS_ERR_INVALID_ARGUMENT,
  CKKS_ERR_NO_MEMORY,
} CkksStatus;

/* Returns a static, human-readable description of @status. */
const char *ckks_status_message (CkksStatus status);

/* Returns the library version as a static string. */
const char *ckks_version (void);

#ifdef __cplusplus
}
#endif
