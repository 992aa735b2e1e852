/* ts-write-atomic-private.h: the atomic writer's test hook.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-write-atomic.h"

G_BEGIN_DECLS

/* Where _ts_write_atomic_until() stops, to simulate a crash. */
typedef enum {
  TS_WRITE_COMPLETE,           /* the whole write: temp file, fsync, rename */
  TS_WRITE_STOP_BEFORE_RENAME, /* leave the synced temporary file, as after a crash */
  TS_WRITE_STOP_MID_DATA,      /* leave half the data in the temporary file */
} TsWriteStop;

/* ts_write_atomic() that stops at @stop (returning FALSE with
 * G_IO_ERROR_CANCELLED when it stops early). */
gboolean _ts_write_atomic_until (const char *path, const void *data, gsize len,
                                 TsWriteStop stop, GError **error);

G_END_DECLS
