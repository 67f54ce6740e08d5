// Live updates: follow the log's server-sent events and, when the store
// appends, fetch this page again and replace its content, keeping open
// what the reader opened.
(() => {
  "use strict";
  const body = document.body;
  const url = body.dataset.live;
  const status = document.getElementById("live-status");
  if (!url || !window.EventSource) return;
  let timer = 0;
  let busy = false;

  async function refresh() {
    if (busy) { schedule(); return; }
    busy = true;
    try {
      const res = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const next = doc.getElementById("content");
      const cur = document.getElementById("content");
      if (!next || !cur) return;
      const open = [...cur.querySelectorAll("details[open][id]")].map((d) => d.id);
      cur.replaceWith(next);
      for (const id of open) {
        const d = document.getElementById(id);
        if (d) d.open = true;
      }
      body.dataset.head = doc.body.dataset.head;
      if (status) status.textContent = "live · updated " + new Date().toLocaleTimeString();
    } catch (e) {
      if (status) status.textContent = "live · update failed";
    } finally {
      busy = false;
    }
  }

  // At most one refresh every 200 ms, however fast the store appends.
  function schedule() {
    if (timer) return;
    timer = setTimeout(() => { timer = 0; refresh(); }, 200);
  }

  const sep = url.includes("?") ? "&" : "?";
  const es = new EventSource(url + sep + "after=" + encodeURIComponent(body.dataset.head || "0"));
  es.addEventListener("open", () => { if (status) status.textContent = "live"; });
  es.addEventListener("append", schedule);
  es.addEventListener("error", () => { if (status) status.textContent = "live · reconnecting"; });
  // A browser opens few connections to one server: give this one back as
  // soon as the page is left, not when the page is dropped from memory.
  addEventListener("pagehide", () => es.close());
})();
