// The raters page (templates/metrics/raters.html): the grade distribution chart, and
// copying an invitation link.
(function () {
  "use strict";
  const source = document.getElementById("raters-data");
  if (source) {
    const data = JSON.parse(source.textContent);
    const palette = ["#d9e2ec", "#93c5fd", "#3b82f6", "#1e40af", "#172554", "#0f172a"];
    new Chart(document.getElementById("distribution-chart"), {
      type: "bar",
      data: {
        labels: data.raters.map((rater) => rater.label),
        datasets: data.grades.map((grade, i) => ({
          label: `grade ${grade}`,
          data: data.raters.map((rater) => rater.counts[i]),
          backgroundColor: palette[i % palette.length],
        })),
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        indexAxis: "y",
        scales: { x: { stacked: true, title: { display: true, text: "grades" } }, y: { stacked: true } },
      },
    });
  }

  document.querySelectorAll("[data-copy]").forEach((button) => {
    const field = document.getElementById(button.dataset.copy);
    button.hidden = false;
    button.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(field.value);
        button.textContent = "Copied";
      } catch (error) {
        // Without clipboard access (an insecure origin) the selected text can be copied by hand.
        button.textContent = "Selected: copy it";
      }
    });
  });
})();
