// A query text cut to one line (.query-text) shows whole on hover (its title) with a
// mouse. On a touch screen there is no hover: the first tap on a cut text opens it whole
// in place, the next tap follows the link. Whether it is cut is read as the finger comes
// down: by the click the link has focus, which shows it whole (app.css).
(function () {
  "use strict";
  if (!window.matchMedia("(hover: none)").matches) {
    return;
  }
  var cut = null;
  document.addEventListener("pointerdown", function (event) {
    var link = event.target.closest("a.query-text");
    cut = link && !link.classList.contains("whole") && link.scrollWidth > link.clientWidth
      ? link : null;
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest("a.query-text");
    if (link && link === cut) {
      event.preventDefault();
      link.classList.add("whole");
    }
    cut = null;
  });
})();
