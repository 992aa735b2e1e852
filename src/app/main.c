/* main.c: the tensafe desktop application's entry point.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>

#include "ts-config.h"
#include "ts-core.h"

int
main (int argc, char **argv)
{
  g_autoptr (AdwApplication) app = NULL;

  app = adw_application_new (TS_APP_ID, G_APPLICATION_DEFAULT_FLAGS);
  return g_application_run (G_APPLICATION (app), argc, argv);
}
