/* gguf.h: a bounds-checked, memory-mapped GGUF v3 reader.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Ownership: a GgufFile owns its mapping; every pointer it hands out (strings,
 * array data, tensor data) stays valid until lm_gguf_close(). Strings are NOT
 * NUL-terminated in the file: use the (data, len) pairs.
 * Thread-safety: after lm_gguf_open() returns, a GgufFile is read-only and may be
 * used from any number of threads at once.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LM_GGUF_TYPE_UINT8 = 0, LM_GGUF_TYPE_INT8 = 1, LM_GGUF_TYPE_UINT16 = 2,
  LM_GGUF_TYPE_INT16 = 3, LM_GGUF_TYPE_UINT32 = 4, LM_GGUF_TYPE_INT32 = 5,
  LM_GGUF_TYPE_FLOAT32 = 6, LM_GGUF_TYPE_BOOL = 7, LM_GGUF_TYPE_STRING = 8,
  LM_GGUF_TYPE_ARRAY = 9, LM_GGUF_TYPE_UINT64 = 10, LM_GGUF_TYPE_INT64 = 11,
  LM_GGUF_TYPE_FLOAT64 = 12,
} GgufValueType;

/* ggml tensor types that this runtime reads (numbering as in GGUF). */
typedef enum {
  LM_TYPE_F32 = 0, LM_TYPE_F16 = 1, LM_TYPE_Q4_0 = 2, LM_TYPE_Q4_1 = 3, LM_TYPE_Q5_0 = 6,
  LM_TYPE_Q5_1 = 7, LM_TYPE_Q8_0 = 8, LM_TYPE_Q2_K = 10, LM_TYPE_Q3_K = 11, LM_TYPE_Q4_K = 12,
  LM_TYPE_Q5_K = 13, LM_TYPE_Q6_K = 14, LM_TYPE_BF16 = 30,
} LmTensorType;

typedef struct {
  const char *data;   /* not NUL-terminated */
  uint64_t len;
} GgufString;

typedef struct {
  GgufString name;
  uint32_t n_dims;
  uint64_t ne[4];      /* ne[0] is the contiguous dimension; unused dims are 1 */
  LmTensorType type;
  uint64_t offset;     /* relative to the start of the data section */
  uint64_t n_bytes;
  const void *data;    /* points into the mapping, bounds already checked */
} GgufTensorInfo;

typedef struct GgufFile GgufFile;

/* Opens and validates @path. On failure returns an LmStatus (LM_ERR_IO: cannot
 * read the file; LM_ERR_FORMAT: corrupt or truncated; LM_ERR_UNSUPPORTED: a
 * tensor type this runtime lacks) and, if @error_out is non-NULL, a newly
 * allocated message naming what is wrong (free() it). */
LmStatus lm_gguf_open (const char *path, GgufFile **out, char **error_out);
/* Same, over a caller-owned buffer that must outlive the GgufFile (for fuzzing). */
LmStatus lm_gguf_open_memory (const void *data, size_t size, GgufFile **out, char **error_out);
void lm_gguf_close (GgufFile *file);

uint32_t lm_gguf_version (const GgufFile *file);
uint64_t lm_gguf_n_kv (const GgufFile *file);
uint64_t lm_gguf_n_tensors (const GgufFile *file);

/* Metadata lookup by key; returns -1 when absent. */
int64_t lm_gguf_find_key (const GgufFile *file, const char *key);
GgufString lm_gguf_key_name (const GgufFile *file, int64_t index);
GgufValueType lm_gguf_value_type (const GgufFile *file, int64_t index);
/* Typed getters return false when the key is absent or of another type.
 * Integer getters accept any integer type whose value fits; lm_gguf_get_f32
 * also reads an f64 (rounded). Tensors with a zero dimension, unknown types
 * or rows that are not whole blocks are rejected when the file is opened. */
bool lm_gguf_get_u32 (const GgufFile *file, const char *key, uint32_t *out);
bool lm_gguf_get_u64 (const GgufFile *file, const char *key, uint64_t *out);
bool lm_gguf_get_i32 (const GgufFile *file, const char *key, int32_t *out);
bool lm_gguf_get_f32 (const GgufFile *file, const char *key, float *out);
bool lm_gguf_get_bool (const GgufFile *file, const char *key, bool *out);
bool lm_gguf_get_string (const GgufFile *file, const char *key, GgufString *out);
/* Arrays: element type, count, and for numeric arrays a pointer to the raw
 * little-endian elements; for string arrays use lm_gguf_get_array_string(). */
bool lm_gguf_get_array (const GgufFile *file, const char *key, GgufValueType *elem_type,
                     uint64_t *count, const void **data);
bool lm_gguf_get_array_string (const GgufFile *file, const char *key, uint64_t i, GgufString *out);
/* Numeric array elements returned by lm_gguf_get_array() are a naturally aligned
 * copy owned by the GgufFile (so int32_t / float casts are safe); string arrays
 * and arrays of arrays return data = NULL. */

/* Tensor lookup by name; NULL when absent. */
const GgufTensorInfo *lm_gguf_find_tensor (const GgufFile *file, const char *name);
const GgufTensorInfo *lm_gguf_tensor (const GgufFile *file, uint64_t index);

/* Layout facts. */
uint32_t lm_gguf_alignment (const GgufFile *file);
uint64_t lm_gguf_data_offset (const GgufFile *file);   /* file offset of the data section */
/* The offset in the file of @p, a pointer into the mapping of a file opened
 * with lm_gguf_open(); false for any other pointer or a memory GgufFile. */
bool lm_gguf_file_offset (const GgufFile *file, const void *p, uint64_t *offset);
/* Block size (values) and block bytes of @type; false for a type we do not know. */
bool lm_gguf_type_layout (LmTensorType type, uint32_t *block_values, uint32_t *block_bytes);
/* "F32", "Q4_K", ...; "?" for a type we do not know. */
const char *lm_gguf_type_name (LmTensorType type);
const char *lm_gguf_value_type_name (GgufValueType type);
/* True when @s equals the NUL-terminated @cstr. */
bool lm_gguf_string_eq (GgufString s, const char *cstr);

#ifdef __cplusplus
}
#endif
