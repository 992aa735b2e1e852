/* ts-models-zip.h: one member out of a zip archive (stored or deflated), CRC-checked.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "ts-models-progress.h"

G_BEGIN_DECLS

/* Writes the member @member of the zip at @zip_path to @out_path (replaced),
 * finding it through the central directory, and checks its CRC-32 and
 * size. On failure @out_path does not exist. @meter (may be NULL) counts
 * the member's uncompressed bytes. ZIP64 archives and methods other than
 * stored (0) and deflate (8) are refused with TS_MODELS_ERROR_ARCHIVE. */
gboolean ts_models_zip_extract (const char *zip_path, const char *member, const char *out_path,
                                TsModelsMeter *meter, GCancellable *cancellable,
                                GError **error);

G_END_DECLS
