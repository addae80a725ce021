// The preview's own script, loaded by every page of the site.
// Anki's own MathJax settings (ts/lib/mathjax: \( \) inline, \[ \] display, no $, no escapes),
// with SVG output so no font files have to load from file://.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: false,
    processEnvironments: false,
    processRefs: false,
    packages: {"[+]": ["noerrors", "mathtools", "mhchem"], "[-]": ["textmacros"]},
  },
  loader: {load: ["[tex]/noerrors", "[tex]/mathtools", "[tex]/mhchem"]},
  options: {renderActions: {addMenu: []}, ignoreHtmlClass: "tex2jax_ignore", processHtmlClass: "tex2jax_process"},
  svg: {fontCache: "global"},
};
// Night mode as Anki sets it (html.night-mode, body.nightMode/.night_mode), kept across pages
// with ?night=1; arrow keys page through cards, space flips.
window.dbPreview = (function () {
  function night() { return new URLSearchParams(location.search).get("night") === "1"; }
  // Anki sets these classes on the reviewer's page; the card CSS styles both spellings.
  function setNight(on) {
    document.documentElement.classList.toggle("night-mode", on);
    document.body.classList.toggle("nightMode", on);
    document.body.classList.toggle("night_mode", on);
    var params = new URLSearchParams(location.search);
    if (on) params.set("night", "1"); else params.delete("night");
    history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : ""));
    document.querySelectorAll("a[href]").forEach(function (a) {
      var href = a.getAttribute("href").split("?")[0];  // keep night mode while paging
      if (/\.html$/.test(href)) a.setAttribute("href", on ? href + "?night=1" : href);
    });
  }
  function init() {
    // Called first thing in <body>: set the classes before the card paints, fix links once parsed.
    if (night()) {
      document.documentElement.classList.add("night-mode");
      document.body.classList.add("nightMode", "night_mode");
      document.addEventListener("DOMContentLoaded", function () { setNight(true); });
    }
    document.addEventListener("keydown", function (e) {
      if (e.target.closest && e.target.closest("input, select, textarea")) return;
      if (e.key === " " && document.getElementById("qa")) { e.preventDefault(); flip(); return; }
      var rel = {ArrowLeft: "prev", ArrowRight: "next"}[e.key];
      var a = rel && document.querySelector('a[rel="' + rel + '"]');
      if (a) { e.preventDefault(); location.href = a.href; }
    });
  }
  // Like Anki's reviewer (ts/reviewer setInnerHTML): the card's own scripts run, in order.
  function setHtml(qa, content) {
    qa.innerHTML = content;
    qa.querySelectorAll("script").forEach(function (old) {
      var script = document.createElement("script");
      script.textContent = old.textContent;
      old.replaceWith(script);
    });
  }
  // Like Anki's reviewer: replace #qa with the side's HTML, then typeset it again.
  var side = "front";
  function show(which) {
    side = which;
    var qa = document.getElementById("qa");
    var content = document.getElementById("pv-" + which).innerHTML;
    var button = document.querySelector(".pv-flip");
    if (button) button.textContent = which === "front" ? "Answer" : "Question";
    history.replaceState(null, "", location.pathname + location.search + (which === "back" ? "#answer" : ""));
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      // Chained on the start-up promise, MathJax's documented way to serialise typesetting;
      // cleared before the swap, or MathJax keeps the old side's formulas in its list.
      MathJax.startup.promise = MathJax.startup.promise.then(function () {
        MathJax.typesetClear([qa]);
        setHtml(qa, content);
        return MathJax.typesetPromise([qa]);
      });
      return MathJax.startup.promise;
    }
    setHtml(qa, content);
    return Promise.resolve();  // MathJax (deferred) has not started yet: its start-up typesets #qa
  }
  function flip() { return show(side === "front" ? "back" : "front"); }
  // The index's entries, one file of index/ at a time, in order (each file is such a call).
  function entries(html) { document.getElementById("cards").insertAdjacentHTML("beforeend", html); }
  return {init: init, setNight: setNight, show: show, flip: flip, entries: entries,
          toggleNight: function () { setNight(!document.body.classList.contains("nightMode")); }};
})();
