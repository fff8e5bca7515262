// test-models.js - the tiny seeded test models the language-model pages
// offer (make lm-fixtures; make copies them to web/data/lm, the Makefile's
// LM_WEB_FIXTURES), and where they are on this server.
export const TEST_MODELS = ['llama-q4_0', 'qwen2-q8_0', 'qwen3-q4_k'];
export const testModelUrl = (name) => new URL(`./data/lm/${name}.gguf`, import.meta.url);
