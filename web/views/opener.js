// opener.js: "Open a model file": a model picked, dropped or fetched, read in this tab (never
// uploaded). Which files make a model and how each format loads and is shown are rows of
// ../formats.js (llama2.c's model .bin and tokenizer.bin; a Hugging Face checkpoint's config.json,
// model.safetensors or its shards and tokenizer.json); every file's format is what
// lib.sniffModelFile says of its bytes, never its name. This panel walks that table: it sniffs a
// pick, gathers the row's files, reads them with progress and Cancel, and loads them with the row.
// A Hub id's files are fetched by hub.js, then sniffed and loaded the same way. The user's text is encoded
// with the model's own tokenizer, the model generates greedily, and the attention of every head of
// the chosen layer is drawn row by row as the tokens appear, with the sub-word tokens as labels.
// Heads that share a K/V head (grouped-query attention) say which one in their titles. "Find the
// induction heads" scores every head on a repeated random sequence: a list for a few heads, a
// layers x heads table (colour = induction score, a click shows that layer) for many.
// "Open the sample" opens the sample of formats.js's SAMPLE_FORMAT (a llama2.c pair made in the tab
// from the shipped fortunes-bpe checkpoint and its BPE) as if picked; when generation stops early
// the status says why.
// The model itself lives in the model host (host.js, host-opener.js: a Worker): the files' bytes are
// sent there (transferred, never copied) and loaded there, and every step that grows with the model
// (tokenizing, generation, the probe, quantizing, measuring) is a request to it; this view keeps the
// config and every token's label, and draws. Generation streams: tokens appear as the host makes
// them, with tokens/s and Stop.
// "Weights" (issue 46): fp32 as opened, or a copy quantized to 8-bit (q8_0) or 4-bit (q4_0) weights
// (model.quantizedCopy, in pieces) that generation and the probe then use; the fp32 model stays open
// beside it. A file whose weights are quantized already (llama2.c's version 2) opens in them, and
// the choice stays shut. Each choice picked is measured in this tab on the same text and token
// count, and a table compares them: the weights' bytes, tokens/s of a greedy generation, bits per
// character (the page's held-out text for the sample, else the user's text) and the largest change
// of any attention weight from fp32's.
import { createHeatmapView } from './heatmap.js';
import { viridisCss } from './colormap.js';
import { checkEndpoint, checkHubId, droppedFiles, fetchHubModel, formatMB } from './hub.js';
import { notAModelFile } from '../../wasm/llama2c.js';
import { SAMPLE } from '../../lab/llama2c-sample.js';
import { NAMED_AT, describeInduction, nameHead, probeTokens, scoreHead } from '../../lab/heads.js';
import { publishOpened, unpackStrings } from '../opened.js';
import { hostCall, hostChannel } from '../host.js';
import { fetchOnce } from '../fetch-once.js';
import { FORMATS, SAMPLE_FORMAT, WEIGHTS, byRole, formatBytes, notOpened, pickFormat, whatIsMissing } from '../formats.js';

const MAX_SHOWN = 96; // tokens drawn (prompt + generated): the heatmaps stay readable

const MANY_HEADS = 32; // more heads than this: the probe's result is a layers x heads table, not a list

const HELD_OUT = 'stream-text.txt'; // the page's held-out text (models/), read by the sample's bits per character
const TIMED = 200; // ms of generation a tokens/s figure is measured over (in the host: host-opener.js)
const SNIFFED = 65536; // bytes of each file lib.sniffModelFile reads (with the file's size)

const frame = () => new Promise((r) => setTimeout(r, 0)); // lets the page paint and take clicks
const isAbort = (e) => e?.name === 'AbortError';
const utf8 = (text) => new TextEncoder().encode(text);
const shipped = (name) => fetchOnce(new URL(`../models/${name}`, import.meta.url)); // the page's one copy of a shipped file
const ask = (msg, opts) => hostCall('opener', msg, opts); // a request to the model host (host-opener.js)

