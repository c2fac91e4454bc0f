// Draws the report's charts from WHYSLOW (the recording's data as JSON) with
// Apache ECharts, SVG renderer (text in the charts stays text). Strings from
// the recording reach the DOM only as text: chart labels are SVG text nodes,
// and tooltips, which ECharts sets as HTML, are escaped here.
(function () {
  "use strict";
  var D = WHYSLOW;
  var esc = echarts.format.encodeHTML;
  function color(r) { return D.colors[r] || "#999"; }
  function secs(s) {
    if (s === 0) return "0";
    // before the target's window (a chart of the whole recording): -1.00 s
    if (s < 0) return "-" + secs(-s);
    if (s >= 1) return s.toFixed(2) + " s";
    if (s >= 1e-3) return (s * 1e3).toFixed(1) + " ms";
    return (s * 1e6).toFixed(1) + " \u00b5s";
  }
  function bytes(b) {
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b.toFixed(0)) + " " + u[i];
  }
  var charts = [];
  function chart(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    var c = echarts.init(el, null, { renderer: "svg" });
    charts.push(c);
    return c;
  }
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  var grid = { left: 8, right: 24, top: 28, bottom: 28, containLabel: true };

  // Reason shares along the critical path.
  (function () {
    var c = chart("chart-shares");
    if (!c) return;
    var ranked = (D.ranked || []).slice().reverse();
    c.setOption({
      animation: false, grid: { left: 8, right: 56, top: 8, bottom: 8, containLabel: true },
      tooltip: { formatter: function (p) { return esc(p.name) + ": " + secs(p.value); } },
      xAxis: { type: "value", axisLabel: { formatter: function (v) { return secs(v); } } },
      yAxis: { type: "category", data: ranked.map(function (r) { return r.reason; }) },
      series: [{ type: "bar", data: ranked.map(function (r) { return { value: r.s, itemStyle: { color: color(r.reason) } }; }),
        label: { show: true, position: "right", formatter: function (p) { return (ranked[p.dataIndex].share * 100).toFixed(1) + "%"; } } }]
    });
  })();

  // Per-thread timeline, coloured by reason, with the critical path above.
  (function () {
    var tl = D.timeline;
    var c = chart("chart-timeline");
    if (!c || !tl) return;
    var rows = {}, names = [];
    tl.threads.forEach(function (t, i) { rows[t.tid] = i; names.push(t.comm + " (" + t.tid + ")"); });
    var spans = [], path = [];
    tl.threads.forEach(function (t, i) {
      (t.spans || []).forEach(function (s) {
        spans.push({ value: [i, s.b, s.b + s.d], reason: s.r, itemStyle: { color: color(s.r) } });
      });
    });
    (D.path || []).forEach(function (s) {
      if (s.tid in rows) path.push({ value: [rows[s.tid], s.begin_s, s.begin_s + s.dur_s], seg: s });
    });
    function bar(top) {
      return function (params, api) {
        var row = api.value(0), a = api.coord([api.value(1), row]), z = api.coord([api.value(2), row]);
        var h = api.size([0, 1])[1];
        var shape = top ? { x: a[0], y: a[1] - h * 0.36 - 4, width: Math.max(z[0] - a[0], 1), height: 3 }
                        : { x: a[0], y: a[1] - h * 0.3, width: Math.max(z[0] - a[0], 0.6), height: h * 0.6 };
        shape = echarts.graphic.clipRectByRect(shape, params.coordSys);
        return shape && { type: "rect", shape: shape, style: top ? { fill: "#111" } : api.style() };
      };
    }
    var el = document.getElementById("chart-timeline");
    el.style.height = Math.max(200, 60 + 34 * names.length) + "px";
    c.resize();
    c.setOption({
      animation: false,
      grid: { left: 8, right: 24, top: 16, bottom: 56, containLabel: true },
      tooltip: { formatter: function (p) {
        var v = p.data.value;
        if (p.seriesIndex === 1) {
          var s = p.data.seg;
          return "critical path, mostly " + esc(s.reason) + (s.object ? " on " + esc(s.object) : "") +
            (s.blocked_by ? ", held up by " + esc(s.blocked_by) : "") +
            "<br>" + secs(v[1]) + " \u2013 " + secs(v[2]) + " (" + secs(v[2] - v[1]) + ")";
        }
        return esc(names[v[0]]) + ": " + esc(p.data.reason) + "<br>" + secs(v[1]) + " \u2013 " + secs(v[2]) + " (" + secs(v[2] - v[1]) + ")";
      } },
      dataZoom: [{ type: "slider", xAxisIndex: 0, filterMode: "weakFilter", height: 18, bottom: 8 },
                 { type: "inside", xAxisIndex: 0, filterMode: "weakFilter" }],
      xAxis: { type: "value", min: 0, max: tl.wall_s, name: "s", axisLabel: { formatter: function (v) { return secs(v); } } },
      yAxis: { type: "category", data: names, inverse: true, axisTick: { show: false } },
      series: [
        // progressive: 0 draws every item at once (not over later frames).
        { type: "custom", renderItem: bar(false), encode: { x: [1, 2], y: 0 }, data: spans, progressive: 0 },
        { type: "custom", renderItem: bar(true), encode: { x: [1, 2], y: 0 }, data: path, z: 3, progressive: 0 }
      ]
    });
  })();

  // Devices and the page cache over time.
  function lines(id, list, unit) {
    var c = chart(id), s = D.series;
    if (!c || !s) return;
    var off = D.series_offset_s || 0;
    c.setOption({
      animation: false, grid: grid, legend: { type: "scroll", top: 0 },
      tooltip: { trigger: "axis", valueFormatter: function (v) { return unit(v); } },
      xAxis: { type: "value", name: "s", axisLabel: { formatter: function (v) { return secs(v); } } },
      yAxis: { type: "value", axisLabel: { formatter: function (v) { return unit(v); } } },
      series: list.map(function (l) {
        return { type: "line", name: l.name, showSymbol: false, step: "start", areaStyle: { opacity: 0.15 },
          data: l.ys.map(function (y, i) { return [off + i * s.bucket_s, y]; }) };
      })
    });
  }
  (function () {
    var s = D.series;
    if (!s) return;
    var devs = [];
    (s.devices || []).forEach(function (d) {
      devs.push({ name: d.name + " read", ys: d.read_bps }, { name: d.name + " write", ys: d.write_bps });
    });
    lines("chart-devices", devs, function (v) { return bytes(v) + "/s"; });
    lines("chart-pages", [{ name: "pages dirtied", ys: s.dirtied_pages_per_s }, { name: "pages written back", ys: s.written_back_pages_per_s }],
      function (v) { return v.toFixed(0) + " pages/s"; });
  })();

  // Each device's %util beside the target's threads waiting on storage:
  // a device at 100% while they wait was their limit; one with room was not.
  (function () {
    var c = chart("chart-util"), s = D.series, tl = D.timeline;
    if (!c || !s) return;
    var off = D.series_offset_s || 0, storage = { "disk-read": 1, "disk-write": 1, "dirty-throttle": 1, "sync": 1 };
    var waiting = [];
    for (var i = 0; i < s.buckets; i++) {
      var b = off + i * s.bucket_s, e = b + s.bucket_s, sum = 0;
      ((tl && tl.threads) || []).forEach(function (t) {
        (t.spans || []).forEach(function (sp) {
          if (!storage[sp.r]) return;
          var o = Math.min(e, sp.b + sp.d) - Math.max(b, sp.b);
          if (o > 0) sum += o;
        });
      });
      waiting.push([b, sum / s.bucket_s]);
    }
    var series = (s.devices || []).map(function (d) {
      return { type: "line", name: d.name + " %util", showSymbol: false, step: "start", areaStyle: { opacity: 0.15 },
        data: (d.util || []).map(function (u, i) { return [off + i * s.bucket_s, u * 100]; }) };
    });
    series.push({ type: "line", name: "target threads waiting on storage", yAxisIndex: 1, showSymbol: false, step: "start",
      lineStyle: { type: "dashed" }, itemStyle: { color: color("disk-write") }, data: waiting });
    c.setOption({
      animation: false, grid: grid, legend: { type: "scroll", top: 0 }, tooltip: { trigger: "axis" },
      xAxis: { type: "value", name: "s", axisLabel: { formatter: function (v) { return secs(v); } } },
      yAxis: [{ type: "value", name: "%util", min: 0, max: 100 }, { type: "value", name: "threads", min: 0 }],
      series: series
    });
  })();

  // Requests: latency over time; a slow one's dot leads to its explanation.
  (function () {
    var c = chart("chart-requests"), reqs = D.requests;
    if (!c || !reqs) return;
    c.setOption({
      animation: false, grid: grid,
      tooltip: { formatter: function (p) {
        var r = reqs[p.dataIndex];
        return esc(r.label) + "<br>" + r.ms.toFixed(1) + " ms, " + esc(r.reason) + " (tid " + r.tid + ")<br>" + esc(r.summary) +
          (r.anchor ? "<br><i>click for its explanation</i>" : "");
      } },
      xAxis: { type: "value", name: "s", axisLabel: { formatter: function (v) { return secs(v); } } },
      yAxis: { type: "value", name: "ms" },
      series: [{ type: "scatter", symbolSize: 8, data: reqs.map(function (r) {
        return { value: [r.t, r.ms], itemStyle: { color: color(r.reason), borderColor: r.anchor ? "#111" : "transparent" } };
      }) }]
    });
    c.on("click", function (p) {
      var r = reqs[p.dataIndex];
      if (r && r.anchor) location.hash = r.anchor;
    });
  })();

  // Off-CPU flame graph: root at the bottom, width is time.
  (function () {
    var c = chart("chart-flame"), root = D.flame;
    if (!c || !root) return;
    var items = [], depth = 0;
    (function walk(n, x, d) {
      items.push({ value: [d, x, x + n.v], name: n.n, reason: n.r || "", ns: n.v, itemStyle: { color: n.r ? color(n.r) : "#bbb" } });
      depth = Math.max(depth, d);
      var cx = x;
      (n.c || []).forEach(function (k) { walk(k, cx, d + 1); cx += k.v; });
    })(root, 0, 0);
    var el = document.getElementById("chart-flame");
    el.style.height = Math.max(220, 60 + 20 * (depth + 1)) + "px";
    c.resize();
    var total = Math.max(root.v, 1);
    function option(lo, hi) {
      return {
        animation: false, grid: { left: 8, right: 8, top: 8, bottom: 8 },
        tooltip: { formatter: function (p) {
          var it = items[p.dataIndex];
          return esc(it.name) + (it.reason ? " [" + esc(it.reason) + "]" : "") + "<br>" + secs(it.ns / 1e9) + ", " + (100 * it.ns / total).toFixed(1) + "%";
        } },
        xAxis: { type: "value", min: lo, max: hi, show: false },
        yAxis: { type: "value", min: 0, max: depth + 1, show: false },
        series: [{ type: "custom", data: items, progressive: 0, encode: { x: [1, 2], y: 0 }, renderItem: function (params, api) {
          var a = api.coord([api.value(1), api.value(0) + 1]), z = api.coord([api.value(2), api.value(0)]);
          var shape = echarts.graphic.clipRectByRect({ x: a[0], y: a[1], width: Math.max(z[0] - a[0] - 0.5, 0.5), height: z[1] - a[1] - 1 }, params.coordSys);
          if (!shape) return null;
          return { type: "rect", shape: shape, style: api.style({ stroke: null }),
            textContent: { style: { text: items[params.dataIndex].name, fill: "#111", fontSize: 11, width: Math.max(shape.width - 6, 0), overflow: "truncate", ellipsis: "\u2026" } },
            textConfig: { position: "insideLeft" } };
        } }]
      };
    }
    c.setOption(option(0, total));
    c.on("click", function (p) {
      var v = items[p.dataIndex].value;
      c.setOption(option(p.dataIndex === 0 ? 0 : v[1], p.dataIndex === 0 ? total : v[2]));
    });
  })();
})();
