/* he-process.h: tensafe-he-server processes on 127.0.0.1 for the fleet tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  GSubprocess *process;
  guint16 port;
  char *url;                   /* "http://127.0.0.1:PORT/" */
  char *ws_url;                /* "ws://127.0.0.1:PORT/v1/helora" */
} HeProcess;

/* A launcher whose children are killed when the test dies (a failed
 * assertion must not leave servers running, or hold the test's output open). */
GSubprocessLauncher *he_process_launcher (GSubprocessFlags flags);

/* Starts @binary over @adapters on 127.0.0.1:@port (0: any), with the
 * NULL-ended @extra options; returns when it says it listens. */
void he_process_start (HeProcess *p, const char *binary, const char *adapters, guint16 port,
                       const char *const *extra);
/* Waits for the exit (up to @timeout_ms) and returns the exit status; -1:
 * killed by a signal. */
int he_process_wait (HeProcess *p, guint timeout_ms);
void he_process_clear (HeProcess *p);

/* GET @path (no leading '/'): the body, and the status in @status. */
char *he_process_get (HeProcess *p, const char *path, guint *status);
/* A value of the /metrics text, or -1 when the line is missing. */
double he_process_metric (HeProcess *p, const char *name);

G_END_DECLS
