// Training jobs as the streams app sees them: state, attempt, restarts, checkpoint, nodes.

import { badge, h, link, when } from "./dom.js";
import { Listing } from "./listing.js";

export function jobsView() {
  const columns = [
    { key: "job", label: "job", sort: true, cell: (r) => link("job", r.job) },
    { key: "cluster", label: "cluster", sort: true, cell: (r) => r.cluster },
    { key: "state", label: "state", sort: true, cell: (r) => [badge(r.state), r.pending ? ` (${r.pending})` : ""] },
    { key: "attempt", label: "attempt", sort: true, cell: (r) => String(r.attempt) },
    { key: "restarts_used", label: "restarts used/left", sort: true, cell: (r) => `${r.restarts_used}/${r.restarts_left ?? "-"}` },
    { key: "checkpoint_at", label: "checkpoint", sort: true, cell: (r) => (r.checkpoint_step === null ? "-" : [`step ${r.checkpoint_step}, `, when(r.checkpoint_at)]) },
    { key: "nodes_count", label: "nodes", sort: true, cell: (r) => nodes(r) },
    { key: "last_signal", label: "signal", sort: true, cell: (r) => r.last_signal ?? "" },
    { key: "why", label: "why", sort: true, cell: (r) => r.why ?? "" },
  ];
  return new Listing({
    path: "/api/jobs",
    noun: "jobs",
    columns,
    controls: [
      { name: "q", label: "search" },
      { name: "cluster", label: "cluster", kind: "select" },
      { name: "names", label: "job ids: a glob" },
    ],
  });
}

function nodes(row) {
  const shown = row.nodes.slice(0, 4).flatMap((n, i) => [i ? ", " : "", link("node", n)]);
  const more = row.nodes_count > 4 ? ` … (${row.nodes_count})` : "";
  return h("span", {}, shown, more);
}
