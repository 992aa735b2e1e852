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
 * Widgets start no threads: background work is a core library's _async
 * function, whose worker reports progress with ts_task_post_progress() and
 * returns through its GTask (src/DESIGN.md §3).
 *
 * Thread-safety: callable from any thread.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Runs @func (@data) once at G_PRIORITY_DEFAULT on the thread iterating
 * @context (NULL: the global default), never on the calling thread; @notify
 * frees @data afterwards. @func's return value is ignored. */
void ts_main_context_post (GMainContext *context, GSourceFunc func, gpointer data,
                           GDestroyNotify notify);

/* A worker's progress for the caller of an _async function: runs @func
 * (@data) like ts_main_context_post() on @task's context
 * (g_task_get_context()), unless @task's callback has run by then, so that
 * no progress reaches the caller after the result. Holds a reference on
 * @task until @notify has freed @data. */
void ts_task_post_progress (GTask *task, GSourceFunc func, gpointer data, GDestroyNotify notify);

G_END_DECLS
