/* server-fixture.h: an evaluator server on 127.0.0.1:0 in its own thread, for tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "he-server-service.h"
#include "ts-helora-remote.h"

G_BEGIN_DECLS

typedef struct _ServerFixture ServerFixture;

/* Starts a server over @adapters_dir with @options (adapters_dir and
 * open_evaluator are filled in when unset) on its own thread and main context. */
ServerFixture *server_fixture_start (const HeServerOptions *options);
/* The same listening on @address ("0.0.0.0:0" for every interface). */
ServerFixture *server_fixture_start_on (const HeServerOptions *options, const char *address);
/* Shuts the server down on its thread and joins it. */
void server_fixture_stop (ServerFixture *self);

/* "ws://127.0.0.1:PORT/v1/helora" (owned by the fixture). */
const char *server_fixture_ws_url (ServerFixture *self);
/* "http://127.0.0.1:PORT/" (owned by the fixture). */
const char *server_fixture_http_url (ServerFixture *self);
HeMetrics *server_fixture_metrics (ServerFixture *self);

/* GET @path on the server; returns the body, asserts status 200. */
char *server_fixture_get (ServerFixture *self, const char *path);
/* Sends @method @path (no leading '/') to the server; returns the body and
 * stores the status. */
char *server_fixture_request (ServerFixture *self, const char *method, const char *path,
                              guint *status);
/* The same for any server: @base ends with '/', @path has no leading one. */
char *http_get (const char *base, const char *path);

G_END_DECLS
