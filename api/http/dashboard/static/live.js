// Live refresh of the dashboard (issue 21): when the log grows (Server-Sent Events from /live),
// fetch the page again and swap in every element marked data-live (by id). No reload, so the
// scroll position, an open <details> outside those regions and what is typed in a form stay.
(function () {
  "use strict";
  if (!window.EventSource || !window.fetch || !document.querySelector("[data-live]")) return;
  var status = document.getElementById("live-status");
  var timer = null;
  var busy = false;
  var again = false;
  var position = null;

  function show(text, ok) {
    if (!status) return;
    status.hidden = false;
    status.textContent = text;
    status.className = ok ? "live on" : "live off";
  }

  function refresh() {
    timer = null;
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh && fresh.innerHTML !== el.innerHTML) el.innerHTML = fresh.innerHTML;
        });
        document.body.setAttribute("data-live-position", String(position));
        show("live · position " + position, true);
      })
      .catch(function () { show("live · refresh failed", false); })
      .then(function () {
        busy = false;
        if (again) { again = false; schedule(); }
      });
  }

  function schedule() {
    if (timer === null) timer = setTimeout(refresh, 300);  // one refresh per burst of events
  }

  var source = new EventSource("/live");
  source.onopen = function () { show("live", true); };
  source.onerror = function () { show("live · reconnecting", false); };
  source.onmessage = function (m) {
    try { position = JSON.parse(m.data).position; } catch (e) { position = m.lastEventId; }
    schedule();
  };
})();
