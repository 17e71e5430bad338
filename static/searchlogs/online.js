// Chart of templates/searchlogs/_online_panel.html: daily click-through and success
// rates with the page's mean NDCG lines, and the NDCG chart set to the same time axis.
(function () {
  "use strict";
  const canvas = document.getElementById("online-chart");
  const online = JSON.parse(document.getElementById("online-data").textContent);
  const source = document.getElementById(canvas.dataset.ndcg);
  const ndcg = source ? JSON.parse(source.textContent) : {};
  // The overview holds one line per result list; the query detail one line. Beside each
  // point's NDCG comes its coverage: the share of the list's queries judged (overview,
  // index 5) or the query's judged@k (query detail, index 2).
  const lines = ndcg.series || (ndcg.points ? [ndcg] : []);
  const coverageAt = ndcg.series ? 5 : 2;
  const coverageName = ndcg.series ? "queries judged" : "judged@k";
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);
  const three = (value) => (value === null ? "—" : value.toFixed(3));
  const palette = ["#2563eb", "#15803d", "#b45309", "#7c3aed", "#be123c", "#0f766e"];
  const points = (ys) => online.days.map((x, i) => ({ x, y: ys[i] }));

  const xs = online.days.concat(...lines.map((line) => line.points.map(([x]) => x)));
  const half = 43200000;
  const range = { min: Math.min(...xs) - half, max: Math.max(...xs) + half };

  const datasets = [
    { label: "click-through rate", data: points(online.ctr), color: "#0f172a" },
    { label: "successful sessions", data: points(online.success_rate), color: "#be123c" },
  ].map((set) => ({
    label: set.label,
    data: set.data,
    borderColor: set.color,
    backgroundColor: set.color,
    pointRadius: 3,
    tension: 0,
  }));
  lines.forEach((line, i) => {
    const color = palette[i % palette.length];
    datasets.push({
      label: `NDCG: ${line.label}`,
      data: line.points.map(([x, y]) => ({ x, y })),
      borderColor: color,
      backgroundColor: color,
      borderDash: [6, 4],
      pointRadius: 1,
      tension: 0,
    });
    datasets.push({
      label: `${coverageName}: ${line.label}`,
      data: line.points.map((point) => ({ x: point[0], y: point[coverageAt] })),
      borderColor: color,
      backgroundColor: color,
      borderDash: [1, 3],
      borderWidth: 1,
      pointRadius: 0,
      tension: 0,
    });
  });

  new Chart(canvas, {
    type: "line",
    data: { datasets },
    options: {
      animation: false,
      maintainAspectRatio: false,
      spanGaps: false,
      scales: {
        x: { type: "linear", ...range, ticks: { callback: day, maxTicksLimit: 8 } },
        y: { suggestedMin: 0, suggestedMax: 1, title: { display: true, text: "rate / mean NDCG" } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            title: (items) => day(items[0].parsed.x),
            label: (item) => `${item.dataset.label}: ${three(item.parsed.y)}`,
          },
        },
      },
    },
  });

  const other = Chart.getChart(document.getElementById(canvas.dataset.ndcgChart));
  if (other) {
    Object.assign(other.options.scales.x, range);
    other.update();
  }
})();
