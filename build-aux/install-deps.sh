#!/bin/sh
# install-deps.sh: install the Debian packages of build-aux/debian-deps.txt that
# are missing. As root it installs them; otherwise it prints the exact command.
# SPDX-License-Identifier: GPL-3.0-or-later
set -eu
here=$(dirname "$0")
missing=""
for pkg in $(grep -v '^#' "$here/debian-deps.txt" | tr -s ' \n' ' '); do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  case "$status" in
    *"install ok installed"*) ;;
    *) missing="$missing $pkg" ;;
  esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing build dependencies. Install them with:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "Installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
