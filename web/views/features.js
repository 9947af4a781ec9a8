// features.js (view): "Features a sparse autoencoder finds". A TopK sparse autoencoder (Gao et al.
// 2024) trains on a point the learner picks (the residual stream after a layer, or a layer's MLP or
// attention output) of the shipped sub-word model or of the model opened in "Open a model file"
// (opened.js), on the project's corpus or the learner's own text, in the model host (../host.js,
// ../features-worker.js) with progress; then every feature is listed by how often it fires
// on held-out text, searchable by token, and a picked feature shows its top-activating contexts (the
// token highlighted), its activation histogram and density, the tokens its decoder direction
// promotes, and a continuation steered along it or with it ablated. The features (JSON) and the SAE
// (safetensors) can be downloaded.
import { download } from './export.js';
import { visible } from '../../lab/codec.js';
import { hostChannel } from '../host.js';
import { onOpened, openedModel } from '../opened.js';

const BEFORE = 10, AFTER = 3; // context pieces shown around a top activation

export function createFeaturesView(el) {
  let worker = null, request = 0, result = null, picked = null;
  let trainedOn = 'shipped'; // the model of the training under way: 'shipped' or an opened model's key
  let shippedLayers = 0; // the shipped sub-word model's layers (panels.js tells them)

  // the points an autoencoder can read, of the model picked: the residual stream after each layer
  // (the shipped model's only choice), and each layer's attention and MLP outputs for an opened one
  function fillPoints() {
    const o = el.model.value === 'opened' ? openedModel() : null;
    const layers = o ? o.config.layers : shippedLayers;
    const before = el.layer.value;
    const options = [];
    for (let l = 0; l < layers; l++) {
      options.push(new Option(`residual stream after layer ${l + 1}`, `blocks.${l}.hook_resid_post`));
      if (o) options.push(new Option(`layer ${l + 1}'s MLP output`, `blocks.${l}.hook_mlp_out`), new Option(`layer ${l + 1}'s attention output`, `blocks.${l}.hook_attn_out`));
    }
    el.layer.replaceChildren(...options);
    el.layer.value = options.some((x) => x.value === before) ? before : `blocks.${Math.floor((layers - 1) / 2)}.hook_resid_post`; // the middle layer
  }
  // an opened model can be picked (and is, when it opens); closing it goes back to the shipped one
  onOpened((o) => {
    const options = [new Option('the shipped sub-word model (fortunes-bpe)', 'shipped')];
    if (o) options.push(new Option(`opened: ${o.name}`, 'opened'));
    el.model.replaceChildren(...options);
    el.model.value = o ? 'opened' : 'shipped';
    el.model.closest('.field').hidden = !o;
    fillPoints();
    // what was trained on a model that is gone goes with it (the host freed its autoencoder)
    if (result && result.model !== 'shipped' && result.model !== o?.key) {
      request++;
      result = null;
      picked = null;
      busy(false);
      el.browser.hidden = true;
      el.saveJson.disabled = el.saveSae.disabled = true;
      el.panel.dataset.state = 'idle';
      el.status.textContent = 'The model the autoencoder read was closed, and the autoencoder with it: train one again.';
    }
  });
  el.model.addEventListener('change', fillPoints);
  el.source.addEventListener('change', () => { el.text.closest('.field').hidden = el.source.value !== 'yours'; });

  function start() {
    if (worker) return worker;
    worker = hostChannel('features'); // a task of the model host (host.js)
    worker.onmessage = (e) => receive(e.data);
    worker.onerror = (e) => {
      el.status.textContent = `The feature worker failed: ${e.message || 'it could not load'}`;
      el.panel.dataset.state = 'error';
      busy(false);
    };
    return worker;
  }

  function busy(on) {
    el.train.disabled = on;
    el.stop.disabled = !on;
    el.panel.dataset.running = on ? '1' : '0';
  }

  el.train.addEventListener('click', () => {
    request++;
    busy(true);
    el.panel.dataset.state = 'training';
    el.progress.value = 0;
    const o = el.model.value === 'opened' ? openedModel() : null;
    el.status.textContent = `Reading the text with ${o ? o.name : 'the shipped model'} in a worker…`;
    trainedOn = o ? o.key : 'shipped';
    start().postMessage({ type: 'train', id: request, model: o ? o.key : 'shipped', hook: el.layer.value, times: Number(el.size.value),
      k: Number(el.k.value), steps: Number(el.steps.value), text: el.source.value === 'yours' ? el.text.value : null });
  });
  el.stop.addEventListener('click', () => worker?.postMessage({ type: 'stop' }));
  el.search.addEventListener('input', () => list());
  el.sort.addEventListener('change', () => list());
  el.steer.addEventListener('click', () => steer('add'));
  el.ablate.addEventListener('click', () => steer('ablate'));
  el.strength.addEventListener('input', () => { el.strengthOut.textContent = el.strength.value; });
  el.saveJson.addEventListener('click', () => {
    if (!result) return;
    const json = { hook: result.hook, config: result.config, heldOutFvu: result.fvu, features: result.features.map((f) => ({
      id: f.id, density: f.density, max: f.max, mean: f.mean, histogram: f.hist,
      top: f.top.map((c) => ({ context: context(c.pos).map((p) => p.text).join(''), token: result.labels[c.pos], value: c.value })),
      promotes: f.promoted.map((p) => p.text) })) };
    download('sae-features.json', new Blob([JSON.stringify(json, null, 1)], { type: 'application/json' }));
  });
  el.saveSae.addEventListener('click', () => worker?.postMessage({ type: 'save', id: request }));

  function receive(msg) {
    if (msg.type === 'saved') {
      download('sae.safetensors', new Blob([msg.bytes], { type: 'application/octet-stream' }));
      return;
    }
    if (msg.id !== request) return;
    if (msg.type === 'reading') {
      el.progress.max = msg.total;
      el.progress.value = msg.done;
      el.status.textContent = `Reading the text through the model: ${msg.done.toLocaleString('en')} of ${msg.total.toLocaleString('en')} tokens…`;
    } else if (msg.type === 'progress') {
      el.progress.max = msg.steps;
      el.progress.value = msg.step;
      el.status.textContent = `Training: step ${msg.step} of ${msg.steps}, fraction of variance unexplained ${msg.fvu.toFixed(3)}, `
        + `${msg.l0} features on per token, ${msg.dead} dead`;
    } else if (msg.type === 'stopped') {
      busy(false);
      el.panel.dataset.state = result ? 'ready' : 'idle';
      el.status.textContent = `Stopped at step ${msg.step}.`;
    } else if (msg.type === 'trained') {
      busy(false);
      result = { ...msg, model: trainedOn, byId: new Map(msg.features.map((f) => [f.id, f])) };
      picked = null;
      const alive = msg.features.filter((f) => f.fires > 0).length;
      el.status.textContent = `Trained ${msg.config.dSae} features (k = ${msg.config.k}) on ${msg.hook} over ${msg.trainTokens.toLocaleString('en')} `
        + `tokens in ${(msg.ms / 1000).toFixed(1)} s. On ${msg.heldTokens.toLocaleString('en')} held-out tokens it leaves `
        + `${(100 * msg.fvu).toFixed(1)}% of the variance unexplained; ${alive} features fire there, ${msg.dead} `
        + `(${(100 * msg.dead / msg.config.dSae).toFixed(1)}%) are dead.${msg.note ? ` ${msg.note}` : ''}`;
      el.panel.dataset.state = 'ready';
      el.panel.dataset.fvu = String(msg.fvu);
      el.panel.dataset.dead = String(msg.dead);
      el.saveJson.disabled = el.saveSae.disabled = false;
      el.browser.hidden = false;
      list();
      const first = el.list.querySelector('button');
      if (first) pick(Number(first.dataset.feature));
    } else if (msg.type === 'steered') {
      el.steered.replaceChildren(line('without', msg.prompt, msg.plain), line(msg.mode === 'ablate' ? 'ablated' : 'steered', msg.prompt, msg.steered));
      el.panel.dataset.steer = 'ready';
    } else if (msg.type === 'error') {
      if (msg.request === 'steer') {
        el.steered.textContent = msg.message;
        el.panel.dataset.steer = 'error';
        return;
      }
      busy(false);
      el.panel.dataset.state = 'error';
      el.status.textContent = `The autoencoder did not train: ${msg.message}`;
    }
  }

  function line(label, prompt, cont) {
    const p = document.createElement('p');
    p.className = `steer-${label}`;
    const b = document.createElement('strong');
    b.textContent = `${label}: `;
    const ins = document.createElement('ins');
    ins.textContent = cont;
    p.append(b, prompt, ins);
    return p;
  }

  // the most common token of a feature's top contexts
  const mainToken = (f) => {
    const counts = new Map();
    for (const c of f.top) counts.set(result.labels[c.pos], (counts.get(result.labels[c.pos]) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
  };

  function list() {
    if (!result) return;
    const q = el.search.value.trim().toLowerCase();
    const shown = result.features.filter((f) => f.fires > 0 && (!q || f.top.some((c) => result.labels[c.pos].toLowerCase().includes(q))
      || f.promoted.some((p) => p.text.toLowerCase().includes(q))));
    const by = el.sort.value;
    shown.sort((a, b) => (by === 'max' ? b.max - a.max : by === 'rare' ? a.density - b.density : b.density - a.density));
    el.count.textContent = `${shown.length} feature${shown.length === 1 ? '' : 's'}${q ? ` matching “${q}”` : ''}`;
    el.list.replaceChildren(...shown.slice(0, 120).map((f) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'feature-chip';
      b.dataset.feature = String(f.id);
      b.textContent = `#${f.id} “${visible(mainToken(f))}” ${(100 * f.density).toFixed(1)}%`;
      b.title = `feature ${f.id}: fires on ${(100 * f.density).toFixed(2)}% of held-out tokens; its top contexts' most common token is “${mainToken(f)}”`;
      b.setAttribute('aria-pressed', String(f.id === picked));
      b.addEventListener('click', () => pick(f.id));
      return b;
    }));
  }

  // pieces around a position of the held-out text: [{ text, hit }]
  function context(pos) {
    const out = [];
    for (let p = Math.max(0, pos - BEFORE); p <= Math.min(result.labels.length - 1, pos + AFTER); p++) out.push({ text: result.labels[p], hit: p === pos });
    return out;
  }

  function pick(id) {
    picked = id;
    const f = result.byId.get(id);
    for (const b of el.list.querySelectorAll('button')) b.setAttribute('aria-pressed', String(Number(b.dataset.feature) === id));
    el.title.textContent = `Feature ${id}: fires on ${(100 * f.density).toFixed(2)}% of held-out tokens (${f.fires}), at most ${f.max.toFixed(2)}, ${f.mean.toFixed(2)} on average when on`;
    el.contexts.replaceChildren(...f.top.map((c) => {
      const li = document.createElement('li');
      for (const piece of context(c.pos)) {
        const s = document.createElement(piece.hit ? 'mark' : 'span');
        s.textContent = piece.text.replace(/\n/g, '↵');
        li.append(s);
      }
      const v = document.createElement('span');
      v.className = 'feature-value';
      v.textContent = ` ${c.value.toFixed(2)}`;
      li.append(v);
      return li;
    }));
    const top = Math.max(1, ...f.hist);
    el.hist.replaceChildren(...f.hist.map((n, b) => {
      const bar = document.createElement('span');
      bar.style.height = `${Math.max(n ? 2 : 0, Math.round((40 * n) / top))}px`;
      bar.title = `${n} activation${n === 1 ? '' : 's'} in (${((b * f.max) / f.hist.length).toFixed(2)}, ${(((b + 1) * f.max) / f.hist.length).toFixed(2)}]`;
      return bar;
    }));
    el.promoted.textContent = result.promotes === false ? ''
      : f.promoted.length ? `Its direction promotes: ${f.promoted.map((p) => `“${visible(p.text)}”`).join(', ')}`
        : 'Its direction promotes no printable token strongly.';
    el.panel.dataset.picked = String(id);
    el.steered.replaceChildren();
  }

  function steer(mode) {
    if (picked === null) return;
    el.panel.dataset.steer = 'running';
    el.steered.textContent = 'Generating…';
    worker.postMessage({ type: 'steer', id: request, feature: picked, mode, strength: Number(el.strength.value), prompt: el.prompt.value });
  }

  return {
    update(state, form, layers) {
      if (shippedLayers === layers) return;
      shippedLayers = layers;
      if (el.model.value !== 'opened') fillPoints();
    },
  };
}
