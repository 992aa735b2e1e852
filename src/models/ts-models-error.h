/* ts-models-error.h: the TS_MODELS_ERROR domain of the model manager.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_MODELS_ERROR (ts_models_error_quark ())

typedef enum
{
  TS_MODELS_ERROR_INVALID,      /* a bad catalogue, index, name or argument */
  TS_MODELS_ERROR_NOT_FOUND,    /* no such model in the catalogue or the models folder */
  TS_MODELS_ERROR_NETWORK,      /* connection refused, dropped or timed out */
  TS_MODELS_ERROR_HTTP,         /* the server answered an error status */
  TS_MODELS_ERROR_TRUNCATED,    /* a body ended before its announced length */
  TS_MODELS_ERROR_CHECKSUM,     /* a SHA-256, CRC-32 or size does not match */
  TS_MODELS_ERROR_NO_SPACE,     /* not enough free space for the download */
  TS_MODELS_ERROR_ARCHIVE,      /* a zip archive that cannot be read */
  TS_MODELS_ERROR_UNSUPPORTED,  /* a model the engine refuses (architecture, tensors) */
  TS_MODELS_ERROR_EXISTS,       /* the target name is taken */
  TS_MODELS_ERROR_BUSY,         /* another pull or import works in the same folder */
  TS_MODELS_ERROR_IO,           /* local disk error */
} TsModelsError;

GQuark ts_models_error_quark (void);

G_END_DECLS
