// The field desk offline (console/pages_field.py): a checklist submitted with no signal is
// queued on the phone (IndexedDB, photos included) and sent when the signal returns.
// Each submission carries its idempotency key (the form's "idem" field), which the server
// stores with the record: a retry after a lost answer finds the first record, never makes
// a second. The inspector sees what is waiting in #field-queue.
"use strict";
(function () {
  const form = document.getElementById("checklist-form");
  const banner = document.getElementById("field-queue");
  if (!form || !banner || !window.indexedDB) return;
  const DB = "siltwatch-field", STORE = "outbox";

  function open() {
    return new Promise((resolve, reject) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "idem" });
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  }
  async function tx(mode, work) {
    const db = await open();
    return new Promise((resolve, reject) => {
      const t = db.transaction(STORE, mode);
      const out = work(t.objectStore(STORE));
      t.oncomplete = () => resolve(out && out.result);
      t.onerror = () => reject(t.error);
    });
  }
  const all = () => tx("readonly", (s) => s.getAll());
  const put = (item) => tx("readwrite", (s) => s.put(item));
  const drop = (idem) => tx("readwrite", (s) => s.delete(idem));

  function say(text, kind) {
    banner.hidden = !text;
    banner.textContent = text;
    banner.className = "message " + (kind || "info");
  }
  async function show(extra) {
    const waiting = (await all()) || [];
    const photos = waiting.reduce((n, w) => n + w.entries.filter((e) => e[1] instanceof Blob).length, 0);
    const lines = [];
    if (extra) lines.push(extra);
    if (waiting.length) {
      lines.push(waiting.length + " inspection" + (waiting.length > 1 ? "s" : "") + " with " +
        photos + " photo" + (photos === 1 ? "" : "s") + " waiting to be sent: they go as soon as there is a signal.");
    }
    say(lines.join(" "), waiting.length ? "warning" : "info");
    banner.dataset.waiting = String(waiting.length);
  }
  function newKey() {
    const bytes = new Uint8Array(18);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  let sending = false;
  let lastNote = ""; // what happened to the last submission, shown until the next one
  async function flush() {
    if (sending) return;
    sending = true;
    let note = "";
    try {
      for (const item of (await all()) || []) {
        const body = new FormData();
        for (const [name, value] of item.entries) {
          if (value instanceof Blob) body.append(name, value, value.name || "photo.jpg");
          else body.append(name, value);
        }
        let response;
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), 30000); // a weak signal that hangs
        try {
          response = await fetch(form.action, {
            method: "POST", body, credentials: "same-origin",
            headers: { accept: "application/json" }, signal: abort.signal,
          });
        } catch (e) {
          break; // no signal: keep it, try again later
        } finally {
          clearTimeout(timer);
        }
        if (response.ok) {
          const answer = await response.json();
          await drop(item.idem);
          note = "Sent: inspection record " + answer.record + ".";
          banner.dataset.sent = answer.record;
        } else if (response.status === 400) {
          const answer = await response.json().catch(() => ({ error: "refused" }));
          await drop(item.idem);
          note = answer.error;
        } else {
          note = response.status === 403
            ? "Log in again to send what is waiting."
            : "The console did not take it (" + response.status + "); it stays queued.";
          break;
        }
      }
    } finally {
      sending = false;
      if (note) lastNote = note;
      await show(lastNote);
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const entries = [];
    for (const [name, value] of new FormData(form).entries()) {
      if (value instanceof File && !value.name) continue; // an empty file input
      entries.push([name, value]);
    }
    const idem = form.elements.idem.value;
    await put({ idem, entries, queued: Date.now() });
    lastNote = "";
    form.reset();
    form.elements.idem.value = newKey();
    await show(navigator.onLine ? "Sending..." : "No signal: the inspection is kept on this phone.");
    await flush();
  });
  window.addEventListener("online", flush);
  setInterval(flush, 5000);
  show("");
  flush();
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});
})();
