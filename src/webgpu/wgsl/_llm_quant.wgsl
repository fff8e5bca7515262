// _llm_quant.wgsl - GGUF-typed weight rows read in place (included by the
// llm_*_q.wgsl kernels of one weight table).  The includer declares the
// weights as
//   @group(0) @binding(k) var<storage, read> w: array<u32>;
// the op's i32 words unchanged; _llm_qdecode.wgsl decodes them (deq8).

fn wword(i: u32) -> u32 { return w[i]; }

//!include _llm_qdecode.wgsl
