// The HTML report's script, inlined into every report (html_report.cpp). It reads the embedded
// document and draws everything with DOM calls; text from the document only ever goes in
// through textContent and attribute setters, never as markup.
namespace gpumem::cli::attribution {

extern const char* const kReportScript;
const char* const kReportScript = R"js(
"use strict";
(function () {
  const doc = JSON.parse(document.getElementById("gpumem-attribution").textContent);
  const chosen = JSON.parse(document.getElementById("gpumem-chosen").textContent);
  // The library's frame policy, decided by gpumem (not here): per stack, the frames shown
  // (the allocating one first, then its callers) and the allocating frame's short label.
  const views = JSON.parse(document.getElementById("gpumem-frames").textContent);
  const SVG = "http://www.w3.org/2000/svg";

  function fmtBytes(n) {
    const units = ["KiB", "MiB", "GiB", "TiB"];
    if (Math.abs(n) < 1024) return n + " B";
    let value = n / 1024, unit = 0;
    while (unit < 3 && Math.abs(value) >= 1024) { value /= 1024; unit++; }
    return value.toFixed(1) + " " + units[unit];
  }
  function fmtSeconds(s) { return s < 1 ? (s * 1000).toFixed(0) + " ms" : s.toFixed(3) + " s"; }
  function share(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + "%" : "-"; }
  function el(tag, attributes, text) {
    const node = document.createElement(tag);
    for (const name in attributes || {}) node.setAttribute(name, attributes[name]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const name in attributes || {}) node.setAttribute(name, attributes[name]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function frameFunction(f) { return f.function !== null ? f.function : (f.address !== null ? f.address : "??"); }
  function frameLabel(f) {
    if (f.function !== null) {
      if (f.file === null) return f.function;
      return f.function + " (" + f.file + (f.line !== null ? ":" + f.line : "") + ")";
    }
    let where = f.module !== null ? f.module : "";
    if (f.address !== null) where += (where ? "+" : "") + f.address;
    return where ? "?? (" + where + ")" : "??";
  }
  function codeKey(f) {
    return f.function !== null ? "f" + f.function + "\u0000" + (f.file || "")
                               : "a" + (f.module || "") + "\u0000" + (f.address || "");
  }
  function deviceName(ordinal) {
    const d = doc.devices.find((x) => x.ordinal === ordinal);
    return d && d.name ? d.name : "";
  }
  // Whether NVML's list of the other processes was read: a document from elsewhere may list
  // them without saying when.
  function othersRead(s) { return typeof s.other_processes_age_s === "number" || s.other_processes.length > 0; }
  function whenListed(age) {
    if (typeof age !== "number") return "";
    // One form whichever reading it was, as the terminal says it.
    return " " + fmtSeconds(Math.abs(age)) + (age >= 0 ? " before the failure" : " after the failure");
  }
  function othersHeld(s) { return s.other_processes.reduce((sum, p) => sum + (p.used_bytes || 0), 0); }

  function describe(s) {
    let text = s.what === "oom" ? "out-of-memory failure" : "peak";
    if (s.scope !== null) text += " of scope " + s.scope;
    text += " on GPU " + s.device;
    const name = deviceName(s.device);
    if (name) text += " (" + name + ")";
    if (s.pid !== null) text += ", pid " + s.pid;
    return text + ", at " + fmtSeconds(s.time_s);
  }
  function contextBytes(s) { return s.context_bytes === undefined || s.context_bytes === null ? null : s.context_bytes; }
  function heldWithoutBlock(s) { return Math.max(0, s.level_bytes - s.live_bytes - (contextBytes(s) || 0)); }

  // Each stack's bytes and blocks, most bytes first.
  function stackTotals(s) {
    const byStack = new Map();
    for (const b of s.blocks) {
      const key = b.stack === null ? -1 : b.stack;
      let t = byStack.get(key);
      if (!t) { t = { stack: b.stack, bytes: 0, blocks: 0 }; byStack.set(key, t); }
      t.bytes += b.bytes; t.blocks++;
    }
    return Array.from(byStack.values()).sort((a, b) => b.bytes - a.bytes ||
      (a.stack === null) - (b.stack === null) || (a.stack || 0) - (b.stack || 0));
  }
  function topFunction(s) {
    const totals = stackTotals(s);
    if (!totals.length) return "(no live block)";
    const t = totals[0];
    if (t.stack === null) return "(no stack captured)";
    return views.shown[t.stack].length ? views.labels[t.stack] : "(an empty stack)";
  }

  // The icicle tree: the root holds the level; below it the outermost frames.
  function buildTree(s) {
    const root = { name: "all", kind: "root", bytes: 0, blocks: 0, children: new Map(), parent: null,
                   path: [], frame: null, lines: [] };
    function child(node, key, make) {
      let c = node.children.get(key);
      if (!c) { c = make(); c.parent = node; c.children = new Map(); c.bytes = 0; c.blocks = 0;
                c.path = node.path.concat([key]); node.children.set(key, c); }
      return c;
    }
    for (const t of stackTotals(s)) {
      root.blocks += t.blocks;
      if (t.stack === null) {
        const c = child(root, "#nostack", () => ({ name: "(no stack captured)", kind: "special", lines: [] }));
        c.bytes += t.bytes; c.blocks += t.blocks; continue;
      }
      const stack = views.shown[t.stack];
      let at = root;
      for (let i = stack.length - 1; i >= 0; i--) {
        const f = doc.frames[stack[i]];
        at = child(at, codeKey(f), () => ({ name: frameFunction(f), kind: "frame", frame: f, lines: [] }));
        if (f.line !== null && at.lines.length < 4 && !at.lines.includes(f.line)) at.lines.push(f.line);
        at.bytes += t.bytes; at.blocks += t.blocks;
      }
    }
    let live = 0;
    for (const c of root.children.values()) live += c.bytes;
    if (contextBytes(s) > 0) {
      const c = child(root, "#context", () => ({ name: "(context and modules)", kind: "special", lines: [] }));
      c.bytes = contextBytes(s);
      live += c.bytes;
    }
    if (heldWithoutBlock(s) > 0) {
      const c = child(root, "#held", () => ({ name: "(held without a block)", kind: "special", lines: [] }));
      c.bytes = heldWithoutBlock(s);
    }
    root.bytes = Math.max(s.level_bytes, live);
    return root;
  }
  function sortedChildren(node) { return Array.from(node.children.values()).sort((a, b) => b.bytes - a.bytes); }
  function details(node, total) {
    let text = node.name;
    if (node.kind === "frame") {
      const f = node.frame;
      if (f.file !== null) text += " (" + f.file + (node.lines.length ? ":" + node.lines.join(", ") : "") + ")";
      if (f.module !== null) text += " in " + f.module;
      if (f.function === null && f.address !== null) text += " at " + f.address;
    }
    text += ": " + fmtBytes(node.bytes) + " (" + node.bytes + " bytes, " + share(node.bytes, total) + ")";
    if (node.name !== "(held without a block)" && node.name !== "(context and modules)") text += " in " + node.blocks + (node.blocks === 1 ? " block" : " blocks");
    return text;
  }
  function colour(name, kind) {
    if (kind === "root") return "#c8c8c8";
    if (kind !== "frame") return "#c4cbd8";
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
    return "rgb(" + (205 + h % 50) + "," + (80 + (h >>> 8) % 130) + "," + (40 + (h >>> 16) % 50) + ")";
  }
  // The blocks under a box: those whose stack, read from the outside in, starts with its path.
  function blocksUnder(s, node) {
    const path = node.path;
    if (!path.length) return s.blocks.slice();
    return s.blocks.filter((b) => {
      if (b.stack === null) return path.length === 1 && path[0] === "#nostack";
      const stack = views.shown[b.stack];
      if (stack.length < path.length) return false;
      for (let i = 0; i < path.length; i++) {
        if (codeKey(doc.frames[stack[stack.length - 1 - i]]) !== path[i]) return false;
      }
      return true;
    });
  }

  const kRow = 18, kMaxRows = 500, kMaxBoxes = 6000;

  // A box's path as names from the root, for the address bar (#snapshot=N&focus=[...]).
  function namesOf(node) {
    const names = [];
    for (let n = node; n && n.parent; n = n.parent) names.unshift(n.name);
    return names;
  }
  function icicle(panel, s, index, path) {
    const root = buildTree(s);
    const crumbs = el("div", { class: "crumbs" });
    const box = el("div", { class: "icicle" });
    const list = el("div", { class: "blocks" });
    panel.append(crumbs, box, list);
    function focus(node) {
      box.replaceChildren(); crumbs.replaceChildren();
      const chain = [];
      for (let n = node; n; n = n.parent) chain.unshift(n);
      chain.forEach((n, i) => {
        if (i) crumbs.append(" \u203a ");
        if (n === node) crumbs.append(el("b", {}, n.name));
        else { const a = el("a", {}, n.name); a.addEventListener("click", () => focus(n)); crumbs.append(a); }
      });
      let boxes = 0, rows = 0;
      function draw(n, row, left, width, isFocus) {
        if (width < 0.05 || boxes >= kMaxBoxes) return;
        boxes++; rows = Math.max(rows, row + 1);
        const d = el("div", { class: "box" + (n.kind !== "frame" && n.kind !== "root" ? " special" : "") +
                                (isFocus ? " focus" : "") }, n.kind === "root" ? "all: " + fmtBytes(n.bytes) : n.name);
        d.style.left = left + "%"; d.style.width = width + "%"; d.style.top = row * kRow + "px";
        if (n.kind !== "special" || n.name === "(no stack captured)") d.style.background = colour(n.name, n.kind);
        d.title = details(n, root.bytes);
        d.dataset.bytes = n.bytes;
        d.addEventListener("click", (e) => {
          e.stopPropagation(); focus(n);
          history.replaceState(null, "", "#snapshot=" + index + "&focus=" + encodeURIComponent(JSON.stringify(namesOf(n))));
        });
        box.append(d);
      }
      chain.forEach((n, i) => draw(n, i, 0, 100, n === node));
      const scale = node.bytes > 0 ? 100 / node.bytes : 0;
      const pending = [[node, chain.length - 1, 0]];
      while (pending.length) {
        const [n, row, left] = pending.pop();
        let x = left;
        for (const c of sortedChildren(n)) {
          const width = c.bytes * scale;
          if (width >= 0.05) { draw(c, row + 1, x, width, false); pending.push([c, row + 1, x]); }
          x += width;
        }
      }
      box.style.height = Math.max(rows, 1) * kRow + 2 + "px";
      showBlocks(node);
    }
    function showBlocks(node) {
      list.replaceChildren();
      const blocks = blocksUnder(s, node).sort((a, b) => b.bytes - a.bytes);
      list.append(el("h3", {}, (node.kind === "root" ? "Live blocks" : "Live blocks under " + node.name) +
                             ": " + blocks.length + ", " + fmtBytes(blocks.reduce((a, b) => a + b.bytes, 0))));
      const table = el("table", { class: "block-list" });
      const head = el("tr");
      for (const [name, num] of [["address"], ["bytes", 1], ["kind"], ["age", 1], ["pid", 1], ["allocated by"]])
        head.append(el("th", num ? { class: "num" } : {}, name));
      table.append(head);
      for (const b of blocks.slice(0, kMaxRows)) {
        const tr = el("tr");
        const stack = b.stack === null ? null : views.shown[b.stack];
        tr.append(el("td", { class: "code" }, b.address), el("td", { class: "num", "data-bytes": b.bytes }, fmtBytes(b.bytes)),
                  el("td", {}, b.kind), el("td", { class: "num" }, fmtSeconds(b.age_s)),
                  el("td", { class: "num" }, b.pid === null ? "-" : String(b.pid)),
                  el("td", { class: "code" }, stack === null ? "(no stack captured)" :
                     stack.length ? frameLabel(doc.frames[stack[0]]) : "(an empty stack)"));
        table.append(tr);
      }
      list.append(table);
      if (blocks.length > kMaxRows) list.append(el("p", { class: "note" }, "and " + (blocks.length - kMaxRows) + " smaller blocks"));
    }
    // A linked box (the names from the root), as far as the names lead.
    let start = root;
    for (const name of path || []) {
      const next = sortedChildren(start).find((c) => c.name === name);
      if (!next) break;
      start = next;
    }
    focus(start);
  }

  function panel(id, title, index, path) {
    const section = document.getElementById(id);
    section.replaceChildren();
    const s = doc.snapshots[index];
    section.dataset.snapshot = index;
    section.append(el("h2", {}, title + ": " + describe(s)));
    section.append(el("p", { class: "muted" }, "level " + fmtBytes(s.level_bytes) + ": " + fmtBytes(s.live_bytes) +
      " in " + s.blocks.length + " live blocks, " +
      (contextBytes(s) === null ? "" : fmtBytes(contextBytes(s)) + " context and modules, ") + fmtBytes(heldWithoutBlock(s)) +
      " held without a block. Outermost frames at the top, width by bytes; click a box for the blocks under it."));
    if (s.failure) {
      const f = s.failure;
      const by = f.stack === null ? "" : views.shown[f.stack].length ? ", requested by " + frameLabel(doc.frames[views.shown[f.stack][0]]) : "";
      section.append(el("div", { class: "failure" }, "The request that failed: " + fmtBytes(f.bytes) + " (" + f.kind + ") with " +
        f.error + by + "; the device had " + fmtBytes(f.free_bytes) + " free of " + fmtBytes(f.total_bytes) + "."));
      section.append(el("h3", {}, "Other processes on the device"));
      if (!othersRead(s)) {
        section.append(el("p", { class: "muted", id: id + "-others" }, "Unknown: NVML was not read at the failure."));
      } else if (!s.other_processes.length) {
        section.append(el("p", { class: "muted", id: id + "-others" }, "None (NVML's list" + whenListed(s.other_processes_age_s) + ")."));
      } else {
        section.append(el("p", { class: "muted", id: id + "-others" }, fmtBytes(othersHeld(s)) + " in " + s.other_processes.length +
          " other process" + (s.other_processes.length === 1 ? "" : "es") + " (NVML's list" + whenListed(s.other_processes_age_s) + ")."));
        const table = el("table", { class: "others" });
        const head = el("tr"); head.append(el("th", { class: "num" }, "pid"), el("th", {}, "process"), el("th", {}, "of this run"), el("th", { class: "num" }, "memory"));
        table.append(head);
        for (const p of s.other_processes) {
          const tr = el("tr");
          const run = p.in_run === undefined ? "?" : p.in_run ? (p.rank === null || p.rank === undefined ? "yes" : "yes, rank " + p.rank) : "no";
          tr.append(el("td", { class: "num" }, String(p.pid)), el("td", { class: "code" }, p.name || "?"), el("td", {}, run),
                    el("td", Object.assign({ class: "num" }, p.used_bytes === null ? {} : { "data-bytes": p.used_bytes }),
                       p.used_bytes === null ? "n/a" : fmtBytes(p.used_bytes)));
          table.append(tr);
        }
        section.append(table);
      }
    }
    icicle(section, s, index, path);
  }

  function card(cls, label, id, value, data) {
    const c = el("div", { class: "card " + cls });
    c.append(el("div", { class: "label" }, label));
    const v = el("div", Object.assign({ class: "value" + (cls.includes("code") ? " code" : ""), id: id }, data || {}), value);
    c.append(v);
    return c;
  }

  function summary() {
    const holder = document.getElementById("cards");
    let cards = el("div", { class: "cards" });
    holder.append(cards);
    if (chosen.peak !== null) {
      const s = doc.snapshots[chosen.peak];
      // With the context named, the level is the process footprint, as the run's summary gives it.
      const figure = contextBytes(s) === null ? "Peak level" : "Peak process footprint";
      cards.append(card("peak", figure, "peak-level", fmtBytes(s.level_bytes), { "data-bytes": s.level_bytes }),
                   card("code", "Held most at the peak", "peak-top-function", topFunction(s)),
                   card("", "Live blocks at the peak", "peak-blocks", String(s.blocks.length), { "data-count": s.blocks.length }));
    }
    if (chosen.oom !== null) {
      const s = doc.snapshots[chosen.oom];
      if (chosen.peak !== null) { cards = el("div", { class: "cards" }); holder.append(cards); }
      cards.append(card("oom", "Failed request", "oom-request", s.failure ? fmtBytes(s.failure.bytes) : "?",
                        { "data-bytes": s.failure ? s.failure.bytes : "" }),
                   card("code", "Held most at the failure", "oom-top-function", topFunction(s)),
                   card("", "Live blocks at the failure", "oom-blocks", String(s.blocks.length), { "data-count": s.blocks.length }),
                   !othersRead(s)
                     ? card("", "Other processes held", "oom-others", "unknown", { "data-bytes": "" })
                     : card("", "Other processes held", "oom-others", fmtBytes(othersHeld(s)),
                            { "data-bytes": othersHeld(s), "data-count": s.other_processes.length }));
    }
    if (chosen.peak === null && chosen.oom === null) cards.append(el("p", { class: "muted" }, "The document holds no snapshot."));
  }

  function niceTicks(max, target) {
    if (!(max > 0)) return [0];
    const raw = max / target, power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * power).find((v) => v >= raw);
    const ticks = [];
    for (let v = 0; v <= max * 1.0001; v += step) ticks.push(v);
    return ticks;
  }

  function timeline(container, series) {
    const W = 1000, H = 220, L = 70, R = 14, T = 14, B = 26;
    const steps = series.steps;
    const marks = doc.snapshots.map((s, i) => [s, i]).filter(([s]) => s.device === series.device);
    let tmin = steps.length ? steps[0][0] : 0, tmax = steps.length ? steps[steps.length - 1][0] : 1;
    for (const [s] of marks) { tmin = Math.min(tmin, s.time_s); tmax = Math.max(tmax, s.time_s); }
    if (tmax <= tmin) tmax = tmin + 1;
    let peak = null;
    for (const step of steps) if (!peak || step[1] > peak[1]) peak = step;
    let top = peak ? peak[1] : 0;
    for (const [s] of marks) top = Math.max(top, s.level_bytes);
    top = Math.max(top * 1.08, 1);
    const view = { from: tmin, to: tmax };
    const chart = svg("svg", { class: "timeline", viewBox: "0 0 " + W + " " + H, preserveAspectRatio: "none" });
    chart.dataset.device = series.device;
    const tools = el("div", { class: "tools" });
    const zoomIn = el("button", { type: "button" }, "+"), zoomOut = el("button", { type: "button" }, "\u2212"),
          reset = el("button", { type: "button" }, "reset");
    tools.append(zoomIn, zoomOut, reset, el("span", { class: "note" }, "wheel zooms, drag pans, double-click resets"));
    container.append(tools, chart);
    const x = (t) => L + (W - L - R) * (t - view.from) / (view.to - view.from);
    const y = (b) => T + (H - T - B) * (1 - b / top);
    function render() {
      chart.replaceChildren();
      // Byte ticks at round numbers of a binary unit.
      const units = [["B", 1], ["KiB", 1024], ["MiB", 1048576], ["GiB", 1073741824], ["TiB", 1099511627776]];
      let unit = units[0];
      for (const u of units) if (top / 1.08 >= 2 * u[1]) unit = u;
      for (const tick of niceTicks(top / 1.08 / unit[1], 4)) {
        const b = tick * unit[1];
        chart.append(svg("line", { x1: L, x2: W - R, y1: y(b), y2: y(b), stroke: "#e6e8ee" }),
                     svg("text", { x: L - 6, y: y(b) + 4, "text-anchor": "end" }, +tick.toPrecision(6) + " " + unit[0]));
      }
      const span = view.to - view.from;
      for (const tick of niceTicks(span, 6)) {
        const t = view.from + tick;
        chart.append(svg("text", { x: x(t), y: H - 8, "text-anchor": "middle" }, fmtSeconds(t)));
      }
      // Steps in view, at most one pair of points per pixel (the highest kept, so no spike hides).
      let d = "", last = null, column = null, high = 0;
      const before = steps.filter((s) => s[0] < view.from).pop();
      const shown = steps.filter((s) => s[0] >= view.from && s[0] <= view.to);
      if (before) shown.unshift([view.from, before[1]]);
      let level = 0;
      for (const [t, b] of shown) {
        const px = Math.round(x(t));
        if (column !== null && px === column) { high = Math.max(high, b); level = b; continue; }
        if (column !== null) { d += "H" + column + "V" + y(high) + "V" + y(level); }
        else d = "M" + px + "," + y(b);
        column = px; high = b; level = b; last = px;
      }
      if (column !== null) {
        d += "H" + column + "V" + y(high) + "V" + y(level) + "H" + (W - R);
        chart.append(svg("path", { class: "area", d: d + "V" + y(0) + "H" + Math.round(x(shown[0][0])) + "Z" }),
                     svg("path", { class: "level", d: d }));
      }
      if (peak && peak[0] >= view.from && peak[0] <= view.to) {
        chart.append(svg("circle", { class: "peak-dot", cx: x(peak[0]), cy: y(peak[1]), r: 4 }));
        const right = x(peak[0]) > W * 0.7;
        chart.append(svg("text", { class: "peak-label", x: x(peak[0]) + (right ? -8 : 8), y: y(peak[1]) + 4,
                                   "text-anchor": right ? "end" : "start" },
                         "peak " + fmtBytes(peak[1]) + " at " + fmtSeconds(peak[0])));
      }
      for (const [s, i] of marks) {
        if (s.time_s < view.from || s.time_s > view.to) continue;
        const line = svg("line", { class: "mark " + s.what, x1: x(s.time_s), x2: x(s.time_s), y1: T, y2: H - B });
        line.append(svg("title", {}, "snapshot " + i + ": " + describe(s) + ", level " + fmtBytes(s.level_bytes)));
        line.addEventListener("click", () => choose(i));
        chart.append(line);
        // A failure is a solid line named at the top, told apart from a peak's dashed one even
        // where both fall on the same moment.
        if (s.what === "oom")
          chart.append(svg("text", { class: "mark-label", x: x(s.time_s) + 4, y: H - B - 6 }, "out of memory"));
      }
      chart.append(svg("line", { x1: L, x2: W - R, y1: y(0), y2: y(0), stroke: "#888" }));
      void last;
    }
    function zoom(factor, at) {
      const span = (view.to - view.from) * factor, full = tmax - tmin;
      const clamped = Math.min(Math.max(span, full / 1e6), full);
      let from = at - (at - view.from) * clamped / (view.to - view.from);
      from = Math.min(Math.max(from, tmin), tmax - clamped);
      view.from = from; view.to = from + clamped; render();
    }
    function timeAt(event) {
      const box = chart.getBoundingClientRect();
      const px = (event.clientX - box.left) * W / box.width;
      return view.from + (px - L) / (W - L - R) * (view.to - view.from);
    }
    chart.addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 0.8 : 1.25, timeAt(e)); }, { passive: false });
    let drag = null;
    chart.addEventListener("mousedown", (e) => { drag = { at: e.clientX, from: view.from, to: view.to }; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const box = chart.getBoundingClientRect();
      const dt = (e.clientX - drag.at) / box.width * W / (W - L - R) * (drag.to - drag.from);
      const span = drag.to - drag.from;
      const from = Math.min(Math.max(drag.from - dt, tmin), tmax - span);
      view.from = from; view.to = from + span; render();
    });
    chart.addEventListener("dblclick", () => { view.from = tmin; view.to = tmax; render(); });
    zoomIn.addEventListener("click", () => zoom(0.5, (view.from + view.to) / 2));
    zoomOut.addEventListener("click", () => zoom(2, (view.from + view.to) / 2));
    reset.addEventListener("click", () => { view.from = tmin; view.to = tmax; render(); });
    render();
  }

