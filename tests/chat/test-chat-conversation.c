/* test-chat-conversation.c: TsChatTurn and TsChatConversation alone (no
 * GTK): the list model's "items-changed" emissions (position, removed,
 * added) for each change, what the model is asked to continue, prompts for
 * Edit and Regenerate, turns left out, and the notifications a view
 * follows while a reply streams in.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "ts-chat-conversation.h"
#include "ts-chat-session.h"

typedef struct {
  guint position, removed, added;
} Change;

static void
items_changed_cb (GListModel *model, guint position, guint removed, guint added,
                  GArray *changes)
{
  Change c = { position, removed, added };

  g_array_append_val (changes, c);
}

static GArray *
watch (TsChatConversation *conversation)
{
  GArray *changes = g_array_new (FALSE, FALSE, sizeof (Change));

  g_signal_connect (conversation, "items-changed", G_CALLBACK (items_changed_cb), changes);
  return changes;
}

/* Exactly one emission since the last check, with these numbers. */
static void
assert_one_change (GArray *changes, guint position, guint removed, guint added)
{
  g_assert_cmpuint (changes->len, ==, 1);
  g_assert_cmpuint (g_array_index (changes, Change, 0).position, ==, position);
  g_assert_cmpuint (g_array_index (changes, Change, 0).removed, ==, removed);
  g_assert_cmpuint (g_array_index (changes, Change, 0).added, ==, added);
  g_array_set_size (changes, 0);
}

/* prompt 0, reply 0, prompt 1, reply 1, prompt 2, reply 2 */
static TsChatConversation *
three_exchanges (void)
{
  TsChatConversation *conversation = ts_chat_conversation_new ();

  for (guint i = 0; i < 3; i++)
    {
      g_autofree char *prompt = g_strdup_printf ("prompt %u", i);
      g_autofree char *reply = g_strdup_printf ("reply %u", i);

      ts_chat_conversation_append (conversation, TRUE, prompt);
      ts_chat_conversation_append (conversation, FALSE, reply);
    }
  return conversation;
}

static void
test_append (void)
{
  g_autoptr (TsChatConversation) conversation = ts_chat_conversation_new ();
  g_autoptr (GArray) changes = watch (conversation);
  g_autoptr (TsChatTurn) item = NULL;
  TsChatTurn *prompt, *reply;

  g_assert_true (g_list_model_get_item_type (G_LIST_MODEL (conversation)) == TS_TYPE_CHAT_TURN);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (conversation)), ==, 0);
  g_assert_null (ts_chat_conversation_get_last_reply (conversation));
  prompt = ts_chat_conversation_append (conversation, TRUE, "hello");
  assert_one_change (changes, 0, 0, 1);
  reply = ts_chat_conversation_append (conversation, FALSE, NULL);
  assert_one_change (changes, 1, 0, 1);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (conversation)), ==, 2);
  item = g_list_model_get_item (G_LIST_MODEL (conversation), 0);
  g_assert_true (item == prompt);
  g_assert_null (g_list_model_get_item (G_LIST_MODEL (conversation), 2));
  g_assert_true (ts_chat_turn_get_is_user (prompt));
  g_assert_false (ts_chat_turn_get_is_user (reply));
  g_assert_cmpstr (ts_chat_turn_get_text (prompt), ==, "hello");
  g_assert_cmpstr (ts_chat_turn_get_text (reply), ==, "");
  g_assert_cmpstr (ts_chat_turn_get_thinking (reply), ==, "");
  g_assert_null (ts_chat_turn_get_note (reply));
  g_assert_true (ts_chat_conversation_get_last_reply (conversation) == reply);
  /* A new prompt leaves the last reply where it was. */
  ts_chat_conversation_append (conversation, TRUE, "again");
  g_assert_true (ts_chat_conversation_get_last_reply (conversation) == reply);
}

static void
test_prompts (void)
{
  g_autoptr (TsChatConversation) conversation = three_exchanges ();

  g_assert_cmpuint (ts_chat_conversation_get_n_prompts (conversation), ==, 3);
  g_assert_cmpstr (ts_chat_turn_get_text (ts_chat_conversation_get_prompt (conversation, 1)), ==,
                   "prompt 1");
  g_assert_null (ts_chat_conversation_get_prompt (conversation, 3));
  g_assert_cmpuint (ts_chat_conversation_count_prompts_before (conversation, 0), ==, 0);
  g_assert_cmpuint (ts_chat_conversation_count_prompts_before (conversation, 1), ==, 1);
  g_assert_cmpuint (ts_chat_conversation_count_prompts_before (conversation, 4), ==, 2);
  g_assert_cmpuint (ts_chat_conversation_count_prompts_before (conversation, 99), ==, 3);
}

