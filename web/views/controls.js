// controls.js: the settings form. It shows the state and reports edits as patches; it never
// computes anything itself. Every control has a label and works from the keyboard.
import { LIMITS } from '../state.js';
import { FAMILY_LABELS } from '../../lab/forms.js';

function fillSelect(select, values, label = String) {
  select.replaceChildren(...values.map((v) => new Option(label(v), String(v))));
}

export function createControls(el, onChange) {
  fillSelect(el.d, LIMITS.dims);
  fillSelect(el.heads, LIMITS.heads);
  el.n.min = LIMITS.n.min;
  el.n.max = LIMITS.n.max;

  const intValue = (input, lo, hi) => {
    const x = Number(input.value);
    return input.value !== '' && Number.isInteger(x) && x >= lo && x <= hi ? x : undefined;
  };
  el.form.addEventListener('change', () => onChange({ form: el.form.value }));
  for (const radio of el.input) radio.addEventListener('change', () => onChange({ input: radio.value }));
  el.text.addEventListener('input', () => onChange({ text: el.text.value }));
  el.n.addEventListener('input', () => {
    const n = intValue(el.n, LIMITS.n.min, LIMITS.n.max);
    el.n.setAttribute('aria-invalid', String(n === undefined));
    if (n !== undefined) onChange({ n });
  });
  el.seed.addEventListener('input', () => {
    const seed = intValue(el.seed, LIMITS.seed.min, LIMITS.seed.max);
    el.seed.setAttribute('aria-invalid', String(seed === undefined));
    if (seed !== undefined) onChange({ seed });
  });
  el.d.addEventListener('change', () => onChange({ d: Number(el.d.value) }));
  el.heads.addEventListener('change', () => onChange({ heads: Number(el.heads.value) }));
  el.causal.addEventListener('change', () => onChange({ causal: el.causal.checked }));
  el.scale.addEventListener('change', () => onChange({ scale: el.scale.value }));

  let formsKey = '';
  return {
    /** Shows the state; forms: the available forms (grouped by family in the picker). */
    update(state, forms, form) {
      const key = forms.map((f) => f.id).join();
      if (key !== formsKey) {
        formsKey = key;
        const groups = new Map();
        for (const f of forms) {
          if (!groups.has(f.family)) {
            const g = document.createElement('optgroup');
            g.label = FAMILY_LABELS[f.family] ?? f.family[0].toUpperCase() + f.family.slice(1);
            groups.set(f.family, g);
          }
          groups.get(f.family).append(new Option(f.label, f.id));
        }
        el.form.replaceChildren(...groups.values());
      }
      el.form.value = form.id;
      for (const radio of el.input) radio.checked = radio.value === state.input;
      if (el.text.value !== state.text) el.text.value = state.text;
      if (Number(el.n.value) !== state.n || el.n.value === '') el.n.value = String(state.n);
      if (Number(el.seed.value) !== state.seed || el.seed.value === '') el.seed.value = String(state.seed);
      el.textField.hidden = state.input !== 'tokens';
      el.nField.hidden = state.input !== 'random';
      el.d.value = String(state.d);
      for (const opt of el.heads.options) opt.disabled = state.d % Number(opt.value) !== 0;
      el.heads.value = String(state.heads);
      // a form with one mode only (no causal form, or no non-causal one) is shown in that mode
      const onlyCausal = form.nonCausal === false;
      el.causal.checked = onlyCausal || (state.causal && form.causal);
      el.causal.disabled = !form.causal || onlyCausal;
      el.scale.value = state.scale;
      el.causalNote.hidden = form.causal && !onlyCausal;
      el.causalNote.textContent = !form.causal ? `${form.label} has no causal form.`
        : onlyCausal ? `${form.label} has only a causal form: shown causal.` : '';
    },
  };
}
