// A machine judge's page (templates/judgements/machine/judge.html): while its run is
// running, polls the run's progress and moves the bar; once it stops, reloads the page
// to show the answers and the buttons that fit the new state.
(function () {
  "use strict";
  const card = document.getElementById("run");
  if (!card || card.dataset.status !== "running") return;
  const bar = document.getElementById("run-progress");
  const INTERVAL = 500;
  const text = (name, value) => {
    const node = card.querySelector(`[data-run-${name}]`);
    if (node) node.textContent = value;
  };

  async function poll() {
    let run;
    try {
      const response = await fetch(card.dataset.progressUrl, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!response.ok) throw new Error(String(response.status));
      run = await response.json();
    } catch (error) {
      setTimeout(poll, INTERVAL * 5);
      return;
    }
    bar.value = run.percent;
    bar.textContent = `${run.percent}%`;
    text("answered", run.graded + run.failed);
    text("graded", run.graded);
    text("failed", run.failed);
    text("cost", run.cost);
    text("label", run.label.charAt(0).toUpperCase() + run.label.slice(1));
    if (run.status !== "running") {
      window.location.reload();
      return;
    }
    setTimeout(poll, INTERVAL);
  }

  setTimeout(poll, INTERVAL);
})();
