/* ts-chat-session-private.h: what ts-chat-session.c shares with
 * ts-chat-session-routing.c.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-chat-router.h"
#include "ts-chat-session.h"

G_BEGIN_DECLS

/* The session's routing and metering (ts-chat-session-routing.c). */
typedef struct {
  TsChatRouter *router;          /* NULL with fewer than two adapters */
  char *signature;               /* what the router was (or is being) built from */
  GCancellable *building;        /* the build under way: a newer one cancels it */
  char *metered_id;              /* the turn's marketplace adapter, when it has one */
  char *metered_version;
} TsChatSessionRouting;

TsChatSessionRouting *_ts_chat_session_get_routing_state (TsChatSession *self);
/* Stops a build under way (dispose). */
void _ts_chat_session_routing_cancel (TsChatSessionRouting *routing);
void _ts_chat_session_routing_clear (TsChatSessionRouting *routing);

G_END_DECLS
