// Charts of templates/metrics/overview.html; data comes from the json_script block.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("overview-data").textContent);
  const palette = ["#2563eb", "#15803d", "#b45309", "#7c3aed", "#be123c", "#0f766e"];
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);
  const four = (value) => (value === null ? "—" : value.toFixed(4));

  // A chart without data is not drawn (its axis would start in 1970): the page says why.
  const seriesCanvas = document.getElementById("series-chart");
  if (seriesCanvas) new Chart(seriesCanvas, {
    type: "line",
    data: {
      datasets: data.series.map((line, i) => ({
        label: line.label,
        data: line.points.map(([x, y]) => ({ x, y })),
        borderColor: palette[i % palette.length],
        backgroundColor: palette[i % palette.length],
        pointRadius: 2,
        tension: 0,
      })),
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { type: "linear", ticks: { callback: day, maxTicksLimit: 8 } },
        y: { suggestedMin: 0, suggestedMax: 1, title: { display: true, text: "mean NDCG" } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            title: (items) => day(items[0].parsed.x),
            label: (item) => `${item.dataset.label}: ${four(item.parsed.y)}`,
          },
        },
      },
    },
  });

  const lists = data.by_capture;
  const captureCanvas = document.getElementById("capture-chart");
  if (captureCanvas) new Chart(captureCanvas, {
    data: {
      labels: lists.map((list) => `${list.label} (${day(list.x)})`),
      datasets: [
        {
          type: "line",
          label: "mean",
          data: lists.map((list) => list.mean),
          borderColor: palette[0],
          backgroundColor: palette[0],
          pointRadius: 4,
        },
        {
          type: "bar",
          label: "95% CI",
          data: lists.map((list) => (list.low === null ? null : [list.low, list.high])),
          backgroundColor: "rgba(37, 99, 235, 0.18)",
          barPercentage: 0.3,
        },
      ],
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { y: { suggestedMin: 0, suggestedMax: 1, title: { display: true, text: "mean NDCG" } } },
      plugins: {
        tooltip: {
          callbacks: {
            label: (item) => {
              const list = lists[item.dataIndex];
              return `mean ${four(list.mean)}, 95% CI [${four(list.low)}, ${four(list.high)}]`;
            },
          },
        },
      },
    },
  });
})();
