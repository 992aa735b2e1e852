/* models-test-hub.h: a real SoupServer on 127.0.0.1, on its own thread, serving bytes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct ModelsTestHub ModelsTestHub;

/* Starts a server whose thread runs its own main context, so that the code
 * under test may block on its downloads in the test's thread. */
ModelsTestHub *models_test_hub_new (void);
void models_test_hub_free (ModelsTestHub *hub);

/* "http://127.0.0.1:PORT@path" (newly allocated). */
char *models_test_hub_url (ModelsTestHub *hub, const char *path);

/* Serves @bytes at @path with their SHA-256 as a strong ETag: 200 for a
 * plain GET, 206 for "Range: bytes=N-" (200 when an If-Range names another
 * ETag). */
void models_test_hub_serve (ModelsTestHub *hub, const char *path, GBytes *bytes);
/* The next @count requests for @path get a 200 announcing the whole length
 * and only the first @after bytes before the connection is closed. */
void models_test_hub_drop (ModelsTestHub *hub, const char *path, gint64 after, guint count);
/* The next @count requests for @path get a 200 announcing the whole length
 * (and the ETag) and only the first @after bytes; the connection then stays
 * open, sending nothing more, until the hub is freed: a download that sits
 * mid-way for as long as a test needs. */
void models_test_hub_stall (ModelsTestHub *hub, const char *path, gint64 after, guint count);

/* Requests so far, one "PATH RANGE" string each ("-" without a Range
 * header; " if-range" added when one was sent), oldest first; a new array the caller frees. */
GPtrArray *models_test_hub_log (ModelsTestHub *hub);
void models_test_hub_clear_log (ModelsTestHub *hub);

G_END_DECLS