static void
test_truncate (void)
{
  g_autoptr (TsChatConversation) conversation = three_exchanges ();
  g_autoptr (GArray) changes = watch (conversation);

  /* No fourth prompt: nothing changes. */
  g_assert_false (ts_chat_conversation_truncate (conversation, 3));
  g_assert_cmpuint (changes->len, ==, 0);
  /* The second prompt is turn 2: turns 2..5 go, in one emission. */
  g_assert_true (ts_chat_conversation_truncate (conversation, 1));
  assert_one_change (changes, 2, 4, 0);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (conversation)), ==, 2);
  g_assert_cmpstr (ts_chat_turn_get_text (ts_chat_conversation_get_last_reply (conversation)),
                   ==, "reply 0");
  g_assert_true (ts_chat_conversation_truncate (conversation, 0));
  assert_one_change (changes, 0, 2, 0);
  g_assert_null (ts_chat_conversation_get_last_reply (conversation));
}

static void
test_pop_and_clear (void)
{
  g_autoptr (TsChatConversation) conversation = three_exchanges ();
  g_autoptr (GArray) changes = watch (conversation);
  g_autofree char *last = NULL;
  g_autofree char *unanswered = NULL;

  last = ts_chat_conversation_pop_exchange (conversation);
  g_assert_cmpstr (last, ==, "prompt 2");
  assert_one_change (changes, 4, 2, 0);
  /* A prompt without its reply (the reply was never added) pops alone. */
  ts_chat_conversation_append (conversation, TRUE, "unanswered");
  assert_one_change (changes, 4, 0, 1);
  unanswered = ts_chat_conversation_pop_exchange (conversation);
  g_assert_cmpstr (unanswered, ==, "unanswered");
  assert_one_change (changes, 4, 1, 0);
  ts_chat_conversation_clear (conversation);
  assert_one_change (changes, 0, 4, 0);
  g_assert_null (ts_chat_conversation_pop_exchange (conversation));
  /* Clearing nothing says nothing. */
  ts_chat_conversation_clear (conversation);
  g_assert_cmpuint (changes->len, ==, 0);
}

static void
assert_texts (TsChatConversation *conversation, const char *const *expected)
{
  g_autoptr (GPtrArray) texts = ts_chat_conversation_get_texts (conversation);

  g_assert_cmpuint (texts->len, ==, g_strv_length ((char **) expected));
  for (guint i = 0; i < texts->len; i++)
    g_assert_cmpstr (g_ptr_array_index (texts, i), ==, expected[i]);
}

static void
test_texts (void)
{
  g_autoptr (TsChatConversation) conversation = ts_chat_conversation_new ();
  TsChatTurn *reply;

  ts_chat_conversation_append (conversation, TRUE, "a");
  reply = ts_chat_conversation_append (conversation, FALSE, "b");
  /* The thinking stays out of what the model continues. */
  ts_chat_turn_append_thinking (reply, "hmm", 1);
  /* A prompt whose reply never came, then another: an empty reply between. */
  ts_chat_conversation_append (conversation, TRUE, "c");
  ts_chat_conversation_append (conversation, TRUE, "d");
  assert_texts (conversation, (const char *[]) { "a", "b", "c", "", "d", NULL });
}

static void
count_cb (GObject *object, GParamSpec *pspec, guint *count)
{
  (*count)++;
}

static void
test_exclude (void)
{
  g_autoptr (TsChatConversation) conversation = three_exchanges ();
  TsChatTurn *prompt = ts_chat_conversation_get_prompt (conversation, 2);
  TsChatTurn *reply = ts_chat_conversation_get_last_reply (conversation);
  guint notified = 0;

  g_signal_connect (reply, "notify::excluded", G_CALLBACK (count_cb), &notified);
  ts_chat_turn_set_note (reply, "routed to: pirate");
  ts_chat_conversation_exclude_last_exchange (conversation, "left out");
  g_assert_true (ts_chat_turn_get_excluded (prompt));
  g_assert_true (ts_chat_turn_get_excluded (reply));
  g_assert_false (ts_chat_turn_get_excluded (ts_chat_conversation_get_prompt (conversation, 1)));
  g_assert_cmpuint (notified, ==, 1);
  g_assert_cmpstr (ts_chat_turn_get_note (reply), ==, "routed to: pirate\nleft out");
  assert_texts (conversation,
                (const char *[]) { "prompt 0", "reply 0", "prompt 1", "reply 1", NULL });
}

