// The over-time charts' shared parts (overview and query detail): short ticks on a UTC date
// axis ("12 Nov", so that a phone's narrow axis has room for them),
// and NDCG above coverage, stacked on that one time axis.
(function () {
  "use strict";

  const tick = (ms) =>
    new Date(ms).toLocaleDateString("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });

  const DAY = 24 * 3600 * 1000;
  // A time axis over less than a day (one point, or points of one day) spans the day
  // around them: Chart.js would widen a single value by 5% of its epoch milliseconds,
  // which is years.
  const span = (xs) => {
    const finite = xs.filter((x) => Number.isFinite(x));
    if (!finite.length) return {};
    const low = Math.min(...finite), high = Math.max(...finite);
    if (high - low >= DAY) return {};
    const middle = (low + high) / 2;
    return { min: middle - DAY / 2, max: middle + DAY / 2 };
  };

  window.timeAxes = {
    tick,
    span,
    percent: (value) => (value === null ? "—" : `${Math.round(value * 100)}%`),
    // Stacked axes share the time axis; the first of a stack is drawn lowest.
    // ``xs``: every x value drawn, for the axis's range (see ``span``).
    scales: (ndcgTitle, xs = []) => ({
      x: { type: "linear", ...span(xs), ticks: { callback: tick, maxTicksLimit: 6 } },
      coverage: {
        stack: "time",
        stackWeight: 1,
        offset: true,
        min: 0,
        max: 1,
        ticks: { callback: (value) => `${value * 100}%`, maxTicksLimit: 3 },
        title: { display: true, text: "judged" },
      },
      y: {
        stack: "time",
        stackWeight: 2,
        offset: true,
        min: 0,
        max: 1,
        title: { display: true, text: ndcgTitle },
      },
    }),
  };
})();
