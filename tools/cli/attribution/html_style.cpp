// The HTML report's style sheet, inlined into every report (html_report.cpp).
namespace gpumem::cli::attribution {

extern const char* const kReportStyle;
const char* const kReportStyle = R"css(
:root { --ink: #1d2330; --muted: #5b6475; --line: #d9dde5; --peak: #d62728; --oom: #7a1fa2;
        --panel: #ffffff; --back: #f3f5f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: var(--ink); background: var(--back); }
header { padding: 18px 28px 10px; background: var(--panel); border-bottom: 1px solid var(--line); }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 0 0 8px; }
h3 { font-size: 14px; margin: 12px 0 4px; color: var(--muted); font-weight: 600; }
.muted { color: var(--muted); }
main { padding: 14px 28px 40px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
          padding: 14px 16px; margin-bottom: 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.cards + .cards { margin-top: 12px; }
table.others { width: auto; min-width: 40%; }
.card { flex: 1 1 200px; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
        min-width: 0; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
               letter-spacing: .04em; }
.card .value { font-size: 20px; font-weight: 650; overflow-wrap: anywhere; }
.card .value.code { font: 600 15px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
.card.peak .value { color: var(--peak); }
.card.oom .value { color: var(--oom); }
svg.timeline { width: 100%; height: 220px; display: block; cursor: grab; user-select: none;
               border: 1px solid var(--line); border-radius: 4px; background: #fcfcfd; }
svg.timeline text { font: 11px system-ui, sans-serif; fill: var(--muted); }
svg.timeline .level { fill: none; stroke: #1f77b4; stroke-width: 1.5; }
svg.timeline .area { fill: #1f77b4; opacity: .12; }
svg.timeline .mark { stroke-width: 1.2; stroke-dasharray: 4 3; cursor: pointer; }
svg.timeline .mark.peak { stroke: var(--peak); }
svg.timeline .mark.oom { stroke: var(--oom); stroke-width: 2.5; stroke-dasharray: none; }
svg.timeline .mark-label { font-size: 11px; font-weight: 600; fill: var(--oom); }
svg.timeline .peak-dot { fill: var(--peak); }
svg.timeline text.peak-label { fill: var(--peak); font-weight: 600; }
.tools { display: flex; gap: 6px; align-items: center; margin: 4px 0; }
button { font: inherit; border: 1px solid var(--line); background: #fff; border-radius: 4px;
         padding: 1px 9px; cursor: pointer; }
button:hover { background: #eef2f8; }
.crumbs { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; margin: 4px 0 6px;
          overflow-wrap: anywhere; }
.crumbs a { color: #1f5fbf; cursor: pointer; text-decoration: underline; }
.icicle { position: relative; width: 100%; overflow: hidden; border: 1px solid var(--line);
          border-radius: 4px; background: #fff; }
.box { position: absolute; height: 17px; overflow: hidden; white-space: nowrap;
       text-overflow: ellipsis; font: 11.5px/17px ui-monospace, "DejaVu Sans Mono", monospace;
       padding: 0 3px; border-right: 1px solid #fff; cursor: pointer; color: #222; }
.box:hover { filter: brightness(0.9); }
.box.special { background: #c4cbd8; }
.box.focus { outline: 2px solid var(--ink); outline-offset: -2px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line);
         vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
tr.pick { cursor: pointer; }
tr.pick:hover { background: #eef2f8; }
tr.chosen { background: #fff4e5; }
.note { color: var(--muted); font-size: 12px; margin-top: 6px; }
.failure { border-left: 4px solid var(--oom); padding: 6px 10px; background: #f8f0fb;
           margin: 6px 0 10px; overflow-wrap: anywhere; }
)css";

}  // namespace gpumem::cli::attribution