static void
record_notify_cb (GObject *object, GParamSpec *pspec, GPtrArray *names)
{
  g_ptr_array_add (names, g_strdup (g_param_spec_get_name (pspec)));
}

static void
assert_names (GPtrArray *names, const char *const *expected)
{
  g_assert_cmpuint (names->len, ==, g_strv_length ((char **) expected));
  for (guint i = 0; i < names->len; i++)
    g_assert_cmpstr (g_ptr_array_index (names, i), ==, expected[i]);
  g_ptr_array_set_size (names, 0);
}

static void
test_turn_streaming (void)
{
  g_autoptr (TsChatTurn) turn = ts_chat_turn_new (FALSE, "");
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);

  g_signal_connect (turn, "notify", G_CALLBACK (record_notify_cb), names);
  /* No text starts no thinking. */
  ts_chat_turn_append_thinking (turn, "", 1);
  assert_names (names, (const char *[]) { NULL });
  g_assert_false (ts_chat_turn_get_thinking_active (turn));
  ts_chat_turn_append_thinking (turn, "Let me", 1);
  assert_names (names, (const char *[]) { "thinking-active", "thinking-tokens", "thinking", NULL });
  g_assert_true (ts_chat_turn_get_thinking_active (turn));
  /* A token with no text (the closing tag) still counts. */
  ts_chat_turn_append_thinking (turn, "", 3);
  assert_names (names, (const char *[]) { "thinking-tokens", NULL });
  g_assert_cmpuint (ts_chat_turn_get_thinking_tokens (turn), ==, 3);
  ts_chat_turn_append_thinking (turn, " see", 4);
  g_assert_cmpstr (ts_chat_turn_get_thinking (turn), ==, "Let me see");
  g_ptr_array_set_size (names, 0);
  /* The answer is notified before the thinking ends. */
  ts_chat_turn_append_text (turn, "Yes");
  assert_names (names, (const char *[]) { "text", "thinking-active", NULL });
  ts_chat_turn_append_text (turn, "");
  ts_chat_turn_append_text (turn, NULL);
  assert_names (names, (const char *[]) { NULL });
  ts_chat_turn_append_text (turn, ", sir");
  assert_names (names, (const char *[]) { "text", NULL });
  g_assert_cmpstr (ts_chat_turn_get_text (turn), ==, "Yes, sir");
  /* Ending a thinking that ended says nothing. */
  ts_chat_turn_end_thinking (turn);
  assert_names (names, (const char *[]) { NULL });
  g_assert_cmpuint (ts_chat_turn_get_thinking_tokens (turn), ==, 4);
}

static void
test_turn_fields (void)
{
  g_autoptr (TsChatTurn) turn = ts_chat_turn_new (FALSE, "answer");
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *note = NULL;

  g_signal_connect (turn, "notify", G_CALLBACK (record_notify_cb), names);
  ts_chat_turn_set_note (turn, "n");
  ts_chat_turn_set_note (turn, "n");
  ts_chat_turn_set_error (turn, "e");
  ts_chat_turn_set_ending (turn, "Stopped");
  ts_chat_turn_set_ending (turn, NULL);
  ts_chat_turn_set_excluded (turn, TRUE);
  ts_chat_turn_set_excluded (turn, TRUE);
  ts_chat_turn_set_text (turn, "answer");
  assert_names (names, (const char *[]) { "note", "error", "ending", "ending", "excluded", NULL });
  g_assert_null (ts_chat_turn_get_ending (turn));
  g_object_get (turn, "note", &note, NULL);
  g_assert_cmpstr (note, ==, "n");
  /* An empty note gets no blank first line. */
  ts_chat_turn_set_note (turn, "");
  ts_chat_turn_add_note (turn, "first");
  g_assert_cmpstr (ts_chat_turn_get_note (turn), ==, "first");
  /* A finished thinking (history): not streaming, no count, notified. */
  ts_chat_turn_append_thinking (turn, "streamed", 2);
  g_ptr_array_set_size (names, 0);
  ts_chat_turn_set_thinking (turn, "kept");
  assert_names (names, (const char *[]) { "thinking-active", "thinking-tokens", "thinking", NULL });
  g_assert_cmpstr (ts_chat_turn_get_thinking (turn), ==, "kept");
  g_assert_false (ts_chat_turn_get_thinking_active (turn));
  ts_chat_turn_set_thinking (turn, NULL);
  g_assert_cmpstr (ts_chat_turn_get_thinking (turn), ==, "");
}

