# Centrality — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Manifest tools outside the venv: checkov pins packaging<24, which pytest (>=24) cannot share.
TOOLS := .tools
KUSTOMIZE_VERSION := v5.8.0
CHECKOV_VERSION := 3.3.30
PROMTOOL := $(BIN)/promtool

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-8s\033[0m %s\n", $$1, $$2}'

install: $(STAMP) $(PROMTOOL) ## Create .venv with Centrality editable, every extra, pinned by constraints.txt

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]' -c constraints.txt
	@touch $(STAMP)

tools: $(TOOLS)/.kustomize-$(KUSTOMIZE_VERSION) $(TOOLS)/.checkov-$(CHECKOV_VERSION) ## kustomize (Go module proxy) and checkov (own venv) for the manifest tests

$(TOOLS)/.kustomize-$(KUSTOMIZE_VERSION):
	GOBIN=$(abspath $(TOOLS)/bin) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	@touch $@

$(TOOLS)/.checkov-$(CHECKOV_VERSION):
	@test -x $(TOOLS)/checkov/bin/python || $(PYTHON) -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/pip install -q checkov==$(CHECKOV_VERSION)
	@touch $@

# The tests check the alert rules with promtool: the one on PATH, else the binary alone out of
# Debian's (or Ubuntu's) `prometheus` package, so no Prometheus server is installed or started.
$(PROMTOOL): | $(STAMP)
	@if command -v promtool >/dev/null; then ln -sf "$$(command -v promtool)" $@; else \
	  tmp=$$(mktemp -d) && (cd $$tmp && apt-get download -q prometheus && \
	    dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool) && \
	  install -m 0755 $$tmp/usr/bin/promtool $@; status=$$?; rm -rf $$tmp; exit $$status; fi

up: install ## Start the local stack (Kafka + ClickHouse), topics and migrations
	$(BIN)/centrality up

down: install ## Stop the local stack (data is kept)
	$(BIN)/centrality down

status: install ## Show the local stack
	$(BIN)/centrality status

demo: install ## Run the main job: the walking skeleton on the local stack, narrated
	$(BIN)/centrality demo

test: install tools ## Run the whole test suite (starts its own Kafka and ClickHouse)
	$(BIN)/pytest

lock: install ## Re-resolve constraints.txt: the newest versions within pyproject.toml's ranges
	PYTHON=$(BIN)/python .ci/lock

lint: install ## ruff and mypy (strict on our packages)
	$(BIN)/ruff check .
	$(BIN)/mypy

.PHONY: help install tools up down status demo test lock lint
