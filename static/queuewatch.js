// Queuewatch page glue. No inline scripts anywhere: this file and the vendored libraries are
// the only JavaScript, and job data is never passed to it as code.
// Words are translated through Django's JavaScript catalog (/jsi18n/, loaded first by base.html);
// without it they stay English.
var gettext = window.gettext || function (s) { return s; };
var interpolate = window.interpolate || function (fmt, obj) { return fmt.replace(/%\((\w+)\)s/g, function (_, k) { return String(obj[k]); }); };
(function () {
  "use strict";

  // The CSRF token goes only with a post a person made from one of Queuewatch's forms. Live
  // fragments come from Redis, and htmx acts on the attributes of whatever is swapped in: one
  // forged there must not post in this user's name (signed fragments are the first defence,
  // dashboard/core/signing.py; this is the second). So a post (or any non-GET) goes out only
  // when a real user event triggered it (not load, revealed, every, a script's event) on an
  // element inside (or being) a post form whose action is the request's URL; anything else is
  // cancelled, whatever token fields hx-include might gather. The token is in a <meta>, not on
  // <body> for every element.
  function mayPost(detail) {
    var event = detail.triggeringEvent;
    var elt = detail.elt;
    if (!event || !event.isTrusted || !elt) return false;
    var form = elt.form || (elt.closest && elt.closest("form"));
    if (!form || (form.getAttribute("method") || "").toLowerCase() !== "post") return false;
    var action = new URL(form.getAttribute("action") || "", window.location.href);
    var target = new URL(detail.path, window.location.href);
    return action.origin === window.location.origin && action.pathname === target.pathname;
  }
  document.addEventListener("htmx:configRequest", function (event) {
    var detail = event.detail;
    if (detail.verb === "get") return;
    if (!mayPost(detail)) {
      event.preventDefault();
      if (window.console) console.warn("Queuewatch: refused a " + detail.verb + " to " + detail.path + " not made from one of its forms");
      return;
    }
    var token = document.querySelector('meta[name="qw-csrf-token"]');
    if (token) detail.headers["X-CSRFToken"] = token.content;
  });


  // The header badge tells the truth about the websocket: live, reconnecting or not live, or
  // signed out: the server closes a socket with 4401 when its login session has ended (logout,
  // expiry, deactivation; dashboard/live/socket_sessions.py). htmx's ws extension does not
  // reconnect after that code, and the badge keeps saying so whatever the page's other sockets do.
  // Too many live tabs: the server closes a socket with 4429 when this user already holds as many
  // open sockets as allowed (dashboard/live/socket_leases.py); htmx does not reconnect after it.
  var SIGNED_OUT = 4401, TOO_MANY_SOCKETS = 4429;
  var signedOut = false;
  function setStatus(state, text) {
    var el = document.getElementById("live-status");
    if (!el || signedOut) return;
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
  document.addEventListener("htmx:wsClose", function (ev) {
    open = Math.max(0, open - 1);
    closed += 1;
    var el = document.getElementById("live-status");
    if (el) el.dataset.closed = closed;
    var code = ev.detail && ev.detail.event && ev.detail.event.code;
    if (code === SIGNED_OUT) {
      setStatus("signed-out", gettext("signed out"));
      signedOut = true;
      if (el) el.title = gettext("Your session has ended: sign in again to see live updates.");
      return;
    }
    if (code === TOO_MANY_SOCKETS) {
      setStatus("too-many", gettext("not live: too many tabs"));
      if (el) el.title = gettext("You have too many live pages open: close some tabs, then reload this page to see live updates.");
      return;
    }
    if (!open) setStatus("reconnecting", gettext("reconnecting…"));
  });
  document.addEventListener("htmx:wsError", function () { if (!open) setStatus("reconnecting", gettext("reconnecting…")); });
})();

// Numbers and durations: the rules of dashboard/templatetags/qw.py, step for step (the same
// float operations), with its words (units, short scales) in the page's language from the JSON
// it renders once (#qw-format-rules, base.html). The server and the browser write the same text
// for the same value (tests/i18n/test_number_formats.py). charts.js uses these too.
(function () {
  "use strict";
  var rules = null;
  function words() {
    if (rules) return rules;
    var el = typeof document !== "undefined" && document.getElementById("qw-format-rules");
    try { rules = el ? JSON.parse(el.textContent) : null; } catch (e) { rules = null; }
    // Without the rules (never on our pages): the keys, which are the English abbreviations.
    rules = rules || { units: {}, scales: {} };
    return rules;
  }
  function unit(key, text) {
    var pattern = words().units[key] || (key.charAt(0) === "/" ? "{n}" : "{n} ") + key;
    return pattern.replace("{n}", text);
  }
  var SCALES = [["B", 1e9], ["M", 1e6], ["K", 1e3]];  // largest first, as qw.SCALES
  var COMPACT_COUNTS_FROM = 10000, COMPACT_RATES_FROM = 1000;

  function rounded(value, decimals) {
    var scale = Math.pow(10, decimals);
    var r = Math.floor(Math.abs(value) * scale + 0.5);
    var whole = Math.floor(r / scale);
    var fraction = decimals ? String(r - whole * scale).padStart(decimals, "0").replace(/0+$/, "") : "";
    return [whole, fraction];
  }
  function grouped(whole) { return String(whole).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  function compact(value) {
    var i = 0;
    while (i < SCALES.length - 1 && value < SCALES[i][1]) i++;
    if (i > 0 && rounded(value / SCALES[i][1], 1)[0] >= 1000) i--;
    var pattern = words().scales[SCALES[i][0]] || "%(n)s" + SCALES[i][0];
    return pattern.replace("%(n)s", number(value / SCALES[i][1]));
  }
  function number(value, decimals, compactFrom) {
    value = Number(value);
    if (!isFinite(value)) return "—";
    if (decimals == null) decimals = 1;
    var sign = value < 0 ? "-" : "";
    if (compactFrom != null && Math.abs(value) >= compactFrom) return sign + compact(Math.abs(value));
    var r = rounded(value, decimals);
    if (!r[0] && !r[1]) sign = "";
    return sign + grouped(r[0]) + (r[1] ? "." + r[1] : "");
  }
  function rate(value) {
    var v = Math.abs(Number(value));
    return number(value, v < 1 ? 2 : v < 10 ? 1 : 0, COMPACT_RATES_FROM);
  }
  function duration(seconds) {
    var s = Math.max(0, Number(seconds));
    if (!isFinite(s)) return "—";
    if (s === 0) return unit("s", "0");
    if (s < 1) return unit("ms", number(s * 1000, s < 0.01 ? 1 : 0));
    if (s < 60) return unit("s", s < 10 ? number(s, 1) : String(Math.floor(s)));
    var total = Math.floor(s), minutes = Math.floor(total / 60), sec = total % 60;
    if (minutes < 60) return unit("min", String(minutes)) + (minutes < 10 && sec ? " " + unit("s", String(sec)) : "");
    var hours = Math.floor(minutes / 60);
    minutes = minutes % 60;
    if (hours < 48) return unit("h", String(hours)) + (minutes ? " " + unit("min", String(minutes)) : "");
    return unit("d", number(Math.floor(hours / 24))) + (hours % 24 ? " " + unit("h", String(hours % 24)) : "");
  }
  window.qwText = {
    number: function (v) { return number(v, 1); },
    count: function (v) { return number(v, 1, COMPACT_COUNTS_FROM); },
    rate: rate,
    perMinute: function (v) { return unit("/min", rate(v)); },
    duration: duration,
    durationMs: function (ms) { return duration(Number(ms) / 1000); },
    COMPACT_COUNTS_FROM: COMPACT_COUNTS_FROM,
    COMPACT_RATES_FROM: COMPACT_RATES_FROM,
  };
})();

// Relative times and running ages are computed here, not on the server, so the HTML of a
// live fragment only changes when the data changes.
(function () {
  "use strict";
  function fmt(ms) { return window.qwText.durationMs(ms); }
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

// A job page's live part and actions are swapped in by two writers: the monitor's websocket
// messages and an action's own response. Each says when its job was read (data-read-at,
// dashboard.live.channels.read_stamp); an older read never replaces a newer one, so a response
// read just before the job failed again cannot bring back a running job's actions.
(function () {
  "use strict";
  document.addEventListener("htmx:oobBeforeSwap", function (ev) {
    var target = ev.detail && ev.detail.target, fragment = ev.detail && ev.detail.fragment;
    var incoming = fragment && fragment.firstElementChild;
    if (!target || !incoming || !target.hasAttribute("data-read-at")) return;
    var shown = Number(target.getAttribute("data-read-at")), read = Number(incoming.getAttribute("data-read-at"));
    if (shown > 0 && read > 0 && read < shown) ev.detail.shouldSwap = false;
  });
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

// What is offered only while jobs are in a state ("Retry all failed…" while there are failed
// jobs: data-qw-shown-when="failed", or several states) follows the live state tabs' counts, so
// a page opened on a quiet queue offers the retry once jobs fail, without a reload; "paused" and
// "running" follow the live paused badge (pause or resume). The server renders the same choice
// at load; the views check again when the form is sent.
(function () {
  "use strict";
  function holds(token) {
    var live = document.querySelector(".queue-live");
    if (token === "paused" || token === "running") {
      return !!live && !!live.querySelector(".badge.paused") === (token === "paused");
    }
    var count = document.querySelector(".tabs a.state-" + token + " .count");
    return !!count && !count.classList.contains("zero");
  }
  function sync() {
    document.querySelectorAll("[data-qw-shown-when]").forEach(function (el) {
      el.hidden = !el.dataset.qwShownWhen.split(" ").some(holds);
    });
  }
  document.addEventListener("htmx:oobAfterSwap", sync);
  document.addEventListener("htmx:afterSettle", sync);
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

// The overview's socket carries the rows of the queues this page shows, which the page names
// (#queue-tables' data-rows-view, a view the server stored) when the socket opens and whenever
// its tables are replaced: the monitor renders only rows some page shows. Rows another tab's page
// shows arrive too; htmx would report each as htmx:oobErrorNoTarget, so this extension (hx-ext=
// "qw-rows" next to "ws") drops fragments without a target before htmx sees them. When queues
// appear, the monitor swaps #queues-added (on every page), and the overview reloads its tables
// once through htmx (same URL: same sort, filter and page), so a new queue shows where it belongs.
(function () {
  "use strict";
  var socket = null;  // the overview socket's wrapper, from htmx's ws extension
  var named = null;  // the view last named on it
  var pending = null;
  function reloadTables() {
    if (pending) return;
    pending = setTimeout(function () {
      pending = null;
      var tables = document.getElementById("queue-tables");
      if (!tables) return;
      // Sent from the tables, whose hx-sync drops it while the operator's own filter or page
      // request is under way (that answer brings the new queue too) and lets theirs abort it.
      window.htmx.ajax("GET", window.location.pathname + window.location.search,
                       { source: tables, target: "#queue-tables", swap: "outerHTML",
                         headers: { "X-Queuewatch-Refresh": "queues" } });
    }, 300);
  }
  function nameView(again) {
    var tables = document.getElementById("queue-tables");
    var view = tables && tables.getAttribute("data-rows-view");
    if (!socket || !view || (view === named && !again)) return;
    named = view;
    socket.send(JSON.stringify({ view: view }));
  }
  document.addEventListener("htmx:wsOpen", function (ev) {
    var elt = ev.target;
    if (!elt || !elt.matches || !elt.matches("[hx-ext~='qw-rows'], [hx-ext*='qw-rows']")) return;
    socket = ev.detail && ev.detail.socketWrapper;
    nameView(true);  // a new socket (or a reconnect) knows no view yet
  });
  document.addEventListener("htmx:afterSettle", function () { nameView(false); });
  document.addEventListener("htmx:oobAfterSwap", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (target && target.id === "queues-added") reloadTables();
  });
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

// Readable numbers and times (docs/architecture.md, "Numbers and times"). Live fragments are rendered
// once for every viewer, so the markup holds raw values — <data class="qw-num" value="12000">,
// <time datetime="…Z" data-qw-time> — and this formats them for the page's language (<html lang>)
// and the product's ONE time-zone rule: the browser's zone, or UTC when the viewer chose it
// (remembered in localStorage). Everything is re-formatted after each htmx swap and live message.
(function () {
  "use strict";
  var KEY = "qw-time-zone";
  function utc() {
    try { return window.localStorage.getItem(KEY) === "utc"; } catch (e) { return false; }
  }
  // The one helper charts.js (and anything else drawing times) asks: "UTC", or undefined for
  // the browser's own zone.
  window.qwTimeZone = function () { return utc() ? "UTC" : undefined; };
  function zoneLabel(date) {
    if (utc()) return "UTC";
    var off = -(date || new Date()).getTimezoneOffset();
    var sign = off < 0 ? "−" : "+";
    off = Math.abs(off);
    return "UTC" + sign + String(Math.floor(off / 60)).padStart(2, "0") + ":" + String(off % 60).padStart(2, "0");
  }
  window.qwZoneLabel = zoneLabel;

  function formatNumber(el) {
    var v = Number(el.getAttribute("value"));
    if (el.getAttribute("value") === "" || !isFinite(v)) return;
    var exact = window.qwText.number(v);
    // Counts are short from 10,000, rates from 1,000 (the rules above). The exact figure is
    // always on hover.
    var isRate = el.classList.contains("qw-rate"), compact = el.classList.contains("qw-compact");
    var text = !compact ? exact : isRate ? window.qwText.rate(v) : window.qwText.count(v);
    var from = isRate ? window.qwText.COMPACT_RATES_FROM : window.qwText.COMPACT_COUNTS_FROM;
    if (el.textContent !== text) el.textContent = text;
    if (compact && Math.abs(v) >= from) el.title = exact; else el.removeAttribute("title");
  }

  function pad(n) { return String(n).padStart(2, "0"); }
  // "2026-12-01 14:03:09": the same unambiguous shape in both languages, in the chosen zone.
  function formatTime(ms, precision) {
    var d = new Date(ms);
    if (isNaN(d.getTime())) return null;
    var parts = utc()
      ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
      : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
    var text = parts[0] + "-" + pad(parts[1]) + "-" + pad(parts[2]) + " " + pad(parts[3]) + ":" + pad(parts[4]);
    return precision === "m" ? text : text + ":" + pad(parts[5]);
  }
  window.qwFormatTime = formatTime;

  function formatAll(root) {
    root = root && root.querySelectorAll ? root : document;
    root.querySelectorAll("data.qw-num").forEach(formatNumber);
    root.querySelectorAll("time[data-qw-time][datetime]").forEach(function (el) {
      var ms = Date.parse(el.getAttribute("datetime"));
      var text = formatTime(ms, el.getAttribute("data-qw-time"));
      if (text === null) return;
      var label = zoneLabel(new Date(ms));
      if (el.textContent !== text) el.textContent = text;
      el.title = text + " " + label;
    });
    // Relative times (kept current by the timer above) say the absolute time on hover.
    root.querySelectorAll("time.rel[datetime], time.age[datetime]").forEach(function (el) {
      var ms = Date.parse(el.getAttribute("datetime"));
      var text = formatTime(ms, "s");
      if (text !== null) el.title = text + " " + zoneLabel(new Date(ms));
    });
    // Date inputs say which zone they are in, and send UTC (see syncZoned).
    root.querySelectorAll("[data-qw-zone-name]").forEach(function (el) { el.textContent = zoneLabel(); });
    root.querySelectorAll("input[data-qw-zoned]").forEach(syncZoned);
  }
  window.qwFormat = formatAll;

  // <input type="datetime-local" data-qw-zoned="finished_from"> is read in the chosen zone and
  // its instant sent as UTC in the hidden input of that name, the form the server parses.
  function syncZoned(input) {
    var hidden = input.form && input.form.querySelector("input[type=hidden][name='" + input.getAttribute("data-qw-zoned") + "']");
    if (!hidden) return;
    if (!input.value) { hidden.value = ""; return; }
    var d = utc() ? new Date(input.value + "Z") : new Date(input.value);
    hidden.value = isNaN(d.getTime()) ? input.value : d.toISOString();
  }
  document.addEventListener("input", function (ev) {
    if (ev.target.matches && ev.target.matches("input[data-qw-zoned]")) syncZoned(ev.target);
  });

  // The switch, in the footer of every page: shows the zone times are in, flips to UTC and back.
  function addSwitch() {
    if (document.querySelector(".qw-zone")) return;
    // Under the page (the shell has no footer for signed-in pages): every page has a <main>.
    var host = document.querySelector("[data-qw-zone-slot]") || document.querySelector("footer") || document.querySelector("main") || document.body;
    var box = document.createElement("span");
    box.className = "qw-zone";
    var label = document.createElement("span");
    label.className = "qw-zone-current";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "link qw-zone-toggle";
    box.appendChild(label);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(button);
    host.appendChild(box);
    function paint() {
      label.textContent = interpolate(gettext("Times in %(zone)s"), { zone: zoneLabel() }, true);
      label.dataset.zone = utc() ? "utc" : "browser";
      button.textContent = utc() ? gettext("Use my time zone") : gettext("Use UTC");
      button.setAttribute("aria-pressed", utc() ? "true" : "false");
    }
    button.addEventListener("click", function () {
      try {
        if (utc()) window.localStorage.removeItem(KEY); else window.localStorage.setItem(KEY, "utc");
      } catch (e) { /* storage refused: the switch cannot be remembered */ }
      paint();
      formatAll(document);
      document.dispatchEvent(new CustomEvent("qw:timezone"));
    });
    paint();
  }

  document.addEventListener("DOMContentLoaded", function () { addSwitch(); formatAll(document); });
  document.addEventListener("htmx:afterSettle", function (ev) { formatAll(ev.target && ev.target.isConnected ? ev.target : document); });
  document.addEventListener("htmx:oobAfterSwap", function (ev) { formatAll(ev.detail && ev.detail.target && ev.detail.target.isConnected ? ev.detail.target : document); });
  document.addEventListener("htmx:wsAfterMessage", function () { formatAll(document); });
})();

// Comforts: copy buttons (<button class="qw-copy" data-copy="…">) and <details data-qw-remember
// id="…"> that keep being open or closed across live re-renders and visits.
(function () {
  "use strict";
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("button.qw-copy[data-copy]");
    if (!button) return;
    var text = button.getAttribute("data-copy");
    function done() {
      button.dataset.copied = "1";
      button.title = gettext("Copied");
      setTimeout(function () { delete button.dataset.copied; button.title = gettext("Copy"); }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {});
    } else {  // plain http on another host: the old way
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      try { if (document.execCommand("copy")) done(); } catch (e) { /* nothing to copy with */ }
      area.remove();
    }
  });

  var KEY = "qw-open:";
  function remembered(el) {
    try { return window.localStorage.getItem(KEY + el.id); } catch (e) { return null; }
  }
  function restore(root) {
    (root && root.querySelectorAll ? root : document).querySelectorAll("details[data-qw-remember][id]").forEach(function (el) {
      var state = remembered(el);
      if (state !== null) el.open = state === "open";
    });
    var self = root && root.matches && root.matches("details[data-qw-remember][id]") ? root : null;
    if (self && remembered(self) !== null) self.open = remembered(self) === "open";
  }
  document.addEventListener("toggle", function (ev) {
    var el = ev.target;
    if (!el.matches || !el.matches("details[data-qw-remember][id]")) return;
    try { window.localStorage.setItem(KEY + el.id, el.open ? "open" : "closed"); } catch (e) { /* not remembered */ }
  }, true);
  document.addEventListener("DOMContentLoaded", function () { restore(document); });
  document.addEventListener("htmx:oobAfterSwap", function (ev) { restore(ev.detail && ev.detail.target); restore(document); });
  document.addEventListener("htmx:afterSettle", function () { restore(document); });
})();

// Content a person asked for and that appears elsewhere on the page (a bulk preview in its
// panel, the edit-and-retry preview) takes the keyboard focus: its heading (or itself) is
// focused, so a keyboard or screen-reader user lands on what to confirm instead of staying on
// the button that asked for it. Live fragments (websocket) never move the focus.
(function () {
  "use strict";
  var PANELS = "#bulk-panel, #edit-preview";
  document.addEventListener("htmx:afterSettle", function (ev) {
    var detail = ev.detail || {};
    var target = detail.target;
    if (!detail.requestConfig || !target || !target.matches || !target.matches(PANELS)) return;
    var into = target.querySelector("h2, h3, [role=alert], [role=status]") || target.firstElementChild;
    if (!into) return;
    if (!into.matches("a[href], button, input, select, textarea, [tabindex]")) into.setAttribute("tabindex", "-1");
    into.focus({ preventScroll: false });
  });
})();

// A live fragment from the monitor (an out-of-band swap) must not drop a keyboard user's focus
// to <body> when it replaces the focused control (htmx keeps the focus by id only in the swaps
// a request makes, such as a panel refreshing itself).
// Before the swap the focused control is remembered by its id, or by its row's key (data-job-id,
// data-key) and its place among the row's controls; after it, if the focus fell out of the
// page, the control with the same key in the new content takes it back (without scrolling).
(function () {
  "use strict";
  var CONTROLS = "a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]";
  var ROWS = ["data-job-id", "data-key"];
  var saved = null;
  function rowOf(el) {
    for (var node = el; node && node.getAttribute; node = node.parentElement) {
      for (var i = 0; i < ROWS.length; i++) {
        if (node.hasAttribute(ROWS[i])) return { row: node, attr: ROWS[i], value: node.getAttribute(ROWS[i]) };
      }
    }
    return null;
  }
  function keyOf(el) {
    if (el.id) return { id: el.id };
    var found = rowOf(el);
    if (!found) return null;
    var controls = Array.prototype.slice.call(found.row.querySelectorAll(CONTROLS));
    return { attr: found.attr, value: found.value, index: controls.indexOf(el), tag: el.tagName, cls: el.className };
  }
  function controlFor(key) {
    if (key.id) return document.getElementById(key.id);
    // In the content that replaced the old (a job id may also be in a preview elsewhere).
    var root = (key.scope && document.getElementById(key.scope)) || document;
    var rows = root.querySelectorAll("[" + key.attr + "]"), row = null;
    for (var i = 0; i < rows.length && !row; i++) if (rows[i].getAttribute(key.attr) === key.value) row = rows[i];
    if (!row) return null;
    var controls = Array.prototype.slice.call(row.querySelectorAll(CONTROLS));
    var same = function (c) { return c.tagName === key.tag && c.className === key.cls; };
    return (controls[key.index] && same(controls[key.index]) && controls[key.index]) || controls.filter(same)[0] || null;
  }
  function remember(ev) {
    var target = ev.detail && ev.detail.target, focused = document.activeElement;
    if (!target || !focused || focused === document.body || !target.contains(focused)) return;
    saved = keyOf(focused);
    if (saved && !saved.id) saved.scope = target.id;
  }
  function giveBack() {
    var key = saved;
    saved = null;
    var focused = document.activeElement;
    if (!key || (focused && focused !== document.body && focused.isConnected)) return;
    var again = controlFor(key);
    if (again && again.focus) again.focus({ preventScroll: true });
  }
  document.addEventListener("htmx:oobBeforeSwap", remember);
  document.addEventListener("htmx:oobAfterSwap", giveBack);
})();

// A live fragment from the monitor (an out-of-band swap) may replace a form the user is filling
// in: a job's actions are re-rendered whenever the job changes. What the user changed in the old
// fields (a value unlike the one the page was given) is carried into the same fields of the new
// content: the same form (by its action), the same field name and, for a checkbox or radio
// button, the same value (a job list's boxes share one name: ticking two must not tick them all).
(function () {
  "use strict";
  var FIELDS = "input[name]:not([type=hidden]), textarea[name], select[name]";
  var edited = null;
  function fieldKey(el) {
    var choice = el.type === "radio" || el.type === "checkbox";
    return (el.form ? el.form.getAttribute("action") || "" : "") + "\n" + el.name + "\n" + (choice ? el.value : "");
  }
  function changed(el) {
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    if (el.tagName === "SELECT") {
      return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    return el.value !== el.defaultValue;
  }
  function remember(ev) {
    var target = ev.detail && ev.detail.target;
    edited = null;
    if (!target || !target.id || !target.querySelectorAll) return;
    var values = {}, any = false;
    target.querySelectorAll(FIELDS).forEach(function (el) {
      if (!changed(el)) return;
      values[fieldKey(el)] = el.type === "checkbox" || el.type === "radio" ? el.checked : el.value;
      any = true;
    });
    if (any) edited = { id: target.id, values: values };
  }
  function carryOver() {
    var kept = edited;
    edited = null;
    var root = kept && document.getElementById(kept.id);
    if (!root) return;
    root.querySelectorAll(FIELDS).forEach(function (el) {
      var key = fieldKey(el);
      if (!Object.prototype.hasOwnProperty.call(kept.values, key)) return;
      if (el.type === "checkbox" || el.type === "radio") el.checked = kept.values[key];
      else el.value = kept.values[key];
    });
  }
  document.addEventListener("htmx:oobBeforeSwap", remember);
  document.addEventListener("htmx:oobAfterSwap", carryOver);
})();
