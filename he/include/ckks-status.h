/* ckks-status.h: status codes returned by every libtensafe-he function.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CKKS_OK = 0,
  CKKS_ERR_INVALID_ARGUMENT,  /* NULL pointer, out-of-range size, bad name */
  CKKS_ERR_NO_MEMORY,
  CKKS_ERR_INSECURE_PARAMETERS, /* log2 Q above the HE Standard 128-bit bound */
  CKKS_ERR_NO_PRIME,          /* not enough NTT-friendly primes of that size */
  CKKS_ERR_MISMATCH,          /* objects from different contexts or shapes */
  CKKS_ERR_LEVEL,             /* operands at incompatible levels */
  CKKS_ERR_SCALE,             /* operands at different scales, or overflow */
  CKKS_ERR_TRUNCATED,         /* serialised input shorter than its header says */
  CKKS_ERR_FORMAT,            /* bad magic, field out of range, trailing bytes */
  CKKS_ERR_VERSION,           /* serialised by an unknown format version */
  CKKS_ERR_CHECKSUM,          /* serialised body does not match its checksum */
  CKKS_ERR_AUTH,              /* sealed key: wrong key or tampered data */
  CKKS_ERR_RANDOM,            /* the OpenSSL CSPRNG failed */
  CKKS_ERR_CRYPTO,            /* another OpenSSL failure */
  CKKS_ERR_UNSUPPORTED,       /* backend or feature not available */
  CKKS_ERR_DEVICE,            /* the GPU failed or ran out of memory */
} CkksStatus;

/* Returns a static, human-readable description of @status. */
const char *ckks_status_message (CkksStatus status);

/* Returns the library version as a static string. */
const char *ckks_version (void);

#ifdef __cplusplus
}
#endif
