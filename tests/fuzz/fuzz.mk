# fuzz.mk - libFuzzer targets (clang, ASan + UBSan), included by the Makefile.
#   make fuzz        every fuzzer for FUZZ_SECONDS each (default 600), corpora
#                    growing in build/fuzz/corpus/<fuzzer> from the seeds in
#                    tests/fuzz/corpus/<fuzzer>
#   make test-fuzz   replays the seed corpora, then FUZZ_SHORT_SECONDS (5) each,
#                    FUZZ_JOBS (the number of cores; make's -j when given)
#                    fuzzers at a time, each fuzzer's output in
#                    build/fuzz/short/<fuzzer>.log (printed in full when it fails);
#                    the same for the 32-bit builds (below), in build/fuzz32/
#   make fuzz32      the 32-bit builds for FUZZ_SECONDS each
# A crash leaves its input in build/fuzz/ (crash-*, leak-*, timeout-*), or in
# build/fuzz32/.
FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 600
FUZZ_SHORT_SECONDS ?= 5
FUZZ_JOBS          ?= $(shell nproc 2>/dev/null || echo 1)
FUZZERS      := graph idx inflate plan_json gguf tokenizer llm lora chat grammar json_schema
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -g -O1 $(FUZZ_SAN) -std=c11 -fno-trapping-math -fno-math-errno -Iinclude \
                -D_POSIX_C_SOURCE=200809L -DRLX_HAVE_ZLIB
FUZZ_OBJ     := $(LIB_SRC:%.c=build/fuzz/obj/%.o)
FUZZ_SUPPORT := tests/fuzz/graph_decode.c
FUZZ_DEPS    := $(FUZZ_SUPPORT) tests/fuzz/graph_decode.h tests/fuzz/fuzz_check.h
FUZZ_BINS    := $(FUZZERS:%=build/fuzz/fuzz_%)
FUZZ_OPTS    := -rss_limit_mb=2048 -timeout=20 -max_len=4096 -print_final_stats=1
FUZZ_ENV     := ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1

# The file-facing fuzzers also as 32-bit programs (clang -m32): size_t and
# pointers as wide as in the wasm32 module that ships, where a size summed
# in size_t wraps at 4 GiB (the 64-bit builds cannot see that class).  Only
# these four: they read what a hostile file controls (a GGUF file, a
# model's tokenizer, a model, a LoRA adapter), and the 32-bit build of the
# library costs a minute or two of make test-fuzz.  Floats in SSE
# registers, as wasm computes them (x87's wider intermediates make the
# step splits of a model disagree).  No zlib (no 32-bit zlib installed;
# only the IDX reader uses it).  Where the kernel runs no 32-bit x86
# programs, qemu-i386 runs them: LeakSanitizer cannot run under it (leaks
# are the 64-bit builds' to find), and a smaller quarantine keeps ASan's
# allocator within the address space qemu leaves it.
FUZZERS32    := gguf tokenizer llm lora
FUZZ32_CFLAGS := $(filter-out -DRLX_HAVE_ZLIB,$(FUZZ_CFLAGS)) -m32 -msse2 -mfpmath=sse
FUZZ32_OBJ   := $(LIB_SRC:%.c=build/fuzz32/obj/%.o)
FUZZ32_BINS  := $(FUZZERS32:%=build/fuzz32/fuzz_%)
FUZZ32_ENV   := ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:quarantine_size_mb=16 \
                UBSAN_OPTIONS=print_stacktrace=1
# How a 32-bit program runs here: directly, or under qemu-i386 (a shell
# expression, for `run=$(FUZZ32_RUN)` in a recipe run from the top).
FUZZ32_RUN   := $$($(FUZZ32_ENV) build/fuzz32/fuzz_gguf -help=1 >/dev/null 2>&1 || echo qemu-i386)

