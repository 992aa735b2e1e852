/* io-util.c: error messages and read-only file mappings for the engine's readers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "io-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

LmStatus
lm_io_fail (char **error_out, LmStatus status, const char *fmt, ...)
{
  if (error_out)
    {
      char buf[1024];
      va_list ap;
      va_start (ap, fmt);
      vsnprintf (buf, sizeof buf, fmt, ap);
      va_end (ap);
      *error_out = strdup (buf);
    }
  return status;
}

LmStatus
lm_io_map_file (const char *path, void **map, size_t *size, char **error_out)
{
  *map = NULL;
  *size = 0;
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return lm_io_fail (error_out, LM_ERR_IO, "cannot open %s: %s", path, strerror (errno));
  struct stat st;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      close (fd);
      return lm_io_fail (error_out, LM_ERR_IO, "cannot read %s: not a regular file", path);
    }
  if (st.st_size > 0)
    {
      void *m = mmap (NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED)
        {
          int e = errno;
          close (fd);
          return lm_io_fail (error_out, e == ENOMEM ? LM_ERR_NO_MEMORY : LM_ERR_IO,
                             "cannot map %s: %s", path, strerror (e));
        }
      *map = m;
      *size = (size_t) st.st_size;
    }
  close (fd);
  return LM_OK;
}

void
lm_io_unmap_file (void *map, size_t size)
{
  if (map)
    munmap (map, size);
}

LmStatus
lm_io_open_mapped (const char *path, LmIoParseFunc parse, void **out, char **error_out)
{
  void *map;
  size_t size;
  LmStatus st = lm_io_map_file (path, &map, &size, error_out);
  if (st != LM_OK)
    return st;
  char *msg = NULL;
  st = parse (map ? map : "", size, map != NULL, out, &msg);
  if (st != LM_OK)
    {
      lm_io_unmap_file (map, size);
      if (msg)
        lm_io_fail (error_out, st, "%s: %s", path, msg);
      free (msg);
    }
  return st;
}
