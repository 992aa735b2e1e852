/* ts-main-context.h: handing work from a worker thread to a main context.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * g_main_context_invoke_full() calls the function at once, on the calling
 * thread, when it can acquire the context: a worker posting to the global
 * default context acquires it whenever the main thread is between two
 * iterations (as it is while a handler it called is still running outside
 * the loop), and the callback then races the code that started the worker.
 * ts_main_context_post() always queues.
 *
 * Thread-safety: callable from any thread.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Runs @func (@data) once at G_PRIORITY_DEFAULT on the thread iterating
 * @context (NULL: the global default), never on the calling thread; @notify
 * frees @data afterwards. @func's return value is ignored. */
void ts_main_context_post (GMainContext *context, GSourceFunc func, gpointer data,
                           GDestroyNotify notify);

G_END_DECLS
