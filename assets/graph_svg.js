/* A graph pane as SVG, written from what the graph component holds: each element's position,
 * size and computed style (marks, highlights, overlay colours as drawn).  The page loads the
 * component's small bundle, which has no SVG exporter: the larger one costs every page about
 * half a CPU-second of script for one download button.  `graphlab.js` gives every graph this
 * as `cy.svg(options)`, which the component's image download calls. */
(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";
  var DASHES = { dashed: "6 4", dotted: "1.5 3" };

  function escaped(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function number(value) { return Math.round(value * 100) / 100; }

  function points(list) {
    return list.map(function (p) { return number(p[0]) + "," + number(p[1]); }).join(" ");
  }

  /* The outline of a node's shape, centred on (x, y), as an SVG element's opening. */
  function outline(shape, x, y, w, h) {
    var l = x - w / 2, t = y - h / 2, r = x + w / 2, b = y + h / 2;
    if (shape === "ellipse") {
      return '<ellipse cx="' + number(x) + '" cy="' + number(y) + '" rx="' + number(w / 2) +
        '" ry="' + number(h / 2) + '"';
    }
    if (shape === "cut-rectangle") {
      var c = Math.min(8, w / 4, h / 4);
      return '<polygon points="' + points([[l + c, t], [r - c, t], [r, t + c], [r, b - c],
        [r - c, b], [l + c, b], [l, b - c], [l, t + c]]) + '"';
    }
    if (shape === "round-tag" || shape === "tag") {
      var tip = Math.min(h, w / 4);
      return '<polygon points="' + points([[l, t], [r - tip, t], [r, y], [r - tip, b], [l, b]]) +
        '"';
    }
    var radius = /round/.test(shape) ? Math.min(8, w / 4, h / 4) : 0;
    return '<rect x="' + number(l) + '" y="' + number(t) + '" width="' + number(w) +
      '" height="' + number(h) + '" rx="' + number(radius) + '"';
  }

  function pixels(ele, property) { return ele.pstyle(property).pfValue; }

  /* Fill and stroke attributes of a node, from its computed style. */
  function paint(node) {
    var border = pixels(node, "border-width"), style = node.style("border-style");
    var attributes = ' fill="' + node.style("background-color") + '" fill-opacity="' +
      node.style("background-opacity") + '"';
    if (border > 0) {
      attributes += ' stroke="' + node.style("border-color") + '" stroke-width="' +
        number(border) + '"';
      if (DASHES[style]) { attributes += ' stroke-dasharray="' + DASHES[style] + '"'; }
    } else {
      attributes += ' stroke="none"';
    }
    return attributes;
  }

  var measure = document.createElement("canvas").getContext("2d");

  /* The label's lines as the component wraps them: at its line breaks, and (text-wrap: wrap)
   * between words past text-max-width. */
  function lines(ele, font) {
    var label = ele.style("label");
    if (!label) { return []; }
    var wrapped = [], max = pixels(ele, "text-max-width");
    measure.font = font;
    String(label).split("\n").forEach(function (line) {
      if (ele.style("text-wrap") !== "wrap" || measure.measureText(line).width <= max) {
        wrapped.push(line);
        return;
      }
      var current = "";
      line.split(" ").forEach(function (word) {
        var tried = current ? current + " " + word : word;
        if (current && measure.measureText(tried).width > max) {
          wrapped.push(current);
          current = word;
        } else {
          current = tried;
        }
      });
      wrapped.push(current);
    });
    return wrapped;
  }

  /* A label's <text>, centred on (x, y) or, with text-valign top, standing on y. */
  function text(ele, x, y, above) {
    var size = pixels(ele, "font-size"), weight = ele.style("font-weight");
    var family = ele.style("font-family"), font = weight + " " + size + "px " + family;
    var found = lines(ele, font);
    if (!found.length) { return ""; }
    var step = size * (parseFloat(ele.style("line-height")) || 1);
    x += pixels(ele, "text-margin-x") || 0;
    y += pixels(ele, "text-margin-y") || 0;
    var first = above ? y - step * (found.length - 1) - size * 0.3
                      : y - step * (found.length - 1) / 2 + size * 0.35;
    var spans = found.map(function (line, i) {
      return '<tspan x="' + number(x) + '" y="' + number(first + i * step) + '">' +
        escaped(line) + "</tspan>";
    }).join("");
    return '<text font-family="' + escaped(family) + '" font-size="' + number(size) +
      '" font-weight="' + weight + '" fill="' + ele.style("color") + '" text-anchor="middle">' + spans +
      "</text>";
  }

  function nodeSvg(node) {
    var p = node.position(), w = node.width(), h = node.height(), out = [];
    var overlay = parseFloat(node.style("overlay-opacity"));
    if (overlay > 0) {
      var pad = pixels(node, "overlay-padding");
      out.push(outline("round-rectangle", p.x, p.y, w + 2 * pad, h + 2 * pad) + ' fill="' +
        node.style("overlay-color") + '" fill-opacity="' + overlay + '"/>');
    }
    out.push(outline(node.style("shape"), p.x, p.y, w, h) + paint(node) + "/>");
    var top = node.style("text-valign") === "top";
    out.push(text(node, p.x, top ? p.y - h / 2 - pixels(node, "border-width") : p.y, top));
    return out.join("");
  }

  function edgeSvg(edge) {
    // the panes' edges are straight (styles.py); a segmented one keeps its bends
    var path = [edge.sourceEndpoint()].concat(edge.segmentPoints() || [], [edge.targetEndpoint()]);
    var coords = path.map(function (p) { return [p.x, p.y]; });
    var colour = edge.style("line-color"), width = pixels(edge, "width");
    var out = ['<polyline points="' + points(coords) + '" fill="none" stroke="' + colour +
      '" stroke-width="' + number(width) + '"/>'];
    if (edge.style("target-arrow-shape") !== "none" && coords.length > 1) {
      // the component's arrow: a triangle 0.3 of its arrow size long and wide
      var size = Math.max(Math.pow(width * 13.37, 0.9), 29) *
        parseFloat(edge.style("arrow-scale")) * 0.3;
      var tip = coords[coords.length - 1], from = coords[coords.length - 2];
      var angle = Math.atan2(tip[1] - from[1], tip[0] - from[0]);
      var back = [tip[0] - size * Math.cos(angle), tip[1] - size * Math.sin(angle)];
      var side = [size / 2 * Math.sin(angle), -size / 2 * Math.cos(angle)];
      out.push('<polygon points="' + points([tip, [back[0] + side[0], back[1] + side[1]],
        [back[0] - side[0], back[1] - side[1]]]) + '" fill="' +
        edge.style("target-arrow-color") + '"/>');
    }
    if (edge.style("label")) {
      var mid = edge.midpoint(), size2 = pixels(edge, "font-size");
      measure.font = size2 + "px " + edge.style("font-family");
      var half = measure.measureText(edge.style("label")).width / 2 + 2;
      out.push('<rect x="' + number(mid.x - half) + '" y="' + number(mid.y - size2 / 2 - 2) +
        '" width="' + number(2 * half) + '" height="' + number(size2 + 4) + '" fill="' +
        edge.style("text-background-color") + '"/>');
      out.push(text(edge, mid.x, mid.y, false));
    }
    return out.join("");
  }

  function isFrame(node) { return node.hasClass("group") || node.hasClass("opened"); }

  /* The whole graph (options.full) or what the viewport shows, on options.bg. */
  window.graphlabGraphSvg = function (cy, options) {
    options = options || {};
    var shown = cy.elements(":visible");
    var box = options.full ? shown.boundingBox() : cy.extent(), pad = 10;
    var x = box.x1 - pad, y = box.y1 - pad, w = box.x2 - box.x1 + 2 * pad,
      h = box.y2 - box.y1 + 2 * pad;
    var nodes = shown.nodes().sort(function (a, b) {   // the panes' drawing order (styles.py)
      return parseFloat(a.style("z-index")) - parseFloat(b.style("z-index"));
    });
    var groups = nodes.filter(isFrame);
    var members = nodes.filter(function (n) { return !isFrame(n); });
    var body = [];
    if (options.bg) {
      body.push('<rect x="' + number(x) + '" y="' + number(y) + '" width="' + number(w) +
        '" height="' + number(h) + '" fill="' + options.bg + '"/>');
    }
    groups.forEach(function (n) { body.push(nodeSvg(n)); });
    shown.edges().forEach(function (e) { body.push(edgeSvg(e)); });
    members.forEach(function (n) { body.push(nodeSvg(n)); });
    return '<svg xmlns="' + SVG_NS + '" width="' + number(w) + '" height="' + number(h) +
      '" viewBox="' + [x, y, w, h].map(number).join(" ") + '">' + body.join("") + "</svg>";
  };
})();
