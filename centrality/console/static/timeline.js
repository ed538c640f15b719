// A subject's story from ClickHouse: faults, decisions (rule, reason, cause), actions and their
// results, operators' commands and silences; every subject named links to its own page.

import { h, link } from "./dom.js";

export function timeline(doc) {
  if (doc.timeline_error) return h("p", { class: "warning timeline-error" }, `history unavailable: ${doc.timeline_error}`);
  if (!doc.timeline.length) return h("p", { class: "empty" }, "nothing in the history yet");
  const rows = doc.timeline.map((e) => entry(e));
  return h(
    "table",
    { class: "timeline" },
    h("thead", {}, h("tr", {}, ["occurred at (UTC)", "type", "what", "about"].map((t) => h("th", {}, t)))),
    h("tbody", {}, rows),
  );
}

function entry(e) {
  const detail = h("pre", { class: "event", hidden: true }, JSON.stringify(e.event, null, 1));
  const open = h("button", { class: "more", "aria-label": "the whole event", onclick: () => (detail.hidden = !detail.hidden) }, "…");
  return [
    h(
      "tr",
      { class: `entry ${e.category}`, "data-type": e.type },
      h("td", { class: "at" }, e.at.replace("T", " ").slice(0, 23)),
      h("td", { class: "type" }, e.type),
      h("td", { class: "what" }, e.what, " ", open),
      h("td", { class: "about" }, e.links.flatMap((l, i) => [i ? ", " : "", link(l.kind, l.id)])),
    ),
    h("tr", { class: "detail" }, h("td", { colspan: 4 }, detail)),
  ];
}
