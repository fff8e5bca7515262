# bench.mk - `make bench`: GEMM GFLOP/s natively (ours and OpenBLAS, one
# thread) and in wasm under Node (ours, SIMD128 and relaxed SIMD, next to
# TensorFlow.js's wasm backend);
# the cluster over tabs and browsers (bench_cluster.mjs) and, simulated, at
# 10 / 100 / 1,000 ranks as a star and a tree (cluster_scale.mjs).
# Included by the Makefile; results go to build/bench/gemm.json.

BENCH_DIR := build/bench
# Linked without --strip-all: clang runs wasm-opt after linking, and without
# the target_features section wasm-opt rejects the SIMD128 code.
BENCH_WASM_LDFLAGS := -mexec-model=reactor -Wl,-z,stack-size=1048576 -Wl,--initial-memory=4194304

$(BENCH_DIR)/gemm_native: bench/bench_gemm_native.c bench/bench_clock.h build/librlx.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I/usr/include/x86_64-linux-gnu/openblas-pthread -o $@ $< build/librlx.a -lopenblas $(LDLIBS)

$(BENCH_DIR)/gemm_bench.wasm: bench/bench_gemm_wasm.c $(WASM_OBJ) $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) $(BENCH_WASM_LDFLAGS) -o $@ $< $(WASM_OBJ)
# The same over the relaxed-SIMD kernels (tools/relaxed_simd.mk), linked
# without -O: binaryen 108, which clang would run, cannot read them.
$(BENCH_DIR)/gemm_bench_relaxed.wasm: bench/bench_gemm_wasm.c $(call relaxed,$(WASM_OBJ)) $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -c $< -o $(BENCH_DIR)/bench_gemm_wasm.o
	$(WASMCC) $(WASM_TARGET) $(BENCH_WASM_LDFLAGS) -o $@ $(BENCH_DIR)/bench_gemm_wasm.o $(call relaxed,$(WASM_OBJ))

bench: $(BENCH_DIR)/gemm_native $(BENCH_DIR)/gemm_bench.wasm $(BENCH_DIR)/gemm_bench_relaxed.wasm
	node $(NODE_RELAXED_FLAG) bench/bench_gemm.mjs --native=$(BENCH_DIR)/gemm_native --wasm=$(BENCH_DIR)/gemm_bench.wasm \
	  --wasm-relaxed=$(BENCH_DIR)/gemm_bench_relaxed.wasm --out=$(BENCH_DIR)/gemm.json
	node bench/bench_cluster.mjs --tabs=1,2,3 --webrtc --out=$(BENCH_DIR)/cluster.json
	node bench/cluster_scale.mjs --sizes=10,100,1000 --out=$(BENCH_DIR)/cluster_scale.json

# Model speed (bench/bench_models.mjs): training steps of the four vision
# models at batch 1 and 64 and the W4 transformer forward, natively (the
# binary below, on the public C API) and in wasm under Node through
# web/pkg/rlx_web.js next to TensorFlow.js's wasm backend, iterations
# interleaved; results go to build/bench/models.json.  Then the download
# sizes of the browser module (bench/size.mjs).  Both run before the GEMM
# table above.
$(BENCH_DIR)/models_native: bench/bench_models_native.c build/librlx.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< build/librlx.a $(LDLIBS)

.PHONY: bench-models bench-size
bench-models: $(BENCH_DIR)/models_native web/pkg/rlx_web.wasm $(WEB_WASM_RELAXED) | $(BENCH_DIR)/gemm_native $(BENCH_DIR)/gemm_bench.wasm
	RLX_THREADS=1 node $(NODE_RELAXED_FLAG) bench/bench_models.mjs --native=$(BENCH_DIR)/models_native --out=$(BENCH_DIR)/models.json
bench-size: web/pkg/rlx_web.wasm | bench-models
	node bench/size.mjs
bench: bench-models bench-size

