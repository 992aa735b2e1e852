/* ts-test-util.h: helpers shared by every test suite.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Returns the absolute path of @relative under tests/data/ (newly allocated).
 * The directory comes from $TENSAFE_TEST_DATA, set by meson for every test. */
char *ts_test_data_path (const char *relative);

/* Reads all of tests/data/@relative into memory; fails the test if missing.
 * Returns a newly allocated buffer and its size in @len. */
guint8 *ts_test_read_data (const char *relative, gsize *len);

/* Returns a seed for random test inputs: $TS_TEST_SEED if set, else fresh.
 * The seed is printed with g_test_message so a failure can be replayed. */
guint64 ts_test_seed (void);

/* Runs @argv (NULL-ended, argv[0] a path) to its end; returns its exit
 * status, with its stdout in @out and stderr in @err (newly allocated).
 * Fails the test when it cannot be started. */
/* Copies the file @from to @to (asserting both steps). */
void ts_test_copy_file (const char *from, const char *to);
/* Copies @from_dir/@name to @to_dir/@name. */
void ts_test_copy_into (const char *from_dir, const char *to_dir, const char *name);

/* Removes @path: a file, or a folder with everything below it (symbolic
 * links are removed, not followed). Missing paths are ignored. */
void ts_test_remove_tree (const char *path);

int ts_test_spawn (const char *const *argv, char **out, char **err);

/* The real model file @file (data/models/) in the model cache —
 * $TENSAFE_MODEL_DIR, else $XDG_CACHE_HOME/tensafe/models, where
 * build-aux/fetch-model.sh puts it — when it is there with @bytes bytes:
 * its path (newly allocated). Otherwise NULL and, in @reason, why (newly
 * allocated), for g_test_skip(). */
char *ts_test_real_model (const char *file, guint64 bytes, char **reason);

/* Copies the GGUF model @src to @dest with its <think> and </think>
 * vocabulary entries renamed (same length, so the file stays valid): the
 * same model as one that does not think, as Qwen2.5. Fails the test when a
 * tag is not found once each or the copy cannot be written. */
void ts_test_copy_model_without_think (const char *src, const char *dest);

G_END_DECLS
