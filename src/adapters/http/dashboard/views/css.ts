/**
 * The dashboard's whole stylesheet, served as `/dashboard/assets/app.css` (so the CSP needs no `'unsafe-inline'`).
 * System fonts only: nothing is fetched from another origin.
 */
export const dashboardCss = `
:root {
  color-scheme: light dark;
  --bg: #f6f7f9; --card: #fff; --text: #1b1f24; --muted: #5b6470; --line: #dde1e6;
  --accent: #3b5bdb; --accent-text: #fff; --accent-soft: #e8edff;
  --danger: #c92a2a; --danger-soft: #fff0f0; --ok: #2b8a3e; --warn: #a15c00; --warn-soft: #fff6e5;
  --bar: #4c6ef5; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #111418; --card: #1a1f25; --text: #e6e9ed; --muted: #9aa4af; --line: #2d343c;
    --accent: #748ffc; --accent-text: #0b0d10; --accent-soft: #1f2a4d;
    --danger: #ff8787; --danger-soft: #3a1d1d; --ok: #69db7c; --warn: #ffc078; --warn-soft: #3a2a12;
    --bar: #748ffc;
  }
}
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, summary:focus-visible {
  outline: 3px solid var(--accent); outline-offset: 2px;
}
code, .mono { font-family: var(--mono); font-size: 0.92em; overflow-wrap: anywhere; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 0 0 0.75rem; }
p { margin: 0 0 0.75rem; }
.visually-hidden {
  position: absolute !important; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap;
}

.site-header { background: var(--card); border-bottom: 1px solid var(--line); }
.site-header .bar {
  max-width: 64rem; margin: 0 auto; padding: 0.6rem 1rem;
  display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.25rem;
}
.brand { font-weight: 700; font-size: 1.25rem; letter-spacing: 0.02em; color: var(--text); text-decoration: none; }
.brand span { color: var(--accent); }
.site-nav { display: flex; gap: 0.25rem; flex-wrap: wrap; }
.site-nav a {
  padding: 0.35rem 0.7rem; border-radius: 0.4rem; text-decoration: none; color: var(--muted); font-weight: 500;
}
.site-nav a:hover { color: var(--text); background: var(--bg); }
.site-nav a[aria-current="page"] { color: var(--accent); background: var(--accent-soft); }
.account { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; color: var(--muted); font-size: 0.9rem; }
.account .who { overflow-wrap: anywhere; max-width: 16rem; }
.account form { margin: 0; }

main { max-width: 64rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
main.narrow { max-width: 26rem; }
.card {
  background: var(--card); border: 1px solid var(--line); border-radius: 0.6rem;
  padding: 1.25rem; margin-bottom: 1.25rem;
}
.grid { display: grid; gap: 1.25rem; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); margin-bottom: 1.25rem; }
.grid .card { margin-bottom: 0; }
.stat { font-size: 1.9rem; font-weight: 700; line-height: 1.1; margin: 0.25rem 0; }
.muted, .hint { color: var(--muted); }
.hint { font-size: 0.88rem; }
.site-footer { text-align: center; color: var(--muted); font-size: 0.85rem; padding: 0 1rem 2rem; }

label { display: block; font-weight: 600; margin: 0 0 0.3rem; }
.field { margin-bottom: 1rem; }
input[type="email"], input[type="password"], input[type="text"], input[type="url"] {
  width: 100%; font: inherit; color: var(--text); background: var(--card);
  border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.55rem 0.7rem;
}
input[readonly] { background: var(--bg); font-family: var(--mono); }
button, .button {
  font: inherit; font-weight: 600; cursor: pointer; border-radius: 0.4rem; padding: 0.5rem 1rem;
  border: 1px solid var(--accent); background: var(--accent); color: var(--accent-text); text-decoration: none;
  display: inline-block;
}
button:disabled { opacity: 0.55; cursor: not-allowed; }
button.secondary, .button.secondary { background: transparent; color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
button.link { background: none; border: none; color: var(--muted); padding: 0.25rem 0; font-weight: 500; text-decoration: underline; }
.inline-form { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: flex-end; }
.inline-form .field { flex: 1 1 14rem; margin: 0; }
.inline-form .limit-reason { flex: 1 1 12rem; align-self: center; margin: 0; color: var(--warn); font-weight: 600; }

.notice { border-radius: 0.5rem; padding: 0.8rem 1rem; margin-bottom: 1.25rem; border: 1px solid; }
.notice.error { background: var(--danger-soft); border-color: var(--danger); }
.notice.warning { background: var(--warn-soft); border-color: var(--warn); }
.notice.info { background: var(--accent-soft); border-color: var(--accent); }
.notice p:last-child { margin-bottom: 0; }
.new-key .copy-row { display: flex; gap: 0.5rem; margin: 0.5rem 0; }
.new-key .copy-row input { flex: 1; min-width: 0; }
.copied { color: var(--ok); font-weight: 600; }

/* Relative: a visually hidden header (absolutely placed) stays inside the box that scrolls, not past the page. */
.table-wrap { overflow-x: auto; position: relative; }
table { width: 100%; border-collapse: collapse; font-size: 0.95rem; }
th, td { text-align: left; padding: 0.55rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 0.82rem; text-transform: uppercase; letter-spacing: 0.04em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.current td, tr.current th { background: var(--accent-soft); font-weight: 600; }
.badge { display: inline-block; padding: 0.1rem 0.5rem; border-radius: 1rem; font-size: 0.82rem; font-weight: 600; border: 1px solid var(--line); }
.status-completed { color: var(--ok); border-color: var(--ok); }
.status-failed { color: var(--danger); border-color: var(--danger); }
.status-queued, .status-processing { color: var(--accent); border-color: var(--accent); }
.status-validating, .status-in_progress, .status-finalizing, .status-cancelling { color: var(--accent); border-color: var(--accent); }
.progress progress { width: 100%; min-width: 6rem; height: 0.8rem; display: block; }
.progress span { font-size: 0.85rem; white-space: nowrap; }
td.files a { display: block; white-space: nowrap; }
.status-expired, .status-cancelled { color: var(--muted); }

details.confirm summary { cursor: pointer; color: var(--danger); font-weight: 600; }
details.confirm[open] { background: var(--danger-soft); border-radius: 0.4rem; padding: 0.5rem; }
details.confirm form { margin-top: 0.5rem; }
.empty { text-align: center; padding: 2rem 1rem; color: var(--muted); }

meter { width: 100%; height: 0.9rem; }
.budget { margin-bottom: 1rem; }
.budget .line { display: flex; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }

.chart { margin: 0; }
.chart svg { width: 100%; display: block; }
.chart .bar { fill: var(--bar); }
.chart .axis { stroke: var(--line); stroke-width: 1; }
.chart text { fill: var(--muted); font-size: 11px; font-family: system-ui, sans-serif; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.35rem 1rem; margin: 0; }
.facts dt { color: var(--muted); font-weight: 600; font-size: 0.88rem; }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.text-box {
  font-family: var(--mono); font-size: 0.9rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 0.75rem;
  background: var(--bg); border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.75rem; max-height: 32rem; overflow-y: auto;
}
.error-text { color: var(--danger); font-weight: 600; }
.request-title code { font-size: 0.8em; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; margin: 1rem 0 0.5rem; }
.pager { display: flex; justify-content: space-between; gap: 1rem; margin-top: 1rem; }

fieldset { border: none; padding: 0; min-width: 0; }
fieldset legend { font-weight: 600; padding: 0; margin-bottom: 0.3rem; }
.checks { display: grid; gap: 0.25rem 1rem; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); }
label.check { font-weight: 400; display: flex; align-items: center; gap: 0.4rem; margin: 0; }
.event-list { display: flex; flex-wrap: wrap; gap: 0.15rem 0.5rem; }
.url-cell { min-width: 14rem; }
.url-cell a { overflow-wrap: anywhere; }
.event-list code, table.deliveries td[data-label="Event"] code { white-space: nowrap; overflow-wrap: normal; }
.event-types + .inline-form { margin-bottom: 0.75rem; }
.facts + .row-actions { margin-top: 1rem; }
.row-actions { display: flex; flex-direction: column; gap: 0.35rem; align-items: flex-start; }
table .row-actions { min-width: 16rem; }
.row-actions details.confirm p { max-width: 20rem; overflow-wrap: anywhere; }
.endpoint-enabled, .delivery-delivered { color: var(--ok); border-color: var(--ok); }
.endpoint-disabled, .delivery-gave_up { color: var(--warn); border-color: var(--warn); }
.delivery-waiting, .delivery-sending { color: var(--accent); border-color: var(--accent); }
.notice form { margin: 0.5rem 0 0; }
table.deliveries td form { margin: 0; }
table.deliveries .id { font-family: var(--mono); font-size: 0.8rem; word-break: break-all; display: inline-block; max-width: 17rem; }
.lines { display: flex; flex-direction: column; gap: 0.1rem; }
.lines .reason, .lines .attempts, .lines .outcome { font-size: 0.88rem; color: var(--muted); }
.lines .badge { align-self: flex-start; }

.filter { display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0 0 0.75rem; }
.filter a { padding: 0.25rem 0.7rem; border: 1px solid var(--line); border-radius: 0.4rem; text-decoration: none; }
.filter a[aria-current="page"] { background: var(--accent-soft); font-weight: 600; }
time + .ago { color: var(--muted); font-size: 0.88em; }
dl.metadata { margin: 0; font-size: 0.88rem; }
dl.metadata div { display: flex; gap: 0.3rem; }
dl.metadata dt { color: var(--muted); }
dl.metadata dt::after { content: ":"; }
dl.metadata dd { margin: 0; overflow-wrap: anywhere; }
.tokens { white-space: nowrap; }

@media (max-width: 40rem) {
  h1 { font-size: 1.35rem; }
  .account { margin-left: 0; width: 100%; justify-content: space-between; }
  .card { padding: 1rem; }
  th, td { padding: 0.45rem 0.4rem; }
  .hide-narrow { display: none; }
  /* A table of many columns becomes one block per row, each cell labelled, rather than a table to scroll. */
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stack tr { display: block; padding: 0.5rem 0; border-bottom: 1px solid var(--line); }
  table.stack td, table.stack td.hide-narrow {
    display: flex; justify-content: space-between; align-items: baseline; gap: 1rem; border: none; padding: 0.15rem 0;
  }
  table.stack td::before { content: attr(data-label); color: var(--muted); font-weight: 600; font-size: 0.82rem; }
  table.stack td > * { text-align: right; }
  table.stack td > *:only-child { min-width: 0; overflow-wrap: anywhere; }
  table.stack .row-actions { align-items: flex-end; }
  table.stack .row-actions details p { text-align: left; }
  table.stack .lines { align-items: flex-end; }
  table.stack .lines .badge { align-self: flex-end; }
  table.deliveries .id { max-width: 14rem; }
  table.stack td.url-cell, table.stack .row-actions { min-width: 0; }
}
`;
