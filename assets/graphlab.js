/* GraphLab pass debugger, client side: arrow keys step through passes, and the two panes share
 * one viewport (pan/zoom one, the other follows), fitted together when a new model is shown,
 * so a node sits at the same place on screen in both panes. */
(function () {
  "use strict";

  /* Clientside callbacks.  applyElements: a pane's update from the server (see
   * graphlab/app/pane_updates.py) merged into the elements the pane holds — the whole list, or
   * the elements to drop and the new or changed ones (replaced in place, new ones appended).
   * Untouched elements stay the same objects, so cytoscape leaves them alone. */
  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    graphlab: {
      applyElements: function (update, elements) {
        if (!update) { return window.dash_clientside.no_update; }
        if (update.full) { return update.full; }
        var gone = new Set(update.remove), changed = new Map();
        update.upsert.forEach(function (e) { changed.set(e.data.id, e); });
        var merged = [];
        (elements || []).forEach(function (e) {
          var id = e.data.id;
          if (gone.has(id)) { return; }
          if (changed.has(id)) { merged.push(changed.get(id)); changed.delete(id); }
          else { merged.push(e); }
        });
        changed.forEach(function (e) { merged.push(e); });
        return merged;
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

  function cyOf(id) {
    var element = document.getElementById(id);
    if (!element) { return null; }
    var found = element._cyreg ? element : element.querySelector("div");
    while (found && !found._cyreg) { found = found.querySelector("div"); }
    return found ? found._cyreg.cy : null;
  }

  function unionBox(instances) {
    var box = null;
    instances.forEach(function (cy) {
      if (cy.elements().length === 0) { return; }
      var b = cy.elements().boundingBox();
      box = box ? { x1: Math.min(box.x1, b.x1), y1: Math.min(box.y1, b.y1),
                    x2: Math.max(box.x2, b.x2), y2: Math.max(box.y2, b.y2) } : b;
    });
    return box;
  }

  function fitTogether(instances) {
    var box = unionBox(instances);
    if (!box) { return; }
    instances.forEach(function (cy) {
      var pad = 20, w = cy.width(), h = cy.height();
      var zoom = Math.min((w - 2 * pad) / Math.max(box.x2 - box.x1, 1),
                          (h - 2 * pad) / Math.max(box.y2 - box.y1, 1));
      // A tall model fitted whole is unreadable: start at a readable zoom, at its top.
      var readable = Math.min(Math.max(zoom, READABLE_ZOOM), 1.0);
      zoom = Math.max(cy.minZoom(), Math.min(readable, cy.maxZoom()));
      cy.viewport({ zoom: zoom, pan: { x: (w - zoom * (box.x1 + box.x2)) / 2,
                                       y: pad - zoom * box.y1 } });
    });
  }

  var CHANGED = ".removed, .added, .modified, .has-removed, .has-added, .has-modified";

  function showChanges(instances) {
    var boxes = [];
    instances.forEach(function (cy) {
      var changed = cy.$(CHANGED);
      if (changed.length) { boxes.push(changed.boundingBox()); }
    });
    if (!boxes.length) { return; }
    var cy = instances[0], ext = cy.extent();
    var visible = boxes.some(function (b) {
      return b.x2 > ext.x1 && b.x1 < ext.x2 && b.y2 > ext.y1 && b.y1 < ext.y2;
    });
    if (visible) { return; }
    var x = boxes.map(function (b) { return (b.x1 + b.x2) / 2; });
    var y = boxes.map(function (b) { return b.y1; });
    var cx = x.reduce(function (s, v) { return s + v; }, 0) / x.length;
    var top = Math.min.apply(null, y);
    instances.forEach(function (other) {
      var zoom = other.zoom();
      other.pan({ x: other.width() / 2 - zoom * cx, y: other.height() / 4 - zoom * top });
    });
  }

  var READABLE_ZOOM = 0.6;
  var linked = false;
  var lastFitKey = null;

  function link() {
    var a = cyOf("pane-before"), b = cyOf("pane-after");
    if (!a || !b) { return false; }
    var syncing = false;
    function follow(source, target) {
      source.on("viewport", function () {
        if (syncing) { return; }
        syncing = true;
        target.viewport({ zoom: source.zoom(), pan: source.pan() });
        syncing = false;
      });
    }
    follow(a, b);
    follow(b, a);
    function refit() {
      var keyElement = document.getElementById("fit-key");
      var key = keyElement ? keyElement.textContent : "";
      if (key && key !== lastFitKey && a.elements().length && b.elements().length) {
        lastFitKey = key;
        syncing = true;
        fitTogether([a, b]);
        syncing = false;
      }
    }
    var pending = null;
    function redrawn() {   // after a step: refit a new model, else bring the changes into view
      clearTimeout(pending);
      pending = setTimeout(function () {
        refit();
        syncing = true;
        showChanges([a, b]);
        syncing = false;
      }, 30);
    }
    a.on("add remove", redrawn);
    b.on("add remove", redrawn);
    new MutationObserver(refit).observe(document.getElementById("fit-key"),
                                        { childList: true, characterData: true, subtree: true });
    var lastNode = null;
    setInterval(function () {   // a node selected from a link or history: bring it into view
      var node = new URLSearchParams(window.location.search).get("node");
      if (node === lastNode) { return; }
      var target = a.$id("n" + node).length ? a.$id("n" + node) : b.$id("n" + node);
      if (!node) { lastNode = node; return; }
      if (!target.length) { return; }   // not drawn yet: try again on the next tick
      lastNode = node;
      var ext = a.extent(), p = target.position();
      if (p.x < ext.x1 || p.x > ext.x2 || p.y < ext.y1 || p.y > ext.y2) {
        syncing = true;
        [a, b].forEach(function (cy) {
          cy.pan({ x: cy.width() / 2 - cy.zoom() * p.x, y: cy.height() / 2 - cy.zoom() * p.y });
        });
        syncing = false;
      }
    }, 300);
    var lastLit = "";
    setInterval(function () {   // a clicked near miss or decline: bring what failed into view
      var lit = a.nodes().filter(function (n) { return n.style("border-width") === "6px"; });
      var key = lit.map(function (n) { return n.id(); }).join(" ");
      if (key === lastLit) { return; }
      lastLit = key;
      var dashed = lit.filter(function (n) { return n.style("border-style") === "dashed"; });
      var box = (dashed.length ? dashed : lit).boundingBox(), ext = a.extent();
      if (!lit.length || (box.x1 >= ext.x1 && box.x2 <= ext.x2 && box.y1 >= ext.y1
                          && box.y2 <= ext.y2)) { return; }
      syncing = true;
      [a, b].forEach(function (cy) {
        cy.pan({ x: cy.width() / 2 - cy.zoom() * (box.x1 + box.x2) / 2,
                 y: cy.height() / 2 - cy.zoom() * (box.y1 + box.y2) / 2 });
      });
      syncing = false;
    }, 300);
    window.graphlabPanes = { before: a, after: b };
    refit();
    return true;
  }

  var timer = setInterval(function () {
    if (!linked && document.getElementById("fit-key")) { linked = link(); }
    if (linked) { clearInterval(timer); }
  }, 200);
})();
