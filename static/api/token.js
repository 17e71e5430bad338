// The API token page's copy button: the new key to the clipboard, said in the status line.
(function () {
  "use strict";
  const button = document.getElementById("copy-token");
  if (!button) return;
  const status = document.getElementById("copy-status");
  button.addEventListener("click", async () => {
    const key = document.getElementById(button.dataset.copies).textContent.trim();
    try {
      await navigator.clipboard.writeText(key);
      status.textContent = "Copied.";
    } catch (error) {
      // No clipboard (an insecure origin, or refused): select the key to copy by hand.
      const range = document.createRange();
      range.selectNodeContents(document.getElementById(button.dataset.copies));
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    }
  });
})();
