# wasm_threads.mk - the threaded builds of the language-model module,
# web/pkg/rlx_llm_threads.wasm and its relaxed-SIMD twin
# rlx_llm_threads_relaxed.wasm, included by the Makefile.  web/runtime/llm.js
# loads them where SharedArrayBuffer exists (a cross-origin isolated page, a
# Worker of one, or Node) and options.threads > 1; rlx_llm.wasm and
# rlx_llm_relaxed.wasm stay as they are.  Every object of rlx_llm.wasm is
# compiled again into build/wasm-mt/ with the same optimization and family
# flags plus -matomics -DRLX_WASM_THREADS (rlx_parallel_for then runs on
# the Web Worker pool of src/core/pool_wasm.c instead of inline; the
# allocator takes a spinlock), with src/web_llm_threads/ (the pool's
# exports and stack.S, which sets a Worker's stack pointer).  The module
# imports a shared memory (--import-memory --shared-memory, up to 4 GiB as
# rlx_llm.wasm); wasm-ld then makes the data segments passive and
# initializes them once (__wasm_init_memory, the start function), so each
# Worker instantiates the same module on the same memory.  Debian's
# wasi-libc has no threads build: wasm-ld refuses --shared-memory with its
# objects (dlmalloc.o "was not compiled with 'atomics'"), so the link takes
# --no-check-features; pool_wasm.c says why none of libc's state is touched
# by two threads at once.  Both builds are shrunk by npm's binaryen (as the
# relaxed ones): with Debian's binaryen 108 the threaded module gave other
# logits than the one-thread module in most first loads of a process, where
# the Workers run late (JIT tiers), while the unoptimized module and npm's
# binaryen 132 gave equal logits in every run; of 108's passes,
# --inlining-optimizing added to -O1 is enough for the wrong logits (it
# looks like a plain load moved across an atomic after inlining; not
# pinned down further).  tests/node/llm_threads.test.mjs catches it.
WASM_THREADS_CFLAGS := -matomics -DRLX_WASM_THREADS
WASM_THREADS_LDFLAGS := -Wl,--import-memory -Wl,--shared-memory -Wl,--no-check-features
LLM_WASM_THREADS := web/pkg/rlx_llm_threads.wasm
LLM_WASM_THREADS_RELAXED := web/pkg/rlx_llm_threads_relaxed.wasm

# $(call mt,OBJECTS): their threaded twins under build/wasm-mt/.
mt = $(patsubst build/%,build/wasm-mt/%,$(1))
# The source of an object of build/wasm/ or build/wasm-llm/.
mt_src = $(patsubst build/wasm-llm/%,%,$(patsubst build/wasm/%,%,$(1:.o=.c)))
# The flags each object gets in the Makefile (target-specific there).
mt_flags = $(strip \
  $(if $(filter build/wasm-llm/src/core/backends.o,$(1)),-Oz -DRLX_WITHOUT_WEBGPU -DRLX_WITHOUT_WEBGL,\
  $(if $(filter $(LLM_O3_OBJ),$(1)),-O3,\
  $(if $(filter $(LLM_O2_OBJ),$(1)),-O2,\
  $(if $(filter build/wasm-llm/%,$(1)),$(if $(filter build/wasm-llm/src/cpu/%,$(1)),-O2,-Oz) $(MODULE_FAMILIES_llm),\
  $(if $(filter $(WASM_O3_KERNELS:%=build/wasm/src/cpu/%.o),$(1)),,\
  $(if $(filter $(WASM_OS_KERNELS:%=build/wasm/src/cpu/%.o),$(1)),-Os,\
  $(if $(filter build/wasm/src/cpu/%,$(1)),$(if $(filter $(WASM_OZ_KERNELS:%=build/wasm/src/cpu/%.o),$(1)),-Oz,-O2),\
  -Oz))))))))
define mt_rule
$(call mt,$(1)): $(call mt_src,$(1)) $$(HDRS)
	@mkdir -p $$(dir $$@)
	$$(WASMCC) $$(WASM_CFLAGS) $(call mt_flags,$(1)) $$(WASM_THREADS_CFLAGS) -c $$< -o $$@
endef
LLM_MT_PLAIN := $(LLM_LIB_OBJ) $(LLM_WEB_OBJ)
$(foreach o,$(sort $(LLM_MT_PLAIN)),$(eval $(call mt_rule,$(o))))
LLM_MT_OBJ := $(call mt,$(LLM_MT_PLAIN)) build/wasm-mt/src/web_llm_threads/exports.o build/wasm-mt/src/web_llm_threads/stack.o
build/wasm-mt/src/web_llm_threads/exports.o: src/web_llm_threads/exports.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz $(WASM_THREADS_CFLAGS) -c $< -o $@
build/wasm-mt/src/web_llm_threads/stack.o: src/web_llm_threads/stack.S
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_TARGET) $(WASM_THREADS_CFLAGS) -c $< -o $@
# The relaxed-SIMD kernels (relaxed_simd.mk's RELAXED_SRC), threaded.
LLM_MT_RELAXED_OBJ := $(foreach o,$(LLM_MT_OBJ),$(if $(filter $(RELAXED_SRC:%.c=%.o),$(patsubst build/wasm-mt/wasm-llm/%,%,\
                        $(o:build/wasm-mt/wasm/%=%))),build/wasm-mt-relaxed/$(patsubst build/wasm-mt/wasm-llm/%,%,\
                        $(o:build/wasm-mt/wasm/%=%)),$(o)))
build/wasm-mt-relaxed/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@command -v $(RELAXED_CC) >/dev/null || { echo "$(RELAXED_CC) is missing: run make setup"; exit 1; }
	$(RELAXED_CC) $(WASM_CFLAGS) -mrelaxed-simd $(WASM_THREADS_CFLAGS) -c $< -o $@

$(LLM_WASM_THREADS): $(LLM_MT_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) $(WASM_THREADS_LDFLAGS) -o build/wasm/rlx_llm_threads.linked.wasm $(LLM_MT_OBJ)
	@test -f $(RELAXED_WASM_OPT) || { echo "$(RELAXED_WASM_OPT) is missing: run make setup (npm ci)"; exit 1; }
	$(RELAXED_WASM_OPT) $(WASM_OPT_FLAGS) --enable-threads build/wasm/rlx_llm_threads.linked.wasm -o $@.tmp
	mv -f $@.tmp $@
$(LLM_WASM_THREADS_RELAXED): $(LLM_MT_RELAXED_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) $(WASM_THREADS_LDFLAGS) -o build/wasm/rlx_llm_threads_relaxed.linked.wasm \
	  $(LLM_MT_RELAXED_OBJ)
	$(call relaxed_opt,build/wasm/rlx_llm_threads_relaxed.linked.wasm --enable-threads,$@)
wasm: $(LLM_WASM_THREADS) $(LLM_WASM_THREADS_RELAXED)
