/* GraphLab pass debugger, client side: arrow keys step through passes; the two panes share one
 * viewport (pan/zoom one, the other follows), so a node sits at the same place on screen in
 * both; every new view (another model, another pass) is fitted to what its pass changed. */
(function () {
  "use strict";

  var READABLE_ZOOM = 0.55;   // node labels stay legible at or above it (16 px font)
  var WHOLE_ZOOM = 0.5;       // a change a little too wide is shown whole down to it
  var CLOSEST_ZOOM = 1.0;     // a small change is not blown up past its natural size
  var PAD = 24;               // screen pixels kept free around what is fitted
  var EDGE = 4;               // ... at the least, where that margin would cut the change
  // Boxes as a person sees them: a node's overlay (10 px around it) shows only when tapped.
  var AS_SEEN = { includeOverlays: false };
  var CHANGED = ".removed, .added, .modified, .has-removed, .has-added, .has-modified";

  /* What each pane was last sent (see graphlab/app/pane_updates.py): the view it belongs to
   * (model and pass) and how many elements the pane holds once it is applied. */
  var sent = { "pane-before": null, "pane-after": null };
  var fitted = null;          // the view the panes were last fitted to
  var personMoved = false;    // the person has panned or zoomed since the last fit
  var linked = null;          // {before, after}: the panes' graph instances, once drawn

  /* An address with doubled slashes ("host//?model=x") made every URL the page writes
   * protocol-relative ("//?pass=3" names another host, and the browser refuses it): the
   * slashes are collapsed before the page reads its address. */
  if (/^\/\/+/.test(window.location.pathname)) {
    window.history.replaceState(window.history.state, "",
      window.location.pathname.replace(/^\/+/, "/") + window.location.search + window.location.hash);
  }

  /* Back and Forward: the navigation reducer hears the address the browser went to (the store
   * `url-heard`, ids.URL_HEARD).  The addresses the page and the reducer write themselves go
   * unheard: nothing listens to the URL's own changes (panels/views_in_page.py). */
  window.addEventListener("popstate", function () {
    var clientside = window.dash_clientside;
    if (clientside && clientside.set_props) {
      clientside.set_props("url-heard", { data: window.location.search });
    }
  });

  /* The graph component fits the whole graph whenever its elements change and the graph lies
   * out of view; finding that out measures every element with its label at once (a second on
   * a first render).  The viewport here is ours to set (below), so the component is told the
   * graph is never out of view. */
  var graphs = window.dash_cytoscape && window.dash_cytoscape.Cytoscape;
  if (graphs && graphs.prototype && graphs.prototype.graphOutOfView) {
    graphs.prototype.graphOutOfView = function () { return false; };
  }

  /* Clientside callbacks.  applyPanes: both panes' updates from the server (one callback, so
   * the renderer does its bookkeeping once) merged into the elements each pane holds — the
   * whole list, or the elements to drop and the new or changed ones (replaced in place, new
   * ones appended).  Untouched elements stay the same objects, so the graph component leaves
   * them alone. */
  function merged(update, elements, paneId) {
    var skip = window.dash_clientside.no_update;
    if (!update) { return skip; }
    sent[paneId] = { view: update.view, count: update.count };
    if (update.full) { return update.full; }
    if (!update.upsert && !update.remove) { return skip; }
    var gone = new Set(update.remove || []), changed = new Map();
    (update.upsert || []).forEach(function (e) { changed.set(e.data.id, e); });
    var out = [];
    (elements || []).forEach(function (e) {
      var id = e.data.id;
      if (gone.has(id)) { return; }
      if (changed.has(id)) { out.push(changed.get(id)); changed.delete(id); }
      else { out.push(e); }
    });
    changed.forEach(function (e) { out.push(e); });
    return out;
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    graphlab: {
      applyPanes: function (before, after, beforeElements, afterElements) {
        var found = [merged(before, beforeElements, "pane-before"),
                     merged(after, afterElements, "pane-after")];
        whenDrawn();
        return found;
      }
    }
  });

  document.addEventListener("keydown", function (event) {
    var tag = (event.target && event.target.tagName) || "";
    if (/INPUT|TEXTAREA|SELECT/.test(tag) || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    var button = { ArrowLeft: "step-prev", ArrowRight: "step-next" }[event.key];
    if (button && document.getElementById(button)) {
      document.getElementById(button).click();
      event.preventDefault();
    }
  });

  document.addEventListener("click", function (event) {   // the fit buttons above the panes
    var target = event.target && event.target.closest && event.target.closest("button");
    if (!target || !linked) { return; }
    if (target.id === "fit-change") { together(function () { fitChange() || fitAll(); }); }
    if (target.id === "fit-all") { together(fitAll); }
    if (target.id === "fold-side") { foldSide(!document.querySelector(".main.side-folded")); }
  });

  /* The side panel folded away (the panes take its width) or back; a node tapped in a pane
   * brings it back, since the inspector shows that node.  The panes measure their new size
   * themselves (`measureWhenResized`). */
  function foldSide(folded) {
    var main = document.querySelector(".main"), button = document.getElementById("fold-side");
    if (!main) { return; }
    main.classList.toggle("side-folded", folded);
    if (button) { button.textContent = folded ? "⇤ Side panel" : "Side panel ⇥"; }
  }

  /* The graph component measures its pane only when the window resizes, and a pane also
   * changes size without it: the side panel folded, the top bar wrapping onto a second row
   * as its boxes fill, a message shown above.  A pane measuring its old size fitted a change
   * beside the view.  So the panes' resizes are measured, both in one callback; a view the
   * page fitted and the person has not moved since is then fitted again, else what was at
   * each pane's centre stays there. */
  function measureWhenResized(panesNow) {
    if (!window.ResizeObserver) { return; }
    var observer = new ResizeObserver(function () {
      var resized = panesNow.filter(function (cy) {
        return cy.width() !== cy.container().clientWidth ||
               cy.height() !== cy.container().clientHeight;
      });
      if (!resized.length) { return; }
      together(function () {
        resized.forEach(function (cy) {
          var zoom = cy.zoom(), pan = cy.pan();
          var x = (cy.width() / 2 - pan.x) / zoom, y = (cy.height() / 2 - pan.y) / zoom;
          cy.resize();
          cy.pan({ x: cy.width() / 2 - zoom * x, y: cy.height() / 2 - zoom * y });
        });
        if (!personMoved && fitted) { fitChange(); }
      });
    });
    panesNow.forEach(function (cy) { observer.observe(cy.container()); });
  }

  function cyOf(id) {
    var element = document.getElementById(id);
    if (!element) { return null; }
    var found = element._cyreg ? element : element.querySelector("div");
    while (found && !found._cyreg) { found = found.querySelector("div"); }
    return found ? found._cyreg.cy : null;
  }

  function panes() { return [linked.before, linked.after]; }

  function union(boxes) {
    return boxes.reduce(function (box, b) {
      return box ? { x1: Math.min(box.x1, b.x1), y1: Math.min(box.y1, b.y1),
                     x2: Math.max(box.x2, b.x2), y2: Math.max(box.y2, b.y2) } : b;
    }, null);
  }

  function inView(cy, box) {
    var e = cy.extent();
    return box.x2 > e.x1 && box.x1 < e.x2 && box.y2 > e.y1 && box.y1 < e.y2;
  }

  /* Both panes at one zoom, with the model point (x, top) at the centre / top of the view. */
  function show(zoom, x, top) {
    panes().forEach(function (cy) {
      var z = Math.max(cy.minZoom(), Math.min(zoom, cy.maxZoom()));
      cy.viewport({ zoom: z, pan: { x: cy.width() / 2 - z * x, y: PAD - z * top } });
    });
  }

  function zoomFor(box) {
    var cy = linked.before;
    return Math.min((cy.width() - 2 * PAD) / Math.max(box.x2 - box.x1, 1),
                    (cy.height() - 2 * PAD) / Math.max(box.y2 - box.y1, 1));
  }

  /* The box around both panes' graphs; null when neither draws anything. */
  function graphsBox() {
    return union(panes().filter(function (cy) { return cy.elements().length; })
      .map(function (cy) { return cy.elements().boundingBox(AS_SEEN); }));
  }

  /* The whole graph when it fits at a readable zoom, else its top at that zoom. */
  function fitAll() {
    var box = graphsBox();
    if (!box) { return; }
    var zoom = Math.min(zoomFor(box), CLOSEST_ZOOM);
    if (zoom >= READABLE_ZOOM) {
      show(zoom, (box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2 - (linked.before.height() / 2 - PAD) / zoom);
    } else {
      show(READABLE_ZOOM, (box.x1 + box.x2) / 2, box.y1);
    }
  }

  /* What the pass changed — removed on the left, added on the right, modified in both — in
   * view at a readable zoom: all of it when it fits, else where it starts in each pane.
   * False when the panes mark no change. */
  function fitChange() {
    var marked = panes().map(function (cy) { return cy.$(CHANGED); })
      .filter(function (c) { return c.length; });
    if (!marked.length) { return false; }
    var box = union(marked.map(function (c) { return c.boundingBox(AS_SEEN); }));
    var zoom = Math.min(zoomFor(box), CLOSEST_ZOOM);
    if (zoom >= READABLE_ZOOM) {
      var middle = (box.y1 + box.y2) / 2;
      show(zoom, middleOrStart(zoom, box),
           withinGraph(zoom, middle - (linked.before.height() / 2 - PAD) / zoom));
      return true;
    }
    // Too big for the pane with the margin kept around a fit.  Across: all of it, edge to
    // edge, when that needs a zoom only a little below the readable one (a row of three
    // nodes in a 320 px pane: 0.54), else where it starts at the readable zoom.  Down: its
    // middle at the middle of the view when it is short enough (at the view's top, a
    // row-wide change left the row above it cut in half and the lower half of the panes
    // blank), else its start at the top.
    var across = Math.min(READABLE_ZOOM, (linked.before.width() - 2 * EDGE) /
                                         Math.max(box.x2 - box.x1, 1));
    var whole = across >= WHOLE_ZOOM;
    var z = whole ? across : READABLE_ZOOM, start = closestPair(marked);
    var span = (linked.before.height() - 2 * PAD) / z;
    var top = box.y2 - box.y1 <= span ? (box.y1 + box.y2) / 2 - span / 2 : start.y1;
    show(z, whole ? (box.x1 + box.x2) / 2 : middleOrStart(z, start), withinGraph(z, top));
    return true;
  }

  /* The x the view centres on: the box's middle, or, when the box is wider than the view (a
   * collapsed group in a narrow pane), a view from its left edge, where its name is written. */
  function middleOrStart(zoom, box) {
    var half = (linked.before.width() / 2 - PAD) / zoom;
    return box.x2 - box.x1 > 2 * half ? box.x1 + half : (box.x1 + box.x2) / 2;
  }

  /* The view's top moved so no empty band shows past the graph's top or foot (a change at the
   * graph's foot, centred, left half the panes blank); a graph shorter than the view is
   * centred in it.  A change stays in view: it lies inside the graph. */
  function withinGraph(zoom, top) {
    var all = graphsBox();
    if (!all) { return top; }
    var span = (linked.before.height() - 2 * PAD) / zoom;
    if (all.y2 - all.y1 <= span) { return (all.y1 + all.y2) / 2 - span / 2; }
    return Math.max(all.y1, Math.min(top, all.y2 - span));
  }

  /* Where a change of each pane can be seen at once at a readable zoom: of the pairs (one
   * marked element per pane), the highest that fits one view; else the first change of the
   * right pane (what the pass made). */
  function closestPair(marked) {
    var boxes = marked.map(function (c) {
      return c.map(function (e) { return e.boundingBox(AS_SEEN); })
        .sort(function (p, q) { return p.y1 - q.y1; }).slice(0, 400);
    });
    if (boxes.length === 1) { return boxes[0][0]; }
    var best = null;
    boxes[0].forEach(function (p) {
      boxes[1].forEach(function (q) {
        var both = union([p, q]);
        if (zoomFor(both) >= READABLE_ZOOM && (!best || both.y1 < best.y1)) { best = both; }
      });
    });
    return best || boxes[1][0];
  }

  var syncing = false;
  function together(action) {
    syncing = true;
    try { action(); } finally { syncing = false; }
  }

  /* Once both panes hold what they were last sent, a new view is fitted to its change: as
   * soon as the graph component has added the elements (`link` hears it), before its first
   * frame draws them, so no frame is spent on a viewport that is about to change; else
   * (the panes not linked yet) on a timer. */
  var waiting = null;
  function whenDrawn(tries) {
    clearTimeout(waiting);
    tries = tries || 0;
    waiting = setTimeout(function () {
      if (!fitNow() && tries < 100) { whenDrawn(tries + 1); }
    }, tries ? 40 : 0);
  }

  /* False while the panes do not both hold the view they were last sent. */
  function fitNow() {
    if (!linked) { linked = link(); }
    var a = sent["pane-before"], b = sent["pane-after"];
    if (!linked || !a || !b || a.view !== b.view) { return false; }
    if (linked.before.elements().length !== a.count || linked.after.elements().length !== b.count) {
      return false;
    }
    clearTimeout(waiting);
    if (a.view === fitted) { return true; }
    var sameModel = fitted && fitted.split(":")[0] === a.view.split(":")[0];
    fitted = a.view;
    // A pass that changed nothing leaves the view where the person put it; another model
    // is fitted whole.
    together(function () { fitChange() || sameModel || fitAll(); });
    personMoved = false;
    if (!sameModel) { linked.reveal(true); }   // a link's selected node wins over the fit
    showSelectedPass();
    lastActivity = Date.now();
    preloadCharts();
    return true;
  }

  /* The charts' library is plotly.js's cartesian bundle (assets/vendor: the trace types the
   * app draws, scatter, bar and heatmap, in 1.5 MB; evaluating the 4.8 MB full bundle Dash
   * offers took a second of the page's main thread, twice this one's).  Dash names the URL
   * it loads the library from once the page is up; the page's own is kept instead. */
  var chartsUrl = document.currentScript &&
    document.currentScript.src.replace(/graphlab\.js(\?.*)?$/, "vendor/plotly-cartesian-4.1.1.min.js");
  if (chartsUrl) {
    Object.defineProperty(window, "_dashPlotlyJSURL", {
      configurable: true, get: function () { return chartsUrl; }, set: function () {}
    });
  }

  /* The charts' library (plotly.js) is loaded by the first chart a tab draws,
   * which made opening the first hardware tab take seconds.  It is loaded ahead once the
   * person has left the page alone for a moment (no input, no new view drawn): evaluating it
   * holds the page for a second or two on a slow machine, and a step pressed meanwhile would
   * wait for it. */
  var QUIET_MS = 1500;
  var lastActivity = Date.now(), inputs = ["pointerdown", "keydown", "wheel"];
  inputs.forEach(function (kind) {
    document.addEventListener(kind, function () { lastActivity = Date.now(); }, true);
  });
  var preloading = false;
  function loadCharts() {
    var url = window._dashPlotlyJSURL;
    if (!url || window.Plotly || document.querySelector('script[src="' + url + '"]')) { return; }
    var script = document.createElement("script");
    script.src = url;
    /* Until it has run, the library is this promise: a chart mounting meanwhile waits for it
     * (the graph component takes a thenable for the library) instead of loading the library
     * a second time, which would evaluate it twice.  Running, it sets the real one. */
    window.Plotly = new Promise(function (resolve, reject) {
      script.onload = resolve;
      script.onerror = function () {
        window.Plotly = undefined;
        reject(new Error("the charts' library did not load from " + url));
      };
    });
    document.head.appendChild(script);
  }
  function preloadCharts() {
    if (preloading || window.Plotly || !window._dashPlotlyJSURL) { return; }
    preloading = true;
    var idle = window.requestIdleCallback || function (f) { setTimeout(f, 0); };
    (function whenQuiet() {
      var quiet = Date.now() - lastActivity;
      if (quiet < QUIET_MS) { setTimeout(whenQuiet, QUIET_MS - quiet); return; }
      idle(function () {
        if (Date.now() - lastActivity < QUIET_MS) { whenQuiet(); return; }
        loadCharts();
      }, { timeout: 1000 });
    })();
  }
  /* A pointer on its way to the tabs: a chart tab may be next, so the library starts now. */
  document.addEventListener("pointerover", function (event) {
    var tab = event.target && event.target.closest && event.target.closest(".tab");
    if (tab && preloading) { loadCharts(); }
  }, true);

  /* After groups open or close, a change that the new layout moved out of both panes' view
   * is brought back. */
  function keepChangeInView() {
    if (syncing) { return; }
    var lost = panes().some(function (cy) {
      var marked = cy.$(CHANGED);
      return marked.length && !inView(cy, marked.boundingBox());
    });
    if (lost) { together(fitChange); }
  }

  function link() {
    var a = cyOf("pane-before"), b = cyOf("pane-after");
    if (!a || !b) { return null; }
    var core = Object.getPrototypeOf(a);   // every graph's: the panes' SVG download (graph_svg.js)
    if (!core.svg) { core.svg = function (options) { return window.graphlabGraphSvg(this, options); }; }
    function follow(source, target) {
      source.on("viewport", function () {
        if (syncing) { return; }
        personMoved = true;
        together(function () { target.viewport({ zoom: source.zoom(), pan: source.pan() }); });
      });
    }
    follow(a, b);
    follow(b, a);
    measureWhenResized([a, b]);
    var pending = null;
    function regrouped() {
      clearTimeout(pending);
      pending = setTimeout(function () {
        var s = sent["pane-before"];
        if (s && s.view === fitted) { keepChangeInView(); }
      }, 60);
    }
    a.on("add remove", regrouped);
    b.on("add remove", regrouped);
    var added = false;
    function fitSoon() {   // once the component is done adding (one task adds both panes')
      if (added) { return; }
      added = true;
      Promise.resolve().then(function () { added = false; fitNow(); });
    }
    a.on("add remove", fitSoon);
    b.on("add remove", fitSoon);
    [a, b].forEach(function (cy) { cy.on("tap", "node.op", function () { foldSide(false); }); });
    /* What a pane update points at, brought into view as soon as the update is drawn: a
     * node selected from a link or history, a clicked near miss's or decline's nodes. */
    var lastSelected = "", lastLit = "", revealing = false;
    function keyOf(nodes) { return nodes.map(function (n) { return n.id(); }).join(" "); }
    function centre(box) {
      together(function () {
        [a, b].forEach(function (cy) {
          cy.pan({ x: cy.width() / 2 - cy.zoom() * (box.x1 + box.x2) / 2,
                   y: cy.height() / 2 - cy.zoom() * (box.y1 + box.y2) / 2 });
        });
      });
    }
    function revealSelected() {
      var target = a.nodes(".hl-selected").length ? a.nodes(".hl-selected") : b.nodes(".hl-selected");
      var key = keyOf(target);
      if (key === lastSelected) { return; }
      lastSelected = key;
      if (!target.length) { return; }
      var box = target.boundingBox(), ext = a.extent();
      var x = (box.x1 + box.x2) / 2, y = (box.y1 + box.y2) / 2;
      if (x < ext.x1 || x > ext.x2 || y < ext.y1 || y > ext.y2) { centre(box); }
    }
    function revealLit() {
      // the failed node and the blocking consumer (styles.HIGHLIGHT_STYLES): both when they
      // fit in the panes at this zoom, else the blocking one, the one to see
      var lit = a.nodes(".hl-failed, .hl-blocking"), key = keyOf(lit);
      if (key === lastLit) { return; }
      lastLit = key;
      if (!lit.length) { return; }
      var dashed = lit.filter(".hl-blocking"), ext = a.extent(), box = lit.boundingBox();
      var fits = box.x2 - box.x1 <= ext.x2 - ext.x1 && box.y2 - box.y1 <= ext.y2 - ext.y1;
      if (!fits && dashed.length) { box = dashed.boundingBox(); }
      if (box.x1 < ext.x1 || box.x2 > ext.x2 || box.y1 < ext.y1 || box.y2 > ext.y2) { centre(box); }
    }
    function reveal(again) {   // again: after a refit, even what was brought into view before
      if (again === true) { lastSelected = lastLit = ""; }
      if (revealing) { return; }
      revealing = true;
      requestAnimationFrame(function () { revealing = false; revealSelected(); revealLit(); });
    }
    [a, b].forEach(function (cy) { cy.on("add class", reveal); });
    // `shown()`: the view (model and pass) both panes hold and were fitted to.
    window.graphlabPanes = { before: a, after: b, reveal: reveal,
                             shown: function () { return fitted; } };
    return window.graphlabPanes;
  }

  /* The selected pass scrolled into sight inside the pass list only: scrollIntoView would also
   * scroll the column around it (on a short screen), carrying Prev and Next away.  No scroll
   * when it is in sight already. */
  function showSelectedPass() {
    var list = document.getElementById("pass-list"),
        row = list && list.querySelector(".pass-row.selected");
    if (!row) { return; }
    var r = row.getBoundingClientRect(), l = list.getBoundingClientRect();
    if (r.top < l.top) { list.scrollTop -= l.top - r.top; }
    else if (r.bottom > l.bottom) { list.scrollTop += r.bottom - l.bottom; }
  }

  /* The selected pass stays in sight in the pass list, however it was selected. */
  var watched = null;
  function followSelectedPass() {
    var list = document.getElementById("pass-list");
    if (!list || list === watched) { return; }
    watched = list;
    new MutationObserver(showSelectedPass).observe(list, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
  }

  /* On a screen narrower than NARROW_SCREEN (a 1024 x 768 projector) the page opens with the
   * side panel folded: open, it leaves each pane under 200 px wide.  "⇤ Side panel" or a
   * tapped node opens it. */
  var NARROW_SCREEN = 1200, sized = false;
  function foldWhenNarrow() {
    if (sized || !document.querySelector(".main")) { return; }
    sized = true;
    if (window.innerWidth < NARROW_SCREEN) { foldSide(true); }
  }

  var timer = setInterval(function () {
    foldWhenNarrow();
    if (!linked) { linked = link(); }
    followSelectedPass();
    if (linked && watched) { clearInterval(timer); }
  }, 200);
})();
