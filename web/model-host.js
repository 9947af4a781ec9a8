// model-host.js: the model host, the one Worker that owns the wasm instance holding the model opened
// in "Open a model file" and the models the heavy panels run on (host.js is the page's side). Its
// tasks share one library and one opened model (hosted.js); each panel's messages come on its channel
// ({ channel, msg }) and its task answers on the same one. A task's long run pauses between steps
// (setTimeout), so another panel's request, or a Cancel, gets in.
import { openerTask } from './host-opener.js';
import { circuitsTask } from './circuits-worker.js';
import { featuresTask } from './features-worker.js';

const send = (channel) => (msg, transfer = []) => postMessage({ channel, msg }, transfer);
const tasks = {
  opener: openerTask(send('opener')),
  circuits: circuitsTask(send('circuits')),
  features: featuresTask(send('features')),
};

onmessage = (e) => {
  const { channel, msg } = e.data ?? {};
  const task = tasks[channel];
  if (task) task(msg);
  else postMessage({ channel, msg: { type: 'error', id: msg?.id, message: `the model host has no task ${channel}` } });
};
