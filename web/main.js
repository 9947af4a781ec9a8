// main.js: the playground's wiring. One state object (state.js) lives in the URL; every edit goes
// through setState(), which writes the URL and tells every panel (a settings change is an event the
// panels subscribe to; nothing is made again). The panels are the rows of panels.js, each made once
// at start-up inside its own <section>; the views know nothing of each other, the library knows
// nothing of the page. A new panel is its view file, its section and one row in panels.js.
import { loadAttention } from '../wasm/index.js';
import { GLOSSARY } from './about.js';
import { probeForms } from '../lab/forms.js';
import { normalise, parseState, stateToSearch } from './state.js';
import { PANELS, PROPS, libLoader } from './panels.js';

const $ = (id) => document.getElementById(id);

let state = null; // parsed once the library has loaded: some props take their values from it (fromLib)
let lib = null;
let forms = [];
let renders = 0;
const settings = new EventTarget(); // 'change': the state changed
const made = new Map(); // panel id -> what its create returned

function showError(message) {
  const el = $('error');
  el.hidden = !message;
  el.textContent = message ?? '';
}

function currentForm() {
  return forms.find((f) => f.id === state.form) ?? forms[0];
}

function setState(patch) {
  state = normalise({ ...state, ...patch });
  history.replaceState(null, '', stateToSearch(state, PROPS) + location.hash);
  render();
}

// The panel's line under its title: hidden when it applies, else the reason (what the library lacks,
// or why not this form) and, when some form makes it apply, a button that switches to that form.
function showApplies(panel, section, form) {
  const need = panel.needs?.(lib) ?? true;
  const why = need !== true ? need : panel.applies(lib, state, form);
  const note = section.querySelector(':scope > .applies');
  section.dataset.applies = why === true ? 'yes' : 'no';
  note.hidden = why === true;
  if (why === true) return;
  const other = need === true ? forms.find((f) => panel.applies(lib, { ...state, form: f.id }, f) === true) : null;
  note.querySelector('span').textContent = `${other ? 'Not for this form' : 'Not available'}: ${why}`;
  const button = note.querySelector('button');
  button.hidden = !other;
  if (!other) return;
  button.textContent = `Switch to ${other.label}`;
  button.dataset.form = other.id;
}

function render() {
  const form = currentForm();
  settings.dispatchEvent(new CustomEvent('change', { detail: { state, forms, form } }));
  for (const panel of PANELS) showApplies(panel, $(panel.id), form);
  $('permalink').href = stateToSearch(state, PROPS);
  document.body.dataset.renders = String(++renders);
}

// A select named after a prop with values, and no options in the page, gets them from the prop.
function fillSelects(section, props) {
  for (const p of props) {
    const select = section.querySelector(`select[name="${p.name}"]`);
    if (!select || select.options.length || !p.labels) continue;
    select.replaceChildren(...p.values.map((v) => {
      const option = new Option(p.labels[v] ?? String(v), String(v));
      if (p.titles?.[v]) option.title = p.titles[v];
      return option;
    }));
  }
}

// The table of contents: one link per panel, in the table's order (the sections are put in that
// order too: the rows marked lead in main's grid, the others after them in div.rest). On a wide screen it stands at the side, open; on a phone it is a menu that closes
// when a link is followed.
function makeContents() {
  const nav = $('toc');
  const list = nav.querySelector('ol');
  const main = document.querySelector('main');
  // the leading panels fill the page's width; the rest sit in two columns on a wide screen
  const rest = document.createElement('div');
  rest.className = 'rest';
  list.replaceChildren(...PANELS.map((panel) => {
    (panel.lead ? main : rest).append($(panel.id));
    const a = document.createElement('a');
    a.href = `#${panel.id}`;
    a.textContent = panel.title;
    const li = document.createElement('li');
    li.append(a);
    return li;
  }));
  main.append(rest);
  const wide = matchMedia('(min-width: 1100px)');
  const details = nav.querySelector('details');
  const fit = () => { details.open = wide.matches; };
  fit();
  wide.addEventListener('change', fit);
  list.addEventListener('click', (e) => {
    if (e.target.closest('a') && !wide.matches) details.open = false;
  });
}

// Each section gets its line for "does not apply" (hidden while it applies), under its title and
// its "What you are looking at" line.
function makeAppliesLine(section) {
  const note = document.createElement('p');
  note.className = 'applies';
  note.hidden = true;
  const text = document.createElement('span');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'secondary small';
  button.textContent = 'Switch to a form it applies to'; // named even while hidden
  button.addEventListener('click', () => setState({ form: button.dataset.form }));
  note.append(text, ' ', button);
  (section.querySelector(':scope > h2 + p.what') ?? section.querySelector(':scope > h2')).after(note);
}

// The glossary in the header: a definition list from about.js.
$('glossary').querySelector('dl').replaceChildren(...GLOSSARY.flatMap(([term, text]) => {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  dd.textContent = text;
  return [dt, dd];
}));
makeContents();

async function init() {
  try {
    lib = await loadAttention({ simd: 'auto' });
    // the page's own library, for the browser's console (a model opened in the page lives in the
    // model host's worker instead: host.js; tests read this heap to check that it does)
    globalThis.attentionWasm = lib;
  } catch (e) {
    $('status').textContent = 'The WebAssembly module did not load.';
    showError(e.message);
    document.body.dataset.state = 'failed';
    return;
  }
  for (const p of PROPS) if (p.fromLib) Object.assign(p, p.fromLib(lib)); // values the library lists
  state = parseState(location.search, PROPS);
  const probe = probeForms(lib);
  forms = probe.forms;
  const families = [...new Set(forms.map((f) => f.family))].length;
  $('status').textContent = `Running the ${lib.relaxed ? 'relaxed-SIMD (fused multiply-add)' : lib.simd ? 'SIMD' : 'scalar'} build on this page; `
    + `${forms.length} attention form${forms.length === 1 ? '' : 's'} from ${families} famil${families === 1 ? 'y' : 'ies'} available.`;
  $('skipped').hidden = probe.skipped.length === 0;
  $('skipped').querySelector('ul').replaceChildren(...probe.skipped.map((s) => {
    const li = document.createElement('li');
    li.textContent = `${s.id}: ${s.reason}`;
    return li;
  }));
  if (!forms.some((f) => f.id === state.form)) state = { ...state, form: forms[0].id };
  const ctx = {
    lib, forms, loadLib: libLoader(lib), setState, showError, currentForm,
    onSettings: (fn) => settings.addEventListener('change', (e) => fn(e.detail.state, e.detail.forms, e.detail.form)),
  };
  for (const panel of PANELS) {
    const section = $(panel.id);
    section.hidden = false;
    makeAppliesLine(section);
    fillSelects(section, panel.props);
    if (panel.needs && panel.needs(lib) !== true) continue; // it says why, in its line
    const view = panel.create(section, ctx) ?? {};
    made.set(panel.id, view);
    if (view.update) ctx.onSettings(view.update);
  }
  history.replaceState(null, '', stateToSearch(state, PROPS) + location.hash);
  render();
  let width = window.innerWidth;
  window.addEventListener('resize', () => {
    if (window.innerWidth === width) return;
    width = window.innerWidth;
    render();
    for (const view of made.values()) view.resize?.();
  });
  document.body.dataset.state = 'ready';
  // The hash's panel: the page has grown since the browser looked for it, so scroll to it again.
  if (location.hash.length > 1) document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

init();
