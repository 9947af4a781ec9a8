// tokenizer.js: "How text becomes tokens". A byte-level BPE tokenizer (wasm/bpe.js) cuts the text
// box into pieces, drawn as coloured chips with their ids; a slider replays the tokenizer's merges
// from none (one piece per byte) to all of them; "Train on your text" trains another tokenizer in a
// Worker (../tokenizer-worker.js) and the chips switch to it. The tokenizer shown is shared with the
// own-text panel (onTokenizer), which can train its model on that tokenizer's ids.
//
// The starting tokenizer: the one of the page's sub-word model when a catalogue entry of
// web/models/*.json names a `tokenizer` file, else one trained here on the text the page ships
// (models/stream-text.txt) at vocabulary 512.
import { startWorker } from '../worker-page.js';
import { fetchJsonOnce, fetchTextOnce } from '../fetch-once.js';

const MODELS = new URL('../models/', import.meta.url);
const CATALOGUES = ['fortunes.json', 'index.json'];
const SAMPLE_TEXT = 'stream-text.txt';
const SAMPLE_VOCAB = 512;
const MAX_CHIPS = 600; // a longer text shows its first MAX_CHIPS pieces

// ---- the tokenizer shared with the own-text panel ----------------------------------------------

let shared = null; // { json, vocabSize, label }
const listeners = new Set();

/** fn(shared) now and whenever the panel's tokenizer changes ({ json, vocabSize, label } or null). */
export function onTokenizer(fn) {
  listeners.add(fn);
  fn(shared);
  return () => listeners.delete(fn);
}

function share(entry) {
  shared = entry;
  for (const fn of listeners) fn(entry);
}

// ---- showing a piece ---------------------------------------------------------------------------

const MARK = { ' ': '␣', '\n': '↵', '\t': '⇥', '\r': '␍' };
const hex = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;

/**
 * A piece's bytes as text: whole UTF-8 characters as themselves (a space as ␣, a newline as ↵,
 * a tab as ⇥), any byte that is not part of a whole character inside the piece as <0xXX>.
 */
export function showPiece(bytes) {
  let out = '';
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i];
    const need = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    let ok = need > 0 && i + need <= bytes.length;
    for (let k = 1; ok && k < need; k++) ok = (bytes[i + k] & 0xc0) === 0x80;
    let ch = null;
    if (ok) {
      try {
        ch = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(i, i + need)); // refuses overlongs, surrogates
      } catch {
        ch = null;
      }
    }
    if (ch === null) {
      out += hex(b);
      i += 1;
    } else {
      out += MARK[ch] ?? (/\p{Cc}/u.test(ch) ? hex(b) : ch);
      i += need;
    }
  }
  return out;
}

// a light colour per id (golden-angle hues), so one piece keeps its colour as the slider moves
const chipColour = (id) => `hsl(${Math.round((id * 137.508) % 360)} 75% 86%)`;

// ---- the starting tokenizer --------------------------------------------------------------------

async function getJSON(url) {
  try {
    return await fetchJsonOnce(url); // the page's one copy (fetch-once.js)
  } catch {
    return null;
  }
}

/** The catalogue entry whose model reads sub-word tokens (it names a `tokenizer` file), or null. */
export function subwordEntry(catalogues) {
  for (const c of catalogues) for (const e of c?.models ?? []) if (typeof e?.tokenizer === 'string' && e.tokenizer) return e;
  return null;
}