export function createOpenerView(el, { lib, onChange }) {
  // model: the host's answer when it opened the model (config, labels, stop, bos: host-opener.js),
  // or null; kept: the files of the
  // format last picked, role -> [File] (a format that gathers adds to them); busy: the
  // AbortController of a long run
  let model = null, kept = { row: null, files: {} }, run = 0, busy = null;
  let last = null; // { ids, attention, rows } of the last generation (or the probe, once a head of its table is clicked)
  // the weights choice: quant is the format of the quantized copy the host's generation and probe
  // use (null: the fp32 model); rows: the host's measured row of each format
  const weightsEl = el.panel.querySelector('#l2weights'), wtable = el.panel.querySelector('#l2wtable');
  // wrun counts weights choices: a newer choice or a closed model ends the one under way
  // (and wabort cancels its request in the host)
  let quant = null, rows = new Map(), sampleOpen = false, wrun = 0, wabort = null;
  let gen = null; // the AbortController of the generation under way (Stop)
  const mapsBox = el.grid.closest('.heatmap-box');
  const heatmaps = createHeatmapView({ grid: el.grid, legend: el.legend, readout: el.readout, exports: el.exports, name: 'llama2c-attention' });

  const status = (text) => { el.status.textContent = text; };
  // index.html gives the id l2names to both the files line (<p>) and the heads' list (<ul>), so
  // $('l2names') finds the line: the list is the <ul> (the ids want renaming where main.js wires them)
  const names = el.panel.querySelector('ul#l2names') ?? el.names;
  // the file picker offers the files the rows read (a hint only: the bytes decide)
  el.input.accept = [...new Set(FORMATS.flatMap((f) => Object.values(f.files).map((x) => x.ext)))].join(',');

  // One click to a model: the sample, made in this tab from a checkpoint the page ships.
  const sample = document.createElement('button');
  sample.type = 'button';
  sample.id = 'l2sample';
  sample.className = 'secondary';
  sample.textContent = `Open the sample (${SAMPLE.name})`;
  sample.title = `A small sub-word model that read Debian's fortunes (models/${SAMPLE.source}), as llama2.c's model.bin `
    + `and tokenizer.bin (its byte-level BPE, models/${SAMPLE.tokenizer}): scripts/make-sample-llama2c.mjs writes the same two files`;
  el.drop.querySelector('#l2sample')?.remove(); // main.js makes this view again on every settings change
  el.drop.append(sample);
  sample.addEventListener('click', async () => {
    sample.disabled = true;
    status('Making the sample from the shipped checkpoint…');
    try {
      const made = await SAMPLE_FORMAT.sample(lib, shipped);
      el.text.value = SAMPLE.prompt;
      await take(made.map((f) => new File([f.bytes], f.name)));
      sampleOpen = Boolean(model); // its bits per character are on the page's held-out text
    } catch (e) {
      status(e.message);
    } finally {
      sample.disabled = false;
    }
  });

  // A long run (a download, reading files, the probe): the progress row with Cancel; returns its signal.
  function startBusy(what) {
    busy?.abort();
    busy = new AbortController();
    el.busy.hidden = false;
    el.progress.removeAttribute('value'); // indeterminate until a size is known
    el.bytes.textContent = '';
    el.panel.dataset.busy = what;
    el.fetch.disabled = true;
    return busy.signal;
  }
  // false once a newer run took the row (its status line is the newer run's)
  const current = (signal) => !busy || busy.signal === signal;
  function endBusy(signal) {
    if (busy?.signal !== signal) return; // a newer run owns the row
    busy = null;
    el.busy.hidden = true;
    delete el.panel.dataset.busy;
    el.fetch.disabled = false;
  }
  const showBytes = (done, total) => {
    if (total) {
      el.progress.max = total;
      el.progress.value = done;
    }
    el.bytes.textContent = total ? `${(done / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB` : `${(done / 1e6).toFixed(1)} MB`;
  };
  el.cancel.addEventListener('click', () => busy?.abort());

  // Forgets the open model and what was drawn from it (its memory goes back to the library).
  function closeModel() {
    run++;
    if (model) {
      publishOpened(null); // the other panels let go of it first
      ask({ type: 'close' }).catch(() => {}); // the host disposes it (and a quantized copy)
    }
    wrun++; // a weights choice under way stops at its next step
    wabort?.abort();
    gen?.abort();
    quant = null;
    model = null;
    last = null;
    rows = new Map();
    sampleOpen = false;
    weightsEl.value = 'fp32';
    weightsEl.disabled = true;
    weightsEl.title = '';
    wtable.replaceChildren();
    wtable.hidden = true;
    delete el.panel.dataset.weights;
    delete el.panel.dataset.weightsDone;
    for (const k of ['loaded', 'kind', 'probe', 'induction', 'tokens', 'done', 'stop']) delete el.panel.dataset[k];
    el.generate.disabled = true;
    el.probe.disabled = true;
    el.output.textContent = '';
    names.replaceChildren();
    el.table.replaceChildren();
    el.table.hidden = true;
    el.layer.replaceChildren();
    heatmaps.render({ maps: [], n: 0, m: 0, rowLabels: [], colLabels: [] });
    mapsBox.hidden = true; // shown with the first heatmaps, not as an empty frame
  }

  // The tokenizer's side of the views: every token's label, as the host sent them (formats.js tokens()).
  const label = (id) => (model.label(id) || `#${id}`).replace(/\n/g, '⏎');
  const decode = (ids) => ask({ type: 'decode', ids: Array.from(ids) });
  // The text as tokens (in the host); a tokenizer without byte pieces may still spell it lower-cased (the sample's).
  const encode = async (text) => {
    const { ids, lowered } = await ask({ type: 'encode', text });
    return { ids: Int32Array.from(ids), lowered };
  };

  // The host stopped (out of memory, or its script failed): the model is gone with it.
  hostChannel('opener').onerror = (e) => {
    if (model) publishOpened(null);
    model = null;
    closeModel();
    status(`The model host stopped (${e.message || 'out of memory?'}): nothing is open. Open the model again, or a smaller one.`);
  };

  // A model just opened by the host (info: its answer, host-opener.js): the layer picker and the
  // buttons; the other panels may run on it (opened.js).
  function opened(info) {
    const m = info;
    model = { ...info, label: unpackStrings(info.labels), text: unpackStrings(info.texts) };
    publishOpened(info);
    el.layer.replaceChildren(...Array.from({ length: m.config.layers }, (_, l) => new Option(`layer ${l + 1}`, String(l))));
    el.panel.dataset.loaded = '1';
    el.panel.dataset.kind = info.kind;
    el.generate.disabled = false;
    el.probe.disabled = false;
    // a file whose weights are already quantized (llama2.c's version 2) has no fp32 weights to
    // quantize from: the choice shows its format and stays shut
    const held = m.weightBytes.format;
    weightsEl.value = held;
    weightsEl.disabled = held !== 'fp32';
    weightsEl.title = held === 'fp32' ? '' : `This file's weights are ${WEIGHTS[held]} already; the choice needs a model opened in fp32.`;
  }

  // The files line: each role of the row with its files, or "none yet".
  function showFiles(r, given) {
    el.files.textContent = Object.entries(r.files).filter(([role, f]) => !f.optional || given[role])
      .map(([role]) => `${role}: ${given[role]?.map((f) => `${f.name} (${formatBytes(f.size)})`).join(', ') ?? 'none yet'}`).join('; ');
  }

  // Each file's format from its bytes (its first 64 KiB and its size, lib.sniffModelFile), not its
  // name: a CSV named model.bin is said to be none of the formats tried, before any loader reads it.
  const sniffBytes = (file, head) => ({ file, ...lib.sniffModelFile(head, file.size) });
  const sniff = (list) => Promise.all(list.map(async (f) => sniffBytes(f, new Uint8Array(await f.slice(0, SNIFFED).arrayBuffer()))));

  // The format a pick of sniffed files opens (formats.js pickFormat) and its files by role, or why
  // it opens none: { r, given, why }. gather: add the files kept from earlier picks of the same
  // format when it gathers, and keep these.
  function choose(sniffed, gather) {
    const { row: r, unread } = pickFormat(sniffed);
    if (unread) return { why: notOpened(unread) };
    if (!r) {
      const none = sniffed.filter((x) => x.format === null);
      return { why: none.length ? none.map((x) => notAModelFile(x.file.name, x)).join(' ') : 'No file was given.' };
    }
    const given = { ...(gather && kept.row === r && r.gathers ? kept.files : {}), ...byRole(r, sniffed) };
    if (gather) kept = { row: r, files: given };
    return { r, given, why: whatIsMissing(r, given) };
  }

  // A pick or a drop: sniffed, its format's files gathered, then read and loaded once every file
  // the format needs is there.
  async function take(list) {
    let sniffed;
    try {
      sniffed = await sniff(list);
    } catch (e) {
      status(`Could not read the files: ${e.message}`);
      return;
    }
    const { r, given, why } = choose(sniffed, true);
    if (r) showFiles(r, given);
    if (why) {
      status(why);
      return;
    }
    closeModel();
    const signal = startBusy('read');
    const t0 = performance.now(); // the user's wait starts at the pick
    try {
      const all = Object.values(given).flat(), total = all.reduce((a, f) => a + f.size, 0);
      status(`Reading ${all.length} file(s), ${formatMB(total)}, in this tab (in a worker)…`);
      // the Files themselves go to the model host, which reads them: this thread never copies them
      const files = {};
      for (const [role, list] of Object.entries(given)) files[role] = list.map((f) => ({ name: f.name, file: f }));
      await load(r, files, signal, {}, t0);
    } catch (e) {
      if (current(signal)) status(isAbort(e) ? 'Cancelled: nothing was loaded.' : e.message);
    } finally {
      endBusy(signal);
    }
  }

  // The files' bytes (role -> [{ name, bytes }]) sent to the model host (transferred: this page keeps
  // no copy) and loaded there with the row's loader; the status says what was opened and how long
  // the user waited (t0: the pick, or the Hub request). hub: { id, fetched (ms) } for a Hub download.
  // given: role -> [{ name, bytes }] (a Hub download) or [{ name, file }] (picked Files, read by the host).
  async function load(r, given, signal, hub = {}, t0 = performance.now()) {
    const weights = given[Object.keys(r.files).find((role) => r.files[role].sniff === r.sniff)];
    const size = (w) => (w.file ? w.file.size : w.bytes.length);
    const loading = () => status(`Loading ${weights.length > 1 ? `${weights.length} shards` : weights[0].name} `
      + `(${formatMB(weights.reduce((a, w) => a + size(w), 0))}) into the library, in a worker…`);
    if (!weights[0].file) loading();
    el.progress.removeAttribute('value');
    await frame();
    if (signal.aborted) throw signal.reason;
    const sent = {}, transfer = [];
    for (const [role, files] of Object.entries(given)) {
      sent[role] = files.map((f) => {
        if (f.file) return f; // a File is posted as a handle: the host reads it
        // a buffer of its own to transfer (a view into a larger one is copied once, here)
        const own = f.bytes.byteOffset === 0 && f.bytes.byteLength === f.bytes.buffer.byteLength ? f.bytes.buffer : f.bytes.slice().buffer;
        transfer.push(own);
        return { name: f.name, bytes: own };
      });
    }
    const mine = run;
    const info = await ask({ type: 'open', format: r.format, given: sent, hub, waited: performance.now() - t0 }, {
      transfer: [...new Set(transfer)], signal,
      onEvent: (ev) => {
        if (ev.type === 'reading') showBytes(ev.done, ev.total);
        else if (ev.type === 'loading') {
          el.progress.removeAttribute('value');
          loading();
        }
      },
    });
    if (mine !== run) return; // closed (or another opened) while it loaded: the next open replaces it in the host
    const waited = performance.now() - t0;
    opened(info);
    el.panel.dataset.waited = String(waited);
    el.panel.dataset.loadMs = String(info.loadMs);
    el.panel.dataset.fp32 = String(info.weightBytes.fp32); // the weights' bytes in float32 (the page-models bench reads it)
    status(info.status.replace(/ in \d+ ms/, ` in ${waited.toFixed(0)} ms`));
  }

  // A Hub id: the files from the Hub's resolve URLs (hub.js), then sniffed and loaded as picked files are.
  el.hub.addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = el.hubid.value.trim(), endpoint = el.endpoint.value.trim();
    // a bad endpoint is refused before anything is fetched, as a bad id is
    const why = checkEndpoint(endpoint) ?? checkHubId(id);
    if (why) {
      status(why);
      return;
    }
    closeModel();
    kept = { row: null, files: {} };
    el.files.textContent = `${id} from ${new URL(endpoint).host}`;
    const signal = startBusy('fetch');
    const t0 = performance.now();
    try {
      const got = await fetchHubModel({
        base: endpoint, id, signal,
        onStatus: status,
        onSize: (total, names) => {
          el.panel.dataset.total = String(total ?? '');
          status(`${id}: ${total ? formatMB(total) : 'size not given'} of weights in ${names.length > 1 ? `${names.length} shards` : names[0]}; fetching…`);
          showBytes(0, total);
        },
        onProgress: showBytes,
      });
      el.panel.dataset.fetched = String(got.bytes);
      el.files.textContent = `${id}: config.json, tokenizer.json, ${got.files.join(', ')} (${formatMB(got.bytes)})`;
      // the fetched files are sniffed as picked ones are: their bytes say which format opens them
      const files = [['config.json', utf8(got.config)], ['tokenizer.json', utf8(got.tokenizer)], ...got.files.map((f, k) => [f, got.weights[k]])]
        .map(([name, bytes]) => sniffBytes({ name, size: bytes.length, bytes }, bytes.subarray(0, SNIFFED)));
      const { r, given, why } = choose(files, false);
      if (why) throw new Error(`${id}: ${why}`);
      await load(r, given, signal, { id, fetched: performance.now() - t0 }, t0);
    } catch (err) {
      if (current(signal)) status(isAbort(err) ? `Cancelled: ${id} was not loaded, and what was fetched is freed.` : err.message);
    } finally {
      endBusy(signal);
    }
  });

  // the endpoint is a setting: kept in the page's URL (panels.js's prop hub), so a reload keeps it
  el.endpoint.addEventListener('input', () => onChange({ hub: el.endpoint.value.trim() }));

  el.input.addEventListener('change', () => take([...el.input.files]));
  el.folder.addEventListener('change', () => take([...el.folder.files]));
  el.drop.addEventListener('dragover', (e) => { e.preventDefault(); el.drop.classList.add('over'); });
  el.drop.addEventListener('dragleave', () => el.drop.classList.remove('over'));
  el.drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    el.drop.classList.remove('over');
    try {
      take(await droppedFiles(e.dataTransfer)); // folders walked
    } catch (err) {
      status(`Could not read the dropped files: ${err.message}`);
    }
  });

  // Draws the heads of the chosen layer over the first `rows` tokens (causal rows do not change
  // as later tokens come, so the growing picture is the model's attention at each step).
  function draw(ids, attention, rows) {
    const c = model.config, l = Number(el.layer.value || 0), n = ids.length, group = c.heads / c.kvHeads;
    const labels = Array.from(ids, label);
    const maps = attention[l].map((w, h) => {
      const cut = new Float32Array(n * n);
      for (let i = 0; i < rows; i++) cut.set(w.subarray(i * n, i * n + i + 1), i * n);
      const kv = Math.floor(h / group);
      // what the head does on the rows drawn so far (heads.js)
      const sub = new Float32Array(rows * rows);
      for (let i = 0; i < rows; i++) sub.set(w.subarray(i * n, i * n + i + 1), i * rows);
      const named = nameHead(scoreHead(sub, Array.from(ids.subarray(0, rows))));
      return { title: `layer ${l + 1}, head ${h + 1}: ${named.name} ${named.score.toFixed(2)}` +
        `${group > 1 ? ` (K/V head ${kv + 1}, shared with heads ${kv * group + 1}–${kv * group + group})` : ''}`, weights: cut };
    });
    // many heads on a narrow screen: thumbnails a few to a row, a click on a title shows one large and labelled
    mapsBox.hidden = false; // before the width is read
    const thumbs = maps.length > 4 && el.grid.clientWidth < 600;
    heatmaps.render({ maps, n, m: n, rowLabels: labels, colLabels: labels, columns: thumbs ? maps.length : 0 });
  }

  // The probe's result for many heads: one cell per head, colour = induction score (0..1), the
  // heads named induction heads marked; a click shows that layer's heads on the probe.
  function probeTable(heads, showLayer) {
    const c = model.config, table = document.createElement('table');
    table.className = 'heads-table';
    table.createCaption().textContent = `Induction score of each head (colour: 0 dark … 1 yellow; ● at ${NAMED_AT} or more). `
      + 'Click a head to see its layer on the probe.';
    const top = table.createTHead().insertRow();
    top.append(document.createElement('th'));
    for (let h = 0; h < c.heads; h++) {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = String(h + 1);
      top.append(th);
    }
    const body = table.createTBody();
    for (let l = 0; l < c.layers; l++) {
      const tr = body.insertRow();
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = `L${l + 1}`;
      tr.append(th);
      for (const hd of heads.filter((x) => x.layer === l)) {
        const s = hd.scores.induction, b = document.createElement('button');
        b.type = 'button';
        b.style.background = viridisCss(Math.min(1, s));
        b.classList.toggle('named', s >= NAMED_AT);
        b.classList.toggle('light', s > 0.6); // a dark mark on the yellow end
        b.textContent = s >= NAMED_AT ? '●' : '';
        b.title = `layer ${l + 1}, head ${hd.head + 1}: induction ${s.toFixed(2)}, previous token ${hd.scores['previous token'].toFixed(2)}`
          + ` (${hd.name})`;
        b.setAttribute('aria-label', b.title);
        b.addEventListener('click', () => showLayer(l));
        tr.insertCell().append(b);
      }
    }
    return table;
  }

  // Every head of every layer on the standard probe: random tokens, then the same tokens again.
  // One forward pass and every head scored, in the host.
  el.probe.addEventListener('click', async () => {
    if (!model) return;
    const mine = ++run, c = model.config, half = Math.min(32, Math.floor((c.maxLen - 1) / 2));
    const vocab = model.vocabSize;
    // a start token, then ordinary pieces: past the byte pieces (3..258) when the vocabulary has room, else past <unk>, <s>, </s>
    const bos = model.bos;
    const start = Number.isInteger(bos) && bos >= 0 && bos < c.vocab ? [bos] : [];
    const tokens = [...start, ...probeTokens(vocab, half, 5, vocab >= 259 + half ? 259 : 3)];
    const many = c.layers * c.heads > MANY_HEADS;
    const signal = many ? startBusy('probe') : null;
    el.probe.disabled = true;
    try {
      if (many) status(`Running the probe (${tokens.length} tokens) through ${c.layers} layers, in a worker…`);
      const { heads, attention } = await ask({ type: 'probe', tokens }, { signal });
      if (mine !== run) return;
      const induction = describeInduction(heads);
      const probeView = { ids: Int32Array.from(tokens), attention, rows: tokens.length };
      if (many) {
        names.replaceChildren();
        const showLayer = (l) => {
          el.layer.value = String(l);
          last = probeView;
          draw(probeView.ids, attention, probeView.rows);
          markLayer();
        };
        const found = heads.filter((h) => h.scores.induction >= NAMED_AT).sort((a, b) => b.scores.induction - a.scores.induction);
        const list = document.createElement('p');
        list.className = 'note';
        list.textContent = found.length ? `Induction heads (score ${NAMED_AT} or more): ${found.slice(0, 12)
          .map((h) => `L${h.layer + 1} H${h.head + 1} ${h.scores.induction.toFixed(2)}`).join(', ')}${found.length > 12 ? `, and ${found.length - 12} more` : ''}.`
          : `No head reaches an induction score of ${NAMED_AT}.`;
        el.table.replaceChildren(probeTable(heads, showLayer), list);
        el.table.hidden = false;
        markLayer();
      } else {
        el.table.replaceChildren();
        el.table.hidden = true;
        names.replaceChildren(...heads.map((h) => {
          const li = document.createElement('li');
          li.textContent = `layer ${h.layer + 1}, head ${h.head + 1}: ${h.name}, score ${h.score.toFixed(2)} ` +
            `(induction ${h.scores.induction.toFixed(2)}, previous token ${h.scores['previous token'].toFixed(2)})`;
          return li;
        }));
      }
      el.panel.dataset.probe = JSON.stringify(heads.map((h) => ({ layer: h.layer, head: h.head, name: h.name, induction: h.scores.induction })));
      el.panel.dataset.induction = induction.found ? 'found' : 'none';
      status(`On ${half} random tokens shown twice, ${induction.text}` + (induction.found
        ? ': it looks from each repeated token to the token that followed it the first time. Type a phrase twice and '
          + 'generate to see it jump back on your words.'
        : '. This model has not learned to copy from earlier in its context.'));
    } catch (e) {
      if (mine === run) status(isAbort(e) ? 'Cancelled: the probe stopped.' : e.message);
    } finally {
      if (signal) endBusy(signal);
      el.probe.disabled = !model;
    }
  });

  // the probe table's row of the layer shown
  const markLayer = () => {
    for (const tr of el.table.querySelectorAll('tbody tr')) tr.classList.toggle('picked', tr.sectionRowIndex === Number(el.layer.value));
  };
  el.layer.addEventListener('change', () => {
    markLayer();
    if (last) draw(last.ids, last.attention, last.rows);
  });

  // Generate: the host makes the tokens one at a time and posts each (the text grows here as they
  // come, with tokens/s); Stop ends it between two tokens. Then one forward of the whole text gives
  // every head's attention, drawn row by row as the tokens appeared.
  const generateLabel = el.generate.textContent;
  el.form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!model) return;
    if (gen) { // the button reads Stop while a generation runs
      gen.abort();
      return;
    }
    const mine = ++run, t0 = performance.now();
    const ctl = new AbortController();
    gen = ctl;
    delete el.panel.dataset.done;
    delete el.panel.dataset.firstToken;
    try {
      const c = model.config;
      const { ids: prompt, lowered } = await encode(el.text.value);
      const cap = Math.min(c.maxLen, MAX_SHOWN), asked = Number(el.count.value);
      const room = cap - prompt.length;
      if (room < 1) throw new Error(`the text is ${prompt.length} tokens; this view shows up to ${cap}`);
      const want = Math.min(asked, room), stop = model.stop;
      el.generate.textContent = 'Stop';
      el.panel.dataset.generating = '1';
      status(`Generating up to ${want} tokens, in a worker…`);
      const weights = WEIGHTS[quant ?? model.weightBytes.format];
      const result = await ask({ type: 'generate', prompt: Array.from(prompt), maxTokens: want, stop: stop?.id ?? null }, {
        signal: ctl.signal,
        onEvent: (ev) => {
          if (ev.type !== 'tokens' || mine !== run) return;
          if (el.panel.dataset.firstToken === undefined) el.panel.dataset.firstToken = String(performance.now() - t0);
          el.output.textContent = ev.text;
          status(`${ev.count} of up to ${want} tokens, ${((ev.count / ev.ms) * 1000).toFixed(1)} tokens/s (greedy, with the KV cache, `
            + `${weights} weights)… Press Stop to end it.`);
        },
      });
      if (mine !== run) return;
      const out = result.tokens, ms = result.ms;
      const ids = Int32Array.from([...prompt, ...out]);
      el.panel.dataset.tokens = JSON.stringify([...out]);
      // why it stopped where it did, when that is before the count asked for
      const atStop = stop && out.length > 0 && out.at(-1) === stop.id;
      const why = result.stopped ? 'you stopped it' : atStop ? `it stopped at ${stop.name}`
        : want < asked ? `it stopped at ${want}: ${cap === c.maxLen ? `the model reads at most ${c.maxLen} tokens` : `this view `
          + `shows at most ${MAX_SHOWN} tokens`} and the text took ${prompt.length}` : '';
      el.panel.dataset.stop = result.stopped ? 'user' : atStop ? 'bos' : want < asked ? 'length' : '';
      const done = `${out.length} tokens in ${ms.toFixed(0)} ms (${((out.length / ms) * 1000).toFixed(1)} tokens/s, greedy, with the KV cache, `
        + `${weights} weights), the first after ${(result.firstMs ?? ms).toFixed(0)} ms`
        + `${why ? `; ${why}` : ''}.${lowered ? ' Your text was lower-cased: this tokenizer has lower-case pieces only.' : ''}`;
      status(`${done} Reading the attention…`);
      const { attention } = await ask({ type: 'forward', ids: Array.from(ids), logits: false });
      if (mine !== run) return;
      status(done);
      // token by token: each head gains the new token's row
      for (let t = prompt.length; t <= ids.length && mine === run; t++) {
        if (result.stopped || t === ids.length) el.output.textContent = result.text ?? el.output.textContent;
        last = { ids, attention, rows: t };
        draw(ids, attention, t);
        await new Promise((r) => setTimeout(r, 30));
      }
      if (mine === run) el.panel.dataset.done = String(mine);
    } catch (err) {
      if (mine === run) status(isAbort(err) ? 'Stopped.' : err.message);
    } finally {
      if (gen === ctl) {
        gen = null;
        el.generate.textContent = generateLabel;
        delete el.panel.dataset.generating;
      }
    }
  });

  // ---- Weights: fp32, or a quantized copy for inference ----

  // The text bits per character are measured on, as tokens: the page's held-out text for the
  // sample, else the user's text. chars: the characters the scored tokens read (every token after
  // the first is scored: after a start token, the whole text).
  async function bitsText(text) {
    const own = !sampleOpen;
    const read = own ? text : new TextDecoder().decode(await fetchOnce(new URL(`../models/${HELD_OUT}`, import.meta.url)));
    const { ids } = await encode(read);
    const chars = read.length - (ids[0] === model.bos ? 0 : model.text(ids[0]).length);
    return { ids, chars, own, length: read.length };
  }

  function renderWeights(info) {
    const about = document.createElement('p');
    about.className = 'note';
    about.textContent = `Each weights choice measured in this tab: tokens/s of ${info.count} new tokens, greedy, after “${info.text}” `
      + `(${info.prompt} tokens), the prompt included, repeated for at least ${TIMED} ms; bits per character on ${info.own
        ? `your text (${info.length} characters)` : `the page's held-out text (${HELD_OUT}, ${info.length} characters)`}; `
      + 'attention change: the largest |A − A(fp32)| over every layer, head, row and column on your text.';
    const table = document.createElement('table');
    table.className = 'weights-table';
    table.createCaption().textContent = 'Weights compared';
    const head = table.createTHead().insertRow();
    for (const t of ['Weights', 'Bytes', 'Tokens/s', info.own ? 'Bits/char (your text)' : 'Bits/char (held out)', 'Largest attention change']) {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = t;
      head.append(th);
    }
    const body = table.createTBody();
    for (const format of Object.keys(WEIGHTS)) {
      const r = rows.get(format), tr = body.insertRow();
      tr.dataset.format = format;
      tr.classList.toggle('picked', format === (quant ?? 'fp32'));
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = WEIGHTS[format];
      tr.append(th);
      const cells = !r ? ['pick it above', '', '', ''] : [
        `${formatBytes(r.bytes)}${format === 'fp32' ? '' : ` (${((100 * r.bytes) / r.fp32).toFixed(0)}%)`}`,
        r.tokensPerSecond.toFixed(0),
        r.bits.toFixed(4),
        format === 'fp32' ? '0' : r.attentionChange.toFixed(4),
      ];
      for (const c of cells) tr.insertCell().textContent = c;
    }
    const note = document.createElement('p');
    note.className = 'note';
    note.textContent = 'Bytes: every weight as held (the embedding table stays fp32 for the lookup). Tokens/s are measured on this '
      + 'machine as it is now, not a benchmark; a choice is measured again when the text or the token count changes.';
    wtable.replaceChildren(about, table, note);
    wtable.hidden = false;
  }

  // A weights choice: the host makes its quantized copy (model.quantizedCopy, in pieces; or takes
  // the fp32 model back), then measures the fp32 row and its row if the text or token count changed
  // since they were (host-opener.js weights).
  async function chooseWeights(format) {
    if (!model) return;
    const mine = ++wrun, open = model, alive = () => wrun === mine && model === open;
    delete el.panel.dataset.weightsDone;
    weightsEl.disabled = el.generate.disabled = el.probe.disabled = true;
    wabort?.abort();
    const ctl = new AbortController();
    wabort = ctl;
    try {
      const text = el.text.value, c = model.config;
      const { ids: prompt } = await encode(text);
      const room = Math.min(c.maxLen, MAX_SHOWN) - prompt.length;
      if (room < 1) throw new Error(`the text is ${prompt.length} tokens; this view measures up to ${Math.min(c.maxLen, MAX_SHOWN)}`);
      const count = Math.min(Number(el.count.value), room);
      const scored = await bitsText(text);
      if (!alive()) return;
      const info = { text, count, prompt: prompt.length, own: scored.own, length: scored.length };
      const t0 = performance.now();
      const got = await ask({ type: 'weights', format, prompt: Array.from(prompt), count, scored: { ids: Array.from(scored.ids), chars: scored.chars } },
        { signal: ctl.signal, onEvent: (ev) => { if (ev.type === 'status' && alive()) status(ev.text); } });
      if (!alive()) return;
      if (format !== 'fp32') el.panel.dataset.quantizeSpan = JSON.stringify([t0, performance.now()]); // when it ran (performance.now())
      quant = format === 'fp32' ? null : format;
      rows = new Map(got.rows.map((r) => [r.format, r]));
      renderWeights(info);
      el.panel.dataset.weights = JSON.stringify(got.rows);
      el.panel.dataset.weightsDone = format;
      const r = rows.get(format), f = rows.get('fp32');
      status(format === 'fp32' ? 'fp32 weights, as opened: generation and the probe use them.'
        : `${WEIGHTS[format]} weights: ${formatBytes(r.bytes)} instead of ${formatBytes(r.fp32)}; generation and the probe use them `
          + `(the fp32 model stays open: pick fp32 to go back). Bits per character ${f.bits.toFixed(4)} → ${r.bits.toFixed(4)}; `
          + `the largest attention weight change on your text is ${r.attentionChange.toFixed(4)}.`);
    } catch (e) {
      if (!isAbort(e) && wrun === mine) status(e.message);
    } finally {
      if (wrun === mine) {
        weightsEl.value = quant ?? 'fp32';
        weightsEl.disabled = el.generate.disabled = el.probe.disabled = !model;
      }
    }
  }
  weightsEl.addEventListener('change', () => chooseWeights(weightsEl.value));

  // the page's width changed: the heads are laid out again for it
  return {
    update(state) {
      if (el.endpoint.value.trim() !== state.hub) el.endpoint.value = state.hub;
    },
    resize: () => { if (model && last) draw(last.ids, last.attention, last.rows); },
  };
}
