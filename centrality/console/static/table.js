// A table of any length: only the rows in view (and a few around them) are in the page, so
// 10,000 nodes scroll, filter and update as fast as forty.

import { h } from "./dom.js";

const ROW_PX = 30;
const AROUND = 10;

export class VirtualTable {
  // columns: [{key, label, cell(row) -> Node|string, sort?: bool}]
  constructor(columns, { onSort, sort, key } = {}) {
    this.columns = columns;
    this.rows = [];
    this.onSort = onSort;
    this.sort = sort ?? null;
    this.key = key; // row -> a stable id, for what is selected
    this.body = h("tbody");
    this.head = h("thead", {}, h("tr", {}, columns.map((c) => this.header(c))));
    this.scroller = h("div", { class: "scroller" }, h("table", { class: "rows" }, this.head, this.body));
    this.scroller.addEventListener("scroll", () => this.draw());
    new ResizeObserver(() => this.draw()).observe(this.scroller);
  }

  header(column) {
    if (!column.sort) return h("th", { class: `col-${column.key}` }, column.label);
    const dir = this.sort === column.key ? " ▲" : this.sort === `-${column.key}` ? " ▼" : "";
    return h(
      "th",
      { class: `col-${column.key} sortable`, "data-sort": column.key, onclick: () => this.toggle(column.key) },
      column.label + dir,
    );
  }

  toggle(key) {
    this.sort = this.sort === key ? `-${key}` : key;
    this.head.replaceChildren(h("tr", {}, this.columns.map((c) => this.header(c))));
    this.onSort?.(this.sort);
  }

  setRows(rows) {
    this.rows = rows;
    this.draw();
  }

  draw() {
    const top = this.scroller.scrollTop;
    const height = this.scroller.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_PX) - AROUND);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW_PX) + AROUND);
    const spacer = (px) => h("tr", { class: "spacer" }, h("td", { colspan: this.columns.length }));
    const before = spacer();
    before.style.height = `${first * ROW_PX}px`;
    const after = spacer();
    after.style.height = `${(this.rows.length - last) * ROW_PX}px`;
    const shown = [];
    for (let i = first; i < last; i++) {
      const row = this.rows[i];
      const tr = h("tr", { class: "row" }, this.columns.map((c) => h("td", { class: `col-${c.key}` }, c.cell(row))));
      tr.style.height = `${ROW_PX}px`;
      shown.push(tr);
    }
    this.body.replaceChildren(before, ...shown, after);
  }
}
