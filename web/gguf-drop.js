// gguf-drop.js - a .gguf file dropped anywhere on the page: the drop zone
// (an element, shown while files are dragged over the page) and a check of
// what was dropped: exactly one file, named .gguf, whose first bytes are
// "GGUF".  One good file goes to onFile(file); anything else to
// onRefuse(message), a plain sentence, and nothing else happens.
//
//   acceptDrops(document.getElementById('drop-zone'), { onFile, onRefuse });

/** { file } for one GGUF file among files, or { error } saying why not. */
export async function checkGguf(files) {
  if (files.length === 0) return { error: 'nothing to load was dropped (drop one .gguf file)' };
  if (files.length > 1) return { error: `${files.length} files were dropped; drop one .gguf file` };
  const [file] = files;
  if (!/\.gguf$/i.test(file.name)) return { error: `${file.name} is not a .gguf file` };
  let head;
  try {
    head = new Uint8Array(await file.slice(0, 4).arrayBuffer());
  } catch (err) {
    return { error: `cannot read ${file.name} (a folder?): ${err?.message ?? err}` };
  }
  if (String.fromCharCode(...head) !== 'GGUF') return { error: `${file.name} is not a GGUF file (it does not begin with "GGUF")` };
  return { file };
}

export function acceptDrops(zone, { onFile, onRefuse }) {
  let depth = 0; // dragenter / dragleave pairs seen (children fire their own)
  const files = (e) => Array.from(e.dataTransfer?.types ?? []).includes('Files');
  const hide = () => {
    depth = 0;
    zone.hidden = true;
  };
  document.addEventListener('dragenter', (e) => {
    if (!files(e)) return;
    e.preventDefault();
    depth++;
    zone.hidden = false;
  });
  document.addEventListener('dragover', (e) => {
    if (!files(e)) return;
    e.preventDefault(); // allows the drop
    e.dataTransfer.dropEffect = 'copy';
  });
  document.addEventListener('dragleave', (e) => {
    if (files(e) && --depth <= 0) hide();
  });
  document.addEventListener('drop', async (e) => {
    if (!files(e)) return;
    e.preventDefault(); // the browser would open the file instead
    hide();
    const r = await checkGguf(Array.from(e.dataTransfer.files));
    if (r.file) onFile(r.file);
    else onRefuse(r.error);
  });
}