.PHONY: fuzz fuzz32 test-fuzz fuzz-build
build/fuzz/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS) $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(FUZZ_SUPPORT) $(FUZZ_OBJ) -lm -lz
build/fuzz32/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ32_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz32/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS) $(FUZZ32_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ32_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(FUZZ_SUPPORT) $(FUZZ32_OBJ) -lm
fuzz-build: $(FUZZ_BINS) $(FUZZ32_BINS)

# $(call fuzz_run,DIR,FUZZER,ENV,SECONDS): in a shell where $$run is how
# DIR's programs run, DIR's fuzzer for SECONDS from its seeds, its corpus
# growing in DIR/corpus/FUZZER.
define fuzz_run
mkdir -p $(1)/corpus/$(2); echo "== $(1)/fuzz_$(2) ($(4) s)"; \
  (cd $(1) && $(3) $$run ./fuzz_$(2) $(FUZZ_OPTS) -max_total_time=$(4) corpus/$(2) ../../tests/fuzz/corpus/$(2))
endef
fuzz: $(FUZZ_BINS)
	@set -e; run=; for f in $(FUZZERS); do $(call fuzz_run,build/fuzz,$$f,$(FUZZ_ENV),$(FUZZ_SECONDS)); done
fuzz32: $(FUZZ32_BINS)
	@set -e; run=$(FUZZ32_RUN); for f in $(FUZZERS32); do $(call fuzz_run,build/fuzz32,$$f,$(FUZZ32_ENV),$(FUZZ_SECONDS)); done
test-fuzz: $(FUZZ_BINS) $(FUZZ32_BINS)
	@set -e; for f in $(FUZZERS); do echo "== fuzz_$$f: seed corpus"; \
	  $(FUZZ_ENV) build/fuzz/fuzz_$$f $(FUZZ_OPTS) tests/fuzz/corpus/$$f/*; done
	@set -e; run=$(FUZZ32_RUN); for f in $(FUZZERS32); do echo "== 32-bit fuzz_$$f: seed corpus$${run:+ (under $$run)}"; \
	  $(FUZZ32_ENV) $$run build/fuzz32/fuzz_$$f $(FUZZ_OPTS) tests/fuzz/corpus/$$f/*; done
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(FUZZ_JOBS)) \
	  $(FUZZERS:%=fuzz-short-%) $(FUZZERS32:%=fuzz32-short-%)

# One fuzzer for FUZZ_SHORT_SECONDS from its seeds (test-fuzz runs these in
# parallel): $(call fuzz_short,DIR,FUZZER,RUN,ENV), RUN as $$run above.
define fuzz_short
@rm -rf $(1)/short/$(2); mkdir -p $(1)/short/$(2)
@echo "== $(1)/fuzz_$(2): $(FUZZ_SHORT_SECONDS) s"
@run=$(3); if (cd $(1) && $(4) $$run ./fuzz_$(2) $(FUZZ_OPTS) -max_total_time=$(FUZZ_SHORT_SECONDS) \
    short/$(2) ../../tests/fuzz/corpus/$(2)) > $(1)/short/$(2).log 2>&1; \
  then echo "== $(1)/fuzz_$(2): $$(grep -E '^(Done|stat::number_of_executed_units)' $(1)/short/$(2).log | tr '\n' ' ')"; \
  else cat $(1)/short/$(2).log; echo "== $(1)/fuzz_$(2) FAILED ($(1)/short/$(2).log)"; exit 1; fi
endef
fuzz-short-%: build/fuzz/fuzz_%
	$(call fuzz_short,build/fuzz,$*,,$(FUZZ_ENV))
fuzz32-short-%: build/fuzz32/fuzz_%
	$(call fuzz_short,build/fuzz32,$*,$(FUZZ32_RUN),$(FUZZ32_ENV))

# The models the llm seeds make, as GGUF files, for the wasm module to open
# (tests/node/llm_files_wasm.test.mjs): fuzz_llm built on the plain library
# with tests/fuzz/replay_main.c, each seed run with RLX_FUZZ_LLM_DUMP.
FUZZ_LLM_MODELS := $(patsubst tests/fuzz/corpus/llm/%,build/fuzz/llm_models/%.gguf,$(wildcard tests/fuzz/corpus/llm/*))
build/fuzz/replay_llm: tests/fuzz/fuzz_llm.c tests/fuzz/replay_main.c tests/fuzz/fuzz_check.h build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/fuzz -o $@ tests/fuzz/fuzz_llm.c tests/fuzz/replay_main.c build/librlx.a $(LDLIBS)
build/fuzz/llm_models/%.gguf: tests/fuzz/corpus/llm/% build/fuzz/replay_llm
	@mkdir -p $(dir $@)
	RLX_FUZZ_LLM_DUMP=$@ build/fuzz/replay_llm $<
test-node: $(FUZZ_LLM_MODELS)
