# Centrality — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROMTOOL := $(BIN)/promtool

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-8s\033[0m %s\n", $$1, $$2}'

install: $(STAMP) $(PROMTOOL) ## Create .venv with Centrality installed editable plus test extras

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $(STAMP)

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

test: install ## Run the whole test suite (starts its own Kafka and ClickHouse)
	$(BIN)/pytest

lint: install ## ruff and mypy (strict on our packages)
	$(BIN)/ruff check .
	$(BIN)/mypy

.PHONY: help install up down status demo test lint
