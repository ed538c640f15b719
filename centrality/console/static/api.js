// The console's own JSON: reads are plain GETs; anything that changes state is a POST from this
// page carrying the session's CSRF token (another site can neither read it nor send it).

export let session = null;

export async function start() {
  session = await get("/api/session");
  return session;
}

async function answer(response) {
  if (response.status === 401) {
    location.assign("/login");
    throw new Error("not logged in");
  }
  const doc = await response.json();
  if (!response.ok) throw new Error(doc.error ?? `HTTP ${response.status}`);
  return doc;
}

export async function get(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    for (const one of [value].flat()) if (one !== undefined && one !== null && one !== "") query.append(key, one);
  }
  const text = query.toString();
  return answer(await fetch(text ? `${path}?${text}` : path, { credentials: "same-origin" }));
}

export async function post(path, body) {
  return answer(
    await fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": session?.csrf ?? "" },
      body: JSON.stringify(body),
    }),
  );
}
