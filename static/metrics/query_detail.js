// Chart of templates/metrics/query_detail.html; data comes from the json_script block.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("query-detail-data").textContent);
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);

  new Chart(document.getElementById("query-series-chart"), {
    type: "line",
    data: {
      datasets: [
        {
          label: data.label,
          data: data.points.map(([x, y]) => ({ x, y })),
          borderColor: "#2563eb",
          backgroundColor: "#2563eb",
          pointRadius: 2,
          stepped: true,
        },
      ],
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { type: "linear", ticks: { callback: day, maxTicksLimit: 8 } },
        y: { min: 0, max: 1, title: { display: true, text: "NDCG" } },
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            title: (items) => day(items[0].parsed.x),
            label: (item) => item.parsed.y.toFixed(4),
          },
        },
      },
    },
  });
})();
