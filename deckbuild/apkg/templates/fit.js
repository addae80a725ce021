/* deckbuild: fit every formula to the screen (phones are 360 px wide).
   MathJax 3 never breaks a line, so a display formula slightly wider than the card is
   scaled down, to no less than 75% of its size; one still too wide at 75% scrolls in its
   own box (and `deckbuild preview --check-fit` reports it to the author).
   Runs in Anki desktop, AnkiDroid and AnkiMobile: it waits for MathJax by watching the page
   for typeset math (each app typesets at its own moment), re-fits on resize and when a
   details element opens, is idempotent (it measures at natural size each time), installs its
   watchers once per page, and does nothing where there is no MathJax. No network. */
(function () {
  var MIN_SCALE = 0.75;
  function fitOne(box) {
    if (box.hasAttribute("data-db-scale")) {
      box.style.fontSize = box.getAttribute("data-db-font") || "";
      box.removeAttribute("data-db-scale");
      box.removeAttribute("data-db-font");
    }
    var display = box.getAttribute("display") === "true";
    var holder = display ? box : box.parentElement;
    var inner = box.firstElementChild;
    if (!holder || !inner) return;
    var room = holder.clientWidth;
    var natural = inner.getBoundingClientRect().width;
    if (!room || natural <= room + 0.5) return;
    var scale = Math.max(MIN_SCALE, Math.floor((room / natural) * 100) / 100);
    var size = parseFloat(window.getComputedStyle(box).fontSize);
    box.setAttribute("data-db-font", box.style.fontSize);
    box.setAttribute("data-db-scale", String(scale));
    box.style.fontSize = size * scale + "px";
  }
  function fitAll() {
    var boxes = document.querySelectorAll(".db mjx-container");
    for (var i = 0; i < boxes.length; i++) fitOne(boxes[i]);
  }
  function hasMath(nodes) {
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i];
      if (n.nodeType === 1 && (n.nodeName === "MJX-CONTAINER" || n.querySelector("mjx-container"))) return true;
    }
    return false;
  }
  if (!window.dbFitFormulas) {
    window.dbFitFormulas = fitAll;
    if (window.MutationObserver) {
      new MutationObserver(function (records) {
        for (var i = 0; i < records.length; i++) {
          if (hasMath(records[i].addedNodes)) { fitAll(); return; }
        }
      }).observe(document.body || document.documentElement, {childList: true, subtree: true});
    }
    window.addEventListener("resize", fitAll);
    document.addEventListener("toggle", fitAll, true);
  }
  fitAll();
})();
