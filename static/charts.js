// Queuewatch charts: the queue page's history charts and the overview sparklines, drawn with
// the vendored uPlot. No inline scripts: everything is read from data-* attributes and from
// the JSON of the history view, and nothing from them is ever run as code.
(function () {
  "use strict";
  // Words through Django's JavaScript catalog (/jsi18n/, loaded first); English without it.
  var gettext = window.gettext || function (s) { return s; };
  var interpolate = window.interpolate || function (fmt, obj) {
    return fmt.replace(/%\((\w+)\)s/g, function (_, k) { return String(obj[k]); });
  };

  if (typeof window.uPlot !== "function") return;
  var uPlot = window.uPlot;

  var REFRESH_MIN_MS = 10000; // live re-fetch at most this often
  var CHART_HEIGHT = 180;
  var COLORS = {
    completed: "#079455",
    failed: "#d92d20",
    attemptFailed: "#f79009",
    dlqGrowth: "#d92d20",
    dlqDepth: "#7a5af8",
    stalled: "#dc6803",
    backlog: "#3056d3",
    age: "#0e9384",
    p50: "#53b1fd",
    p95: "#1570ef",
    p99: "#6941c6",
    axis: "#667085",
    grid: "rgba(16, 24, 40, 0.07)",
  };
  // Axis and grid colours follow the theme. The design tokens may be light-dark() values,
  // which only a computed colour resolves, so they are read through a probe element (CSSOM,
  // allowed by the CSP, unlike a style attribute).
  function themeColor(token, fallback) {
    var probe = document.createElement("span");
    probe.style.color = "var(" + token + ", " + fallback + ")";
    (document.body || document.documentElement).appendChild(probe);
    var color = window.getComputedStyle(probe).color;
    probe.remove();
    return color || fallback;
  }

  function readThemeColors() {
    COLORS.axis = themeColor("--qw-muted", "#667085");
    COLORS.grid = themeColor("--qw-border", "rgba(16, 24, 40, 0.07)");
  }

  // Right to left: value axes change sides (uPlot: 1 = right, 3 = left), so the main one sits
  // at the start of the line, as the tables' first column does. Time still runs left to right.
  function sideOf(side) {
    if (document.documentElement.getAttribute("dir") !== "rtl") return side;
    return side === 1 ? 3 : side === 3 ? 1 : side;
  }

  var FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
  var LABEL_FONT = "600 11px system-ui, -apple-system, 'Segoe UI', sans-serif";

  // ---- number formats ---------------------------------------------------------------------

  // The product's one set of rules (static/queuewatch.js, window.qwText): the same text, in the
  // page's language, as the tables and the server write for the same value.
  function text() { return window.qwText; }
  function orDash(fmt) { return function (v) { return v == null || isNaN(v) ? "—" : fmt(v); }; }

  function lastValue(arr) {
    for (var i = (arr || []).length - 1; i >= 0; i--) if (arr[i] != null) return arr[i];
    return null;
  }

  // Index of the latest period for which the chart has any stored value.
  function latestIdx(u) {
    for (var i = u.data[0].length - 1; i >= 0; i--) {
      for (var k = 1; k < u.data.length; k++) if (u.data[k][i] != null) return i;
    }
    return null;
  }

  var fmtRate = orDash(function (v) { return text().rate(v); });
  var fmtPerMinute = orDash(function (v) { return text().perMinute(v); });
  var fmtCount = orDash(function (v) { return text().count(Math.round(v)); });
  // Durations arrive in seconds (ages) or milliseconds (wait and processing times); axis ticks
  // and the legend read alike.
  var fmtDuration = orDash(function (s) { return text().duration(s); });
  var fmtMs = orDash(function (v) { return text().durationMs(v); });

  var COUNT_INCRS = [];
  var FRACTION_INCRS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5];
  var DURATION_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
    43200, 86400, 172800, 345600, 604800, 1209600, 2592000];
  (function () {
    for (var mag = 1; mag <= 1e9; mag *= 10) COUNT_INCRS.push(mag, 2 * mag, 5 * mag);
  })();
  var RATE_INCRS = FRACTION_INCRS.concat(COUNT_INCRS);

  // Rates and counts are never negative: start every value axis at zero, with head room.
  function zeroBased(u, min, max) {
    if (max == null || !isFinite(max) || max <= 0) return [0, 1];
    return [0, max * 1.08];
  }

  // Axis width that fits its widest tick label.
  function axisSize(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    var size = axis.ticks.size + axis.gap;
    var longest = "";
    (values || []).forEach(function (v) { if (v && v.length > longest.length) longest = v; });
    if (longest) {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / uPlot.pxRatio;
    }
    return Math.ceil(size) + 2;
  }

  function valueAxis(opts) {
    var fmt = opts.fmt;
    return {
      scale: opts.scale,
      side: sideOf(opts.side || 3),
      label: opts.label,
      labelSize: 16,
      labelFont: LABEL_FONT,
      font: FONT,
      stroke: opts.color || COLORS.axis,
      size: axisSize,
      gap: 4,
      incrs: opts.incrs,
      grid: opts.grid === false ? { show: false } : { stroke: COLORS.grid, width: 1 },
      ticks: { show: true, stroke: COLORS.grid, width: 1, size: 4 },
      values: function (u, splits) { return splits.map(fmt); },
    };
  }

  function line(label, key, color, opts) {
    opts = opts || {};
    var fmt = opts.fmt || fmtRate;
    var unit = opts.unit || "";
    return {
      key: key,
      label: label,
      scale: opts.scale || "y",
      stroke: color,
      width: opts.width || 1.5,
      fill: opts.fill || undefined,
      dash: opts.dash,
      spanGaps: false,
      points: { size: 4, fill: color },
      // Under the cursor: that period's value; otherwise the latest stored point's.
      value: function (u, v, sidx, idx) {
        if (idx == null) {
          var last = latestIdx(u);
          v = last == null ? null : u.data[sidx][last];
        }
        return v == null ? "—" : fmt(v) + unit;
      },
    };
  }

  function fillOf(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  // ---- the queue page charts --------------------------------------------------------------

  // p50, p95 and p99 of one timing ("wait" or "processing"), all job names together.
  function timingSpec(kind, axisLabel) {
    return {
      series: [
        line(gettext("p50"), kind + "_p50", COLORS.p50, { scale: "ms", fmt: fmtMs }),
        line(gettext("p95"), kind + "_p95", COLORS.p95, { scale: "ms", fmt: fmtMs, width: 2, fill: fillOf(COLORS.p95, 0.06) }),
        line(gettext("p99"), kind + "_p99", COLORS.p99, { scale: "ms", fmt: fmtMs, dash: [4, 3] }),
      ],
      axes: [valueAxis({ scale: "ms", label: axisLabel, fmt: fmtMs, incrs: RATE_INCRS })],
    };
  }

  function chartSpecs(isDlq, charts) {
    // Minute points count whole jobs: no 0.25 ticks there; hour points are averages.
    var rateIncrs = function () { return charts.resolution >= 3600 ? RATE_INCRS : COUNT_INCRS; };
    return {
      wait: timingSpec("wait", gettext("wait time")),
      processing: timingSpec("processing", gettext("processing time")),
      throughput: {
        series: [
          line(gettext("Completed"), "completed", COLORS.completed, { fmt: fmtPerMinute, fill: fillOf(COLORS.completed, 0.08) }),
          line(gettext("Failed"), "failed", COLORS.failed, { fmt: fmtPerMinute }),
          // Attempts that failed and will be retried: a flapping dependency shows here first.
          line(gettext("Failed attempts (retried)"), "attempt_failed", COLORS.attemptFailed, { fmt: fmtPerMinute, dash: [4, 3] }),
        ],
        axes: [valueAxis({ scale: "y", label: gettext("jobs / min"), fmt: fmtRate, incrs: rateIncrs })],
      },
      deadletters: {
        series: [
          line(isDlq ? gettext("Added") : gettext("Failed"), "dlq_growth", COLORS.dlqGrowth,
            { fmt: fmtPerMinute, fill: fillOf(COLORS.dlqGrowth, 0.08) }),
          line(isDlq ? gettext("Depth (waiting)") : gettext("Depth (failed set)"), "dlq_depth", COLORS.dlqDepth,
            { scale: "depth", fmt: fmtCount, unit: " " + gettext("jobs"), width: 2 }),
        ],
        axes: [
          valueAxis({ scale: "y", label: gettext("jobs / min"), fmt: fmtRate, incrs: rateIncrs }),
          valueAxis({ scale: "depth", side: 1, label: gettext("dead letters"), fmt: fmtCount, incrs: COUNT_INCRS,
            grid: false, color: COLORS.dlqDepth }),
        ],
      },
      // BullMQ's own metrics (written by workers started with `metrics`) beside ours: they reach
      // back before Queuewatch started and through times no monitor led.
      bullmq: {
        series: [
          line(gettext("Completed (Queuewatch)"), "completed", COLORS.completed, { fmt: fmtPerMinute }),
          line(gettext("Completed (BullMQ metrics)"), "bullmq_completed", COLORS.completed, { fmt: fmtPerMinute, dash: [4, 3], width: 2 }),
          line(gettext("Failed (Queuewatch)"), "failed", COLORS.failed, { fmt: fmtPerMinute }),
          line(gettext("Failed (BullMQ metrics)"), "bullmq_failed", COLORS.failed, { fmt: fmtPerMinute, dash: [4, 3], width: 2 }),
        ],
        axes: [valueAxis({ scale: "y", label: gettext("jobs / min"), fmt: fmtRate, incrs: rateIncrs })],
      },
      stalls: {
        series: [line(gettext("Stalled"), "stalled", COLORS.stalled, { fmt: fmtPerMinute, fill: fillOf(COLORS.stalled, 0.1) })],
        axes: [valueAxis({ scale: "y", label: gettext("stalls / min"), fmt: fmtRate, incrs: rateIncrs })],
      },
      backlog: {
        series: [
          line(gettext("Backlog"), "backlog", COLORS.backlog, { scale: "jobs", fmt: fmtCount, unit: " " + gettext("jobs"),
            fill: fillOf(COLORS.backlog, 0.08) }),
          line(gettext("Oldest waiting"), "oldest_age_s", COLORS.age, { scale: "age", fmt: fmtDuration, dash: [5, 3] }),
        ],
        axes: [
          valueAxis({ scale: "jobs", label: gettext("jobs waiting"), fmt: fmtCount, incrs: COUNT_INCRS }),
          valueAxis({ scale: "age", side: 1, label: gettext("oldest age"), fmt: fmtDuration, incrs: DURATION_INCRS,
            grid: false, color: COLORS.age }),
        ],
      },
    };
  }

  // The product's one time-zone rule (static/queuewatch.js): the browser's zone, or UTC.
  function zoned(ts) {
    var zone = window.qwTimeZone && window.qwTimeZone();
    return zone ? uPlot.tzDate(new Date(ts * 1000), zone) : new Date(ts * 1000);
  }
  var fmtMinute = uPlot.fmtDate("{YYYY}-{MM}-{DD} {HH}:{mm}");
  var fmtHour = uPlot.fmtDate("{YYYY}-{MM}-{DD} {HH}:00");

  // The legend's time: the period a point covers (a minute, or an hour for the 7 d range), in
  // the browser's time zone; without a cursor the legend shows the latest values.
  function timeSeries(charts) {
    return {
      label: window.qwTimeZone && window.qwTimeZone() ? "UTC" : gettext("Local time"),
      value: function (u, ts, sidx, idx) {
        var latest = idx == null;
        if (latest) {
          var last = latestIdx(u);
          ts = last == null ? null : u.data[0][last];
        }
        if (ts == null) return "—";
        return (charts.resolution >= 3600 ? fmtHour : fmtMinute)(zoned(ts)) + (latest ? " " + gettext("(latest)") : "");
      },
    };
  }

  // Time axis ticks in 24-hour time; the date is added under the first tick of each day, in the
  // product's one numeric shape (2026-12-01), so no English month name reaches an Arabic page.
  var TIME_TICKS = [
    // [tick increment, default, new year, new month, new day, new hour, new minute, new second, mode]
    [3600 * 24 * 365, "{YYYY}", null, null, null, null, null, null, 1],
    [3600 * 24 * 28, "{YYYY}-{MM}", null, null, null, null, null, null, 1],
    [3600 * 24, "{MM}-{DD}", "\n{YYYY}", null, null, null, null, null, 1],
    [3600, "{HH}:{mm}", "\n{YYYY}-{MM}-{DD}", null, "\n{MM}-{DD}", null, null, null, 1],
    [60, "{HH}:{mm}", "\n{YYYY}-{MM}-{DD}", null, "\n{MM}-{DD}", null, null, null, 1],
    [1, "{HH}:{mm}:{ss}", "\n{YYYY}-{MM}-{DD}", null, "\n{MM}-{DD}", null, null, null, 1],
  ];

  function columns(spec, data) {
    return [data.t].concat(spec.series.map(function (s) { return data[s.key]; }));
  }

  function hasAnyValue(data) {
    var keys = ["completed", "failed", "attempt_failed", "stalled", "backlog", "dlq_depth", "wait_p50", "processing_p50",
      "bullmq_completed", "bullmq_failed"];
    return keys.some(function (k) {
      return (data[k] || []).some(function (v) { return v != null; });
    });
  }

  function QueueCharts(section) {
    this.section = section;
    this.url = section.getAttribute("data-history-url");
    this.range = section.getAttribute("data-range") || "1h";
    this.status = section.querySelector(".charts-status");
    this.plots = {};
    this.lastFetch = 0;
    this.timer = null;
    this.seq = 0;
    this.pendingWhileHidden = false;
    var self = this;
    section.querySelectorAll("button[data-range]").forEach(function (b) {
      b.addEventListener("click", function () { self.setRange(b.getAttribute("data-range")); });
    });
    if (window.ResizeObserver) {
      this.resizer = new ResizeObserver(function (entries) {
        entries.forEach(function (entry) {
          var plot = entry.target.__qwPlot;
          var width = Math.floor(entry.contentRect.width);
          if (plot && width > 0 && Math.abs(plot.width - width) > 1) plot.setSize({ width: width, height: CHART_HEIGHT });
        });
      });
    }
    this.setStatus(gettext("Loading…"));
    this.load();
  }

  QueueCharts.prototype.setStatus = function (text, isError) {
    if (!this.status) return;
    this.status.textContent = text;
    this.status.classList.toggle("error", !!isError);
  };

  QueueCharts.prototype.setRange = function (range) {
    if (!range || range === this.range) return;
    this.range = range;
    this.section.setAttribute("data-range", range);
    this.section.querySelectorAll("button[data-range]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-range") === range ? "true" : "false");
    });
    this.setStatus(gettext("Loading…"));
    this.load({ rescale: true });
  };

  // The queue's live section was swapped: its numbers changed, so the charts may have too.
  QueueCharts.prototype.liveChanged = function () {
    if (document.hidden) { this.pendingWhileHidden = true; return; }
    if (this.timer) return;
    var self = this;
    var wait = Math.max(500, this.lastFetch + REFRESH_MIN_MS - Date.now());
    this.timer = setTimeout(function () { self.timer = null; self.load(); }, wait);
  };

  QueueCharts.prototype.load = function (opts) {
    opts = opts || {};
    var self = this;
    var seq = ++this.seq;
    var range = this.range;
    this.lastFetch = Date.now();
    var url = this.url + (this.url.indexOf("?") < 0 ? "?" : "&") + "range=" + encodeURIComponent(range);
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        var type = r.headers.get("Content-Type") || "";
        if (type.indexOf("application/json") < 0) {
          throw new Error(r.redirected ? gettext("signed out: reload the page") : "HTTP " + r.status);
        }
        return r.json().then(function (body) {
          if (!r.ok) throw new Error(body.message || "HTTP " + r.status);
          return body;
        });
      })
      .then(function (data) {
        if (seq !== self.seq) return; // a newer request (e.g. another range) is on its way
        self.draw(data, opts.rescale);
        // The time of day in the product's one zone and shape (static/queuewatch.js).
        var when = window.qwFormatTime ? window.qwFormatTime(Date.now(), "s").slice(11)
                                       : new Date().toLocaleTimeString([], { hour12: false });
        if (hasAnyValue(data)) {
          self.setStatus(interpolate(data.resolution >= 3600 ? gettext("Hourly points, rates are hourly totals / 60 · updated %(when)s")
                                                             : gettext("Per-minute points · updated %(when)s"), { when: when }, true));
        } else {
          self.setStatus(gettext("No stored history for this range yet: the monitor writes a point per minute."));
        }
      })
      .catch(function (err) {
        if (seq !== self.seq) return;
        self.setStatus(interpolate(gettext("Could not load history (%(error)s)."), { error: err.message }, true), true);
      });
  };

  QueueCharts.prototype.draw = function (data, rescale) {
    var self = this;
    if (!this.specs) {
      readThemeColors();
      this.specs = chartSpecs(!!data.is_dlq, this);
    }
    var t = data.t || [];
    this.resolution = data.resolution;
    this.section.querySelectorAll(".chart[data-chart]").forEach(function (el) {
      var kind = el.getAttribute("data-chart");
      var spec = self.specs[kind];
      if (!spec) return;
      var cols = columns(spec, data);
      var plot = self.plots[kind];
      if (!plot) {
        plot = self.plots[kind] = self.create(el, spec, cols);
        return;
      }
      // Keep a zoom the user dragged across live refreshes; a range switch resets it.
      var x = plot.scales.x;
      var old = plot.data[0];
      var zoomed = !rescale && old.length && (x.min > old[0] + 1 || x.max < old[old.length - 1] - 1);
      var keep = zoomed ? { min: x.min, max: x.max } : null;
      plot.setData(cols, true);
      if (keep && t.length) plot.setScale("x", keep);
    });
  };

  // A page restored from htmx's history cache carries copies of earlier charts' markup
  // (blank canvases, no uPlot behind them): clear them before drawing.
  function clearStale(el) {
    Array.prototype.slice.call(el.children).forEach(function (c) {
      if (c.classList.contains("uplot")) c.remove();
    });
  }

  // The time axis centres its labels on their ticks, the last one on the plot's edge: a side
  // with no value axis keeps room for half of the widest time label, so it is not cut off.
  function edgeRoom(u, side, sidesWithAxes) {
    if (side === 0) return 10;
    if (side === 2) return 0;
    return sidesWithAxes[side] ? 4 : TIME_LABEL_HALF;
  }
  var TIME_LABEL_HALF = 32;

  QueueCharts.prototype.create = function (el, spec, cols) {
    clearStale(el);
    readThemeColors();
    var scales = { x: { time: true } };
    spec.axes.forEach(function (a) { scales[a.scale] = { range: zeroBased }; });
    var opts = {
      width: Math.max(200, Math.floor(el.clientWidth || el.getBoundingClientRect().width || 480)),
      height: CHART_HEIGHT,
      padding: [edgeRoom, edgeRoom, edgeRoom, edgeRoom],
      scales: scales,
      tzDate: zoned,
      cursor: {
        sync: { key: "qw-queue-charts", scales: ["x", null] },
        drag: { x: true, y: false },
        points: { size: 6 },
      },
      legend: { live: true },
      focus: { alpha: 0.35 },
      series: [timeSeries(this)].concat(spec.series),
      axes: [{
        font: FONT,
        stroke: COLORS.axis,
        grid: { stroke: COLORS.grid, width: 1 },
        ticks: { stroke: COLORS.grid, width: 1, size: 4 },
        space: 60,
        values: TIME_TICKS,
      }].concat(spec.axes),
    };
    var plot = new uPlot(opts, cols, el);
    el.__qwPlot = plot;
    if (this.resizer) this.resizer.observe(el);
    return plot;
  };

  var queueCharts = null;

  function initQueueCharts(root) {
    if (queueCharts && document.body.contains(queueCharts.section)) return;
    var section = (root.matches && root.matches(".queue-charts[data-history-url]")) ? root
      : root.querySelector && root.querySelector(".queue-charts[data-history-url]");
    if (section) queueCharts = new QueueCharts(section);
  }

  function redrawQueueCharts() {
    if (!queueCharts || !document.body.contains(queueCharts.section)) return;
    Object.keys(queueCharts.plots).forEach(function (k) { queueCharts.plots[k].destroy(); delete queueCharts.plots[k]; });
    queueCharts.specs = null;  // built again with the current colours
    queueCharts.load();
  }
  // The viewer switched between their zone and UTC, or the theme changed (the toggle, or the
  // system's preference while the toggle says "system"): draw the charts again.
  document.addEventListener("qw:timezone", redrawQueueCharts);
  document.addEventListener("qw:theme", redrawQueueCharts);
  if (window.matchMedia) {
    var darkQuery = window.matchMedia("(prefers-color-scheme: dark)");
    if (darkQuery.addEventListener) darkQuery.addEventListener("change", redrawQueueCharts);
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && queueCharts && queueCharts.pendingWhileHidden) {
      queueCharts.pendingWhileHidden = false;
      queueCharts.liveChanged();
    }
  });

  // ---- overview sparklines ----------------------------------------------------------------

  var SPARK_W = 120, SPARK_H = 28;
  var sparkCache = new Map(); // row id → last non-empty series, for rows sent live without one

  function parseSpark(text) {
    try {
      var d = JSON.parse(text || "{}");
      return d && Array.isArray(d.c) && Array.isArray(d.f) && d.c.length ? d : null;
    } catch (e) {
      return null;
    }
  }

  function sparkKey(el) {
    var holder = el.closest("[id]");
    return holder ? holder.id : null;
  }

  function sum(arr) {
    return (arr || []).reduce(function (a, v) { return a + (v || 0); }, 0);
  }

  function drawSpark(el) {
    if (el.__qwPlot) return;
    var key = sparkKey(el);
    var data = parseSpark(el.getAttribute("data-spark"));
    if (data) {
      if (key) sparkCache.set(key, data);
    } else {
      data = key ? sparkCache.get(key) : null;
      if (!data) return; // no history for this queue yet
      el.setAttribute("data-spark", JSON.stringify(data));
    }
    clearStale(el);
    var n = data.c.length;
    var xs = [];
    for (var i = 0; i < n; i++) xs.push(i);
    var depth = Array.isArray(data.d) && data.d.length === n ? data.d : new Array(n).fill(null);
    var plot = new uPlot({
      width: SPARK_W,
      height: SPARK_H,
      padding: [3, 1, 2, 1],
      pxAlign: false,
      legend: { show: false },
      cursor: { show: false },
      select: { show: false },
      scales: { x: { time: false }, y: { range: zeroBased }, d: { range: zeroBased } },
      axes: [{ show: false }, { show: false, scale: "y" }, { show: false, scale: "d" }],
      series: [
        {},
        { scale: "d", stroke: "rgba(122, 90, 248, 0.45)", width: 1, points: { show: false } },
        // Failed under completed: a healthy queue's zero failures do not draw a red baseline.
        { scale: "y", stroke: COLORS.failed, width: 1.25, points: { show: false } },
        { scale: "y", stroke: COLORS.completed, width: 1.25, fill: fillOf(COLORS.completed, 0.1), points: { show: false } },
      ],
    }, [xs, depth, data.f, data.c], el);
    el.__qwPlot = plot;
    var dl = lastValue(depth);
    var counts = { completed: fmtCount(sum(data.c)), failed: fmtCount(sum(data.f)), dead: fmtCount(dl) };
    el.title = interpolate(dl == null ? gettext("Last hour: %(completed)s completed, %(failed)s failed")
                                      : gettext("Last hour: %(completed)s completed, %(failed)s failed; dead letters now %(dead)s"),
                           counts, true);
  }

  function initSparks(root) {
    if (!root || !root.querySelectorAll) return;
    if (root.matches && root.matches(".spark[data-spark]")) drawSpark(root);
    root.querySelectorAll(".spark[data-spark]").forEach(drawSpark);
  }

  // ---- wiring -----------------------------------------------------------------------------

  function scan(root) {
    initSparks(root);
    initQueueCharts(root);
  }

  // New content from htmx (requests and websocket out-of-band swaps alike). The ws extension
  // swaps each fragment by id with htmx's oobSwap, which fires htmx:oobAfterSwap on the new
  // element (and htmx:load once it settles); handlers here are idempotent.
  function onNewContent(e) {
    var el = e.target;
    if (!(el instanceof Element)) return;
    scan(el);
    if (queueCharts && e.type !== "htmx:afterSwap" && el.matches(".queue-live")) queueCharts.liveChanged();
  }
  document.addEventListener("htmx:oobAfterSwap", onNewContent);
  document.addEventListener("htmx:afterSwap", onNewContent);
  document.addEventListener("htmx:load", onNewContent);

  // Free the uPlot instances of elements htmx removes (rows replaced live).
  document.addEventListener("htmx:beforeCleanupElement", function (e) {
    var plot = e.target && e.target.__qwPlot;
    if (plot) {
      e.target.__qwPlot = null;
      plot.destroy();
    }
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { scan(document.body); });
  } else {
    scan(document.body);
  }
})();