# What sampling under a grammar costs per token (bench/bench_grammar_native.c):
# unconstrained and under a JSON Schema's grammar, greedy and at a
# temperature, one thread, on random-weight models whose byte-level BPE
# vocabularies (8k and 32k tokens) make_test_lm trains from the repository's
# own text (fewer tokens when the text runs out of pairs: the line printed
# gives the count).
GRAMMAR_BENCH_TEXT := $(sort $(wildcard README.md docs/*.md src/*/*.c src/*/*.h include/*.h tests/c/*.c web/runtime/*.js \
                        tests/node/*.mjs python/rlx/*.py tools/*.c bench/*.mjs))
$(BENCH_DIR)/grammar_corpus.txt: $(GRAMMAR_BENCH_TEXT)
	@mkdir -p $(dir $@)
	cat $^ > $@
$(BENCH_DIR)/lm-vocab%.gguf: build/make_test_lm $(BENCH_DIR)/grammar_corpus.txt
	build/make_test_lm --arch qwen2 --type q8_0 --n-vocab $* --corpus $(BENCH_DIR)/grammar_corpus.txt --out $@
$(BENCH_DIR)/grammar_native: bench/bench_grammar_native.c build/librlx.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< build/librlx.a $(LDLIBS)

.PHONY: bench-grammar
bench-grammar: $(BENCH_DIR)/grammar_native $(BENCH_DIR)/lm-vocab8192.gguf $(BENCH_DIR)/lm-vocab32768.gguf
	$(BENCH_DIR)/grammar_native $(BENCH_DIR)/lm-vocab8192.gguf $(BENCH_DIR)/lm-vocab32768.gguf
bench: bench-grammar

# WebGPU model speed (bench/webgpu_models.mjs): training steps of the vision
# models and the W4 transformer forward on WebGPU (Dawn in Node), ours next to
# TensorFlow.js's webgpu backend in the same process; results go to
# build/bench/webgpu_models.json.  Here (SwiftShader) it runs small settings;
# on a GPU machine run it directly (see the script's header).  The tfjs side
# is bundled into one file (bench-gpu-bundle) so it can be carried to a
# machine without node_modules.
GPU_BUNDLE := $(BENCH_DIR)/tfjs-webgpu.mjs
GPU_BUNDLE_BANNER := import { createRequire as rlxCreateRequire } from 'node:module'; const require = rlxCreateRequire(import.meta.url);
$(GPU_BUNDLE): bench/webgpu_tfjs_entry.mjs package.json
	@mkdir -p $(dir $@)
	node_modules/.bin/esbuild $< --bundle --format=esm --platform=node --main-fields=module,main --minify \
	  --log-level=warning "--banner:js=$(GPU_BUNDLE_BANNER)" --outfile=$@

.PHONY: bench-gpu-bundle bench-gpu
bench-gpu-bundle: $(GPU_BUNDLE)
bench-gpu: $(GPU_BUNDLE) web/pkg/rlx_web.wasm
	node bench/webgpu_models.mjs --out=$(BENCH_DIR)/webgpu_models.json
bench: bench-gpu

# WebGL2 training speed (bench/webgl_models.mjs): mnist-mlp and mnist-cnn
# training steps at batch 64 on our WebGL2 executor next to TensorFlow.js's
# webgl backend, interleaved in one headless Chromium page; prints samples/s
# and the ratios; results go to build/bench/webgl.json.
.PHONY: bench-webgl
bench-webgl: web/pkg/rlx_web.wasm
	node bench/webgl_models.mjs --out=$(BENCH_DIR)/webgl.json
bench: bench-webgl

# WebGPU model speed in a browser (bench/webgpu_chromium.mjs): the workloads
# of bench/webgpu_models.mjs (mnist-mlp and mnist-cnn training at batch 16,
# cifar-cnn at batch 4, the W4 forward), ours next to TensorFlow.js's webgpu
# backend, interleaved in one headless Chromium page (WebGPU on SwiftShader);
# fails when the first losses disagree; results go to
# build/bench/webgpu_chromium.json.
.PHONY: bench-gpu-chromium
bench-gpu-chromium: web/pkg/rlx_web.wasm
	node bench/webgpu_chromium.mjs --out=$(BENCH_DIR)/webgpu_chromium.json
bench: bench-gpu-chromium

# Language-model speed (bench/llm.mjs): a SmolLM-135M-shaped llama written
# by build/make_test_lm (q8_0, q4_0; a 512-wide variant for q4_k) into
# build/bench/, a 64-token prompt and 64 greedy tokens: ours in wasm next to
# wllama in one headless Chromium page, ours native (build/rlx) next to
# llama.cpp (node-llama-cpp, installed on demand into tests/llama_ref/),
# one thread each (RLX_THREADS=1; bench-threads has 1 and 2), rounds interleaved; fails when the greedy tokens disagree
# beyond rounding; results go to build/bench/llm.json, and with ours' 8-bit
# activations (--xq8) to build/bench/llm_xq8.json.  RLX_BENCH_QUICK=1:
# a small model, two rounds (under a minute).
.PHONY: bench-llm
bench-llm: build/rlx build/make_test_lm web/pkg/rlx_llm.wasm $(LLM_WASM_RELAXED)
	RLX_THREADS=1 node bench/llm.mjs --out=$(BENCH_DIR)/llm.json
	RLX_THREADS=1 node bench/llm.mjs --xq8 --out=$(BENCH_DIR)/llm_xq8.json
bench: bench-llm

# Threads (bench/bench_threads.c): 1 and 2 threads (BENCH_THREADS) natively
# for GEMM 256 / 512 / 1024 next to OpenBLAS at the same counts, the
# vision training steps at batch 64, adds around the inline threshold, and
# the SmolLM-shaped q8_0 model of bench-llm (64-token prompt, 32 tokens;
# f32 and --xq8 activations), then llama.cpp on the same file at the same
# counts (bench/llm_llamacpp.mjs --threads) where tests/llama_ref has
# node-llama-cpp installed.  JSON lines in build/bench/threads.jsonl.
BENCH_THREADS ?= 1,2
$(BENCH_DIR)/threads_native: bench/bench_threads.c bench/bench_clock.h build/librlx.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I/usr/include/x86_64-linux-gnu/openblas-pthread -o $@ $< build/librlx.a -lopenblas $(LDLIBS)
.PHONY: bench-threads
bench-threads: $(BENCH_DIR)/threads_native build/make_test_lm
	$(BENCH_DIR)/threads_native --threads=$(BENCH_THREADS) | tee $(BENCH_DIR)/threads.jsonl
	@lm=$$(node --input-type=module -e "import {benchModel} from './bench/llm_models.mjs'; \
	  console.log(benchModel('q8_0', {quick: !!process.env.RLX_BENCH_QUICK}))" | tail -1); \
	$(BENCH_DIR)/threads_native --threads=$(BENCH_THREADS) --lm=$$lm | tee -a $(BENCH_DIR)/threads.jsonl; \
	$(BENCH_DIR)/threads_native --threads=$(BENCH_THREADS) --lm=$$lm --xq8 | tee -a $(BENCH_DIR)/threads.jsonl; \
	if [ -d tests/llama_ref/node_modules/node-llama-cpp ]; then for t in $$(echo $(BENCH_THREADS) | tr , ' '); do \
	  printf '{"kind":"llama.cpp","threads":%s,"run":' $$t; node bench/llm_llamacpp.mjs $$lm --threads $$t --tokens 32 \
	    --ids $$(seq -s, 1 64) | tail -1; echo '}'; done | tee -a $(BENCH_DIR)/threads.jsonl; \
	else echo "(llama.cpp: tests/llama_ref/node_modules absent; tests/llama_ref/regenerate.sh installs it)"; fi
bench: bench-threads

# The language-model module on 1 and 2 threads in Node (bench/llm_threads.mjs):
# rlx_llm.wasm for one thread, the threaded build rlx_llm_threads.wasm (helper
# Workers on a shared memory) for two, on bench-llm's SmolLM-shaped q8_0
# model (128-token prompt, 32 greedy tokens), the greedy ids checked equal.
.PHONY: bench-llm-threads
bench-llm-threads: build/make_test_lm web/pkg/rlx_llm.wasm web/pkg/rlx_llm_threads.wasm
	@mkdir -p $(BENCH_DIR)
	node bench/llm_threads.mjs | tee $(BENCH_DIR)/llm_threads.txt
bench: bench-llm-threads

# rlx_web's vision training steps on 1 and 2 threads in Node
# (bench/web_threads.mjs): rlx_web.wasm for one thread, the threaded build
# rlx_web_threads.wasm for two, each step's loss and params checked equal.
.PHONY: bench-web-threads
bench-web-threads: web/pkg/rlx_web.wasm web/pkg/rlx_web_threads.wasm
	@mkdir -p $(BENCH_DIR)
	node bench/web_threads.mjs | tee $(BENCH_DIR)/web_threads.txt
bench: bench-web-threads

# f32 GEMM (256, 512, 1024) in headless Chromium on 1 and 2 threads
# (bench/gemm_chromium.mjs, bench/gemm_page.html): ours through the SDK (the
# build the page picks; rlx_web_threads*.wasm above 1 thread) next to
# TensorFlow.js's wasm backend (threaded SIMD), one page per thread count,
# each size's C checked equal within 1e-4 of max |C| first; results go to
# build/bench/gemm_chromium.json.
.PHONY: bench-gemm-chromium
bench-gemm-chromium: web/pkg/rlx_web.wasm $(WEB_WASM_RELAXED) web/pkg/rlx_web_threads.wasm web/pkg/rlx_web_threads_relaxed.wasm web/rlx.js
	node bench/gemm_chromium.mjs --threads=1,2 --out=$(BENCH_DIR)/gemm_chromium.json
bench: bench-gemm-chromium

# LoRA fine-tuning speed (bench/llm_finetune.mjs): the same SmolLM-shaped
# llama (q8_0, q4_0), rank 8 on attn_q,attn_v, seq 128, batch 4: ours
# natively (one thread) and, where torch, transformers and peft import
# (the GPU machine), PyTorch + peft (bench/peft_lora.py) on the same weights
# and windows; fails when the first losses disagree; results go to
# build/bench/finetune.json.  Then the wasm module in headless Chromium
# (bench/llm_finetune_chromium.mjs, the relaxed-SIMD training build on 1
# thread and its threaded build on 2) next to ours native in the same run,
# for q8_0 and q4_0; then the cluster's share
# of a step spent on the adapter exchange, 1 and 2 Chromium processes over
# WebRTC (bench/llm_cluster.mjs, results in build/bench/llm_cluster.json).
$(BENCH_DIR)/llm_finetune_native: bench/llm_finetune_native.c bench/bench_clock.h build/librlx.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< build/librlx.a $(LDLIBS)
.PHONY: bench-finetune
bench-finetune: $(BENCH_DIR)/llm_finetune_native build/make_test_lm web/pkg/rlx_llm_train.wasm $(LLM_TRAIN_WASM_RELAXED) \
                web/pkg/rlx_llm_train_threads_relaxed.wasm
	RLX_THREADS=1 node bench/llm_finetune.mjs --out=$(BENCH_DIR)/finetune.json
	node bench/llm_finetune_chromium.mjs --type=q8_0
	node bench/llm_finetune_chromium.mjs --type=q4_0
	node bench/llm_cluster.mjs --type=q8_0
bench: bench-finetune

# The benches load web/runtime/, which imports the generated constants.
bench bench-models bench-size bench-gpu bench-webgl bench-gpu-chromium bench-llm bench-finetune bench-gemm-chromium: web/runtime/constants.js
