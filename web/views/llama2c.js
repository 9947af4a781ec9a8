// llama2c.js: "Open a model file": a llama2.c model (.bin) and its tokenizer.bin, picked or dropped,
// read in this tab (never uploaded) with lib.loadLlama2c; the user's text is encoded with the
// model's own tokenizer, the model generates greedily, and the attention of every head of the
// chosen layer is drawn row by row as the tokens appear, with the sub-word tokens as labels.
// Heads that share a K/V head (grouped-query attention) say which one in their titles.
// "Open the sample" makes a pair from the shipped fortunes-bpe checkpoint and its BPE (llama2c-sample.js) and
// opens it as if picked; when generation stops early the status says why.
import { createHeatmapView } from './heatmap.js';
import { SAMPLE, bpeSampleLlama2c } from '../../lab/llama2c-sample.js';
import { describeInduction, nameHead, probeTokens, scoreHead, scoreHeads } from '../../lab/heads.js';

const MAX_SHOWN = 96; // tokens drawn (prompt + generated): the heatmaps stay readable

function formatBytes(n) {
  return n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

export function createLlama2cView(el, { lib }) {
  let model = null, files = { model: null, tokenizer: null }, run = 0;
  const heatmaps = createHeatmapView({ grid: el.grid, legend: el.legend, readout: el.readout, exports: el.exports, name: 'llama2c-attention' });

  const status = (text) => { el.status.textContent = text; };
  // index.html gives the id l2names to both the files line (<p>) and the heads' list (<ul>), so
  // $('l2names') finds the line: the list is the <ul> (the ids want renaming where main.js wires them)
  const names = el.panel.querySelector('ul#l2names') ?? el.names;

  // One click to a model: the sample pair, made in this tab from a checkpoint the page ships.
  const sample = document.createElement('button');
  sample.type = 'button';
  sample.id = 'l2sample';
  sample.className = 'secondary';
  sample.textContent = `Open the sample (${SAMPLE.name})`;
  sample.title = `A 3-layer sub-word model that read Debian's fortunes (models/${SAMPLE.source}), as llama2.c's model.bin `
    + `and tokenizer.bin (its byte-level BPE, models/${SAMPLE.tokenizer}): scripts/make-sample-llama2c.mjs writes the same two files`;
  el.drop.querySelector('#l2sample')?.remove(); // main.js makes this view again on every settings change
  el.drop.append(sample);
  sample.addEventListener('click', async () => {
    sample.disabled = true;
    status('Making the sample pair from the shipped checkpoint…');
    try {
      const get = async (file) => {
        const r = await fetch(new URL(`../models/${file}`, import.meta.url));
        if (!r.ok) throw new Error(`could not fetch models/${file}: HTTP ${r.status}`);
        return r;
      };
      const [r, t] = await Promise.all([get(SAMPLE.source), get(SAMPLE.tokenizer)]);
      const pair = bpeSampleLlama2c(lib, new Uint8Array(await r.arrayBuffer()), await t.json());
      el.text.value = SAMPLE.prompt;
      await take([new File([pair.bin], `${SAMPLE.name}.bin`), new File([pair.tokenizer], 'tokenizer.bin')]);
    } catch (e) {
      status(e.message);
    } finally {
      sample.disabled = false;
    }
  });

  // llama2.c's convention: token 1 is <s> (generation stops there) and 2 is </s>, and decode prints
  // neither. A tokenizer whose pieces 1 and 2 are ordinary tokens (a model saved here from the
  // number tasks or the chars tokenizer) neither stops there nor drops them.
  const marks = () => /<s>/.test(model.tokenizer.pieces[1] ?? '');
  const decode = (ids) => (marks() ? model.tokenizer.decode(ids) : Array.from(ids, (id) => model.tokenizer.piece(id)).join(''));
  // The text as tokens; a tokenizer without byte pieces may still spell it lower-cased (the sample's).
  function encode(text) {
    try {
      return { ids: model.tokenizer.encode(text), lowered: false };
    } catch (e) {
      if (text.toLowerCase() === text) throw e;
      try {
        return { ids: model.tokenizer.encode(text.toLowerCase()), lowered: true };
      } catch {
        throw e;
      }
    }
  }

  async function take(list) {
    for (const f of list) {
      if (/tokenizer/i.test(f.name)) files.tokenizer = f;
      else files.model = f;
    }
    el.files.textContent = `model: ${files.model ? `${files.model.name} (${formatBytes(files.model.size)})` : 'none yet'}; ` +
      `tokenizer: ${files.tokenizer ? `${files.tokenizer.name} (${formatBytes(files.tokenizer.size)})` : 'none yet'}`;
    if (!files.model || !files.tokenizer) {
      status('Give both files: the model (.bin) and its tokenizer.bin.');
      return;
    }
    model?.dispose();
    model = null;
    el.generate.disabled = true;
    status(`Reading ${files.model.name} in this tab…`);
    try {
      const [bytes, tok] = await Promise.all([files.model.arrayBuffer(), files.tokenizer.arrayBuffer()]);
      const t0 = performance.now();
      model = lib.loadLlama2c(bytes, { tokenizer: tok });
      const ms = performance.now() - t0;
      const c = model.config;
      el.layer.replaceChildren(...Array.from({ length: c.layers }, (_, l) => new Option(`layer ${l + 1}`, String(l))));
      const shared = c.kvHeads < c.heads ? `${c.kvHeads} K/V heads, each shared by ${c.heads / c.kvHeads} query heads` : 'a K/V head per head';
      status(`Loaded in ${ms.toFixed(0)} ms: dim ${c.dModel}, ${c.layers} layers, ${c.heads} heads (${shared}), ` +
        `vocab ${c.vocab}, up to ${c.maxLen} tokens, ${model.parameterCount >= 1e6 ? `${(model.parameterCount / 1e6).toFixed(1)}M` : model.parameterCount.toLocaleString('en')} parameters` +
        `${c.tieEmbeddings ? ', classifier tied to the embedding' : ''}.`);
      el.panel.dataset.loaded = '1';
      el.generate.disabled = false;
      el.probe.disabled = false;
    } catch (e) {
      status(e.message);
    }
  }

  el.input.addEventListener('change', () => take([...el.input.files]));
  el.drop.addEventListener('dragover', (e) => { e.preventDefault(); el.drop.classList.add('over'); });
  el.drop.addEventListener('dragleave', () => el.drop.classList.remove('over'));
  el.drop.addEventListener('drop', (e) => {
    e.preventDefault();
    el.drop.classList.remove('over');
    take([...e.dataTransfer.files]);
  });

  // Draws the heads of the chosen layer over the first `rows` tokens (causal rows do not change
  // as later tokens come, so the growing picture is the model's attention at each step).
  function draw(ids, attention, rows) {
    const c = model.config, l = Number(el.layer.value || 0), n = ids.length, group = c.heads / c.kvHeads;
    const labels = Array.from(ids, (id) => model.tokenizer.piece(id).replace(/\n/g, '⏎'));
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
    heatmaps.render({ maps, n, m: n, rowLabels: labels, colLabels: labels });
  }

  // Every head of every layer on the standard probe: random tokens, then the same tokens again.
  el.probe.addEventListener('click', () => {
    if (!model) return;
    const c = model.config, half = Math.min(32, Math.floor((c.maxLen - 1) / 2));
    // BOS, then ordinary pieces: past the byte pieces (3..258) when the vocabulary has room, else past <unk>, <s>, </s>
    const tokens = [1, ...probeTokens(c.vocab, half, 5, c.vocab >= 259 + half ? 259 : 3)];
    const heads = scoreHeads(model.forward(tokens).attention, tokens);
    const induction = describeInduction(heads);
    names.replaceChildren(...heads.map((h) => {
      const li = document.createElement('li');
      li.textContent = `layer ${h.layer + 1}, head ${h.head + 1}: ${h.name}, score ${h.score.toFixed(2)} ` +
        `(induction ${h.scores.induction.toFixed(2)}, previous token ${h.scores['previous token'].toFixed(2)})`;
      return li;
    }));
    el.panel.dataset.probe = JSON.stringify(heads.map((h) => ({ layer: h.layer, head: h.head, name: h.name, induction: h.scores.induction })));
    el.panel.dataset.induction = induction.found ? 'found' : 'none';
    status(`On ${half} random tokens shown twice, ${induction.text}` + (induction.found
      ? ': it looks from each repeated token to the token that followed it the first time. Type a phrase twice and '
        + 'generate to see it jump back on your words.'
      : '. This model has not learned to copy from earlier in its context.'));
  });

  let last = null; // { ids, attention, rows } of the last generation
  el.layer.addEventListener('change', () => { if (last) draw(last.ids, last.attention, last.rows); });

  el.form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!model) return;
    const mine = ++run;
    try {
      const c = model.config;
      const { ids: prompt, lowered } = encode(el.text.value);
      const cap = Math.min(c.maxLen, MAX_SHOWN), asked = Number(el.count.value);
      const room = cap - prompt.length;
      if (room < 1) throw new Error(`the text is ${prompt.length} tokens; this view shows up to ${cap}`);
      const want = Math.min(asked, room);
      const t0 = performance.now();
      const out = model.generate(prompt, marks() ? { maxTokens: want, stop: 1 } : { maxTokens: want });
      const ms = performance.now() - t0;
      const ids = Int32Array.from([...prompt, ...out]);
      const { attention } = model.forward(ids);
      el.panel.dataset.tokens = JSON.stringify([...out]);
      // why it stopped where it did, when that is before the count asked for
      const why = out.length < want || out.at(-1) === 1 && marks()
        ? 'it stopped at the start-of-text token <s> (id 1), where llama2.c\'s models end a text'
        : want < asked ? `it stopped at ${want}: ${cap === c.maxLen ? `the model reads at most ${c.maxLen} tokens` : `this view `
          + `shows at most ${MAX_SHOWN} tokens`} and the text took ${prompt.length}` : '';
      el.panel.dataset.stop = out.length < want || (out.at(-1) === 1 && marks()) ? 'bos' : want < asked ? 'length' : '';
      status(`${out.length} tokens in ${ms.toFixed(0)} ms (${((out.length / ms) * 1000).toFixed(1)} tokens/s, greedy, with the KV cache)`
        + `${why ? `; ${why}` : ''}.${lowered ? ' Your text was lower-cased: this tokenizer has lower-case pieces only.' : ''}`);
      // token by token: the text grows and each head gains the new token's row
      for (let t = prompt.length; t <= ids.length && mine === run; t++) {
        el.output.textContent = decode(ids.subarray(0, t));
        last = { ids, attention, rows: t };
        draw(ids, attention, t);
        await new Promise((r) => setTimeout(r, 60));
      }
      if (mine === run) el.panel.dataset.done = String(mine);
    } catch (err) {
      status(err.message);
    }
  });
}
