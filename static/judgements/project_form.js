// The New project and settings page (templates/judgements/project_form.html): the scale
// editor's add, remove and reorder, and the guidelines' live preview. Without this
// script the form still works: one blank row adds a grade, "Remove" drops one.
(function () {
  "use strict";

  function renumber(editor) {
    const name = editor.dataset.scaleEditor;
    const rows = editor.querySelectorAll("[data-scale-row]");
    rows.forEach((row, number) => {
      row.querySelectorAll("[data-column]").forEach((input) => {
        input.name = `${name}-${number}-${input.dataset.column}`;
      });
      row.querySelector('[data-move="up"]').disabled = number === 0;
      row.querySelector('[data-move="down"]').disabled = number === rows.length - 1;
    });
    editor.querySelector("[data-scale-total]").value = rows.length;
  }

  function blank(row) {
    return [...row.querySelectorAll("input[type=text]")].every((input) => !input.value.trim());
  }

  function emptied(row) {
    const copy = row.cloneNode(true);
    copy.querySelectorAll("input").forEach((input) => {
      if (input.type === "checkbox") input.checked = false;
      else input.value = "";
    });
    copy.classList.remove("removed");
    return copy;
  }

  // The new grade takes the blank row at the end, and a fresh blank row follows it, so
  // that the page never shows a gap between grades.
  function addRow(editor) {
    const body = editor.querySelector("tbody");
    const last = body.querySelector("[data-scale-row]:last-child");
    const row = blank(last) ? last : body.appendChild(emptied(last));
    body.appendChild(emptied(row));
    // The next value up is the likeliest wanted; the analyst can change it.
    const values = [...body.querySelectorAll('[data-column="value"]')]
      .map((input) => parseInt(input.value, 10))
      .filter((value) => !Number.isNaN(value));
    row.querySelector('[data-column="value"]').value = values.length ? Math.max(...values) + 1 : 0;
    renumber(editor);
    row.querySelector('[data-column="label"]').focus();
  }

  function move(editor, row, direction) {
    const other = direction === "up" ? row.previousElementSibling : row.nextElementSibling;
    if (!other) return;
    if (direction === "up") other.before(row);
    else other.after(row);
    renumber(editor);
    row.querySelector(`[data-move="${direction}"]`).focus();
  }

  document.querySelectorAll("[data-scale-editor]").forEach((editor) => {
    editor.querySelectorAll("[hidden]").forEach((element) => (element.hidden = false));
    editor.addEventListener("click", (event) => {
      const button = event.target.closest("button");
      if (!button) return;
      if (button.hasAttribute("data-add-grade")) addRow(editor);
      else if (button.dataset.move) move(editor, button.closest("[data-scale-row]"), button.dataset.move);
    });
    editor.addEventListener("change", (event) => {
      if (event.target.dataset.column === "remove") {
        event.target.closest("[data-scale-row]").classList.toggle("removed", event.target.checked);
      }
    });
    renumber(editor);
  });

  // The preview is rendered by the server with the rating page's own Markdown and
  // sanitiser, so that it shows exactly what raters will see.
  const source = document.querySelector("[data-preview=guidelines]");
  const preview = document.getElementById("guidelines-preview");
  if (!source || !preview) return;
  const token = source.form.querySelector("[name=csrfmiddlewaretoken]").value;
  let timer = null;
  let sent = 0;

  async function refresh() {
    const number = ++sent;
    const body = new URLSearchParams({ text: source.value, csrfmiddlewaretoken: token });
    const response = await fetch(preview.dataset.url, {
      method: "POST",
      body,
      headers: { "X-CSRFToken": token },
      credentials: "same-origin",
    });
    // Only the newest answer is shown, whatever order they come back in.
    if (response.ok && number === sent) {
      const html = await response.text();
      preview.innerHTML = html.trim() ? html : '<p class="empty">No guidelines yet.</p>';
    }
  }

  source.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  });
  refresh();
})();
