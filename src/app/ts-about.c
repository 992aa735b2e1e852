/* ts-about.c: the About window.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <glib/gi18n.h>

#include "ts-about.h"
#include "ts-config.h"
#include "ts-core.h"
#include "ts-gpu.h"

static char *
debug_info_text (const char *gpu_text)
{
  g_autofree char *cpu = ts_cpu_features_describe ();
  g_autofree char *kernels = ts_cpu_kernels_describe ();

  return g_strdup_printf ("TenSafe %s\n"
                          "GLib %u.%u.%u, GTK %u.%u.%u, libadwaita %u.%u.%u\n"
                          "CUDA kernels: %s\n"
                          "CPU: %s\n"
                          "CPU kernels: %s\n"
                          "%s\n",
                          ts_version (),
                          glib_major_version, glib_minor_version, glib_micro_version,
                          gtk_get_major_version (), gtk_get_minor_version (),
                          gtk_get_micro_version (),
                          adw_get_major_version (), adw_get_minor_version (),
                          adw_get_micro_version (),
                          TS_HAVE_CUDA ? "built" : "not built", cpu, kernels, gpu_text);
}

static void
gpu_probe_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (AdwAboutWindow) about = user_data;
  g_autoptr (TsGpuInfo) info = ts_gpu_probe_finish (result, NULL);
  g_autofree char *gpu_text = NULL;
  g_autofree char *text = NULL;

  if (info == NULL)
    return;
  gpu_text = ts_gpu_info_describe (info);
  text = debug_info_text (gpu_text);
  adw_about_window_set_debug_info (about, text);
}

void
ts_about_present (GtkWindow *parent)
{
  static const char *developers[] = { "The TenSafe Desktop contributors", NULL };
  static const char *built_on[] = {
    "GTK https://www.gtk.org",
    "libadwaita https://gnome.pages.gitlab.gnome.org/libadwaita/",
    "OpenSSL https://www.openssl.org",
    NULL,
  };
  g_autofree char *text = debug_info_text ("GPU: probing…");
  AdwAboutWindow *about;

  g_return_if_fail (GTK_IS_WINDOW (parent));

  about = ADW_ABOUT_WINDOW (adw_about_window_new ());
  g_object_set (about,
                "transient-for", parent,
                "application", gtk_window_get_application (parent),
                "application-name", _("TenSafe"),
                "application-icon", TS_APP_ID,
                "version", ts_version (),
                "developer-name", _("The TenSafe Desktop contributors"),
                "comments", _("Private chat with a local language model, with the "
                              "LoRA adapter evaluated under homomorphic encryption"),
                "license-type", GTK_LICENSE_GPL_3_0,
                "developers", developers,
                "translator-credits", _("translator-credits"),
                "debug-info", text,
                NULL);
  adw_about_window_add_credit_section (about, _("Built with"), built_on);

  ts_gpu_probe_async (NULL, gpu_probe_cb, g_object_ref (about));
  gtk_window_present (GTK_WINDOW (about));
}
