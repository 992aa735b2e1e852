/* gui-evaluator.h: a real tensafe-he-server on 127.0.0.1 for the GUI tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  GSubprocess *process;
  char *dir;                   /* its adapter folder (a temporary one) */
  char *ws_url;                /* ws://127.0.0.1:PORT/v1/helora */
} GuiEvaluator;

/* The adapter folder for gui_evaluator_start(): a new temporary folder
 * holding a copy of the demo adapter (the server names adapters after their
 * file); write more adapters into it before starting. */
void gui_evaluator_prepare (GuiEvaluator *s);
/* Starts the server (one worker thread) over @s->dir with the extra
 * NULL-ended @args (may be NULL), e.g. "--model", PATH to let it stack
 * adapters; it dies with the test. */
void gui_evaluator_start (GuiEvaluator *s, const char *const *args);
/* Stops it and removes its folder with what is in it. */
void gui_evaluator_stop (GuiEvaluator *s);

G_END_DECLS
