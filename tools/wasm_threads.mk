# wasm_threads.mk - the threaded builds of the wasm modules, included by the
# Makefile: web/pkg/rlx_llm_threads.wasm (from rlx_llm.wasm),
# web/pkg/rlx_llm_train_threads.wasm (from the training build
# rlx_llm_train.wasm) and web/pkg/rlx_web_threads.wasm (from the graph /
# ops / vision-training module rlx_web.wasm), each with its relaxed-SIMD
# twin NAME_relaxed.wasm.  web/runtime/llm.js (loadGguf) and
# web/runtime/instance.js (init) load them where SharedArrayBuffer exists (a
# cross-origin isolated page, a Worker of one, or Node) and options.threads
# > 1; the one-thread builds stay as they are.  A module is
# one $(call mt_module,...) below: every object of its one-thread build is
# compiled again into build/wasm-mt/ (once, for every module that links
# it) with the same optimization and family flags plus -matomics
# -DRLX_WASM_THREADS (rlx_parallel_for then runs on
# the Web Worker pool of src/core/pool_wasm.c instead of inline; the
# allocator takes a spinlock), with src/web_threads/ (the pool's exports
# and stack.S, which sets a Worker's stack pointer).  The module
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
# pinned down further).  tests/node/llm_threads.test.mjs,
# llm_finetune_threads.test.mjs and web_threads.test.mjs catch it.
WASM_THREADS_CFLAGS := -matomics -DRLX_WASM_THREADS
WASM_THREADS_LDFLAGS := -Wl,--import-memory -Wl,--shared-memory -Wl,--no-check-features

# $(call mt,OBJECTS): their threaded twins under build/wasm-mt/.
mt = $(patsubst build/%,build/wasm-mt/%,$(1))
# The folder under build/ of an object (wasm, or wasm-KIND of a module kind).
mt_dir = $(word 2,$(subst /, ,$(1)))
# The source of an object of build/wasm/ or build/wasm-KIND/.
mt_src = $(patsubst build/$(call mt_dir,$(1))/%,%,$(1:.o=.c))
# The flags each object gets in the Makefile (target-specific there); the
# op-family tables of build/wasm-KIND/ take MODULE_FAMILIES_KIND.
mt_flags = $(strip \
  $(if $(filter build/wasm-llm/src/core/backends.o,$(1)),-Oz -DRLX_WITHOUT_WEBGPU -DRLX_WITHOUT_WEBGL,\
  $(if $(filter $(LLM_O3_OBJ),$(1)),-O3,\
  $(if $(filter $(LLM_O2_OBJ),$(1)),-O2,\
  $(if $(filter-out build/wasm/%,$(1)),$(if $(filter src/cpu/%,$(call mt_src,$(1))),-O2,-Oz) \
    $(MODULE_FAMILIES_$(patsubst wasm-%,%,$(call mt_dir,$(1)))),\
  $(if $(filter $(WASM_O3_KERNELS:%=build/wasm/src/cpu/%.o),$(1)),,\
  $(if $(filter $(WASM_OS_KERNELS:%=build/wasm/src/cpu/%.o),$(1)),-Os,\
  $(if $(filter build/wasm/src/cpu/%,$(1)),$(if $(filter $(WASM_OZ_KERNELS:%=build/wasm/src/cpu/%.o),$(1)),-Oz,-O2),\
  -Oz))))))))
define mt_rule
$(call mt,$(1)): $(call mt_src,$(1)) $$(HDRS)
	@mkdir -p $$(dir $$@)
	$$(WASMCC) $$(WASM_CFLAGS) $(call mt_flags,$(1)) $$(WASM_THREADS_CFLAGS) -c $$< -o $$@
endef
# $(call mt_rules,OBJECTS): mt_rule for those of OBJECTS no module gave one yet.
MT_RULED :=
mt_rules = $(foreach o,$(sort $(filter-out $(MT_RULED),$(1))),$(eval $(call mt_rule,$(o))))$(eval MT_RULED += $(1))
# $(call mt_relaxed,OBJECTS): their threaded twins, the relaxed-SIMD kernels
# (relaxed_simd.mk's RELAXED_SRC) under build/wasm-mt-relaxed/.
mt_relaxed = $(foreach o,$(1),$(if $(filter $(RELAXED_SRC),$(call mt_src,$(o))),\
               $(patsubst %.c,build/wasm-mt-relaxed/%.o,$(call mt_src,$(o))),$(call mt,$(o))))
