# Makefile: a thin wrapper around meson for the two everyday commands.
#   make demo   install missing Debian packages, build, start the app
#   make check  install missing Debian packages, build, run every test
#   make market-demo  the app with a local marketplace on the demo catalogue
BUILD ?= build
MESON_OPTIONS ?=
MESON_TEST_OPTIONS ?=

.PHONY: all deps setup compile check check-asan hostile hostile-long demo market-demo clean

all: compile

deps:
	@build-aux/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTIONS)

setup: deps $(BUILD)/build.ninja

compile: setup
	meson compile -C $(BUILD)

# Runs the whole suite; GUI tests need a display, so without one the run is
# wrapped in xvfb-run. Ends with the line 'N passed, N failed, N skipped'.
check: compile
	@status=0; \
	if [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ] && command -v xvfb-run >/dev/null; then \
	  wrap="xvfb-run -a -s '-screen 0 1600x1000x24'"; else wrap=""; fi; \
	eval $$wrap meson test -C $(BUILD) --print-errorlogs $(MESON_TEST_OPTIONS) || status=$$?; \
	python3 build-aux/test-summary.py $(BUILD)/meson-logs/testlog.json || status=1; \
	exit $$status

# The same suite built with AddressSanitizer and UBSan, in build-asan/.
check-asan:
	@$(MAKE) --no-print-directory check BUILD=build-asan \
	  MESON_OPTIONS="-Db_sanitize=address,undefined -Db_lundef=false"

# The attacks kept as tests (the 'hostile' suite; part of `make check`).
# hostile-long runs them with --long: the programs under tests/hostile then
# try 25 times as many mutants and floods, for a release check.
hostile: compile
	meson test -C $(BUILD) --suite hostile --print-errorlogs $(MESON_TEST_OPTIONS)

hostile-long: compile
	meson test -C $(BUILD) --suite hostile --print-errorlogs --test-args=--long \
	  --timeout-multiplier 4 $(MESON_TEST_OPTIONS)

# Runs the app from the build tree (its settings schema is compiled there) on
# the real Qwen2.5-Coder-0.5B-Instruct from the model cache, fetched the first
# time, with the banking adapter of the demo catalogue selected (the pirate
# one, or else a random rank-16 adapter made once, when it is missing), and
# tensafe-marketd serving data/market on $(MARKET_DEMO_LISTEN) for as long
# as the app runs; without the model it starts on the tiny random demo model
# and says why.
DEMO_MODEL ?= qwen2.5-coder-0.5b-instruct-q4_k_m
MARKET_DEMO_LISTEN ?= 127.0.0.1:8766
DEMO_ADAPTERS ?= data/market/qwen2.5-coder-0.5b-banking data/market/qwen2.5-coder-0.5b-pirate
MODEL_DIR = $${TENSAFE_MODEL_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/tensafe/models}
demo: compile
	@set --; \
	if build-aux/fetch-model.sh $(DEMO_MODEL); then \
	  model=$(MODEL_DIR)/$(DEMO_MODEL).gguf; adapter=; \
	  for a in $(DEMO_ADAPTERS); do [ -n "$$adapter" ] || [ ! -d "$$a" ] || adapter=$$a; done; \
	  if [ -z "$$adapter" ]; then adapter=$(MODEL_DIR)/$(DEMO_MODEL)-random-r16.gguf; \
	    [ -f "$$adapter" ] || $(BUILD)/src/cli/tensafe-cli adapter synth -m "$$model" --rank 16 \
	      --modules attn_q,attn_k,attn_v,attn_output "$$adapter"; fi; \
	  set -- --model "$$model" --adapter "$$adapter"; \
	else \
	  echo "make demo: $(DEMO_MODEL) could not be fetched (see above); starting on the tiny" \
	       "random demo model, whose text is gibberish. Rerun when online for real text."; \
	fi; \
	store=$(BUILD)/market-demo; mkdir -p $$store; \
	$(BUILD)/src/server/tensafe-marketd --listen $(MARKET_DEMO_LISTEN) --db $$store/market.db \
	  --blobs $$store/blobs --keys $$store/keys --import data/market & pid=$$!; \
	trap "kill $$pid 2>/dev/null || true" EXIT INT TERM; \
	TENSAFE_MARKETPLACE_URL=http://$(MARKET_DEMO_LISTEN)/ GSETTINGS_SCHEMA_DIR=$(BUILD)/data \
	  $(BUILD)/src/app/tensafe "$$@"

# The app on its demo model with tensafe-marketd serving data/market on
# 127.0.0.1:8766 (its store in $(BUILD)/market-demo/) for as long as it runs.
market-demo: compile
	@store=$(BUILD)/market-demo; mkdir -p $$store; \
	$(BUILD)/src/server/tensafe-marketd --listen $(MARKET_DEMO_LISTEN) --db $$store/market.db \
	  --blobs $$store/blobs --keys $$store/keys --import data/market & pid=$$!; \
	trap "kill $$pid 2>/dev/null || true" EXIT INT TERM; \
	TENSAFE_MARKETPLACE_URL=http://$(MARKET_DEMO_LISTEN)/ GSETTINGS_SCHEMA_DIR=$(BUILD)/data \
	  $(BUILD)/src/app/tensafe

clean:
	rm -rf $(BUILD)
