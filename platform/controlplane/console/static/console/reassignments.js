// Live progress of a reassignment execution: the page's state (json_script) is drawn at once, then refreshed
// every second from the progress URL (the REST detail's fields); once the execution is final the page reloads
// (to show the final state without the control buttons).
(function () {
  var root = document.getElementById("execution");
  if (!root) { return; }
  var TASK_LABELS = {pending: "pending", copying: "copying", in_isr: "in ISR", done: "done", cancelled: "cancelled",
                     failed: "failed"};
  function bytes(n) {
    var units = ["bytes", "KB", "MB", "GB", "TB"], i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return (i ? n.toFixed(1) : String(n)) + " " + units[i];
  }
  function duration(s) {
    if (s === null || s === undefined) { return "—"; }
    s = Math.round(s);
    if (s < 60) { return s + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min " + (s % 60) + " s"; }
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  }
  function rate(r) { return r ? bytes(r) + "/s" : "—"; }
  function text(id, value) { var e = document.getElementById(id); if (e) { e.textContent = value; } }
  function render(state) {
    var badge = document.getElementById("execution-state");
    badge.textContent = state.state;
    badge.className = "state reassign-" + state.state;
    text("execution-percent", Math.floor(state.fraction * 100) + "%");
    text("execution-bytes", bytes(state.bytes_copied));
    text("execution-total", bytes(state.bytes_to_copy));
    text("execution-rate", rate(state.rate));
    text("execution-eta", duration(state.eta_s));
    document.getElementById("execution-progress").value = state.fraction;
    text("execution-counts", Object.keys(state.tasks_by_state).filter(function (k) { return state.tasks_by_state[k]; })
      .map(function (k) { return TASK_LABELS[k] + " " + state.tasks_by_state[k]; }).join(" · "));
    state.tasks.forEach(function (task) {
      var row = root.querySelector("tr[data-task='" + CSS.escape(task.topic + "-" + task.partition) + "']");
      if (!row) { return; }
      var badge = row.querySelector(".task-state");
      badge.textContent = TASK_LABELS[task.state];
      badge.className = "state task-" + task.state + " task-state";
      row.querySelector("progress").value = task.fraction;
      row.querySelector(".task-bytes").textContent = bytes(task.bytes_copied) + " / " + bytes(task.bytes_to_copy);
      row.querySelector(".task-rate").textContent = rate(task.rate);
      row.querySelector(".task-eta").textContent = task.state === "done" ? "—" : duration(task.eta_s);
    });
  }
  function poll() {
    fetch(root.dataset.progressUrl, {credentials: "same-origin"})
      .then(function (response) { return response.json(); })
      .then(function (state) {
        render(state);
        if (state.state !== "running" && state.state !== "paused" && root.dataset.final !== "true") {
          window.location.reload();
        } else if (root.dataset.final !== "true") {
          setTimeout(poll, 1000);
        }
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  render(JSON.parse(document.getElementById("execution-state-json").textContent));
  if (root.dataset.final !== "true") { setTimeout(poll, 1000); }
})();
