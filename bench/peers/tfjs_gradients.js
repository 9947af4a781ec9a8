// tfjs_gradients.js: registers tfjs-core's gradient functions, which the Node entry point of
// tfjs-core (dist/tf-core.node.js) leaves out (the @tensorflow/tfjs union package adds them by
// importing dist/register_all_gradients.js). That file is an ES module whose relative imports
// have no extensions, which Node's resolver refuses, so a tiny resolve hook adds ".js" for
// imports inside tfjs-core's dist folder. The gradients land in tfjs's global registry, which
// the CommonJS entry point shares, so tf.variableGrads then works on the wasm backend.
import { register } from 'node:module';

const hook = `
export async function resolve(specifier, context, next) {
  const inTfjs = context.parentURL && context.parentURL.includes('/@tensorflow/tfjs-core/dist/');
  if (inTfjs && specifier.startsWith('.') && !specifier.endsWith('.js')) {
    try { return await next(specifier + '.js', context); } catch { return next(specifier + '/index.js', context); }
  }
  return next(specifier, context);
}`;

let done = null;

export function registerTfjsGradients() {
  done ??= (async () => {
    register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
    await import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
  })();
  return done;
}
