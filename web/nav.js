// nav.js - the pages' navigation, from one list: fills every <nav data-pages>
// with a link to each page, the current one marked. Every page loads it, so
// it also starts the page's cross-origin isolation (isolation.js).
import './isolation.js';
export const PAGES = [
  ['index.html', 'MLP demo'],
  ['train.html', 'Train on Fashion-MNIST'],
  ['vision-bench.html', 'Vision benchmark'],
  ['cluster.html', 'Tab cluster'],
  ['generate.html', 'Generate text'],
  ['finetune.html', 'Fine-tune (LoRA)'],
];

for (const nav of document.querySelectorAll('nav[data-pages]')) {
  const here = location.pathname.split('/').pop() || 'index.html';
  nav.replaceChildren(...PAGES.map(([href, label]) => {
    const a = document.createElement('a');
    a.href = `./${href}`;
    a.textContent = label;
    if (href === here) a.setAttribute('aria-current', 'page');
    return a;
  }));
}
