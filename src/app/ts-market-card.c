/* ts-market-card.c: one adapter of the marketplace catalogue, as a card in the grid.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-market-card.h"
#include "ts-market-format.h"

struct _TsMarketCard
{
  AdwBin parent_instance;

  TsMarketAdapter *adapter;
  gboolean installed;

  GtkLabel *name_label;
  GtkLabel *publisher_label;
  GtkLabel *description_label;
  GtkLabel *rank_label;
  GtkLabel *base_model_label;
  GtkLabel *price_label;
  GtkLabel *license_label;
};

G_DEFINE_FINAL_TYPE (TsMarketCard, ts_market_card, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_INSTALLED,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
ts_market_card_show_adapter (TsMarketCard *self)
{
  TsMarketAdapter *a = self->adapter;
  g_autofree char *rank = ts_market_format_rank (a->rank, a->alpha);
  g_autofree char *price = ts_market_format_price (a->price_per_1k_tokens);

  gtk_label_set_text (self->name_label, a->name);
  gtk_label_set_text (self->publisher_label, a->publisher_name ? a->publisher_name
                                                                : a->publisher_id);
  gtk_label_set_text (self->description_label, a->description ? a->description : "");
  gtk_label_set_text (self->rank_label, rank);
  gtk_label_set_text (self->base_model_label, a->base_model);
  gtk_label_set_text (self->price_label, price);
  gtk_label_set_text (self->license_label, a->license);
}

static void
ts_market_card_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsMarketCard *self = TS_MARKET_CARD (object);

  switch (prop_id)
    {
    case PROP_INSTALLED:
      g_value_set_boolean (value, self->installed);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_market_card_set_property (GObject *object, guint prop_id, const GValue *value,
                             GParamSpec *pspec)
{
  TsMarketCard *self = TS_MARKET_CARD (object);

  switch (prop_id)
    {
    case PROP_INSTALLED:
      ts_market_card_set_installed (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_market_card_finalize (GObject *object)
{
  TsMarketCard *self = TS_MARKET_CARD (object);

  g_clear_pointer (&self->adapter, ts_market_adapter_unref);
  G_OBJECT_CLASS (ts_market_card_parent_class)->finalize (object);
}

static void
ts_market_card_class_init (TsMarketCardClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_market_card_get_property;
  object_class->set_property = ts_market_card_set_property;
  object_class->finalize = ts_market_card_finalize;

  properties[PROP_INSTALLED] =
    g_param_spec_boolean ("installed", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-market-card.ui");
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, name_label);
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, publisher_label);
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, description_label);
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, rank_label);
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, base_model_label);
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, price_label);
  gtk_widget_class_bind_template_child (widget_class, TsMarketCard, license_label);
}

static void
ts_market_card_init (TsMarketCard *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

GtkWidget *
ts_market_card_new (TsMarketAdapter *adapter)
{
  TsMarketCard *self;

  g_return_val_if_fail (adapter != NULL, NULL);

  self = g_object_new (TS_TYPE_MARKET_CARD, NULL);
  self->adapter = ts_market_adapter_ref (adapter);
  ts_market_card_show_adapter (self);
  return GTK_WIDGET (self);
}

TsMarketAdapter *
ts_market_card_get_adapter (TsMarketCard *self)
{
  g_return_val_if_fail (TS_IS_MARKET_CARD (self), NULL);
  return self->adapter;
}

gboolean
ts_market_card_get_installed (TsMarketCard *self)
{
  g_return_val_if_fail (TS_IS_MARKET_CARD (self), FALSE);
  return self->installed;
}

void
ts_market_card_set_installed (TsMarketCard *self, gboolean installed)
{
  g_return_if_fail (TS_IS_MARKET_CARD (self));

  installed = !!installed;
  if (self->installed == installed)
    return;
  self->installed = installed;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_INSTALLED]);
}
