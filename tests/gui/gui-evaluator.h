/* gui-evaluator.h: a real tensafe-he-server on 127.0.0.1 for the GUI tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  GSubprocess *process;
  char *ws_url;                /* ws://127.0.0.1:PORT/v1/helora */
} GuiEvaluator;

/* A new temporary adapter folder holding a copy of the demo adapter (the
 * server names adapters after their file); remove it with
 * ts_test_remove_tree(). */
char *gui_evaluator_demo_dir (void);
/* Starts the server over the adapter folder @dir with the extra NULL-ended
 * @args (may be NULL), e.g. "--threads", "1", "--model", PATH; it dies with
 * the test. Starting again after gui_evaluator_stop() gives a new URL. */
void gui_evaluator_start (GuiEvaluator *s, const char *dir, const char *const *args);
/* Stops it (SIGTERM) and waits; the URL stays until the next start. */
void gui_evaluator_stop (GuiEvaluator *s);
/* Stops it if running and frees the URL. */
void gui_evaluator_clear (GuiEvaluator *s);

G_END_DECLS
