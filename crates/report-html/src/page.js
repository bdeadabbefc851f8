(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tsload-data").textContent);
  function fmt(v, digits) {
    return v.toLocaleString("en-US", { maximumFractionDigits: digits });
  }
  function row(tip, field, label, value, text, cls) {
    if (value === null || value === undefined) return;
    var div = document.createElement("div");
    if (cls) div.className = cls;
    var name = document.createElement("span");
    name.textContent = label;
    var val = document.createElement("b");
    val.setAttribute("data-field", field);
    val.setAttribute("data-value", String(value));
    val.textContent = text;
    div.appendChild(name);
    div.appendChild(val);
    tip.appendChild(div);
  }
  document.querySelectorAll(".plot[data-key]").forEach(function (plot) {
    var d = data[plot.getAttribute("data-key")];
    if (!d || !d.elapsed_s.length) return;
    var t = d.elapsed_s, n = t.length, tmax = 0;
    for (var j = 0; j < n; j++) if (t[j] > tmax) tmax = t[j];
    var tip = plot.querySelector(".tip"), cursor = plot.querySelector(".cursor");
    function nearest(s) {
      var lo = 0, hi = n - 1;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (t[mid] < s) lo = mid + 1; else hi = mid;
      }
      if (lo > 0 && Math.abs(t[lo - 1] - s) <= Math.abs(t[lo] - s)) lo -= 1;
      return lo;
    }
    function show(ev) {
      var r = plot.getBoundingClientRect();
      var f = (ev.clientX - r.left) / r.width;
      if (!(f >= 0 && f <= 1)) { hide(); return; }
      var i = nearest(f * tmax);
      var x = tmax > 0 ? t[i] / tmax : 0;
      cursor.style.left = (x * 100) + "%";
      cursor.hidden = false;
      tip.textContent = "";
      tip.setAttribute("data-interval", String(i));
      var head = document.createElement("div");
      head.textContent = "interval " + (i + 1) + " of " + n + ", ends at " + fmt(t[i], 3) + " s";
      tip.appendChild(head);
      var len = d.interval_s[i];
      row(tip, "rows", "rows", d.rows[i], fmt(d.rows[i], 0));
      row(tip, "metrics", d.unit, d.metrics[i], fmt(d.metrics[i], 0));
      if (len >= 0.05) row(tip, "rate", d.unit + "/s", d.metrics[i] / len, fmt(d.metrics[i] / len, 1));
      row(tip, "errors", "errors", d.errors[i], fmt(d.errors[i], 0), d.errors[i] > 0 ? "e" : "");
      row(tip, "retries", "retries", d.retries[i], fmt(d.retries[i], 0), d.retries[i] > 0 ? "e" : "");
      function ms(f, label) {
        var v = d[f][i];
        row(tip, f, label, v, v === null ? "" : fmt(v, 3) + " ms");
      }
      ms("p50_ms", "p50");
      ms("p99_ms", "p99");
      ms("p999_ms", "p99.9");
      ms("max_ms", "max");
      ms("service_p99_ms", "service p99");
      tip.hidden = false;
      if (x > 0.55) { tip.style.left = ""; tip.style.right = ((1 - x) * 100 + 1) + "%"; }
      else { tip.style.right = ""; tip.style.left = (x * 100 + 1) + "%"; }
    }
    function hide() { tip.hidden = true; cursor.hidden = true; }
    plot.addEventListener("pointermove", show);
    plot.addEventListener("pointerdown", show);
    plot.addEventListener("pointerleave", hide);
  });
})();
