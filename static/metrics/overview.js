// Charts of templates/metrics/overview.html; data comes from the json_script block.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("overview-data").textContent);
  const palette = ["#2563eb", "#15803d", "#b45309", "#7c3aed", "#be123c", "#0f766e"];
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);
  const { percent } = window.timeAxes;
  const four = (value) => (value === null || value === undefined ? "—" : value.toFixed(4));
  const tint = (hex, alpha) => {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
  };
  // A series point is [x, mean, CI low, CI high, queries in the mean, share judged, judged@k].
  const X = 0, MEAN = 1, LOW = 2, HIGH = 3, QUERIES = 4, SHARE = 5, JUDGED_AT_K = 6;
  const most = Math.max(1, ...data.series.flatMap((line) => line.points.map((p) => p[QUERIES])));
  const column = (line, index) => line.points.map((p) => ({ x: p[X], y: p[index], n: p[QUERIES] }));

  // Per result list: its mean (points sized by the queries behind them), the 95% CI band
  // (two datasets filled between), and on the lower panel its coverage.
  const datasets = data.series.flatMap((line, i) => {
    const color = palette[i % palette.length];
    const band = { yAxisID: "y", band: true, pointRadius: 0, borderWidth: 0, spanGaps: false };
    return [
      {
        label: line.label,
        kind: "mean",
        yAxisID: "y",
        data: column(line, MEAN),
        borderColor: color,
        backgroundColor: color,
        pointRadius: (context) => 1.5 + 3 * Math.sqrt((context.raw ? context.raw.n : 0) / most),
        spanGaps: false,
        tension: 0,
      },
      { ...band, label: `${line.label}: CI low`, data: column(line, LOW), fill: false },
      {
        ...band,
        label: `${line.label}: CI high`,
        data: column(line, HIGH),
        fill: "-1",
        backgroundColor: tint(color, 0.15),
      },
      {
        label: `${line.label}: queries judged`,
        kind: "coverage",
        yAxisID: "coverage",
        data: column(line, SHARE),
        borderColor: color,
        backgroundColor: color,
        borderDash: [6, 3],
        pointRadius: 1.5,
        tension: 0,
      },
      {
        label: `${line.label}: judged@k`,
        kind: "coverage",
        yAxisID: "coverage",
        data: column(line, JUDGED_AT_K),
        borderColor: tint(color, 0.6),
        backgroundColor: tint(color, 0.6),
        borderDash: [2, 2],
        pointRadius: 1.5,
        tension: 0,
      },
    ];
  });

  const label = (item) => {
    const set = item.dataset;
    if (set.kind === "coverage") return `${set.label}: ${percent(item.parsed.y)}`;
    const point = data.series[Math.floor(item.datasetIndex / 5)].points[item.dataIndex];
    const interval = point[LOW] === null ? "no CI" : `95% CI [${four(point[LOW])}, ${four(point[HIGH])}]`;
    return `${set.label}: ${four(point[MEAN])}, ${interval}, ${point[QUERIES]} queries`;
  };

  // A chart without data is not drawn (its axis would start in 1970): the page says why.
  const seriesCanvas = document.getElementById("series-chart");
  if (seriesCanvas) new Chart(seriesCanvas, {
    type: "line",
    data: { datasets },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: window.timeAxes.scales("mean NDCG", data.series.flatMap((line) => line.points.map((p) => p[X]))),
      plugins: {
        // One entry per result list; the caption says which line is what.
        legend: {
          labels: { boxWidth: 14, filter: (item, chart) => chart.datasets[item.datasetIndex].kind === "mean" },
        },
        tooltip: {
          filter: (item) => !item.dataset.band,
          callbacks: { title: (items) => day(items[0].parsed.x), label },
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
              return [
                `mean ${four(list.mean)}, 95% CI [${four(list.low)}, ${four(list.high)}]`,
                `${list.queries} queries, judged@k ${percent(list.coverage)}`,
              ];
            },
          },
        },
      },
    },
  });
})();