MT_POOL_OBJ := build/wasm-mt/src/web_threads/exports.o build/wasm-mt/src/web_threads/stack.o
build/wasm-mt/src/web_threads/exports.o: src/web_threads/exports.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz $(WASM_THREADS_CFLAGS) -c $< -o $@
build/wasm-mt/src/web_threads/stack.o: src/web_threads/stack.S
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_TARGET) $(WASM_THREADS_CFLAGS) -c $< -o $@
build/wasm-mt-relaxed/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@command -v $(RELAXED_CC) >/dev/null || { echo "$(RELAXED_CC) is missing: run make setup"; exit 1; }
	$(RELAXED_CC) $(WASM_CFLAGS) -mrelaxed-simd $(WASM_THREADS_CFLAGS) -c $< -o $@

# $(call mt_module,NAME,OBJECTS,LDFLAGS): web/pkg/NAME.wasm and
# NAME_relaxed.wasm, the threaded twins of OBJECTS (a one-thread build's,
# in its link order) with the pool's, linked with LDFLAGS.
define mt_module
$(call mt_rules,$(2))
web/pkg/$(1).wasm: $(call mt,$(2)) $$(MT_POOL_OBJ)
	@mkdir -p $$(dir $$@)
	$$(WASMCC) $$(WASM_LDFLAGS) $(3) $$(WASM_THREADS_LDFLAGS) -o build/wasm/$(1).linked.wasm $$^
	@test -f $$(RELAXED_WASM_OPT) || { echo "$$(RELAXED_WASM_OPT) is missing: run make setup (npm ci)"; exit 1; }
	$$(RELAXED_WASM_OPT) $$(WASM_OPT_FLAGS) --enable-threads build/wasm/$(1).linked.wasm -o $$@.tmp
	mv -f $$@.tmp $$@
web/pkg/$(1)_relaxed.wasm: $(call mt_relaxed,$(2)) $$(MT_POOL_OBJ)
	@mkdir -p $$(dir $$@)
	$$(WASMCC) $$(WASM_LDFLAGS) $(3) $$(WASM_THREADS_LDFLAGS) -o build/wasm/$(1)_relaxed.linked.wasm $$^
	$$(call relaxed_opt,build/wasm/$(1)_relaxed.linked.wasm --enable-threads,$$@)
wasm: web/pkg/$(1).wasm web/pkg/$(1)_relaxed.wasm
endef
$(eval $(call mt_module,rlx_llm_threads,$(LLM_LIB_OBJ) $(LLM_WEB_OBJ),$(LLM_LDFLAGS)))
$(eval $(call mt_module,rlx_llm_train_threads,$(LLM_TRAIN_LIB_OBJ) $(LLM_TRAIN_WEB_OBJ),$(LLM_LDFLAGS)))
# A shared memory needs a maximum: rlx_web.wasm has none, its threaded builds 4 GiB as the language model's.
WEB_THREADS_LDFLAGS := -Wl,--max-memory=4294967296
$(eval $(call mt_module,rlx_web_threads,$(WEB_LIB_OBJ) $(WEB_OBJ),$(WEB_THREADS_LDFLAGS)))

# The op cases, gradient checks and training models of opcases.wasm built
# threaded, with tests/c/wasm_threads_cases.c (the work threshold, lowered
# by tests/node/web_threads.test.mjs so that tiny cases split too).
OPCASES_THREADS := build/wasm-tests/opcases_threads.wasm
$(call mt_rules,$(WASM_OBJ))
OPCASES_MT_TEST_OBJ := $(call mt,$(WASM_TEST_OBJ) build/wasm/tests/c/wasm_threads_cases.o)
$(filter build/wasm-mt/wasm/tests/%,$(OPCASES_MT_TEST_OBJ)): build/wasm-mt/wasm/tests/c/%.o: tests/c/%.c \
    tests/c/op_case.h tests/c/grad_case.h tests/c/grad_train.h $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) $(WASM_THREADS_CFLAGS) -Itests/c -c $< -o $@
$(OPCASES_THREADS): $(OPCASES_MT_TEST_OBJ) $(call mt,$(WASM_OBJ)) $(MT_POOL_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(WEB_THREADS_LDFLAGS) $(WASM_THREADS_LDFLAGS) -o $@ $^
wasm: $(OPCASES_THREADS)