/* A reply keeps a copy of its footer numbers and chart bars. */
static void
test_turn_stats (void)
{
  g_autoptr (TsChatTurn) turn = ts_chat_turn_new (FALSE, "answer");
  g_autoptr (TsHistoryReplyStats) stats = ts_history_reply_stats_new ();
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  TsTokenTimings timings = { 0 };
  const TsHistoryReplyStats *kept;

  g_assert_null (ts_chat_turn_get_stats (turn));
  g_signal_connect (turn, "notify", G_CALLBACK (record_notify_cb), names);
  stats->n_tokens = 2;
  stats->diverged_at = 1;
  timings.ms[0] = 1.5;
  ts_history_reply_stats_add_bar (stats, &timings, "Hel");
  timings.ms[0] = 2.5;
  ts_history_reply_stats_add_bar (stats, &timings, "lo");
  ts_chat_turn_set_stats (turn, stats);
  assert_names (names, (const char *[]) { "stats", NULL });
  /* Changing the original afterwards leaves the turn's as it was. */
  stats->n_tokens = 99;
  g_ptr_array_set_size (stats->texts, 0);
  g_array_set_size (stats->timings, 0);
  kept = ts_chat_turn_get_stats (turn);
  g_assert_true (kept != stats);
  g_assert_cmpuint (kept->n_tokens, ==, 2);
  g_assert_cmpint (kept->diverged_at, ==, 1);
  g_assert_cmpuint (kept->timings->len, ==, 2);
  g_assert_cmpfloat (g_array_index (kept->timings, TsTokenTimings, 1).ms[0], ==, 2.5);
  g_assert_cmpstr (g_ptr_array_index (kept->texts, 0), ==, "Hel");
  g_assert_cmpstr (g_ptr_array_index (kept->texts, 1), ==, "lo");
  ts_chat_turn_set_stats (turn, NULL);
  g_assert_null (ts_chat_turn_get_stats (turn));
  assert_names (names, (const char *[]) { "stats", NULL });
}

static void
test_session_conversations (void)
{
  g_autoptr (TsChatSession) session = ts_chat_session_new (NULL, NULL);
  TsChatConversation *plain = ts_chat_session_get_conversation (session, FALSE);
  TsChatConversation *he = ts_chat_session_get_conversation (session, TRUE);

  g_assert_true (TS_IS_CHAT_CONVERSATION (plain));
  g_assert_true (TS_IS_CHAT_CONVERSATION (he));
  g_assert_true (plain != he);
  g_assert_true (ts_chat_session_get_conversation (session, FALSE) == plain);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (plain)), ==, 0);
}

static void
test_preconditions (void)
{
  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*TS_IS_CHAT_CONVERSATION*");
  g_assert_null (ts_chat_conversation_append (NULL, TRUE, "x"));
  g_test_assert_expected_messages ();
  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*TS_IS_CHAT_TURN*");
  ts_chat_turn_append_text (NULL, "x");
  g_test_assert_expected_messages ();
  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*line != NULL*");
  {
    g_autoptr (TsChatTurn) turn = ts_chat_turn_new (FALSE, NULL);

    ts_chat_turn_add_note (turn, NULL);
  }
  g_test_assert_expected_messages ();
  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*TS_IS_CHAT_SESSION*");
  g_assert_null (ts_chat_session_get_conversation (NULL, FALSE));
  g_test_assert_expected_messages ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/chat-conversation/append", test_append);
  g_test_add_func ("/chat-conversation/prompts", test_prompts);
  g_test_add_func ("/chat-conversation/truncate", test_truncate);
  g_test_add_func ("/chat-conversation/pop-and-clear", test_pop_and_clear);
  g_test_add_func ("/chat-conversation/texts", test_texts);
  g_test_add_func ("/chat-conversation/exclude", test_exclude);
  g_test_add_func ("/chat-conversation/turn-streaming", test_turn_streaming);
  g_test_add_func ("/chat-conversation/turn-fields", test_turn_fields);
  g_test_add_func ("/chat-conversation/turn-stats", test_turn_stats);
  g_test_add_func ("/chat-conversation/session", test_session_conversations);
  g_test_add_func ("/chat-conversation/preconditions", test_preconditions);
  return g_test_run ();
}
