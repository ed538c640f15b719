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
# The tests' Kubernetes API server (tests/support/kube_api.py): etcd and kube-apiserver built from
# the Go module proxy at the versions their go.mod pin, and the CRDs of the pinned operator modules.
go_pin = $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "$(2)") {print $$(i + 1); exit}}' $(1))
KUBE_APISERVER_VERSION := $(call go_pin,tests/go/kube-apiserver/go.mod,k8s.io/kubernetes)
ETCD_VERSION := $(call go_pin,tests/go/etcd/go.mod,go.etcd.io/etcd/server/v3)
GO_BUILD := go build -trimpath -buildvcs=false
CRDS := github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_pytorchjobs.yaml \
	sigs.k8s.io/jobset:config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml \
	github.com/ray-project/kuberay/ray-operator:config/crd/bases/ray.io_rayjobs.yaml

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-8s\033[0m %s\n", $$1, $$2}'

install: $(STAMP) $(PROMTOOL) ## Create .venv with Centrality editable, every extra, pinned by constraints.txt

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]' -c constraints.txt
	@touch $(STAMP)

tools: $(TOOLS)/.kustomize-$(KUSTOMIZE_VERSION) $(TOOLS)/.checkov-$(CHECKOV_VERSION) $(TOOLS)/.kube-apiserver-$(KUBE_APISERVER_VERSION) $(TOOLS)/.etcd-$(ETCD_VERSION) $(TOOLS)/crds/.pinned $(TOOLS)/js/.pinned ## kustomize and checkov for the manifest tests; kube-apiserver, etcd and CRDs for the Kubernetes tests; Ajv for the JSON Schema check

$(TOOLS)/.kustomize-$(KUSTOMIZE_VERSION):
	GOBIN=$(abspath $(TOOLS)/bin) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	@touch $@

$(TOOLS)/.kube-apiserver-$(KUBE_APISERVER_VERSION):
	cd tests/go/kube-apiserver && $(GO_BUILD) -o $(abspath $(TOOLS)/bin/kube-apiserver) \
	  -ldflags='-s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_APISERVER_VERSION)' .
	@touch $@

$(TOOLS)/.etcd-$(ETCD_VERSION):
	cd tests/go/etcd && $(GO_BUILD) -ldflags='-s -w' -o $(abspath $(TOOLS)/bin/etcd) .
	@touch $@

# Each CRD manifest out of its module as go.mod pins it (go.sum checks what the proxy served).
$(TOOLS)/crds/.pinned: tests/go/crds/go.mod tests/go/crds/go.sum
	@mkdir -p $(TOOLS)/crds
	cd tests/go/crds && for crd in $(CRDS); do \
	  go mod download $${crd%%:*} && \
	  install -m 0644 "$$(go list -m -f '{{.Dir}}' $${crd%%:*})/$${crd#*:}" $(abspath $(TOOLS)/crds)/ || exit 1; \
	done
	@touch $@

# Ajv and ajv-formats as tests/js's lock pins them (npm checks each package's integrity hash),
# for tests/static/test_ajv_strict.py; installed again only when the lock changes.
$(TOOLS)/js/.pinned: tests/js/package.json tests/js/package-lock.json
	@mkdir -p $(TOOLS)/js
	install -m 0644 tests/js/package.json tests/js/package-lock.json $(TOOLS)/js/
	cd $(TOOLS)/js && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
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
	$(BIN)/pytest -n 2 --dist loadgroup

test-unit: install ## The hermetic layer alone: no process, no service, no tool (tests/unit)
	$(BIN)/pytest tests/unit -q -n auto

lock: install ## Re-resolve constraints.txt: the newest versions within pyproject.toml's ranges
	PYTHON=$(BIN)/python .ci/lock

lint: install ## ruff (lint and format) and mypy (strict on our packages)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

.PHONY: help install tools up down status demo test test-unit lock lint
