// Queuewatch page glue. No inline scripts anywhere: this file and the vendored libraries are
// the only JavaScript, and job data is never passed to it as code.
// Words are translated through Django's JavaScript catalog (/jsi18n/, loaded first by base.html);
// without it they stay English.
var gettext = window.gettext || function (s) { return s; };
var interpolate = window.interpolate || function (fmt, obj) { return fmt.replace(/%\((\w+)\)s/g, function (_, k) { return String(obj[k]); }); };
(function () {
  "use strict";

  // The header badge tells the truth about the websocket: live, reconnecting or not live.
  function setStatus(state, text) {
    var el = document.getElementById("live-status");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }
  var open = 0, opened = 0, closed = 0;
  document.addEventListener("htmx:wsConnecting", function () { if (!open) setStatus("connecting", gettext("connecting…")); });
  document.addEventListener("htmx:wsOpen", function () {
    open += 1;
    opened += 1;
    setStatus("live", gettext("live"));
    // Counted for the curious (and the idle-socket test): every reconnect shows here.
    document.getElementById("live-status").dataset.opened = opened;
  });
  document.addEventListener("htmx:wsClose", function () {
    open = Math.max(0, open - 1);
    closed += 1;
    var el = document.getElementById("live-status");
    if (el) el.dataset.closed = closed;
    if (!open) setStatus("reconnecting", gettext("reconnecting…"));
  });
  document.addEventListener("htmx:wsError", function () { if (!open) setStatus("reconnecting", gettext("reconnecting…")); });
})();

// Relative times and running ages are computed here, not on the server, so the HTML of a
// live fragment only changes when the data changes.
(function () {
  "use strict";
  function fmt(ms) {
    var s = ms / 1000;
    function unit(n, fmt) { return interpolate(fmt, { n: n }, true); }
    if (s < 60) return unit(s < 10 ? s.toFixed(1) : Math.floor(s), gettext("%(n)s s"));
    var m = Math.floor(s / 60), sec = Math.floor(s % 60);
    if (m < 60) return m < 10 && sec ? unit(m, gettext("%(n)s min")) + " " + unit(sec, gettext("%(n)s s")) : unit(m, gettext("%(n)s min"));
    var h = Math.floor(m / 60);
    if (h < 48) return unit(h, gettext("%(n)s h")) + " " + unit(m % 60, gettext("%(n)s min"));
    return unit(Math.floor(h / 24), gettext("%(n)s d")) + " " + unit(h % 24, gettext("%(n)s h"));
  }
  function update() {
    var now = Date.now();
    document.querySelectorAll("time.rel[datetime]").forEach(function (el) {
      var delta = Date.parse(el.getAttribute("datetime")) - now;
      el.textContent = interpolate(delta >= 0 ? gettext("in %(time)s") : gettext("%(time)s ago"),
                                   { time: fmt(Math.abs(delta)) }, true);
    });
    document.querySelectorAll("time.age[datetime]").forEach(function (el) {
      el.textContent = fmt(Math.max(0, now - Date.parse(el.getAttribute("datetime"))));
    });
  }
  document.addEventListener("DOMContentLoaded", update);
  document.addEventListener("htmx:afterSettle", update);
  document.addEventListener("htmx:oobAfterSwap", update);
  setInterval(update, 1000);
})();

// Live fragments are rendered once for every viewer, so they cannot know which tab this page
// shows; mark it here from the job list's state.
(function () {
  "use strict";
  function markTab() {
    var list = document.getElementById("job-list");
    if (!list) return;
    document.querySelectorAll(".tabs a[role=tab]").forEach(function (a) {
      a.classList.toggle("active", a.classList.contains("state-" + list.dataset.state));
    });
  }
  document.addEventListener("DOMContentLoaded", markTab);
  document.addEventListener("htmx:afterSettle", markTab);
  document.addEventListener("htmx:oobAfterSwap", markTab);
})();

// Ticked jobs survive live re-renders of a job list: remember ticks by job id and tick them
// again after each swap (the monitor's fragment knows nothing of this browser's choices).
(function () {
  "use strict";
  var ticked = new Set();
  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (box.matches && box.matches("input[type=checkbox][form=bulk-form]")) {
      if (box.checked) ticked.add(box.value); else ticked.delete(box.value);
    }
  });
  function restore() {
    document.querySelectorAll("input[type=checkbox][form=bulk-form]").forEach(function (box) {
      if (ticked.has(box.value)) box.checked = true;
    });
  }
  document.addEventListener("htmx:oobAfterSwap", restore);
  document.addEventListener("htmx:afterSettle", function (ev) {
    if (ev.target && ev.target.id === "job-list") ticked.clear(); else restore();
  });
})();

// The overview's socket carries every queue's row, also rows this page does not show (another
// page of the overview, filtered out) and rows of queues that appeared since it loaded. htmx
// would report each as htmx:oobErrorNoTarget; this extension (hx-ext="qw-rows" next to "ws")
// drops fragments without a target before htmx sees them, and when a queue row is new to this
// page, reloads the queue tables once through htmx (same URL: same sort, filter and page), so
// a new queue appears live where it belongs.
(function () {
  "use strict";
  var tried = new Set();  // row ids already looked for: a row that is elsewhere is not refetched each tick
  var pending = null;
  function reloadTables() {
    if (pending) return;
    pending = setTimeout(function () {
      pending = null;
      if (!document.getElementById("queue-tables")) return;
      window.htmx.ajax("GET", window.location.pathname + window.location.search,
                       { target: "#queue-tables", swap: "outerHTML",
                         headers: { "X-Queuewatch-Refresh": "queues" } });
    }, 300);
  }
  function register() {
    if (!window.htmx || !window.htmx.defineExtension) return;
    window.htmx.defineExtension("qw-rows", {
      transformResponse: function (text) {
        var template = document.createElement("template");
        template.innerHTML = text;
        var dropped = false;
        Array.from(template.content.children).forEach(function (el) {
          if (!el.id || document.getElementById(el.id)) return;
          dropped = true;
          el.remove();
          if (el.matches("tr[id^=\"row-\"]") && !tried.has(el.id)) {
            tried.add(el.id);
            reloadTables();
          }
        });
        return dropped ? template.innerHTML : text;
      },
    });
  }
  register();  // deferred after htmx, before htmx processes the page
})();

// Behaviour that used to be inline (onchange=, javascript: links, a <style> block), moved here
// so the Content-Security-Policy needs no 'unsafe-inline'.
(function () {
  "use strict";
  // <a data-back href="fallback">: back in history when there is one, else the fallback link.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-back]");
    if (link && window.history.length > 1) {
      event.preventDefault();
      window.history.back();
    }
  });
  // <select data-autosubmit>: submit its form when changed.
  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field.matches && field.matches("select[data-autosubmit]") && field.form) field.form.requestSubmit();
  });
  // A channel form shows only the chosen kind's settings.
  function showChosenKind(form) {
    var kind = form.querySelector("select[name=kind]");
    if (!kind) return;
    form.querySelectorAll(".kind-settings[data-kind]").forEach(function (fieldset) {
      fieldset.hidden = fieldset.dataset.kind !== kind.value;
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches(".channel-form select[name=kind]")) showChosenKind(event.target.form);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".channel-form").forEach(showChosenKind);
  });
})();
