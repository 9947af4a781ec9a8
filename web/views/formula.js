// formula.js: the formula of the chosen form, as text beside the views, with its plain words, cost and
// paper: all from the library's registry (lib.forms), through forms.js and about.js.
import { aboutForm } from '../about.js';
import { formulaOf } from '../../lab/forms.js';

/** elements: { formula, title, note, about (a paragraph for the form's plain words and its paper) }. */
export function createFormulaView({ formula, title, note, about }) {
  return {
    /** view: what the heatmap shows (maxLen: the length of forms sized by one); a mixture adds alphas (heads * C) and its components. */
    render(form, { causal, heads }, { alphas, components, maxLen } = {}) {
      title.textContent = form.label;
      formula.textContent = formulaOf(form);
      const words = aboutForm(form);
      about.replaceChildren();
      if (words) {
        about.append(words.text);
        if (words.cost) about.append(` Cost ${words.cost}.`);
        if (words.paper) {
          const link = document.createElement('a');
          link.href = words.paper.url;
          link.textContent = words.paper.cite;
          link.target = '_blank';
          link.rel = 'noopener';
          about.append(' Paper: ', link);
        }
      }
      const entry = form.entry ?? form;
      const notes = [];
      if (form.family === 'linear') {
        notes.push('The fast path never builds A; the heatmap shows the matrix it implies.');
      }
      if (entry.fixedLength && maxLen) {
        notes.push(`Its parameters are sized by a maximum length L = ${maxLen}; the heatmap shows the top-left n × n block.`);
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
