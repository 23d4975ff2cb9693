// Progress bars of report runs: every element [data-progress-url] is refreshed once a second from its run's
// progress JSON; when the run reaches a final status the page reloads (to show the result or the error).
(function () {
  function render(element, state) {
    var bar = element.querySelector("progress");
    var text = element.querySelector(".progress-text");
    bar.value = state.fraction;
    var detail = state.status;
    if (state.status === "running") {
      detail = Math.round(state.fraction * 100) + "%";
      if (state.step) {
        detail += " · step " + (state.step_index + 1) + "/" + state.steps + " " + state.step +
          " · stages " + state.stages_done + "/" + state.stages_total +
          " · tasks " + state.tasks_done + "/" + state.tasks_total;
      }
    }
    text.textContent = detail;
    element.dataset.status = state.status;
    var tile = document.getElementById("run-status");  // the run page's status tile
    if (tile && tile.textContent !== state.status) {
      tile.textContent = state.status;
      tile.className = "figure status-" + state.status;
    }
  }
  function poll(element) {
    fetch(element.dataset.progressUrl, {credentials: "same-origin"})
      .then(function (response) { return response.json(); })
      .then(function (state) {
        render(element, state);
        if (state.final) { window.location.reload(); } else { setTimeout(function () { poll(element); }, 1000); }
      })
      .catch(function () { setTimeout(function () { poll(element); }, 3000); });
  }
  document.querySelectorAll("[data-progress-url]").forEach(function (element) {
    if (element.dataset.final !== "true") { poll(element); }
  });
  document.querySelectorAll("script[id^='figure-']").forEach(function (script) {  // json_script of each chart
    var figure = JSON.parse(script.textContent);
    Plotly.newPlot(script.id.slice("figure-".length), figure.data, figure.layout,
                   {displayModeBar: false, responsive: true});
  });
})();
