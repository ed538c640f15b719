// The fleet: every node as the streams app sees it, by state and cluster.

import { button, commandButton, openSilence } from "./act.js";
import { badge, h, link, when } from "./dom.js";
import { Listing } from "./listing.js";

export function fleetView() {
  let listing = null;
  const columns = [
    { key: "select", label: "", cell: (r) => listing.selectBox(r.node) },
    { key: "node", label: "node", sort: true, cell: (r) => link("node", r.node) },
    { key: "cluster", label: "cluster", sort: true, cell: (r) => r.cluster },
    { key: "state", label: "state", sort: true, cell: (r) => badge(r.state) },
    { key: "since", label: "since", sort: true, cell: (r) => when(r.since) },
    { key: "why", label: "why", sort: true, cell: (r) => r.why ?? "" },
    { key: "by", label: "by", sort: true, cell: (r) => r.by ?? "" },
    { key: "pending", label: "pending", sort: true, cell: (r) => r.pending ?? "" },
    { key: "gpus", label: "gpus", sort: true, cell: (r) => (r.gpus === null ? "-" : `${r.gpus} ${r.gpu_model ?? ""}`) },
    { key: "incident", label: "incident", sort: true, cell: (r) => (r.incident ? link("incident", r.incident) : "") },
    { key: "jobs_running", label: "jobs", sort: true, cell: (r) => String(r.jobs_running) },
  ];
  listing = new Listing({
    path: "/api/nodes",
    noun: "nodes",
    columns,
    controls: [
      { name: "q", label: "search" },
      { name: "cluster", label: "cluster", kind: "select" },
      { name: "group", label: "node group", kind: "select" },
      { name: "rule", label: "decided by", kind: "select" },
      { name: "names", label: "hostlist or glob: gpu-[01-08]" },
      { name: "reason", label: "reason contains" },
    ],
    actions: (names) =>
      names.length
        ? [
            ...["quarantine", "release", "benchmark"].map((verb) => commandButton(verb, names)),
            button("Silence", () => openSilence({ nodes: names.join(",") })),
            h("button", { onclick: () => clearSelection(listing) }, "Clear"),
          ]
        : [],
  });
  return listing;
}

function clearSelection(listing) {
  listing.selected.clear();
  listing.drawBar();
  listing.table.draw();
}
