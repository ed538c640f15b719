// The console's page: a view per address (#/fleet, #/jobs, #/incidents, #/silences, #/node/N,
// #/job/J, #/incident/I), kept current by the live feed.

import { start } from "./api.js";
import { nodeView, jobView, incidentView } from "./detail.js";
import { clear, h } from "./dom.js";
import { follow } from "./feed.js";
import { fleetView } from "./fleet.js";
import { incidentsView } from "./incidents.js";
import { jobsView } from "./jobs.js";
import { silencesView } from "./silences.js";

const main = document.getElementById("main");
const feed = document.getElementById("feed");
const who = document.getElementById("who");
const kept = {}; // the listings keep their filters while people look elsewhere
let current = null;

function clusters() {
  return [...(kept.fleet?.select_cluster?.options ?? [])].slice(1).map((o) => o.value);
}

const VIEWS = {
  fleet: () => (kept.fleet ??= fleetView()),
  jobs: () => (kept.jobs ??= jobsView()),
  incidents: () => incidentsView(),
  silences: () => silencesView(clusters),
  node: (id) => nodeView(id),
  job: (id) => jobView(id),
  incident: (id) => incidentView(id),
};

let sessionRead = null; // the session, asked for beside the first listing

async function show() {
  const path = location.hash.replace(/^#\/?/, "") || "fleet";
  const cut = path.indexOf("/");
  const kind = cut < 0 ? path : path.slice(0, cut);
  const id = cut < 0 ? null : decodeURIComponent(path.slice(cut + 1));
  const make = VIEWS[kind] ?? VIEWS.fleet;
  if (kind !== "fleet" && kind !== "jobs") await sessionRead; // its buttons say who may act
  current = make(id);
  current.kind = kind;
  document.body.dataset.view = kind;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("here", a.dataset.view === kind);
  clear(main, current.root);
  load();
}

function load() {
  current.load();
}

function changed() {
  if (current) load();
}

function status({ live, why }) {
  feed.dataset.live = live ? "yes" : "no";
  feed.textContent = live ? "live" : why;
}

async function boot() {
  sessionRead = start();
  window.addEventListener("hashchange", show);
  show();
  const session = await sessionRead;
  if (session.can_act) clear(who, `signed as ${session.operator}`, session.note ? " (trust not checked here)" : "");
  else clear(who, h("strong", {}, "read-only"), ": ", session.why_read_only);
  who.title = session.note ?? "";
  who.dataset.canAct = session.can_act ? "yes" : "no";
  follow(changed, status);
}

boot();
