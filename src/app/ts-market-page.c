/* ts-market-page.c: the marketplace page: browse and install LoRA adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-page.h"

struct _TsMarketPage
{
  AdwBin parent_instance;
};

G_DEFINE_FINAL_TYPE (TsMarketPage, ts_market_page, ADW_TYPE_BIN)

static void
ts_market_page_class_init (TsMarketPageClass *klass)
{
  gtk_widget_class_set_template_from_resource (GTK_WIDGET_CLASS (klass),
                                               "/org/tensafe/Desktop/ui/ts-market-page.ui");
}

static void
ts_market_page_init (TsMarketPage *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}
