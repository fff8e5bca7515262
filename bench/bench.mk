# bench.mk - `make bench`: GEMM GFLOP/s natively (ours and OpenBLAS, one
# thread) and in wasm under Node (ours next to TensorFlow.js's wasm backend).
# Included by the Makefile; results go to build/bench/gemm.json.

BENCH_DIR := build/bench
# Linked without --strip-all: clang runs wasm-opt after linking, and without
# the target_features section wasm-opt rejects the SIMD128 code.
BENCH_WASM_LDFLAGS := -mexec-model=reactor -Wl,-z,stack-size=1048576 -Wl,--initial-memory=4194304

$(BENCH_DIR)/gemm_native: bench/bench_gemm_native.c build/librlx.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I/usr/include/x86_64-linux-gnu/openblas-pthread -o $@ $< build/librlx.a -lopenblas $(LDLIBS)

$(BENCH_DIR)/gemm_bench.wasm: bench/bench_gemm_wasm.c $(WASM_OBJ) $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) $(BENCH_WASM_LDFLAGS) -o $@ $< $(WASM_OBJ)

bench: $(BENCH_DIR)/gemm_native $(BENCH_DIR)/gemm_bench.wasm
	node bench/bench_gemm.mjs --native=$(BENCH_DIR)/gemm_native --wasm=$(BENCH_DIR)/gemm_bench.wasm \
	  --out=$(BENCH_DIR)/gemm.json
