/* ts-helora-ckks.h: glue between libtensafe-he and the HE-LoRA code: contexts, errors, wire.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Key-free: the server links this file. Thread-safe (no state).
 */
#pragma once

#include <glib.h>

#include "ckks-cipher.h"
#include "ckks-helora.h"
#include "ckks-params.h"

G_BEGIN_DECLS

#define TS_HELORA_DEFAULT_PRESET "default"

/* Sets @error (TS_HELORA_ERROR_INTERNAL, or BAD_CIPHERTEXT for a serialised
 * input that does not parse) and returns FALSE unless @status is CKKS_OK. */
gboolean ts_helora_ckks_check (CkksStatus status, const char *what, GError **error);

/* Builds the context of preset @name (TS_HELORA_ERROR_PARAMS if unknown). */
CkksContext *ts_helora_ckks_context_new (const char *name, GError **error);

/* Ciphertext wire format: the he library's versioned serialisation
 * (seed-compressed when the ciphertext is seeded). */
GBytes *ts_helora_ckks_ciphertext_to_bytes (const CkksCiphertext *ct, GError **error);
/* Parses @bytes into @ct (no allocation). Anything that is not a ciphertext
 * of @ct's context with exactly @limbs limbs is BAD_CIPHERTEXT. */
gboolean ts_helora_ckks_ciphertext_from_bytes (GBytes *bytes, CkksCiphertext *ct, guint limbs,
                                               GError **error);

/* Result ciphertexts on the wire: the he library's compact HE-LoRA result
 * format ("CKHR", what trace decryption reads, about half the bytes) when
 * @layout has one, else the full ciphertext. Both ends know the layout, so
 * both pick the same. */
GBytes *ts_helora_ckks_result_to_bytes (const CkksHeloraLayout *layout,
                                        const CkksCiphertext *ct, GError **error);
gboolean ts_helora_ckks_result_from_bytes (const CkksHeloraLayout *layout, GBytes *bytes,
                                           CkksCiphertext *ct, GError **error);

G_END_DECLS
