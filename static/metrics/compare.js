// Chart of templates/metrics/compare.html; data comes from the json_script block.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("compare-data").textContent);

  new Chart(document.getElementById("scatter-chart"), {
    type: "scatter",
    data: {
      datasets: [
        {
          label: "queries",
          data: data.points,
          backgroundColor: "rgba(37, 99, 235, 0.55)",
          pointRadius: data.points.length > 2000 ? 1.5 : 3,
        },
        {
          // The diagonal: on it, A and B score the query alike.
          type: "line",
          label: "A = B",
          data: [{ x: 0, y: 0 }, { x: 1, y: 1 }],
          borderColor: "#9aa5b1",
          borderDash: [4, 4],
          pointRadius: 0,
        },
      ],
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { min: 0, max: 1, title: { display: true, text: `A: ${data.a}` } },
        y: { min: 0, max: 1, title: { display: true, text: `B: ${data.b}` } },
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            label: (item) => {
              const point = item.raw;
              const values = `A ${point.x.toFixed(4)}, B ${point.y.toFixed(4)}`;
              return point.label ? `${point.label}: ${values}` : values;
            },
          },
        },
      },
    },
  });
})();
