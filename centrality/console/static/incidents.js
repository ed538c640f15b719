// Incidents, open first, then the recently resolved: what shares a cause, told once.

import { get } from "./api.js";
import { badge, clear, h, link, when } from "./dom.js";

export function incidentsView() {
  const root = h("section", { class: "incidents" }, "loading…");
  const load = async () => {
    try {
      const doc = await get("/api/incidents");
      const rows = doc.incidents.map((i) =>
        h(
          "tr",
          { "data-state": i.state },
          h("td", {}, link("incident", i.id)),
          h("td", {}, badge(i.state)),
          h("td", {}, i.severity),
          h("td", {}, i.title),
          h("td", {}, String(i.nodes_count)),
          h("td", {}, i.domain),
          h("td", {}, when(i.opened_at)),
          h("td", {}, i.resolved_at ? when(i.resolved_at) : ""),
        ),
      );
      const head = ["incident", "state", "severity", "title", "nodes", "domain", "opened", "resolved"];
      clear(
        root,
        h("p", { class: "summary" }, `${doc.incidents.filter((i) => i.state === "open").length} open, ${doc.incidents.length} in all`),
        h("table", { class: "rows" }, h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))), h("tbody", {}, rows)),
      );
      root.dataset.error = "";
    } catch (error) {
      clear(root, h("p", { class: "warning" }, String(error.message ?? error)));
      root.dataset.error = "yes";
    }
  };
  return { root, load };
}
