// The uploads page (templates/judgements/uploads.html): a file can be dropped on its
// form's drop zone as well as chosen; the button says when a large file is on its way.
(function () {
  "use strict";

  function describe(zone, file) {
    const size = file.size >= 1e6 ? `${(file.size / 1e6).toFixed(1)} MB` : `${Math.ceil(file.size / 1e3)} kB`;
    zone.querySelector("[data-dropzone-hint]").textContent = `${file.name} (${size})`;
  }

  document.querySelectorAll("[data-dropzone]").forEach((zone) => {
    const input = zone.querySelector("input[type=file]");
    zone.classList.add("enhanced");
    ["dragenter", "dragover"].forEach((name) =>
      zone.addEventListener(name, (event) => {
        event.preventDefault();
        zone.classList.add("dragging");
      }),
    );
    ["dragleave", "drop"].forEach((name) =>
      zone.addEventListener(name, () => zone.classList.remove("dragging")),
    );
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      const files = event.dataTransfer.files;
      if (!files.length) return;
      // A DataTransfer is the one way to hand dropped files to a file input.
      const transfer = new DataTransfer();
      transfer.items.add(files[0]);
      input.files = transfer.files;
      describe(zone, files[0]);
    });
    input.addEventListener("change", () => input.files.length && describe(zone, input.files[0]));
  });

  document.querySelectorAll("[data-upload]").forEach((form) => {
    form.addEventListener("submit", () => {
      const button = form.querySelector("[data-upload-button]");
      button.disabled = true;
      button.textContent = "Sending the file…";
    });
  });
})();
