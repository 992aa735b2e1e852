/* ts-chat-page.c: the chat page: the same conversation in plaintext and under HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-chat-page.h"

struct _TsChatPage
{
  AdwBin parent_instance;
};

G_DEFINE_FINAL_TYPE (TsChatPage, ts_chat_page, ADW_TYPE_BIN)

static void
ts_chat_page_class_init (TsChatPageClass *klass)
{
  gtk_widget_class_set_template_from_resource (GTK_WIDGET_CLASS (klass),
                                               "/org/tensafe/Desktop/ui/ts-chat-page.ui");
}

static void
ts_chat_page_init (TsChatPage *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}
