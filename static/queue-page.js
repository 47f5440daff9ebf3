// The queue page's list (templates/browse/queue.html): the box in the list's header ticks or
// unticks every job on this page. Each box is changed through a "change" event, so the ticks
// survive live re-renders like ticks made by hand (queuewatch.js remembers them by job id).
(function () {
  "use strict";
  document.addEventListener("change", function (ev) {
    var all = ev.target;
    if (!all.matches || !all.matches("input.qw-select-page")) return;
    var table = all.closest("table");
    if (!table) return;
    table.querySelectorAll("tbody input[type=checkbox][form=bulk-form]").forEach(function (box) {
      if (box.checked !== all.checked) {
        box.checked = all.checked;
        box.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
  });
})();
