# fuzz.mk - libFuzzer targets (clang, ASan + UBSan), included by the Makefile.
#   make fuzz        every fuzzer for FUZZ_SECONDS each (default 600), corpora
#                    growing in build/fuzz/corpus/<fuzzer> from the seeds in
#                    tests/fuzz/corpus/<fuzzer>
#   make test-fuzz   replays the seed corpora, then FUZZ_SHORT_SECONDS (30) each,
#                    FUZZ_JOBS (the number of cores; make's -j when given)
#                    fuzzers at a time, each fuzzer's output in
#                    build/fuzz/short/<fuzzer>.log (printed in full when it fails)
# A crash leaves its input in build/fuzz/ (crash-*, leak-*, timeout-*).
FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 600
FUZZ_SHORT_SECONDS ?= 30
FUZZ_JOBS          ?= $(shell nproc 2>/dev/null || echo 1)
FUZZERS      := graph idx inflate plan_json gguf tokenizer llm
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -g -O1 $(FUZZ_SAN) -std=c11 -fno-trapping-math -fno-math-errno -Iinclude \
                -D_POSIX_C_SOURCE=200809L -DRLX_HAVE_ZLIB
FUZZ_OBJ     := $(LIB_SRC:%.c=build/fuzz/obj/%.o)
FUZZ_SUPPORT := tests/fuzz/graph_decode.c
FUZZ_BINS    := $(FUZZERS:%=build/fuzz/fuzz_%)
FUZZ_OPTS    := -rss_limit_mb=2048 -timeout=20 -max_len=4096 -print_final_stats=1
FUZZ_ENV     := ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
.PHONY: fuzz test-fuzz fuzz-build
build/fuzz/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SUPPORT) tests/fuzz/graph_decode.h tests/fuzz/fuzz_check.h $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(FUZZ_SUPPORT) $(FUZZ_OBJ) -lm -lz
fuzz-build: $(FUZZ_BINS)
fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZERS); do mkdir -p build/fuzz/corpus/$$f; echo "== fuzz_$$f ($(FUZZ_SECONDS) s)"; \
	  (cd build/fuzz && $(FUZZ_ENV) ./fuzz_$$f $(FUZZ_OPTS) -max_total_time=$(FUZZ_SECONDS) \
	    corpus/$$f ../../tests/fuzz/corpus/$$f); done
test-fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZERS); do echo "== fuzz_$$f: seed corpus"; \
	  $(FUZZ_ENV) build/fuzz/fuzz_$$f $(FUZZ_OPTS) tests/fuzz/corpus/$$f/*; done
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(FUZZ_JOBS)) $(FUZZERS:%=fuzz-short-%)
# One fuzzer for FUZZ_SHORT_SECONDS from its seeds (test-fuzz runs these in parallel).
fuzz-short-%: build/fuzz/fuzz_%
	@rm -rf build/fuzz/short/$*; mkdir -p build/fuzz/short/$*
	@echo "== fuzz_$*: $(FUZZ_SHORT_SECONDS) s"
	@if (cd build/fuzz && $(FUZZ_ENV) ./fuzz_$* $(FUZZ_OPTS) -max_total_time=$(FUZZ_SHORT_SECONDS) \
	    short/$* ../../tests/fuzz/corpus/$*) > build/fuzz/short/$*.log 2>&1; \
	  then echo "== fuzz_$*: $$(grep -E '^(Done|stat::number_of_executed_units)' build/fuzz/short/$*.log | tr '\n' ' ')"; \
	  else cat build/fuzz/short/$*.log; echo "== fuzz_$* FAILED (build/fuzz/short/$*.log)"; exit 1; fi
