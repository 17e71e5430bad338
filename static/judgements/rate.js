// Keyboard grading for rate.html. Every key clicks the button that shows it (data-key),
// so the keys do exactly what the buttons do, with or without htmx. Keys typed into the
// note (or any other field) are left alone; "n" goes to the note, Enter or Escape leaves
// it. Enter never answers: the form's default button is disabled (see _rating.html).
(function () {
  "use strict";

  function typing(target) {
    return target.closest && target.closest("input, textarea, select, [contenteditable]");
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing(event.target)) {
      // Leaving the note hands the keys back; what was typed goes with the next answer.
      if (event.key === "Escape" || event.key === "Enter") {
        event.preventDefault();
        event.target.blur();
      }
      return;
    }
    if (event.key === "g") {
      const panel = document.getElementById("guidelines");
      if (panel) panel.open = !panel.open;
      event.preventDefault();
      return;
    }
    if (event.key === "n") {
      const note = document.querySelector('#rating input[name="note"]');
      if (note) {
        event.preventDefault();
        note.focus();
      }
      return;
    }
    const button = document.querySelector(
      '#rating button[data-key="' + CSS.escape(event.key) + '"]'
    );
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  });

  // A hit's image that cannot be loaded becomes a plain "no image" box rather than the
  // browser's broken-image frame. It may fail before this script runs, so images that
  // are already done are checked too (on load and after each htmx swap).
  function replaceBroken(image) {
    const box = document.createElement("div");
    box.className = "hit-image hit-image-missing";
    box.textContent = "Image not available";
    image.replaceWith(box);
  }
  function checkImages() {
    document.querySelectorAll("#rating img.hit-image").forEach(function (image) {
      if (image.complete && image.naturalWidth === 0) replaceBroken(image);
    });
  }
  document.addEventListener(
    "error",
    function (event) {
      if (event.target.matches && event.target.matches("img.hit-image")) {
        replaceBroken(event.target);
      }
    },
    true
  );
  checkImages();
  document.addEventListener("htmx:afterSwap", checkImages);

  // On a phone the answers are docked at the bottom (app.css): pad the page by the dock's
  // height so the document's end scrolls above it. The page does not move after an answer.
  function padForDock() {
    const grades = document.querySelector("#rating .grades");
    const skip = document.querySelector("#rating form.skip");
    const docked = grades && getComputedStyle(grades).position === "fixed";
    const height = docked ? grades.offsetHeight + (skip ? skip.offsetHeight : 0) + 16 : 0;
    document.body.style.paddingBottom = docked ? height + "px" : "";
  }
  padForDock();
  document.addEventListener("htmx:afterSwap", padForDock);
  window.addEventListener("resize", padForDock);

  // A rater who leaves the page (another page, a closed tab) gives the pair's slot back
  // at once, rather than holding it until the lease runs out. The lease's end names it,
  // so a late message cannot end the lease of the page loaded next.
  window.addEventListener("pagehide", function () {
    const pair = document.querySelector("#rating article.pair[data-lease]");
    const skip = document.querySelector("#rating form.skip");
    if (!pair || !skip || !navigator.sendBeacon) return;
    const data = new FormData(skip);
    data.append("lease", pair.dataset.lease);
    navigator.sendBeacon(pair.dataset.release, data);
  });

  // While an answer is on its way, the buttons are disabled so that a second key press
  // cannot answer the next pair by accident before it is on screen.
  document.addEventListener("htmx:beforeRequest", function () {
    document.querySelectorAll("#rating button").forEach(function (button) {
      button.dataset.wasDisabled = button.disabled ? "1" : "";
      button.disabled = true;
    });
  });
  // After a failed request the old buttons are still on screen: enable them again.
  // Buttons of a freshly swapped-in pair carry no mark and keep their own state.
  document.addEventListener("htmx:afterRequest", function () {
    document.querySelectorAll("#rating button[data-was-disabled]").forEach(function (button) {
      button.disabled = button.dataset.wasDisabled === "1";
      delete button.dataset.wasDisabled;
    });
  });
})();