  function timelines() {
    const section = document.getElementById("timelines");
    if (!doc.timeline.length) { section.append(el("p", { class: "muted" }, "No timeline was recorded.")); return; }
    for (const series of doc.timeline) {
      const d = doc.devices.find((x) => x.ordinal === series.device);
      section.append(el("h3", {}, "GPU " + series.device + (d && d.name ? " \u00b7 " + d.name : "") +
                                   (d && d.total_bytes ? " \u00b7 " + fmtBytes(d.total_bytes) + " total" : "") +
                                   (d && d.uuid ? " \u00b7 " + d.uuid : "")));
      const holder = el("div");
      section.append(holder);
      timeline(holder, series);
    }
  }

  let chooseRows = [];
  function choose(index, path) {
    panel("panel-chosen", "Snapshot " + index, index, path);
    document.getElementById("panel-chosen").hidden = false;
    chooseRows.forEach((tr, i) => tr.classList.toggle("chosen", i === index));
    document.getElementById("panel-chosen").scrollIntoView({ block: "nearest" });
  }
  function snapshotList() {
    const section = document.getElementById("snapshots");
    const table = el("table", { class: "snapshot-list" });
    const head = el("tr");
    for (const [name, num] of [["#", 1], ["what"], ["scope"], ["GPU", 1], ["pid", 1], ["time", 1], ["level", 1], ["live", 1], ["blocks", 1], ["held most"]])
      head.append(el("th", num ? { class: "num" } : {}, name));
    table.append(head);
    doc.snapshots.forEach((s, i) => {
      const tr = el("tr", { class: "pick" });
      tr.append(el("td", { class: "num" }, String(i)), el("td", {}, s.what), el("td", {}, s.scope === null ? "-" : s.scope),
                el("td", { class: "num" }, String(s.device)), el("td", { class: "num" }, s.pid === null ? "-" : String(s.pid)),
                el("td", { class: "num" }, fmtSeconds(s.time_s)), el("td", { class: "num" }, fmtBytes(s.level_bytes)),
                el("td", { class: "num" }, fmtBytes(s.live_bytes)), el("td", { class: "num" }, String(s.blocks.length)),
                el("td", { class: "code" }, topFunction(s)));
      tr.addEventListener("click", () => choose(i));
      chooseRows.push(tr);
      table.append(tr);
    });
    if (!doc.snapshots.length) section.append(el("p", { class: "muted" }, "No snapshot was recorded."));
    else section.append(table);
  }

  document.getElementById("command").textContent =
    (doc.command ? doc.command : "(command not recorded)") + (doc.host ? " \u00b7 on " + doc.host : "");
  summary();
  timelines();
  snapshotList();
  if (chosen.peak !== null) panel("panel-peak", "Live at the peak", chosen.peak);
  else document.getElementById("panel-peak").hidden = true;
  if (chosen.oom !== null) panel("panel-oom", "Live at the out-of-memory failure", chosen.oom);
  else document.getElementById("panel-oom").hidden = true;
  // A link to a snapshot, and to a box in its icicle: #snapshot=N&focus=["main","train_step"].
  const link = new URLSearchParams(location.hash.slice(1));
  const linked = Number(link.get("snapshot"));
  if (link.has("snapshot") && Number.isInteger(linked) && linked >= 0 && linked < doc.snapshots.length) {
    let path = [];
    try {
      const names = JSON.parse(link.get("focus") || "[]");
      if (Array.isArray(names)) path = names.map(String);
    } catch (e) { path = []; }
    choose(linked, path);
  }
  document.body.dataset.ready = "yes";
})();
)js";

}  // namespace gpumem::cli::attribution
