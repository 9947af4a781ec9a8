// formula.js: the formula of the chosen form, as text beside the views (from docs/attention-forms.md).
import { aboutForm } from '../about.js';
import { formulaOf } from '../forms.js';

/** elements: { formula, title, note, about (a paragraph for the form's plain words and its paper) }. */
export function createFormulaView({ formula, title, note, about }) {
  return {
    /** view: what the heatmap shows; a mixture adds alphas (heads * C) and its components. */
    render(form, { causal, heads }, { alphas, components } = {}) {
      title.textContent = form.label;
      formula.textContent = formulaOf(form.id);
      const words = aboutForm(form.id);
      about.replaceChildren();
      if (words) {
        const link = document.createElement('a');
        link.href = words.paper.url;
        link.textContent = words.paper.cite;
        link.target = '_blank';
        link.rel = 'noopener';
        about.append(`${words.text} Paper: `, link, '.');
      }
      const notes = [];
      if (form.family === 'linear') {
        notes.push('The fast path never builds A; the heatmap shows the matrix it implies.');
      }
      if (form.family === 'synth') {
        notes.push('The heatmap shows softmax of the synthesized logits B (maximum length L = 128, top-left n × n block).');
      }
      if (causal && form.causal) notes.push('Causal: the upper triangle (j > i) is zero.');
      if (alphas && components) {
        const c = components.length;
        const perHead = Array.from({ length: heads }, (_, h) => `head ${h + 1}: `
          + components.map((name, i) => `${name} ${alphas[h * c + i].toFixed(3)}`).join(', '));
        notes.push(`Mixture weights α (${perHead.join('; ')}).`);
      }
      note.textContent = notes.join(' ');
    },
  };
}
