/* ts-helora-evaluator.h: the evaluator interface: one adapter, ct × pt products.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * An evaluator holds one adapter's packed plaintexts under one CKKS parameter
 * set and nothing else: no key of any kind. The server and the session's local
 * mode both talk to it only through this interface, so the CKKS implementation
 * (ts-helora-ckks-evaluator.c) plugs in behind it.
 *
 * Evaluators are reference counted and immutable once opened; find_module()
 * and evaluate() may be called from many threads at once.
 */
#pragma once

#include <glib.h>

#include "ts-helora-proto.h"

G_BEGIN_DECLS

typedef struct _TsHeloraEvaluator TsHeloraEvaluator;

typedef struct {
  /* Looks up module @name; returns its index (stable for this evaluator) and
   * shape, or FALSE with TS_HELORA_ERROR_UNKNOWN_MODULE. @complex_packing:
   * the shape (its result count) of the complex packing the hello asked
   * for (TS_HELORA_FLAG_COMPLEX), where the module's layout has it. */
  gboolean (*find_module) (TsHeloraEvaluator *self, const char *name, gboolean complex_packing,
                           guint *index, TsHeloraModuleShape *shape, GError **error);
  /* Computes module @index's products on the serialised ciphertexts @cts (of
   * GBytes) and appends the serialised results (GBytes) to @results, in the
   * packing find_module() reported for @complex_packing. A ciphertext that
   * does not parse under the evaluator's parameters is
   * TS_HELORA_ERROR_BAD_CIPHERTEXT. */
  gboolean (*evaluate) (TsHeloraEvaluator *self, guint index, gboolean complex_packing,
                        GPtrArray *cts, GPtrArray *results, GError **error);
  /* Frees everything the implementation added after the base struct. */
  void (*finalize) (TsHeloraEvaluator *self);
} TsHeloraEvaluatorClass;

/* Base of every implementation (embed it first). */
struct _TsHeloraEvaluator {
  const TsHeloraEvaluatorClass *klass;
  gatomicrefcount ref_count;
  /* SHA-256 of the serialised parameter set it evaluates under. */
  guint8 params_sha256[TS_HELORA_HASH_SIZE];
};

/* Opens the adapter at @path (a GGUF LoRA file or a PEFT folder) for the
 * parameter preset @params_id (TS_HELORA_ERROR_PARAMS when unknown) and
 * pre-encodes what the products need. May be slow; thread-safe. */
typedef TsHeloraEvaluator *(*TsHeloraEvaluatorOpenFunc) (const char *path,
                                                         const char *params_id,
                                                         gpointer user_data,
                                                         GError **error);

/* Opens the stack of the @n adapters at @paths (in stacking order) with
 * @weights (ts_adapter_stack()) as one evaluator whose modules are the
 * stack's: a module several adapters adapt packs their A rows one after
 * another, as the client's stacked adapter has them. Errors name the
 * adapter that does not load or stack. May be slow; thread-safe. */
typedef TsHeloraEvaluator *(*TsHeloraEvaluatorOpenStackFunc) (const char *const *paths,
                                                              const float *weights, guint n,
                                                              const char *params_id,
                                                              gpointer user_data,
                                                              GError **error);

/* Initialises the base of a newly allocated implementation (ref count 1). */
void ts_helora_evaluator_init (TsHeloraEvaluator *self, const TsHeloraEvaluatorClass *klass);
TsHeloraEvaluator *ts_helora_evaluator_ref (TsHeloraEvaluator *self);
void ts_helora_evaluator_unref (TsHeloraEvaluator *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHeloraEvaluator, ts_helora_evaluator_unref)

gboolean ts_helora_evaluator_find_module (TsHeloraEvaluator *self, const char *name,
                                          gboolean complex_packing, guint *index,
                                          TsHeloraModuleShape *shape, GError **error);
gboolean ts_helora_evaluator_evaluate (TsHeloraEvaluator *self, guint index,
                                       gboolean complex_packing, GPtrArray *cts,
                                       GPtrArray *results, GError **error);

/* The adapter digest both ends compare: SHA-256 of a file, or of a PEFT
 * folder's adapter_model.safetensors when @path is a directory. */
gboolean ts_helora_adapter_sha256 (const char *path, guint8 out[TS_HELORA_HASH_SIZE],
                                   GError **error);

/* The id an adapter goes by on a server: a file's name without its last
 * extension, or a PEFT folder's name (newly allocated). */
char *ts_helora_adapter_id (const char *path);

G_END_DECLS
