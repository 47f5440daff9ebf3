// Queuewatch page glue. No inline scripts anywhere: this file and the vendored libraries are
// the only JavaScript, and job data is never passed to it as code.
(function () {
  "use strict";

  // The header badge tells the truth about the websocket: live, reconnecting or not live.
  function setStatus(state, text) {
    var el = document.getElementById("live-status");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }
  var open = 0;
  document.addEventListener("htmx:wsConnecting", function () { if (!open) setStatus("connecting", "connecting…"); });
  document.addEventListener("htmx:wsOpen", function () { open += 1; setStatus("live", "live"); });
  document.addEventListener("htmx:wsClose", function () {
    open = Math.max(0, open - 1);
    if (!open) setStatus("reconnecting", "reconnecting…");
  });
  document.addEventListener("htmx:wsError", function () { if (!open) setStatus("reconnecting", "reconnecting…"); });
})();
