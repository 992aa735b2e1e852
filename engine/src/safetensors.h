/* safetensors.h: a bounds-checked, memory-mapped safetensors reader.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Layout: u64 little-endian header length N, N bytes of JSON
 * {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the data; offsets are relative to
 * the end of the header. Every tensor is checked to lie inside the data, to
 * have exactly shape x dtype-size bytes, and not to overlap another.
 *
 * Ownership: a SafetensorsFile owns its mapping and its tensor table; every
 * pointer it hands out is valid until lm_safetensors_close().
 * Thread-safety: read-only after opening; may be shared between threads.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SAFETENSORS_MAX_DIMS 8

typedef enum {
  SAFETENSORS_F64, SAFETENSORS_F32, SAFETENSORS_F16, SAFETENSORS_BF16,
  SAFETENSORS_I64, SAFETENSORS_I32, SAFETENSORS_I16, SAFETENSORS_I8,
  SAFETENSORS_U64, SAFETENSORS_U32, SAFETENSORS_U16, SAFETENSORS_U8,
  SAFETENSORS_BOOL, SAFETENSORS_F8_E4M3, SAFETENSORS_F8_E5M2,
} SafetensorsDtype;

typedef struct {
  const char *name;          /* NUL-terminated */
  SafetensorsDtype dtype;
  uint32_t n_dims;           /* 0 for a scalar */
  uint64_t shape[SAFETENSORS_MAX_DIMS];   /* outermost first (row-major) */
  uint64_t n_elements;
  uint64_t n_bytes;
  const void *data;          /* inside the mapping; may be unaligned */
} SafetensorsTensor;

typedef struct SafetensorsFile SafetensorsFile;

/* On failure returns an LmStatus (LM_ERR_IO, LM_ERR_FORMAT, or
 * LM_ERR_UNSUPPORTED for an unknown dtype) and, if @error_out is non-NULL, a
 * malloc()ed message naming what is wrong. */
LmStatus lm_safetensors_open (const char *path, SafetensorsFile **out, char **error_out);
/* Same over a caller-owned buffer that must outlive the file (for fuzzing). */
LmStatus lm_safetensors_open_memory (const void *data, size_t size, SafetensorsFile **out,
                                  char **error_out);
void lm_safetensors_close (SafetensorsFile *file);

size_t lm_safetensors_n_tensors (const SafetensorsFile *file);
/* Tensors in the order of their data offsets. */
const SafetensorsTensor *lm_safetensors_tensor (const SafetensorsFile *file, size_t index);
const SafetensorsTensor *lm_safetensors_find (const SafetensorsFile *file, const char *name);
/* A string from "__metadata__", or NULL. */
const char *lm_safetensors_metadata (const SafetensorsFile *file, const char *key);

const char *lm_safetensors_dtype_name (SafetensorsDtype dtype);
size_t lm_safetensors_dtype_size (SafetensorsDtype dtype);

/* Converts an F32, F16 or BF16 tensor to n_elements floats in @dst.
 * LM_ERR_INVALID_ARGUMENT for other dtypes. */
LmStatus lm_safetensors_read_f32 (const SafetensorsTensor *tensor, float *dst);

/* IEEE half and bfloat16 to float (exact). */
float lm_safetensors_f16_to_f32 (uint16_t h);
float lm_safetensors_bf16_to_f32 (uint16_t b);

#ifdef __cplusplus
}
#endif
