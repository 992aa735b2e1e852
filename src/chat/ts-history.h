/* ts-history.h: conversations kept in SQLite (XDG data dir tensafe/history.sqlite).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A conversation is a list of messages; a user message belongs to both chat
 * panes, an assistant message to one of them (each pane keeps its own
 * answers, which may differ). Streamed answers are stored while they grow,
 * so a crash keeps what was written so far (WAL journal, synchronous=NORMAL:
 * each update is one small transaction).
 *
 * Threads: a TsHistory is used from one thread at a time (the GUI's main
 * thread); its writes are small and fast.
 */
#pragma once

#include <gio/gio.h>

#include "ts-conversation-settings.h"
#include "ts-history-stats.h"

G_BEGIN_DECLS

#define TS_HISTORY_ERROR (ts_history_error_quark ())
GQuark ts_history_error_quark (void);

typedef enum {
  TS_HISTORY_ERROR_DATABASE,   /* SQLite reported a failure (message says which) */
  TS_HISTORY_ERROR_NOT_FOUND,  /* no conversation or message with that id */
} TsHistoryError;

typedef enum {
  TS_HISTORY_PANE_BOTH = 0,    /* user turns */
  TS_HISTORY_PANE_PLAIN = 1,
  TS_HISTORY_PANE_HE = 2,
} TsHistoryPane;

typedef struct {
  gint64 id;
  char *title;
  gint64 created;              /* unix seconds */
  gint64 updated;
} TsHistoryConversation;

typedef struct {
  gint64 id;
  gboolean is_user;
  TsHistoryPane pane;
  char *content;
  gboolean complete;           /* FALSE: the answer was cut short */
  char *note;                  /* shown above a reply ("routed to: …"); NULL: none */
  TsHistoryReplyStats *stats;  /* a finished reply's footer and chart; NULL: none kept */
  gboolean left_out;           /* its exchange is not part of the conversation the model sees */
  char *thinking;              /* what the model thought before this reply; NULL: nothing */
} TsHistoryMessage;

void ts_history_conversation_free (TsHistoryConversation *c);
void ts_history_message_free (TsHistoryMessage *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHistoryConversation, ts_history_conversation_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHistoryMessage, ts_history_message_free)

typedef struct _TsHistory TsHistory;

/* Opens (creating it and its folder) the database at @path. */
TsHistory *ts_history_open (const char *path, GError **error);
/* "$XDG_DATA_HOME/tensafe/history.sqlite" (newly allocated). */
char *ts_history_default_path (void);
void ts_history_close (TsHistory *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHistory, ts_history_close)

/* Newest first; a GPtrArray of TsHistoryConversation*. */
GPtrArray *ts_history_list (TsHistory *self, GError **error);
/* The conversations, newest first, whose title or any message contains
 * @query, ignoring case and accents ("resume" finds "Résumé"); % and _ are
 * plain characters. NULL or "" (or only spaces): all of them. */
GPtrArray *ts_history_search (TsHistory *self, const char *query, GError **error);
gint64 ts_history_create (TsHistory *self, const char *title, GError **error);
gboolean ts_history_rename (TsHistory *self, gint64 conversation, const char *title,
                            GError **error);
gboolean ts_history_delete (TsHistory *self, gint64 conversation, GError **error);

/* In order; a GPtrArray of TsHistoryMessage*. */
GPtrArray *ts_history_messages (TsHistory *self, gint64 conversation, GError **error);
/* Appends a message; returns its id (0 on error). */
gint64 ts_history_add_message (TsHistory *self, gint64 conversation, gboolean is_user,
                               TsHistoryPane pane, const char *content, gboolean complete,
                               GError **error);
gboolean ts_history_update_message (TsHistory *self, gint64 message, const char *content,
                                    gboolean complete, GError **error);
/* The note shown above a reply (NULL removes it). */
gboolean ts_history_set_note (TsHistory *self, gint64 message, const char *note, GError **error);
/* What the model thought before reply @message (NULL or "": nothing). */
gboolean ts_history_set_thinking (TsHistory *self, gint64 message, const char *thinking,
                                  GError **error);
/* What the finished reply @message's footer and chart showed. */
gboolean ts_history_set_stats (TsHistory *self, gint64 message, const TsHistoryReplyStats *stats,
                               GError **error);
/* Leaves @message and every later message of its conversation out of the
 * conversation the model sees (a turn a side failed to answer). */
gboolean ts_history_leave_out (TsHistory *self, gint64 conversation, gint64 message,
                               GError **error);
/* Removes @message and every later message of its conversation, with their
 * notes and statistics, in one statement (regenerate, edit and resend). */
gboolean ts_history_truncate (TsHistory *self, gint64 conversation, gint64 message,
                              GError **error);

/* The system prompt and sampling settings kept with @conversation: *@out
 * gets a copy, or NULL when it follows the preferences' defaults (every
 * conversation of a file older than version 5, and one whose stored
 * settings are damaged: a warning says so). FALSE with
 * TS_HISTORY_ERROR_NOT_FOUND when there is no such conversation. */
gboolean ts_history_get_settings (TsHistory *self, gint64 conversation,
                                  TsConversationSettings **out, GError **error);
/* Keeps @settings with @conversation (validated first; NULL: follow the
 * defaults again). */
gboolean ts_history_set_settings (TsHistory *self, gint64 conversation,
                                  const TsConversationSettings *settings, GError **error);

G_END_DECLS
