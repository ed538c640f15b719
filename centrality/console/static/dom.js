// Every value that comes from events goes into the page as text (a Text node, or an attribute
// set by name), never as markup and never as an address of its own: a node named <script> or
// javascript: is shown as those characters, and its link is always "#/node/" + its escaped name.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

export function route(kind, id) {
  return `#/${kind}/${encodeURIComponent(id)}`;
}

export function link(kind, id, label) {
  return h("a", { href: route(kind, id), class: `link-${kind}` }, label ?? id);
}

export function clear(el, ...children) {
  el.replaceChildren();
  add(el, children);
  return el;
}

export function age(iso) {
  if (!iso) return "-";
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (s >= size) return `${Math.floor(s / size)}${unit} ago`;
  }
  return `${s}s ago`;
}

export function when(iso) {
  return iso ? h("time", { datetime: iso, title: iso }, age(iso)) : "-";
}

export function badge(state) {
  const name = state ?? "-";
  return h("span", { class: "state", "data-state": name }, name);
}

export function fields(doc, skip = []) {
  const rows = Object.entries(doc)
    .filter(([k, v]) => !skip.includes(k) && v !== null && v !== "" && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "object" ? JSON.stringify(v) : v)));
  return h("table", { class: "fields" }, h("tbody", {}, rows));
}
