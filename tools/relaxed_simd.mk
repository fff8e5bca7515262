# relaxed_simd.mk - the relaxed-SIMD builds of the wasm modules, included by
# the Makefile.  The files with hand-written SIMD kernels (RELAXED_SRC) are
# compiled again by clang 19 with -mrelaxed-simd, where they use
# f32x4.relaxed_madd (a fused multiply-add where the CPU has FMA), and take
# the place of their SIMD128 objects in each module; every other object is
# the plain module's, linked the same way.  The loaders take these files
# where the engine validates relaxed SIMD (web/runtime/simd.js, which names
# the same files).  Debian's binaryen 108 cannot read the final relaxed
# opcodes, so the npm binaryen of package.json shrinks these modules; a
# custom section "rlx.simd" holding "relaxed" marks them (the loaders report
# it; the plain modules have none).
RELAXED_CC       ?= clang-19
RELAXED_WASM_OPT ?= node_modules/binaryen/bin/wasm-opt
RELAXED_SRC      := src/cpu/gemm_wasm.c src/cpu/k_matmul_q_wasm.c
WEB_WASM_RELAXED := web/pkg/rlx_web_relaxed.wasm
LLM_WASM_RELAXED := web/pkg/rlx_llm_relaxed.wasm
LLM_TRAIN_WASM_RELAXED := web/pkg/rlx_llm_train_relaxed.wasm
OPCASES_RELAXED  := build/wasm-tests/opcases_relaxed.wasm
# What node needs to run them: Node 20 validates relaxed SIMD only with this
# flag (later versions have it on and may not know the flag).
NODE_RELAXED_FLAG = $(shell node --experimental-wasm-relaxed-simd -e 0 2>/dev/null && echo --experimental-wasm-relaxed-simd)
# The Node tests make test-node runs again on the relaxed builds
# (RLX_TEST_SIMD=relaxed): the kernels' op cases, gradients and training
# steps, the language models and their fine-tuning, the threaded builds
# of both modules, and which build the loaders take.
RELAXED_TESTS := tests/node/opcases.test.mjs tests/node/gradcases.test.mjs tests/node/llm_wasm.test.mjs \
                 tests/node/llm_finetune_wasm.test.mjs tests/node/llm_threads.test.mjs tests/node/web_threads.test.mjs \
                 tests/node/llm_finetune_threads.test.mjs tests/node/simd.test.mjs

build/wasm-relaxed/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@command -v $(RELAXED_CC) >/dev/null || { echo "$(RELAXED_CC) is missing: run make setup"; exit 1; }
	$(RELAXED_CC) $(WASM_CFLAGS) -mrelaxed-simd -c $< -o $@
# $(call relaxed,OBJECTS): OBJECTS with the relaxed builds of RELAXED_SRC in
# place of their plain ones (build/wasm/ or build/wasm-llm/).
relaxed = $(foreach o,$(1),$(if $(filter $(RELAXED_SRC:%.c=%.o),$(patsubst build/wasm-llm/%,%,$(o:build/wasm/%=%))),\
            build/wasm-relaxed/$(patsubst build/wasm-llm/%,%,$(o:build/wasm/%=%)),$(o)))
# $(call relaxed_opt,LINKED,OUT): wasm-opt with the plain module's flags, then
# the mark (a custom section: id 0, 16 bytes, name of 8 bytes, payload).
define relaxed_opt
@test -f $(RELAXED_WASM_OPT) || { echo "$(RELAXED_WASM_OPT) is missing: run make setup (npm ci)"; exit 1; }
$(RELAXED_WASM_OPT) $(WASM_OPT_FLAGS) --enable-relaxed-simd $(1) -o $(2).tmp
printf '\0\20\10rlx.simdrelaxed' >> $(2).tmp
mv -f $(2).tmp $(2)
endef

$(WEB_WASM_RELAXED): $(call relaxed,$(WEB_LIB_OBJ)) $(WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) -o build/wasm/rlx_web_relaxed.linked.wasm $(WEB_OBJ) $(call relaxed,$(WEB_LIB_OBJ))
	$(call relaxed_opt,build/wasm/rlx_web_relaxed.linked.wasm,$@)
$(LLM_WASM_RELAXED): $(call relaxed,$(LLM_LIB_OBJ)) $(LLM_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_relaxed.linked.wasm $(LLM_WEB_OBJ) $(call relaxed,$(LLM_LIB_OBJ))
	$(call relaxed_opt,build/wasm/rlx_llm_relaxed.linked.wasm,$@)
$(LLM_TRAIN_WASM_RELAXED): $(call relaxed,$(LLM_TRAIN_LIB_OBJ)) $(LLM_TRAIN_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_train_relaxed.linked.wasm $(LLM_TRAIN_WEB_OBJ) \
	  $(call relaxed,$(LLM_TRAIN_LIB_OBJ))
	$(call relaxed_opt,build/wasm/rlx_llm_train_relaxed.linked.wasm,$@)
# The op cases (tests/node/opcases.test.mjs, gradcases.test.mjs run both).
$(OPCASES_RELAXED): $(call relaxed,$(WASM_OBJ)) $(WASM_TEST_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) -o $@ $(WASM_TEST_OBJ) $(call relaxed,$(WASM_OBJ))
wasm: $(WEB_WASM_RELAXED) $(LLM_WASM_RELAXED) $(LLM_TRAIN_WASM_RELAXED) $(OPCASES_RELAXED)
