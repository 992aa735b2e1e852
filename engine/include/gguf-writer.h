/* gguf-writer.h: writes GGUF v3 files, streaming the tensor data.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Usage: add metadata and declare every tensor (name, type, shape), then
 * lm_gguf_writer_begin() writes the header and tensor infos, lm_gguf_writer_write()
 * appends the tensors' bytes in declaration order in chunks of any size (the
 * writer inserts the alignment padding between tensors), and
 * lm_gguf_writer_finish() checks that every byte came and closes the file.
 * Multi-gigabyte models can thus be written without holding them in memory.
 *
 * Ownership: the writer copies every key, string and array it is given.
 * Thread-safety: one writer per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GgufWriter GgufWriter;

GgufWriter *lm_gguf_writer_new (void);
/* Closes (and leaves incomplete) a file that was not finished. */
void lm_gguf_writer_free (GgufWriter *writer);

/* Alignment of the tensor data (power of two; default 32). A value other than
 * 32 is also recorded as general.alignment. Must precede lm_gguf_writer_add_tensor(). */
LmStatus lm_gguf_writer_set_alignment (GgufWriter *writer, uint32_t alignment);

/* Metadata, in the order given. A key added twice is LM_ERR_INVALID_ARGUMENT. */
LmStatus lm_gguf_writer_add_u32 (GgufWriter *writer, const char *key, uint32_t value);
LmStatus lm_gguf_writer_add_i32 (GgufWriter *writer, const char *key, int32_t value);
LmStatus lm_gguf_writer_add_u64 (GgufWriter *writer, const char *key, uint64_t value);
LmStatus lm_gguf_writer_add_f32 (GgufWriter *writer, const char *key, float value);
LmStatus lm_gguf_writer_add_bool (GgufWriter *writer, const char *key, bool value);
LmStatus lm_gguf_writer_add_string (GgufWriter *writer, const char *key, const char *value);
/* @elem_type: a fixed-size type; @data: @count little-endian elements. */
LmStatus lm_gguf_writer_add_array (GgufWriter *writer, const char *key, GgufValueType elem_type,
                                const void *data, uint64_t count);
LmStatus lm_gguf_writer_add_string_array (GgufWriter *writer, const char *key,
                                       const char *const *strings, uint64_t count);

/* Declares a tensor; @ne[0] is the contiguous dimension and must be a
 * multiple of the type's block size. */
LmStatus lm_gguf_writer_add_tensor (GgufWriter *writer, const char *name, LmTensorType type,
                                 uint32_t n_dims, const uint64_t *ne);
/* Bytes tensor @index (declaration order) takes, or 0. */
uint64_t lm_gguf_writer_tensor_bytes (const GgufWriter *writer, uint64_t index);

/* The exact size of the file the declared metadata and tensors make:
 * @header_bytes everything before the tensor data (padded), @file_bytes the
 * whole file. Either may be NULL. Call before or after lm_gguf_writer_begin(). */
LmStatus lm_gguf_writer_sizes (const GgufWriter *writer, uint64_t *header_bytes,
                            uint64_t *file_bytes);

LmStatus lm_gguf_writer_begin (GgufWriter *writer, const char *path, char **error_out);
LmStatus lm_gguf_writer_write (GgufWriter *writer, const void *data, size_t n);
LmStatus lm_gguf_writer_finish (GgufWriter *writer, char **error_out);

#ifdef __cplusplus
}
#endif
