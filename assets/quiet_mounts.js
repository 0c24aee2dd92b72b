/* A component mounting does not make the whole page check itself, unless there is something to
 * reset.
 *
 * Dash 4.4's renderer has every component it draws afresh (the whole page on a first render,
 * a tab's contents when the tab opens, the children a callback returns) send the store a
 * "reset" of the render records kept under its place in the layout.  Each store update is
 * checked by every mounted component, so mounting N components costs N such rounds: 236 of a
 * first render's 540 store updates, 101 of the Systolic tab's 270, some 2.5 ms each on two
 * busy cores.  Nearly all of them reset nothing: nothing has been recorded under a component
 * that was never drawn.  Here such a reset is dropped before it reaches the store; one that
 * would remove a record goes through as before (the same test the renderer's reducer makes,
 * on the same keys).  Dash 4.5's release candidates send no reset on a component's first
 * render, so there this finds little to drop.
 */
(function () {
  "use strict";
  var RESET = "RESET_COMPONENT_STATE";

  /* Whether the reset would remove a record: the renderer keys them by the component's path
   * joined with commas, and removes every key starting with the reset component's. */
  function resetsSomething(store, action) {
    var records = (store.getState() || {}).layoutHashes;
    var path = action.payload && action.payload.itempath;
    if (!records || !Array.isArray(path)) { return true; }   // not the shape known: let it be
    var prefix = path.join(",");
    for (var key in records) {
      if (key.indexOf(prefix) === 0) { return true; }
    }
    return false;
  }

  function quieten(store) {
    if (!store || store.__quietMounts || typeof store.dispatch !== "function") { return; }
    var dispatch = store.dispatch;
    store.dispatch = function (action) {
      if (action && action.type === RESET && !resetsSomething(store, action)) { return action; }
      return dispatch.apply(this, arguments);
    };
    store.__quietMounts = true;
  }

  // the renderer makes its store after the page's scripts have run: caught as it is set
  var current = window.store;
  quieten(current);
  Object.defineProperty(window, "store", {
    configurable: true,
    get: function () { return current; },
    set: function (value) { current = value; quieten(value); }
  });
})();
