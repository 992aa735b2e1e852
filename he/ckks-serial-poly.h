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
CkksStatus ckks_get_object_head (CkksReader *r, const CkksContext *ctx,
                                 uint32_t *n_limbs, uint32_t *flags, double *scale);
