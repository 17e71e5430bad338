// The over-time charts' shared parts (overview and query detail): short ticks on a UTC date
// axis ("12 Nov", so that a phone's narrow axis has room for them),
// and NDCG above coverage, stacked on that one time axis.
(function () {
  "use strict";

  const tick = (ms) =>
    new Date(ms).toLocaleDateString("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });

  window.timeAxes = {
    tick,
    percent: (value) => (value === null ? "—" : `${Math.round(value * 100)}%`),
    // Stacked axes share the time axis; the first of a stack is drawn lowest.
    scales: (ndcgTitle) => ({
      x: { type: "linear", ticks: { callback: tick, maxTicksLimit: 6 } },
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
