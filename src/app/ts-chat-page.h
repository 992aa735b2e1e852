/* ts-chat-page.h: the chat page: the same conversation in plaintext and under HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Shows "not available yet" until the feature lands.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_CHAT_PAGE (ts_chat_page_get_type ())
G_DECLARE_FINAL_TYPE (TsChatPage, ts_chat_page, TS, CHAT_PAGE, AdwBin)

G_END_DECLS
