// A background job's page (templates/judgements/job.html): polls the job's API address
// and moves the progress bar; once the job ends, the page reloads to show the outcome.
(function () {
  "use strict";
  const card = document.getElementById("job");
  const bar = document.getElementById("job-progress");
  const percent = card.querySelector("[data-job-percent]");
  const status = card.querySelector("[data-testid=job-status]");
  const INTERVAL = 400;

  async function poll() {
    let job;
    try {
      const response = await fetch(card.dataset.statusUrl, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!response.ok) throw new Error(String(response.status));
      job = await response.json();
    } catch (error) {
      // A lost answer (a restart, a flaky network) is retried on the next tick.
      setTimeout(poll, INTERVAL * 5);
      return;
    }
    if (job.status === "done" || job.status === "failed") {
      window.location.reload();
      return;
    }
    if (job.percent !== null) {
      bar.value = job.percent;
      bar.textContent = `${job.percent}%`;
      percent.textContent = `${job.percent}%`;
    }
    let state = job.status === "queued" ? "Waiting for a worker" : "Running";
    if (job.worker_lost) state = "Its worker stopped";
    status.textContent = job.stage ? `${state}: ${job.stage}` : state;
    setTimeout(poll, INTERVAL);
  }

  setTimeout(poll, INTERVAL);
})();
