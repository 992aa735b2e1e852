/* ts-keys-page.c: the keys page: the CKKS keys kept on this desktop.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-keys-page.h"

struct _TsKeysPage
{
  AdwBin parent_instance;
};

G_DEFINE_FINAL_TYPE (TsKeysPage, ts_keys_page, ADW_TYPE_BIN)

static void
ts_keys_page_class_init (TsKeysPageClass *klass)
{
  gtk_widget_class_set_template_from_resource (GTK_WIDGET_CLASS (klass),
                                               "/org/tensafe/Desktop/ui/ts-keys-page.ui");
}

static void
ts_keys_page_init (TsKeysPage *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}
