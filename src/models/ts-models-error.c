/* ts-models-error.c: the TS_MODELS_ERROR quark.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-error.h"

G_DEFINE_QUARK (tensafe-models-error-quark, ts_models_error)
