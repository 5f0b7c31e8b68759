// The field desk's service worker (console/pages_field.py): the field page and the
// console's static files are kept on the phone as they were last fetched, so the
// checklist opens with no signal. Network first: with a signal the page is always fresh.
"use strict";
const CACHE = "siltwatch-field-v1";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  const wanted = event.request.method === "GET" && url.origin === self.location.origin &&
    (url.pathname.startsWith("/static/") || /^\/sites\/[^/]+\/field$/.test(url.pathname) ||
     url.pathname === "/manifest.webmanifest");
  if (!wanted) return;
  event.respondWith(
    fetch(event.request).then((response) => {
      if (response.ok) {
        const copy = response.clone();
        caches.open(CACHE).then((cache) => cache.put(event.request, copy));
      }
      return response;
    }).catch(() => caches.match(event.request).then((hit) => hit || Response.error()))
  );
});