/** { tok, label, note? }: the sub-word model's tokenizer, else one trained on the page's sample text. */
async function startingTokenizer(lib) {
  const entry = subwordEntry(await Promise.all(CATALOGUES.map((f) => getJSON(new URL(f, MODELS)))));
  let note = '';
  if (entry) {
    try {
      const tok = lib.loadTokenizer(await fetchTextOnce(new URL(entry.tokenizer, MODELS)));
      return { tok, label: `the tokenizer of the page's sub-word model ${entry.file ?? ''} (models/${entry.tokenizer}, ${tok.vocabSize} pieces)` };
    } catch (e) {
      note = ` (models/${entry.tokenizer} did not load: ${e.message})`;
    }
  }
  const text = await fetchTextOnce(new URL(SAMPLE_TEXT, MODELS)).catch((e) => {
    throw new Error(`models/${SAMPLE_TEXT} did not load (${e.message})`);
  });
  const tok = lib.trainTokenizer(text, { vocabSize: SAMPLE_VOCAB });
  return { tok, label: `a tokenizer trained on this page's sample text (models/${SAMPLE_TEXT}, ${text.length} characters) at vocabulary ${tok.vocabSize}`, note };
}

// ---- the view ----------------------------------------------------------------------------------

export function createTokenizerView(el, { lib, onChange }) {
  let tok = null; // the tokenizer shown
  let start = null; // { tok, label }: the starting one, for "Back to the starting tokenizer"
  let label = '';
  let merges = 0; // the slider: how many merges apply
  let worker = null;
  let runId = 0;

  const status = (text) => { el.status.textContent = text; };
  const setPanelState = (s) => { el.panel.dataset.state = s; };

  // The vocabulary sizes "Train on your text" takes: the library's own range (the C trainer's), one
  // range for the label, the input's bounds and the panel's message.
  const VOCAB = lib.tokenizerVocabSize;
  const rangeText = `${VOCAB.min} to ${VOCAB.max}`;
  el.vocab.min = String(VOCAB.min);
  el.vocab.max = String(VOCAB.max);
  const vocabLabel = el.vocab.labels?.[0];
  if (vocabLabel) vocabLabel.textContent = `Vocabulary size (${rangeText})`;

  function use(next, nextLabel) {
    tok = next;
    label = nextLabel;
    const n = tok.merges.length;
    el.slider.max = String(n);
    el.slider.value = String(n);
    merges = n;
    el.about.textContent = `Tokenizer: ${label}. Its ${tok.vocabSize} pieces are 3 specials (<unk>, <s>, </s>, ids 0-2), `
      + `the 256 bytes and ${n} merges.`;
    share({ json: tok.toJSON(), vocabSize: tok.vocabSize, label });
    render();
  }

  function sliderLabel() {
    const n = tok.merges.length;
    const vocab = tok.vocabSize - (n - merges);
    el.sliderLabel.textContent = `Merges applied: ${merges} of ${n} (a vocabulary of ${vocab} pieces)`;
    if (merges === 0) {
      el.merge.textContent = 'No merge yet: every byte is its own piece (ids 3-258 are the bytes 0x00-0xFF).';
      return;
    }
    const [a, b, z] = tok.merges[merges - 1];
    const q = (id) => `'${showPiece(tok.pieceBytes(id))}'`;
    el.merge.textContent = `merge ${merges} (piece ${z}): ${q(a)} + ${q(b)} → ${q(z)}`;
  }

  function render() {
    if (!tok) return;
    sliderLabel();
    const text = el.text.value;
    let ids;
    try {
      ids = tok.encode(text, { merges });
    } catch (e) {
      el.counts.textContent = '';
      el.chips.replaceChildren();
      status(e.message);
      return;
    }
    const chars = Array.from(text).length, bytes = new TextEncoder().encode(text).length;
    el.counts.textContent = `${chars} characters · ${bytes} bytes · ${ids.length} tokens`
      + (ids.length ? ` · ${(chars / ids.length).toFixed(2)} characters per token` : '');
    const shown = ids.subarray(0, MAX_CHIPS);
    el.chips.replaceChildren(...Array.from(shown, (id) => {
      const chip = document.createElement('span');
      chip.className = 'tk-chip';
      chip.style.background = chipColour(id);
      const piece = document.createElement('span');
      piece.className = 'tk-piece';
      piece.textContent = showPiece(tok.pieceBytes(id));
      const num = document.createElement('span');
      num.className = 'tk-id';
      num.textContent = String(id);
      chip.append(piece, num);
      chip.title = `id ${id}: ${tok.pieceBytes(id).length} byte${tok.pieceBytes(id).length === 1 ? '' : 's'}`;
      return chip;
    }));
    if (ids.length > MAX_CHIPS) {
      const more = document.createElement('span');
      more.className = 'note';
      more.textContent = `… and ${ids.length - MAX_CHIPS} more tokens`;
      el.chips.append(more);
    }
    el.panel.dataset.tokens = String(ids.length);
  }

  // ---- training in the worker ------------------------------------------------------------------

  function finish() {
    el.train.disabled = false;
  }

  function receive(msg) {
    if (msg.id !== runId) return;
    if (msg.type === 'progress') {
      status(msg.message);
    } else if (msg.type === 'done') {
      let next;
      try {
        next = lib.loadTokenizer(msg.json);
      } catch (e) {
        status(`The trained tokenizer did not load: ${e.message}`);
        setPanelState('error');
        finish();
        return;
      }
      const ran = next.merges.length < msg.asked - VOCAB.min ? ` (the text ran out of pairs before ${msg.asked})` : '';
      use(next, `trained on your text (${msg.chars} characters) at vocabulary ${next.vocabSize}${ran}`);
      const took = msg.ms < 1000 ? `${msg.ms.toFixed(1)} ms` : `${(msg.ms / 1000).toFixed(2)} s`;
      status(`Trained in ${took}: ${next.vocabSize} pieces${ran}. The chips above use it now.`);
      setPanelState('ready');
      el.reset.disabled = false;
      finish();
    } else if (msg.type === 'error') {
      status(msg.message);
      setPanelState('error');
      finish();
    }
  }

  function ensureWorker() {
    if (!worker) {
      worker = startWorker(new URL('../tokenizer-worker.js', import.meta.url));
      worker.onmessage = (e) => receive(e.data);
      worker.onerror = (e) => {
        e.preventDefault?.();
        worker.terminate();
        worker = null;
        status(`Training failed: ${e.message || 'the tokenizer worker could not load'}`);
        setPanelState('error');
        finish();
      };
    }
    return worker;
  }

  function trainOnText() {
    const text = el.trainText.value;
    const vocabSize = Number(el.vocab.value);
    // the label's range, said the same way before a worker starts (the library checks it again)
    if (el.vocab.value.trim() === '' || !Number.isInteger(vocabSize) || vocabSize < VOCAB.min || vocabSize > VOCAB.max) {
      status(`Vocabulary size must be a whole number from ${rangeText} (the 3 specials and 256 bytes, then merges), got ${el.vocab.value.trim() || 'nothing'}.`);
      setPanelState('error');
      return;
    }
    runId++;
    el.train.disabled = true;
    setPanelState('training');
    status('Starting the tokenizer worker…');
    ensureWorker().postMessage({ type: 'train', id: runId, text, vocabSize });
  }

  el.text.addEventListener('input', () => {
    render();
    onChange({ tktext: el.text.value });
  });
  el.slider.addEventListener('input', () => {
    merges = Number(el.slider.value);
    render();
  });
  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    trainOnText();
  });
  el.reset.addEventListener('click', () => {
    if (!start) return;
    use(start.tok, start.label);
    el.reset.disabled = true;
    status('Back to the starting tokenizer.');
  });

  setPanelState('loading');
  el.about.textContent = 'Loading the tokenizer…';
  startingTokenizer(lib).then(
    (s) => {
      start = s;
      use(s.tok, s.label + (s.note ?? ''));
      setPanelState('ready');
    },
    (e) => {
      el.about.textContent = `No tokenizer to start with: ${e.message}. Train one on your text below.`;
      setPanelState('error');
    },
  );

  return {
    update(state) {
      if (el.text.value !== state.tktext) {
        el.text.value = state.tktext;
        render();
      }
    },
  };
}

