/* The theme (light / dark / system) and the narrow-screen menu. Loaded in <head> without
   `defer`, so the remembered theme is on <html> before the first paint (the CSP forbids the
   usual inline snippet). The rest waits for the document. */
(function () {
  "use strict";
  var KEY = "queuewatch-theme";
  var root = document.documentElement;
  root.classList.add("js");  /* the menu folds only when this script can open it again */

  function stored() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; }  /* storage may be blocked */
  }
  function apply(choice) {
    if (choice === "light" || choice === "dark") root.setAttribute("data-theme", choice);
    else root.removeAttribute("data-theme");  /* "system": prefers-color-scheme decides */
  }
  function remember(choice) {
    try {
      if (choice === "light" || choice === "dark") window.localStorage.setItem(KEY, choice);
      else window.localStorage.removeItem(KEY);
    } catch (e) { /* not remembered, still applied */ }
  }
  apply(stored());

  function wire() {
    var select = document.getElementById("theme-choice");
    if (select) {
      select.value = root.getAttribute("data-theme") || "system";
      select.addEventListener("change", function () { apply(select.value); remember(select.value); });
    }
    var header = document.querySelector(".topbar");
    var toggle = document.querySelector(".menu-toggle");
    if (!header || !toggle) return;
    function setOpen(open) {
      header.classList.toggle("menu-open", open);
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    }
    toggle.addEventListener("click", function () { setOpen(!header.classList.contains("menu-open")); });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && header.classList.contains("menu-open")) { setOpen(false); toggle.focus(); }
    });
  }
  /* Another tab changed the theme: follow it. */
  window.addEventListener("storage", function (e) {
    if (e.key !== KEY) return;
    apply(e.newValue);
    var select = document.getElementById("theme-choice");
    if (select) select.value = e.newValue || "system";
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
