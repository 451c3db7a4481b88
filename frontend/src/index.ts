// The Leaks tab. TensorBoard loads this module in the plugin iframe and calls
// render(). All requests are relative to the iframe's base URL.

import uplotCss from 'uplot/dist/uPlot.min.css';
import {App} from './app';
import {live} from './panel';
import styles from './styles.css';
import {TensorBoardChannel, watchTheme} from './tensorboard';

declare global {
  interface Window {
    /** What the tab holds now (panel.ts's live counts): read by the browser tests, to find leaks. */
    tbLeakfinder?: {live: typeof live};
  }
}

let started = false;

export async function render(): Promise<void> {
  if (started) return;
  started = true;
  window.tbLeakfinder = {live};
  const style = document.createElement('style');
  style.textContent = `${uplotCss}\n${styles}`;
  document.head.appendChild(style);
  const meta = document.createElement('meta');
  meta.name = 'viewport';
  meta.content = 'width=device-width, initial-scale=1';
  document.head.appendChild(meta);
  const channel = new TensorBoardChannel(window.parent && window.parent !== window ? window.parent : null);
  const app = new App(channel);
  document.documentElement.dataset.theme = watchTheme((theme) => app.setTheme(theme));
  document.body.appendChild(app.root);
  await app.start();
}
