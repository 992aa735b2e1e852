#!/bin/sh
# take-screenshots.sh: makes the README's screenshots from the real app on the
# real model, as a user sees it: an Xvfb screen of 1366×768, the window at its
# default size, the demo marketplace served by tensafe-marketd, keys and
# clicks sent with xdotool, the screen read with ImageMagick's import.
#
#   tools/take-screenshots.sh [OUT_DIR]     (default: docs/)
#
# Needs: a built tree (make), the real model in the model cache
# (build-aux/fetch-model.sh qwen2.5-coder-0.5b-instruct-q4_k_m), and the
# Debian packages xvfb, xdotool and imagemagick. Nothing here runs in CI.
# The clicks are at the places the default layout puts the buttons; after
# a layout change, look at each image before committing it.
# SPDX-License-Identifier: GPL-3.0-or-later
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-$here/docs}" && pwd)
build=${BUILD:-$here/build}
model=${TENSAFE_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tensafe/models}/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
adapter=$here/data/market/qwen2.5-coder-0.5b-banking
display=${SCREENSHOT_DISPLAY:-:77}
listen=127.0.0.1:8767
[ -f "$model" ] || { echo "take-screenshots: $model is missing" >&2; exit 1; }

# A home of its own, so the paths shown are a user's and nothing of the
# developer's settings or adapters shows (removed at the end).
home=${SCREENSHOT_HOME:-/home/demo}
[ ! -e "$home" ] || { echo "take-screenshots: $home exists; set SCREENSHOT_HOME" >&2; exit 1; }
mkdir -p "$home/.local/share" "$home/.config" "$home/market"
export HOME="$home" XDG_DATA_HOME="$home/.local/share" XDG_CONFIG_HOME="$home/.config"
export DISPLAY="$display" GSETTINGS_BACKEND=keyfile GSETTINGS_SCHEMA_DIR="$build/data"
export GDK_DEBUG=gl-disable NO_AT_BRIDGE=1 TENSAFE_MARKETPLACE_URL="http://$listen/"

Xvfb "$display" -screen 0 1366x768x24 >/dev/null 2>&1 & xvfb=$!
"$build/src/server/tensafe-marketd" --listen "$listen" --db "$home/market/market.db" \
  --blobs "$home/market/blobs" --keys "$home/market/keys" --import "$here/data/market" \
  >"$home/marketd.log" 2>&1 & marketd=$!
app=
cleanup () {
  [ -z "$app" ] || kill "$app" 2>/dev/null || true
  kill "$marketd" "$xvfb" 2>/dev/null || true
  rm -rf "$home"
}
trap cleanup EXIT INT TERM
sleep 2
gsettings set org.tensafe.Desktop bench-model "$model"
gsettings set org.tensafe.Desktop bench-adapter "$adapter"
"$build/src/app/tensafe" --model "$model" --adapter "$adapter" >"$home/app.log" 2>&1 & app=$!
sleep 15

shot () {   # shot NAME [WxH+X+Y]
  import -window root -crop "${2:-1100x720+0+0}" "$out/$1"
  echo "take-screenshots: $out/$1"
}
click () { xdotool mousemove "$1" "$2" click 1; sleep "${3:-2}"; }

# The chat: one question, answered by both panes.
click 640 691 1
xdotool type --delay 15 "What is a savings account?"
xdotool key Return
sleep 75
shot screenshot-chat.png

# The marketplace, filtered to the loaded model.
xdotool key alt+2; sleep 3
shot screenshot-market.png

# The benchmark page, run once (scrolled down to the results table).
xdotool key alt+4; sleep 2
xdotool mousemove 1050 200
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do xdotool click 5; done
sleep 1
click 207 294 100
xdotool mousemove 1050 600
shot screenshot-main.png

# Reduce Rank on the banking adapter: install it (trusting its publisher),
# then reduce it to rank 8.
xdotool key alt+2; sleep 2
click 280 175 4
click 245 245 4      # Install
click 290 234 10     # Trust and Install
click 580 245 3      # Reduce Rank…
click 504 27 15      # Reduce
shot screenshot-reduce.png 560x640+0+0
click 513 27 2       # Done

# Routing: the pirate adapter installed too, the picker on Automatic, and a
# pirate question.
click 34 75 3        # back to the catalogue
click 820 175 5      # Pirate talk
click 245 229 10     # Install
xdotool key alt+1; sleep 2
click 202 75 2       # a new conversation
click 640 691 1
xdotool type --delay 15 "Ahoy! Tell me how a ship's compass works, matey."
xdotool key Return
sleep 80
shot screenshot-chat-routing.png
