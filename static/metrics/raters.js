// Chart of templates/metrics/raters.html; data comes from the json_script block.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("raters-data").textContent);
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
})();
