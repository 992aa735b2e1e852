/* ts-adapter-reduce.h: rank reduction of an installed adapter into a new adapter folder.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * ts_adapter_reduce() writes the optimal rank-R approximation of every
 * module of an adapter (engine/include/lora-write.h: truncated SVD of each module's
 * factor·B·A) as a new adapter folder "@dest_dir/@id/" holding
 *   - the reduced adapter in the source's format: the PEFT files, or
 *     "@id.gguf" for a GGUF adapter;
 *   - metadata.json, in the marketplace's publishing format
 *     (docs/protocol.md): the source's metadata (its metadata.json, else
 *     the catalogue record given, else its release record) with the new id,
 *     name, rank and alpha, and "reduced_from": {id, version, name, rank,
 *     rank_out, energy_retained, energy_retained_min};
 *   - TS_MARKET_RELEASE_FILE, a local release (ts-market-install.h): the
 *     digests of these files and the marketplace adapter the source descends
 *     from, so that the chat meters turns with it as that adapter's.
 * All of it is written into a hidden staging folder inside @dest_dir and
 * renamed into place at the end: a failure or a cancel leaves nothing
 * behind, and an existing "@id/" is replaced (in one step) only when asked.
 *
 * Errors are G_IO_ERROR codes, so callers can explain them:
 *   INVALID_ARGUMENT  a bad name, or a rank not below the adapter's;
 *   INVALID_DATA      the source cannot be read as a LoRA adapter, or it
 *                     failed its release check;
 *   EXISTS            "@id/" exists and @replace is FALSE;
 *   NO_SPACE          the free space of @dest_dir is below the new size;
 *   CANCELLED;
 *   errno codes (PERMISSION_DENIED, NOT_DIRECTORY, READ_ONLY, …) when
 *   @dest_dir cannot be written; FAILED for a write that failed midway.
 *
 * Thread-safety: no shared state.  ts_adapter_reduce() reads and writes
 * the whole adapter: call it from a worker thread (its progress callback
 * runs there), or call ts_adapter_reduce_async() from a main loop.
 */
#pragma once

#include <gio/gio.h>

#include "lora-write.h"
#include "ts-market-types.h"

G_BEGIN_DECLS

/* The file written next to the adapter's own files. */
#define TS_ADAPTER_METADATA_FILE "metadata.json"

/* One module's reduction (the engine's LmLoraReduceInfo, named). */
typedef struct
{
  char   *name;          /* the module's tensor stem in the file */
  guint   rank_in;
  guint   rank_out;
  double  energy_total;  /* ‖factor·B·A‖_F² */
  double  energy_kept;   /* what the rank_out largest singular values hold */
} TsReducedModule;

/* The outcome of ts_adapter_reduce().  Owned by the caller. */
typedef struct
{
  char    *id;
  char    *path;             /* the new adapter's folder */
  guint    rank_in;          /* largest module rank before and after */
  guint    rank_out;
  GArray  *modules;          /* of TsReducedModule, in file order */
  double   retained_min;     /* per-module fraction of ‖·‖_F² kept: the smallest */
  double   retained_mean;    /* … and their mean */
  double   retained_total;   /* Σ kept / Σ total over all modules */
  goffset  bytes_in;         /* the adapter files' sizes, metadata excluded */
  goffset  bytes_out;
} TsAdapterReduction;

void ts_adapter_reduction_free (TsAdapterReduction *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsAdapterReduction, ts_adapter_reduction_free)

typedef struct
{
  const char      *source;        /* an adapter folder (PEFT, or one *.gguf) or a GGUF file */
  const char      *dest_dir;      /* where "@id/" goes; created when missing */
  const char      *id;            /* the new folder's name: ts_market_name_is_safe() */
  const char      *name;          /* display name; NULL: "<source name> (rank R)" */
  guint            rank;          /* 1 … the adapter's rank − 1 */
  gboolean         replace;       /* replace an existing "@id/" */
  /* Non-NULL: a source holding a release record is first checked with
   * ts_market_verify_installed() against the keys pinned in this file. */
  const char      *keyring_path;
  /* The source's catalogue record, for its metadata when the folder has no
   * metadata.json (an install from the marketplace); may be NULL. */
  TsMarketAdapter *catalogue;
} TsAdapterReduceRequest;

/* @done of @total modules reduced, the last one @module. */
typedef void (*TsAdapterReduceProgress) (guint done, guint total, const char *module,
                                         gpointer user_data);

/* The shape of the adapter at @source, from its headers: quick enough for
 * the main thread.  G_IO_ERROR_INVALID_DATA when it is not a readable LoRA
 * adapter. */
gboolean ts_adapter_probe (const char *source, LmLoraShape *shape, GError **error);

TsAdapterReduction *ts_adapter_reduce (const TsAdapterReduceRequest *request,
                                       TsAdapterReduceProgress progress, gpointer progress_data,
                                       GCancellable *cancellable, GError **error);

/* ts_adapter_reduce() on a worker (ts-adapter-reduce-task.c): @request is
 * copied; @progress (may be NULL) runs with @progress_data on the caller's
 * thread-default main context, never after @callback. */
void ts_adapter_reduce_async (const TsAdapterReduceRequest *request,
                              TsAdapterReduceProgress progress, gpointer progress_data,
                              GCancellable *cancellable, GAsyncReadyCallback callback,
                              gpointer user_data);
/* The outcome (free with ts_adapter_reduction_free()), or NULL with @error. */
TsAdapterReduction *ts_adapter_reduce_finish (GAsyncResult *result, GError **error);

/* What a reduced adapter's metadata.json says about its source. */
typedef struct
{
  char   *id;
  char   *version;
  char   *name;
  guint   rank_in;
  guint   rank_out;
  double  retained_total;
  double  retained_min;
} TsAdapterOrigin;

void ts_adapter_origin_clear (TsAdapterOrigin *self);

/* Reads "@dir/metadata.json" as a catalogue record (no versions; its
 * "version" as latest_version), for adapters the marketplace does not list.
 * @origin (may be NULL) gets "reduced_from", zeroed when there is none.
 * G_IO_ERROR_INVALID_DATA when it lacks an id or a name. */
TsMarketAdapter *ts_adapter_read_metadata (const char *dir, TsAdapterOrigin *origin,
                                           GError **error);

G_END_DECLS
