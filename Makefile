# Centrality — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-8s\033[0m %s\n", $$1, $$2}'

install: $(STAMP) ## Create .venv with Centrality editable, every extra, pinned by constraints.txt

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]' -c constraints.txt
	@touch $(STAMP)

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

lock: install ## Re-resolve constraints.txt: the newest versions within pyproject.toml's ranges
	PYTHON=$(BIN)/python .ci/lock

lint: install ## ruff and mypy (strict on our packages)
	$(BIN)/ruff check .
	$(BIN)/mypy

.PHONY: help install up down status demo test lock lint
