/* ckks-serial-poly.h: body pieces shared by the object formats (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-objects.h"
#include "ckks-serial-io.h"

size_t ckks_poly_serialized_bytes (const CkksContext *ctx, uint32_t n_limbs);
void ckks_put_poly (CkksWriter *w, const CkksContext *ctx, const uint64_t *poly,
                    uint32_t n_limbs);
/* False if short or any residue is not below its prime. */
bool ckks_get_poly (CkksReader *r, const CkksContext *ctx, uint64_t *poly,
                    uint32_t n_limbs);
void ckks_put_object_head (CkksWriter *w, const CkksContext *ctx, uint32_t n_limbs,
                           uint32_t flags, double scale);
typedef struct {
  uint32_t n_limbs, flags;
  double scale;
} CkksObjectHead;

/* Opens the frame (ckks_frame_open) and reads the object head, checking the
 * fingerprint against @ctx, the limb count and the scale; @body is left at
 * the residues. */
CkksStatus ckks_open_object (const uint8_t *data, size_t len, const char magic[4],
                             const CkksContext *ctx, CkksReader *body,
                             CkksObjectHead *head);
