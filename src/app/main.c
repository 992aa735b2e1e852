/* main.c: the tensafe desktop application's entry point.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <locale.h>

#include "ts-application.h"
#include "ts-config.h"

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;

  setlocale (LC_ALL, "");
  bindtextdomain (TS_GETTEXT_PACKAGE, TS_LOCALEDIR);
  bind_textdomain_codeset (TS_GETTEXT_PACKAGE, "UTF-8");
  textdomain (TS_GETTEXT_PACKAGE);

  app = ts_application_new (G_APPLICATION_DEFAULT_FLAGS);
  return g_application_run (G_APPLICATION (app), argc, argv);
}
