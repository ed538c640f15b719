// One node, one job or one incident: what Centrality believes now, the commands that apply,
// and the story from the history.

import { button, commandButton, openSilence } from "./act.js";
import { get } from "./api.js";
import { badge, clear, fields, h, link, when } from "./dom.js";
import { timeline } from "./timeline.js";

const STORY_EVERY_MS = 3000; // the history is read again at most this often, apart from the status

export function nodeView(name) {
  return detailView({ kind: "node", id: name }, async (root, story) => {
    const doc = await get("/api/node", { name });
    const n = doc.node;
    clear(
      root,
      h("h1", {}, "node ", h("span", { class: "subject" }, n.node), " ", badge(n.state)),
      h("p", { class: "where" }, `cluster ${n.cluster} · since `, when(n.since), n.incident ? [" · incident ", link("incident", n.incident)] : ""),
      h(
        "div",
        { class: "commands" },
        ["quarantine", "release", "benchmark"].map((verb) => commandButton(verb, [n.node])),
        button("Silence", () => openSilence({ cluster: n.cluster, nodes: n.node })),
      ),
      fields(n, ["node", "state"]),
      n.jobs?.length ? h("p", { class: "jobs" }, "jobs: ", n.jobs.flatMap((j, i) => [i ? ", " : "", link("job", j)])) : "",
      doc.silences.length ? h("p", { class: "warning" }, "silenced: ", doc.silences.map((s) => `${s.id} until ${s.ends_at} (${s.operator}: ${s.reason}) `)) : "",
      h("h2", {}, "timeline"),
      story,
    );
  });
}

export function jobView(id) {
  return detailView({ kind: "job", id }, async (root, story) => {
    const doc = await get("/api/job", { id });
    const j = doc.job;
    clear(
      root,
      h("h1", {}, "job ", h("span", { class: "subject" }, j.job), " ", badge(j.state)),
      h("p", { class: "where" }, `cluster ${j.cluster} · attempt ${j.attempt} · restarts ${j.restarts_used}/${j.restarts_left ?? "-"}`),
      h("div", { class: "commands" }, commandButton("requeue", [j.job]), commandButton("cancel", [j.job])),
      fields(j, ["job", "state"]),
      h("p", { class: "nodes" }, "nodes: ", j.nodes.flatMap((n, i) => [i ? ", " : "", link("node", n)])),
      h("h2", {}, "timeline"),
      story,
    );
  });
}

export function incidentView(id) {
  return detailView({ kind: "incident", id }, async (root, story) => {
    const doc = await get("/api/incident", { id });
    const i = doc.incident;
    const members = doc.members.map((m) =>
      h("tr", {}, h("td", {}, link("node", m.node)), h("td", {}, badge(m.state)), h("td", {}, m.why ?? "")),
    );
    clear(
      root,
      h("h1", {}, "incident ", h("span", { class: "subject" }, i.id), " ", badge(i.state)),
      h("p", { class: "title" }, i.title),
      h("p", { class: "where" }, `${i.severity} · ${i.kind} · ${i.domain} · opened `, when(i.opened_at)),
      fields(i, ["id", "title", "state"]),
      h("h2", {}, `nodes (${doc.members.length})`),
      h("table", { class: "members" }, h("tbody", {}, members)),
      h("h2", {}, "what people were told"),
      told(doc.told),
      h("h2", {}, "timeline"),
      story,
    );
  });
}

function told(said) {
  if (!said) return h("p", { class: "empty told" }, "nothing told yet");
  return h(
    "div",
    { class: "told" },
    h("p", {}, said.where ? `in ${said.where}, ` : "", "last told ", when(said.at)),
    h("ul", {}, said.steps.map((step) => h("li", {}, step))),
    h("blockquote", { class: "parent" }, said.parent.map((line) => h("p", {}, line))),
  );
}

function detailView(subject, draw) {
  const root = h("section", { class: "detail-page" }, "loading…");
  const story = h("div", { class: "story" }, "reading the history…");
  let storyAt = 0;
  let storyTimer = null;
  const loadStory = async () => {
    storyAt = Date.now();
    try {
      clear(story, timeline(await get("/api/story", subject)));
    } catch (error) {
      clear(story, h("p", { class: "warning" }, String(error.message ?? error)));
    }
  };
  const refresh = async () => {
    try {
      await draw(root, story);
      root.dataset.error = "";
    } catch (error) {
      clear(root, h("p", { class: "warning" }, String(error.message ?? error)));
      root.dataset.error = "yes";
      return;
    }
    clearTimeout(storyTimer);
    const wait = STORY_EVERY_MS - (Date.now() - storyAt);
    if (wait <= 0) loadStory();
    else storyTimer = setTimeout(loadStory, wait);
  };
  return { root, load: refresh };
}
