/* siltwatch console: keeps a page's live parts current without a reload.
 *
 * Every [data-live] element with an id is asked for again every
 * <body data-refresh> seconds (the same URL, the same session): the page is
 * fetched, parsed, and each live part whose HTML changed is swapped in. A part
 * holding the keyboard focus (someone typing) is left alone until it is not;
 * an open <details> stays open. A hidden tab does not ask; it asks at once when
 * shown again. When the console does not answer, or the session has ended, the
 * status line says so and the page stays as it was.
 */
(function () {
  "use strict";
  var every = Math.max(1, Number(document.body.getAttribute("data-refresh")) || 10) * 1000;
  var busy = false;

  function status(text, failed) {
    var line = document.getElementById("live-status");
    if (!line) return;
    line.textContent = text;
    line.classList.toggle("failed", !!failed);
  }

  function clock() {
    return new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function keepOpen(old, fresh) {
    var before = old.querySelectorAll("details");
    var after = fresh.querySelectorAll("details");
    for (var i = 0; i < before.length && i < after.length; i++) {
      if (before[i].open) after[i].setAttribute("open", "");
    }
  }

  function swap(doc) {
    var changed = 0;
    document.querySelectorAll("[data-live][id]").forEach(function (old) {
      var active = document.activeElement;
      if (active && active !== document.body && old.contains(active)) return;
      var fresh = doc.getElementById(old.id);
      if (!fresh || fresh.innerHTML === old.innerHTML) return;
      keepOpen(old, fresh);
      old.replaceWith(document.importNode(fresh, true));
      changed += 1;
    });
    return changed;
  }

  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store", redirect: "manual" })
      .then(function (response) {
        if (response.type === "opaqueredirect" || response.status === 303) {
          throw new Error("your session has ended: reload the page to log in again");
        }
        if (!response.ok) throw new Error("the console answered " + response.status);
        return response.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var changed = swap(doc);
        document.body.setAttribute("data-updated", String(Date.now()));
        status("Up to date (checked " + clock() + " by this device's clock" +
               (changed ? "; " + changed + " part" + (changed > 1 ? "s" : "") + " changed" : "") +
               ") · updates itself every " + every / 1000 + " s");
      })
      .catch(function (err) {
        status("Not updating since " + clock() + ": " + (err && err.message ? err.message : "the console did not answer"), true);
      })
      .then(function () { busy = false; });
  }

  if (!document.querySelector("[data-live][id]")) return;
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
})();
