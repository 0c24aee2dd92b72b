/* The browser's own trim, parseFloat and parseInt, taken back.
 *
 * Dash loads babel-polyfill 7 before every other script.  Its core-js 2 takes these
 * built-ins for broken (it expects U+180E, which Unicode no longer counts as a space, to be
 * trimmed) and puts JavaScript versions in their place, 25-40x slower: the graph component
 * parses every style value with parseFloat, and the chart library and Dash's renderer trim
 * every class name and string they set.  The same built-ins of a fresh frame are the
 * browser's own; they keep working once the frame is gone.  (This file's name sorts first,
 * so it runs before the page's other scripts use them.)
 */
(function () {
  "use strict";
  var frame = document.createElement("iframe");
  frame.style.display = "none";
  (document.body || document.documentElement).appendChild(frame);
  var own = frame.contentWindow;
  function restore(target, source, names) {
    names.forEach(function (name) {
      if (typeof source[name] === "function" && target[name] !== source[name]) {
        Object.defineProperty(target, name, { value: source[name], writable: true,
                                              configurable: true, enumerable: false });
      }
    });
  }
  restore(String.prototype, own.String.prototype,
          ["trim", "trimStart", "trimEnd", "trimLeft", "trimRight"]);
  restore(window, own, ["parseFloat", "parseInt"]);
  restore(Number, own.Number, ["parseFloat", "parseInt"]);
  frame.parentNode.removeChild(frame);
})();
