// Commands and silences from the page. Each asks for a reason, shows what will happen and what
// the circuit breaker would say, is sent only on a confirmation that names it, and shows the
// action worker's answer. The console signs them with its operator's key; the page never sees it.

import { post, session } from "./api.js";
import { clear, h } from "./dom.js";

const VERBS = {
  quarantine: "Quarantine",
  release: "Release",
  benchmark: "Benchmark",
  requeue: "Requeue",
  cancel: "Cancel",
};

export function canAct() {
  return Boolean(session?.can_act);
}

export function button(label, onclick, extra = {}) {
  const attrs = { class: "act", onclick, ...extra };
  if (!canAct()) Object.assign(attrs, { disabled: true, title: session?.why_read_only ?? "read-only" });
  return h("button", attrs, label);
}

export function commandButton(verb, targets) {
  return button(VERBS[verb], () => openCommand(verb, targets), { "data-verb": verb });
}

function dialog(title, body, confirmLabel, onConfirm) {
  const result = h("div", { class: "result", role: "status" });
  const confirm = h("button", { class: "confirm", type: "submit", disabled: true }, confirmLabel);
  const cancel = h("button", { type: "button", class: "cancel", onclick: () => box.close() }, "Close");
  const form = h("form", { method: "dialog" }, h("h2", {}, title), body, result, h("div", { class: "buttons" }, cancel, confirm));
  const box = h("dialog", { class: "command" }, form);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    confirm.disabled = true;
    clear(result, "Sent; waiting for the action worker's answer…");
    result.dataset.verdict = "waiting";
    try {
      const answer = await onConfirm();
      result.dataset.verdict = answer.verdict;
      clear(result, h("strong", {}, answer.verdict), ": ", answer.words);
    } catch (error) {
      result.dataset.verdict = "refused";
      clear(result, h("strong", {}, "refused"), ": ", String(error.message ?? error));
    }
  });
  box.addEventListener("close", () => box.remove());
  document.body.append(box);
  box.showModal();
  return { box, confirm, result };
}

function reasonBox(onInput) {
  const reason = h("textarea", { name: "reason", required: true, rows: 2, placeholder: "why (required: recorded, and shown to people)" });
  reason.addEventListener("input", onInput);
  return reason;
}

export function openCommand(verb, targets) {
  const order = { verb, targets, reason: "", force: false, from_scratch: false };
  const what = h("p", { class: "what" }, "…");
  const breaker = h("p", { class: "breaker" }, "");
  const signed = h("p", { class: "signed" }, `Signed as ${session?.operator ?? "?"}.`);
  const force = h("input", { type: "checkbox", name: "force" });
  const scratch = h("input", { type: "checkbox", name: "from_scratch" });
  const options = [h("label", {}, force, " force: pass the circuit breaker (recorded as forced)")];
  if (verb === "requeue") options.push(h("label", {}, scratch, " from scratch (not from the last checkpoint)"));
  const label = `${VERBS[verb]} ${targets.length > 1 ? `${targets.length} nodes` : targets[0]}`;
  const reason = reasonBox(() => {
    order.reason = reason.value.trim();
    ui.confirm.disabled = !order.reason;
  });
  const body = h("div", {}, what, breaker, signed, reason, options);
  const ui = dialog(label, body, label, () => post("/api/command", order));
  const previewed = async () => {
    try {
      const said = await post("/api/preview", order);
      what.textContent = said.what;
      breaker.textContent = said.breaker;
    } catch (error) {
      what.textContent = String(error.message ?? error);
    }
  };
  for (const [box, key] of [[force, "force"], [scratch, "from_scratch"]]) {
    box.addEventListener("change", () => {
      order[key] = box.checked;
      previewed();
    });
  }
  previewed();
  return ui;
}

export function openSilence({ cluster = "", nodes = "", clusters = [] }, onDone) {
  const field = (name, value, placeholder) => h("input", { name, value, placeholder, "aria-label": name });
  const clusterBox = field("cluster", cluster, "cluster (required)");
  const nodesBox = field("nodes", nodes, "nodes: a hostlist (empty: the whole cluster)");
  const ruleBox = field("rule", "", "only this rule (optional)");
  const actionBox = field("action", "", "only this action, e.g. QuarantineNodes (optional)");
  const forBox = field("for", "2h", "for how long: 30m, 2h, 1d");
  const doc = () => ({ cluster: clusterBox.value, nodes: nodesBox.value, rule: ruleBox.value, action: actionBox.value, for: forBox.value, reason: reason.value });
  const said = h("p", { class: "what" }, "Rules' decisions in its scope are made and recorded as held, not carried out, until it ends; operators' commands are never held.");
  const reason = reasonBox(() => {
    ui.confirm.disabled = !reason.value.trim() || !clusterBox.value.trim();
  });
  const list = h("datalist", { id: "clusters" }, clusters.map((c) => h("option", { value: c })));
  clusterBox.setAttribute("list", "clusters");
  const body = h("div", { class: "silence-form" }, said, clusterBox, list, nodesBox, ruleBox, actionBox, forBox, reason);
  const ui = dialog("Add a silence", body, "Add the silence", async () => {
    const added = await post("/api/silences", doc());
    onDone?.();
    return { verdict: "added", words: `${added.id} holds rules' decisions on ${added.cluster} until ${added.ends_at}` };
  });
  return ui;
}

export function openExpiry(silence, onDone) {
  const reason = reasonBox(() => {
    ui.confirm.disabled = !reason.value.trim();
  });
  const said = h("p", { class: "what" }, `End silence ${silence.id} on ${silence.cluster} now: rules' next decisions there are carried out again (nothing held is replayed).`);
  const ui = dialog(`Expire ${silence.id}`, h("div", {}, said, reason), `Expire ${silence.id}`, async () => {
    await post("/api/silences/expire", { id: silence.id, reason: reason.value });
    onDone?.();
    return { verdict: "expired", words: `${silence.id} ended` };
  });
  return ui;
}
