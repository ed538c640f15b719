// Silences: what each holds and until when, who set it and why; add one, or end one early.

import { button, openExpiry, openSilence } from "./act.js";
import { get } from "./api.js";
import { clear, h } from "./dom.js";

export function silencesView(clusters) {
  const list = h("div", { class: "silence-list" });
  let all = false;
  const toggle = h("input", { type: "checkbox", name: "all", onchange: (e) => ((all = e.target.checked), load()) });
  const add = button("Add a silence", () => openSilence({ clusters: clusters() }, load), { "data-verb": "silence" });
  const root = h("section", { class: "silences" }, h("div", { class: "bar" }, add, h("label", {}, toggle, " ended ones too")), list);
  const load = async () => {
    try {
      const doc = await get("/api/silences");
      const shown = doc.silences.filter((s) => all || s.active);
      const rows = shown.map((s) => {
        const scope = ["nodes", "rule", "action"].filter((k) => s[k]).map((k) => `${k} ${s[k]}`).join(", ") || "all";
        const by = s.operator + (s.verified === false ? " (not trusted)" : "");
        const end = s.active ? button("Expire", () => openExpiry(s, load), { "data-verb": "expire" }) : "ended";
        return h(
          "tr",
          { "data-silence": s.id },
          ...[s.id, s.cluster, scope, s.ends_at.slice(0, 19), by, s.reason].map((v) => h("td", {}, v)),
          h("td", {}, end),
        );
      });
      const head = ["id", "cluster", "holds", "until (UTC)", "by", "reason", ""];
      clear(list, h("table", { class: "rows" }, h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))), h("tbody", {}, rows)));
      if (!shown.length) list.append(h("p", { class: "empty" }, all ? "no silences" : "no silence in force"));
      root.dataset.error = "";
    } catch (error) {
      clear(list, h("p", { class: "warning" }, String(error.message ?? error)));
      root.dataset.error = "yes";
    }
  };
  return { root, load };
}
