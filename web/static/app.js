// toolq's own script: only what htmx cannot say in attributes. Pages work without it.
// It marks the document while the live connection is down, so the stylesheet can say so.
(function () {
  "use strict";
  function setLive(up) {
    document.documentElement.classList.toggle("ws-down", !up);
  }
  document.addEventListener("htmx:wsOpen", function () { setLive(true); });
  document.addEventListener("htmx:wsClose", function () { setLive(false); });
  document.addEventListener("htmx:wsError", function () { setLive(false); });
})();
