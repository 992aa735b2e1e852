/* io-util.h: helpers shared by the file readers of the engine (private).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lm.h"

/* Stores a malloc()ed, printf-formatted message in *error_out when that is
 * non-NULL, and returns @status (for `return lm_io_fail (...)`). */
LmStatus lm_io_fail (char **error_out, LmStatus status, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));

/* Maps the regular file @path read-only. An empty file gives *map = NULL and
 * *size = 0. Errors (LM_ERR_IO) name the path. */
LmStatus lm_io_map_file (const char *path, void **map, size_t *size, char **error_out);
void lm_io_unmap_file (void *map, size_t size);

/* Parses a buffer into an object; @mapped says the object takes over the mapping. */
typedef LmStatus (*LmIoParseFunc) (const void *data, size_t size, bool mapped, void **out,
                                   char **error_out);
/* Maps @path and hands it to @parse; on failure unmaps it and prefixes the
 * message with the path. */
LmStatus lm_io_open_mapped (const char *path, LmIoParseFunc parse, void **out, char **error_out);
