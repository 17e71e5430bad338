// Chart of templates/metrics/query_detail.html; data comes from the json_script block.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("query-detail-data").textContent);
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);
  const { percent } = window.timeAxes;

  // A dashed vertical line at each moment a rater revised a grade of this query.
  const revisionLines = {
    id: "revisionLines",
    afterDatasetsDraw(chart) {
      const { ctx, chartArea, scales } = chart;
      ctx.save();
      ctx.strokeStyle = "#b45309";
      ctx.setLineDash([4, 3]);
      for (const x of data.revisions) {
        const pixel = scales.x.getPixelForValue(x);
        if (pixel < chartArea.left || pixel > chartArea.right) continue;
        ctx.beginPath();
        ctx.moveTo(pixel, chartArea.top);
        ctx.lineTo(pixel, chartArea.bottom);
        ctx.stroke();
      }
      ctx.restore();
    },
  };

  new Chart(document.getElementById("query-series-chart"), {
    type: "line",
    data: {
      datasets: [
        {
          label: "NDCG",
          kind: "ndcg",
          yAxisID: "y",
          data: data.points.map(([x, y]) => ({ x, y })),
          spanGaps: false,
          borderColor: "#2563eb",
          backgroundColor: "#2563eb",
          pointRadius: 2,
          stepped: true,
        },
        {
          label: "judged@k",
          kind: "coverage",
          yAxisID: "coverage",
          data: data.points.map(([x, , judged]) => ({ x, y: judged })),
          borderColor: "#64748b",
          backgroundColor: "#64748b",
          borderDash: [2, 2],
          pointRadius: 1.5,
          stepped: true,
        },
      ],
    },
    plugins: [revisionLines],
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: window.timeAxes.scales("NDCG", data.points.map((p) => p[0])),
      plugins: {
        legend: { labels: { boxWidth: 14 } },
        tooltip: {
          callbacks: {
            title: (items) => day(items[0].parsed.x),
            label: (item) =>
              item.dataset.kind === "coverage"
                ? `judged@k ${percent(item.parsed.y)}`
                : `NDCG ${item.parsed.y === null ? "— (no grade yet)" : item.parsed.y.toFixed(4)}`,
          },
        },
      },
    },
  });
})();
