/* A chart out of sight is drawn when it comes into view, not when its figure arrives.
 *
 * The side column's tabs stack their charts: at 1600x1000 the Systolic tab's five charts all
 * start below the fold, yet opening the tab drew every one of them (some 0.8 s of plotly's
 * work on two cores), and the Roofline tab drew its traffic chart under the roofline.  Here
 * plotly's `react` is wrapped: a chart's newest figure waits until the chart nears the
 * viewport (or its hidden box is shown).  So does the blank figure a chart mounts with: drawn,
 * it cost plotly some 12 ms a chart for a box that looks the same undrawn, six times on each
 * opening of the Systolic tab.  A chart in view draws as before, one frame later.  (Resizes
 * are not held: a chart keeps fitting its column, and refitting costs little.)
 *
 * The caller is answered at once, and only the newest figure is drawn when the chart is seen.
 * dcc.Graph makes its next call only when the last one settles, each with the figure of its
 * own time: a caller kept waiting held the Graph's whole queue, so a Play running out of sight
 * queued one call a tick, and coming back to the chart replayed every one of them.  Answered,
 * dcc.Graph binds its events to the chart (`gd.on`, which plotly gives a chart as it first
 * draws it); on a chart not drawn yet they are kept and bound once it is.
 */
(function () {
  "use strict";
  var MARGIN = "300px 0px";   // start drawing a little before the chart scrolls in
  var waiting = new Map();    // graph div -> {plotly, react, args}
  var watch = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) { drawNow(entry.target); }
    });
  }, { rootMargin: MARGIN });

  function drawNow(gd) {
    var call = waiting.get(gd);
    if (!call) { return; }
    waiting.delete(gd);
    watch.unobserve(gd);
    var bindings = gd.graphlabBindings;
    if (bindings) {   // plotly's own event methods replace the stand-ins as it draws
      delete gd.graphlabBindings;
      delete gd.on;
      delete gd.removeAllListeners;
    }
    Promise.resolve(call.react.apply(call.plotly, call.args)).then(function () {
      (bindings || []).forEach(function (args) { gd.on.apply(gd, args); });
    });
  }

  /* Stand-ins for the event methods of a chart not drawn yet: what is bound waits for it. */
  function keepBindings(gd) {
    var bindings = gd.graphlabBindings = [];
    gd.on = function () { bindings.push(Array.prototype.slice.call(arguments)); return gd; };
    gd.removeAllListeners = function () { bindings.length = 0; };
  }

  function wrap(plotly) {
    if (!plotly || plotly.__drawnWhenSeen || typeof plotly.react !== "function") { return; }
    var react = plotly.react;
    plotly.react = function (gd) {
      var div = typeof gd === "string" ? document.getElementById(gd) : gd;
      if (!div) { return react.apply(this, arguments); }
      var call = waiting.get(div);
      if (!call) {
        call = { plotly: this, react: react };
        waiting.set(div, call);
        watch.observe(div);   // it reports at once whether the chart is in view
      }
      call.args = Array.prototype.slice.call(arguments);   // the newest figure wins
      if (!div._fullLayout && !div.on) { keepBindings(div); }
      return Promise.resolve(div);
    };
    plotly.__drawnWhenSeen = true;
  }

  /* Whether a chart holds a figure until it is seen (for the page's tests). */
  window.graphlabChartWaits = function (gd) { return waiting.has(gd); };

  // plotly.js is loaded later, by the first chart or ahead of it: wrapped as it arrives
  var library = window.Plotly;
  wrap(library);
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: function () { return library; },
    set: function (value) { library = value; wrap(value); }
  });
})();
