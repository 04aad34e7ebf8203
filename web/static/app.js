// toolq's own script: only what htmx cannot say in attributes. Pages work without it.
(function () {
  "use strict";

  // Mark the document while the live connection is down, so the stylesheet can say so.
  function setLive(up) {
    document.documentElement.classList.toggle("ws-down", !up);
  }
  document.addEventListener("htmx:wsOpen", function () { setLive(true); });
  document.addEventListener("htmx:wsClose", function () { setLive(false); });
  document.addEventListener("htmx:wsError", function () { setLive(false); });

  // A push is rendered once for a whole group of subscribers; should it carry an element this
  // page lacks (a section that appeared since the page loaded, such as a queue's sample), htmx
  // would log an error for that out-of-band element without a target: drop those first.
  // Pages name this extension next to "ws" in hx-ext.
  htmx.defineExtension("toolq-push", {
    transformResponse: function (text) {
      if (text.indexOf("hx-swap-oob") < 0) {
        return text;
      }
      var t = document.createElement("template");
      t.innerHTML = text;
      var dropped = false;
      Array.prototype.slice.call(t.content.children).forEach(function (el) {
        if (el.id && el.hasAttribute("hx-swap-oob") && !document.getElementById(el.id)) {
          el.remove();
          dropped = true;
        }
      });
      return dropped ? t.innerHTML : text;
    }
  });
})();
