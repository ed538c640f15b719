// A listing of the fleet's nodes or jobs: counts per state and cluster, filters, sort, search,
// selection; what the server selects (as `centrality nodes`/`jobs` would) drawn as a table.

import { get } from "./api.js";
import { clear, h } from "./dom.js";
import { VirtualTable } from "./table.js";

const WAIT_MS = 120; // typing settles this long before a filter is asked for

export class Listing {
  // path: /api/nodes; columns: table columns (cells get a named row); controls: [{name, label, kind}]
  constructor({ path, noun, columns, controls, actions }) {
    Object.assign(this, { path, noun, actions });
    this.filters = { state: [] };
    this.selected = new Set();
    this.busy = false;
    this.again = false;
    this.table = new VirtualTable(columns, { onSort: (sort) => this.set("sort", sort) });
    this.counts = h("div", { class: "counts" });
    this.summary = h("span", { class: "summary" });
    this.bar = h("div", { class: "actions" });
    this.inputs = h("div", { class: "filters" }, controls.map((c) => this.control(c)));
    this.root = h("section", { class: `listing listing-${noun}` }, this.counts, this.inputs, h("div", { class: "bar" }, this.summary, this.bar), this.table.scroller);
  }

  control({ name, label, kind, options = [] }) {
    if (kind === "select") {
      const select = h("select", { name, "aria-label": label, onchange: (e) => this.set(name, e.target.value) }, h("option", { value: "" }, `${label}: any`));
      this[`select_${name}`] = select;
      this.options(name, options);
      return select;
    }
    let timer = null;
    const input = h("input", { name, type: "search", placeholder: label, "aria-label": label });
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.set(name, input.value), WAIT_MS);
    });
    return input;
  }

  options(name, values) {
    const select = this[`select_${name}`];
    if (!select) return;
    const chosen = select.value;
    const known = [...select.options].slice(1).map((o) => o.value);
    if (known.join("\n") === values.join("\n")) return;
    select.replaceChildren(select.options[0], ...values.map((v) => h("option", { value: v }, v)));
    select.value = values.includes(chosen) ? chosen : "";
  }

  set(name, value) {
    this.filters[name] = value;
    this.load();
  }

  toggleState(state) {
    const states = new Set(this.filters.state);
    states.has(state) ? states.delete(state) : states.add(state);
    this.set("state", [...states]);
  }

  async load() {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      const doc = await get(this.path, this.filters);
      this.show(doc);
      this.root.dataset.error = "";
    } catch (error) {
      this.summary.textContent = String(error.message ?? error);
      this.root.dataset.error = "yes";
    } finally {
      this.busy = false;
      if (this.again) {
        this.again = false;
        this.load();
      }
    }
  }

  show(doc) {
    const at = Object.fromEntries(doc.columns.map((c, i) => [c, i]));
    const rows = doc.rows.map((r) => new Proxy(r, { get: (row, key) => (key in at ? row[at[key]] : row[key]) }));
    this.table.setRows(rows);
    this.drawCounts(doc.counts);
    for (const [name, values] of Object.entries(doc.facets ?? {})) this.options(name.replace(/s$/, ""), values);
    this.options("cluster", Object.keys(doc.counts.clusters));
    this.summary.textContent = `${doc.rows.length} of ${doc.total} ${this.noun}`;
    this.drawBar();
    this.root.dataset.shown = String(doc.rows.length);
    this.root.dataset.version = String(doc.version);
    if (!document.body.dataset.painted) document.body.dataset.painted = String(Math.round(performance.now()));
  }

  drawCounts(counts) {
    const chosen = new Set(this.filters.state);
    const chip = (state, n) =>
      h("button", { class: `chip${chosen.has(state) ? " chosen" : ""}`, "data-state": state, onclick: () => this.toggleState(state) }, `${state} ${n}`);
    const clusters = Object.entries(counts.clusters).map(([cluster, states]) =>
      h(
        "tr",
        {},
        h("th", {}, h("button", { class: "cluster", onclick: () => this.pickCluster(cluster) }, cluster)),
        h("td", {}, String(Object.values(states).reduce((a, b) => a + b, 0))),
        h("td", {}, Object.entries(states).map(([s, n]) => h("span", { class: "state", "data-state": s }, `${s} ${n}`))),
      ),
    );
    clear(
      this.counts,
      h("div", { class: "chips" }, Object.entries(counts.states).map(([s, n]) => chip(s, n))),
      h("table", { class: "per-cluster" }, h("tbody", {}, clusters)),
    );
  }

  pickCluster(cluster) {
    this.select_cluster.value = cluster;
    this.set("cluster", cluster);
  }

  drawBar() {
    if (!this.actions) return;
    const names = [...this.selected];
    clear(this.bar, names.length ? `${names.length} selected:` : "", this.actions(names));
  }

  choose(name, on) {
    on ? this.selected.add(name) : this.selected.delete(name);
    this.drawBar();
  }

  selectBox(name) {
    return h("input", { type: "checkbox", "aria-label": `select ${name}`, checked: this.selected.has(name), onchange: (e) => this.choose(name, e.target.checked) });
  }
}
