# The two commands of the quick start: `make demo` and `make test`.
# Both install what a fresh machine lacks (liblua5.4-dev and friends) with apt-get first.

SWIFT ?= swift
BIN := .build/debug/shareflow
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := liblua5.4-dev lua5.4 lua-check tmux pkg-config libsqlite3-dev

.PHONY: deps build demo test lint bench clean

# pkg-config must find lua5.4 (the CLua system library target links through it); the
# tests also use tmux (the console), lua5.4 (cold-start baseline) and luacheck.
deps:
	@missing=""; \
	pkg-config --exists lua5.4 2>/dev/null || missing="$$missing liblua5.4-dev pkg-config"; \
	command -v lua5.4 >/dev/null || missing="$$missing lua5.4"; \
	command -v luacheck >/dev/null || missing="$$missing lua-check"; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	[ -f /usr/include/sqlite3.h ] || missing="$$missing libsqlite3-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing with apt-get"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build

demo: build
	@rm -rf .shareflow/demo.sqlite .shareflow/demo.sqlite-wal .shareflow/demo.sqlite-shm .shareflow/plugin-data
	$(BIN) run --store .shareflow/demo.sqlite --config Scripts/demo.config.lua Scripts/demo.lua

test: deps
	$(SWIFT) build --build-tests
	timeout 2700 $(SWIFT) test --skip-build --disable-swift-testing

lint: deps
	luacheck --no-color Scripts Plugins Tests/lua

bench: deps
	$(SWIFT) build -c release
	.build/release/shareflow bench

clean:
	rm -rf .build .shareflow
