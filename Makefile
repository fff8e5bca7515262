# Makefile - builds the native library, the browser module and the tests.
#   make          native library (build/librlx.a, build/librlx.so) + web/pkg/rlx_web.wasm
#   make test     set-up, then every test (native, sanitizers, wasm under Node)
#   make install  headers, librlx.a, librlx.so.0, rlx.pc under PREFIX (/usr/local; DESTDIR honoured)
#   make bench    GEMM and op benchmarks next to TensorFlow.js
#   make serve    set-up, build, serve web/ on http://0.0.0.0:8000 (tools/serve.py; SERVE_ARGS=--tls ...)
#   make site     build, then the static site in build/site (tools/build_site.py)
#   make BLAS=openblas   native GEMM through OpenBLAS (never in wasm)

CC      ?= cc
# Debian's python3 (the one tools/setup.sh gives numpy to), else whatever is on PATH.
PYTHON  ?= $(firstword $(wildcard /usr/bin/python3) python3)
WASMCC  ?= clang
CFLAGS  ?= -O2 -g
CFLAGS  += -fno-trapping-math -fno-math-errno -std=c11 -Wall -Wextra -Wno-unused-parameter -fPIC -Iinclude -D_POSIX_C_SOURCE=200809L -DRLX_HAVE_ZLIB
LDLIBS  += -lm -lz -lpthread
WASM_TARGET = --target=wasm32-wasi --sysroot=/usr
WASM_CFLAGS = $(WASM_TARGET) -O3 -msimd128 -mbulk-memory -std=c11 -Wall -Wextra -Wno-unused-parameter -Iinclude -DNDEBUG
# Linking without -O keeps clang from running an installed wasm-opt (binaryen
# 108 rejects some SIMD code); the objects are already optimized.
WASM_LDFLAGS = $(WASM_TARGET) -mexec-model=reactor -Wl,--strip-all -Wl,-z,stack-size=1048576 \
               -Wl,--initial-memory=4194304
# The browser module is then shrunk by binaryen's wasm-opt (when installed;
# tools/setup.sh installs it): -Os (smaller than -Oz on this module), and
# --low-memory-unused since wasm-ld starts data at 1024.  --strip-all drops
# the target_features section, so the features are named here.
WASM_OPT ?= $(shell command -v wasm-opt 2>/dev/null)
WASM_OPT_FLAGS = -Os --low-memory-unused --enable-simd --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
                 --enable-nontrapping-float-to-int

ifeq ($(BLAS),openblas)
CFLAGS += -DRLX_USE_OPENBLAS -I/usr/include/x86_64-linux-gnu/openblas-pthread
LDLIBS += -lopenblas
endif

# The WGSL kernels (src/webgpu/wgsl/*.wgsl) are embedded, minified, into a
# generated C file (tools/embed_sources.sh) compiled into both the native and
# wasm libraries, each with the sub-op constants it names (OP_<NAME>, from
# the binary, unary and grad_pointwise rows of include/rlx_ops.def and the
# rows of include/rlx_subops.def).
SUBOPS_DEF := include/rlx_subops.def
OPS_DEF := include/rlx_ops.def
WGSL_SRC := $(sort $(wildcard src/webgpu/wgsl/*.wgsl))
WGSL_GEN := build/gen/wgsl_sources.c
# The GLSL shaders of the WebGL2 executor (src/webgl/glsl/*.frag, *.glsl)
# likewise, with the table of their C twins (rlx_glref_<shader>).
GLSL_SRC := $(sort $(wildcard src/webgl/glsl/*.frag src/webgl/glsl/*.glsl))
GLSL_GEN := build/gen/glsl_sources.c
LIB_SRC  := $(sort $(wildcard src/core/*.c src/ir/*.c src/autodiff/*.c src/compile/*.c src/cpu/*.c src/models/*.c \
                              src/webgpu/*.c src/webgl/*.c)) $(WGSL_GEN) $(GLSL_GEN)
WEB_SRC  := $(sort $(wildcard src/web/*.c))
WEB_OBJ  := $(WEB_SRC:%.c=build/wasm/%.o)
HDRS     := $(wildcard include/*.h include/*.def src/*/*.h)
NATIVE_DIR := build/native$(if $(BLAS),-$(BLAS))
LIB_OBJ  := $(LIB_SRC:%.c=$(NATIVE_DIR)/%.o)
ASAN_OBJ := $(LIB_SRC:%.c=build/asan/%.o)
WASM_OBJ := $(LIB_SRC:%.c=build/wasm/%.o)

TEST_SUPPORT := $(sort $(wildcard tests/c/harness.c tests/c/check_alloc.c tests/c/ref_*.c tests/c/cases_*.c tests/c/grad_*.c))
TEST_MAINS   := $(sort $(wildcard tests/c/test_*.c))
TEST_BINS    := $(TEST_MAINS:tests/c/%.c=build/tests/%)
ASAN_BINS    := $(TEST_MAINS:tests/c/%.c=build/tests-asan/%)
SAN_FLAGS    := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# Objects made through pattern chains are kept (never deleted as intermediates).
.PRECIOUS: %.o build/gen/%.c
.PHONY: test-webgl
.PHONY: all native wasm sdk test-examples-js test test-native test-asan test-node test-webgpu test-cli test-browser test-python test-examples bench serve site setup clean
all: native wasm sdk build/rlx web/data/fashion-mnist-train.bin web/data/fashion-mnist-test.bin web/vendor/trystero.js web/vendor/jinja.js
native: build/librlx.a build/librlx.so
# The SDK: web/rlx.ts compiled by the npm typescript of package.json (make
# setup) to web/rlx.js + web/rlx.d.ts, build outputs (gitignored) like the wasm.
sdk: web/rlx.js web/rlx.d.ts
wasm: web/pkg/rlx_web.wasm build/wasm-tests/opcases.wasm
# The library's enum values for JS and Python (status codes and their
# rlx_status_name names, dtypes, attention masks, devices, optimizers),
# generated from include/rlx.h, include/rlx_llm_train.h and src/core/core.c by tools/gen_constants.py:
# build outputs (gitignored), which tests/node/constants.test.mjs checks
# against the header, and the only place the runtimes take them from.
CONSTANTS_SRC := tools/gen_constants.py include/rlx.h include/rlx_llm_train.h src/core/core.c
web/runtime/constants.js: $(CONSTANTS_SRC)
	$(PYTHON) tools/gen_constants.py --js $@
python/rlx/_constants.py: $(CONSTANTS_SRC)
	$(PYTHON) tools/gen_constants.py --py $@
wasm sdk: web/runtime/constants.js
native: python/rlx/_constants.py
test-node: python/rlx/_constants.py

$(NATIVE_DIR)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
build/asan/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN_FLAGS) -c $< -o $@
build/wasm/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -c $< -o $@
# The texts are stored gzip-compressed (--gzip) and unpacked on first use
# by src/core/inflate.c.
$(WGSL_GEN): tools/embed_sources.sh $(SUBOPS_DEF) $(OPS_DEF) $(WGSL_SRC) $(wildcard src/webgpu/wgsl)
	@mkdir -p $(dir $@)
	sh tools/embed_sources.sh --gzip ../../src/core/inflate.h --consts $(SUBOPS_DEF) $(OPS_DEF) wgsl $@ rlx_wgsl_source $(WGSL_SRC)
$(GLSL_GEN): tools/embed_sources.sh $(SUBOPS_DEF) $(OPS_DEF) $(GLSL_SRC) $(wildcard src/webgl/glsl)
	@mkdir -p $(dir $@)
	sh tools/embed_sources.sh --gzip ../../src/core/inflate.h --consts $(SUBOPS_DEF) $(OPS_DEF) glsl \
	  --twins ../../src/webgl/gl.h rlx_glref_args rlx_glref_ rlx_glref_find .frag $@ rlx_glsl_source $(GLSL_SRC)
# The browser module draws the GLSL shaders itself (web/runtime/webgl.js):
# it has no C reference executor (src/webgl/reference.c, ref_*.c), so its
# copy of the shader table has placeholder twins (src/web/webgl_no_reference.c
# reports the missing executor).  The native build keeps the real twins.
GLSL_WEB_GEN := build/gen/glsl_sources_web.c
$(GLSL_WEB_GEN): tools/embed_sources.sh $(SUBOPS_DEF) $(OPS_DEF) $(GLSL_SRC) $(wildcard src/webgl/glsl)
	@mkdir -p $(dir $@)
	sh tools/embed_sources.sh --gzip ../../src/core/inflate.h --consts $(SUBOPS_DEF) $(OPS_DEF) glsl \
	  --twins-absent ../../src/webgl/gl.h rlx_glref_args rlx_glref_find .frag $@ rlx_glsl_source \
	  $(filter-out src/webgl/glsl/llm_%,$(GLSL_SRC))
# The training module embeds no llm_*.wgsl kernels (it has no language-model
# ops: MODULE_FAMILIES below).
WGSL_WEB_GEN := build/gen/wgsl_sources_web.c
$(WGSL_WEB_GEN): tools/embed_sources.sh $(SUBOPS_DEF) $(OPS_DEF) $(WGSL_SRC) $(wildcard src/webgpu/wgsl)
	@mkdir -p $(dir $@)
	sh tools/embed_sources.sh --gzip ../../src/core/inflate.h --consts $(SUBOPS_DEF) $(OPS_DEF) wgsl $@ rlx_wgsl_source \
	  $(filter-out src/webgpu/wgsl/llm_%,$(WGSL_SRC))
# Op families (include/rlx_ops.def, src/core/families.h): each module
# leaves some out (RLX_WITHOUT_<FAMILY>_OPS).  The files holding a table of
# functions per op (FAMILY_TABLE_SRC) are built once per module kind with
# its flags, in build/wasm-<kind>/; a left-out family's rows are NULL there,
# so wasm-ld drops its shape rules, kernels, gradient rules and lowerings,
# and a graph holding one of its ops is refused by name.  The training
# module (web) has no language-model ops; the language-model modules (llm,
# and their GPU builds) no vision or training ops, the language-model
# training module (llmtrain) no vision ops.
FAMILY_TABLE_SRC := src/ir/shape_rules.c src/cpu/executor.c src/autodiff/grad.c src/webgpu/prepare.c src/webgl/plan_gl.c
MODULE_FAMILIES_web := -DRLX_WITHOUT_LLM_OPS
MODULE_FAMILIES_llm := -DRLX_WITHOUT_VISION_OPS -DRLX_WITHOUT_TRAINING_OPS
MODULE_FAMILIES_llmtrain := -DRLX_WITHOUT_VISION_OPS
# $(call families,KIND,OBJECTS): OBJECTS with KIND's builds of the table files.
families = $(foreach o,$(2),$(if $(filter $(o),$(FAMILY_TABLE_SRC:%.c=build/wasm/%.o)),$(o:build/wasm/%=build/wasm-$(1)/%),$(o)))
# (Optimized as their build/wasm/ twins: the kernels' table -O2, the rest -Oz.)
define family_tables
$(FAMILY_TABLE_SRC:%.c=build/wasm-$(1)/%.o): build/wasm-$(1)/%.o: %.c $$(HDRS)
	@mkdir -p $$(dir $$@)
	$$(WASMCC) $$(WASM_CFLAGS) $$(if $$(filter src/cpu/%,$$<),-O2,-Oz) $$(MODULE_FAMILIES_$(1)) -c $$< -o $$@
endef
$(foreach k,web llm llmtrain,$(eval $(call family_tables,$(k))))
WEB_LIB_OBJ := $(call families,web,$(filter-out build/wasm/src/webgl/reference.o build/wasm/src/webgl/ref_%.o \
                 build/wasm/$(GLSL_GEN:.c=.o) build/wasm/$(WGSL_GEN:.c=.o),$(WASM_OBJ))) build/wasm/$(GLSL_WEB_GEN:.c=.o) \
               build/wasm/$(WGSL_WEB_GEN:.c=.o)
# Size: the kernels (src/cpu) are built for speed, everything else in the
# browser module (graph, compiler, autodiff, models, exports) for size.
# Among the kernels, the GEMM micro-kernels, packing and convolution (most of
# a training step) get -O3 (the blocked GEMM driver -O2: no slower);
# attention (fused, unfused, backward), norms, layout, softmax, reductions,
# elementwise, unary and pointwise-gradient ops, RoPE, pooling and the Adam update (small
# next to the GEMMs around them in the benchmarked models: W2 and W4 ratios
# to tfjs-wasm unchanged within noise) -Os; the rest -O2 (as fast as -O3
# here, smaller).  The unary ops get -Oz (less than half the size of -Os;
# a training step spends little time in them).
WASM_O3_KERNELS := gemm gemm_direct gemm_pack gemm_portable gemm_wasm gemm_x86 conv_common k_conv \
                   k_conv_grad k_matmul k_fused_matmul k_matmul_q_wasm
WASM_OS_KERNELS := k_attention k_attention_grad k_norm_grad k_layout k_grad_layout k_softmax k_grad_softmax k_reduce \
                   k_grad_pointwise k_rope k_pool_grad k_norm k_pool k_elementwise k_fused_attention k_optim
$(filter-out build/wasm/src/cpu/%,$(WASM_OBJ) $(WEB_OBJ) $(WEB_LIB_OBJ)): WASM_CFLAGS += -Oz
WASM_OZ_KERNELS := k_unary
$(filter-out $(WASM_O3_KERNELS:%=build/wasm/src/cpu/%.o) $(WASM_OS_KERNELS:%=build/wasm/src/cpu/%.o) \
  $(WASM_OZ_KERNELS:%=build/wasm/src/cpu/%.o),\
  $(filter build/wasm/src/cpu/%,$(WASM_OBJ))): WASM_CFLAGS += -O2
$(WASM_OS_KERNELS:%=build/wasm/src/cpu/%.o): WASM_CFLAGS += -Os
$(WASM_OZ_KERNELS:%=build/wasm/src/cpu/%.o): WASM_CFLAGS += -Oz

build/librlx.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
# The shared library exports the functions declared in the public headers
# and nothing else: tools/export_list.sh turns their declarations into a
# linker version script (regenerated when a public header changes), so a
# declaration moved out of them stops being exported.  Soname librlx.so.0
# (make install adds the links); tests/python/test_symbols.py checks nm -D.
PUBLIC_HDRS := include/rlx.h include/rlx_models.h include/rlx_op_info.h include/rlx_gguf.h include/rlx_llm.h \
               include/rlx_llm_train.h include/rlx_llm_chat.h include/rlx_llm_grammar.h
.PHONY: print-public-hdrs
print-public-hdrs:
	@echo $(PUBLIC_HDRS)
RLX_VERSION := $(or $(shell sed -n 's/.*rlx_version(void) *{ *return "\([0-9.]*\)".*/\1/p' src/core/core.c),0.1.0)
RLX_SOMAJOR := $(firstword $(subst ., ,$(RLX_VERSION)))
EXPORT_MAP  := build/gen/librlx.map
$(EXPORT_MAP): tools/export_list.sh $(PUBLIC_HDRS)
	@mkdir -p $(dir $@)
	sh tools/export_list.sh --version-script $@ $(PUBLIC_HDRS)
build/librlx.so: $(LIB_OBJ) $(EXPORT_MAP)
	$(CC) -shared -Wl,-soname,librlx.so.$(RLX_SOMAJOR) -Wl,--version-script=$(EXPORT_MAP) -o $@ $(LIB_OBJ) $(LDLIBS)

# make install [PREFIX=/usr/local] [DESTDIR=...]: the public headers (and
# the files they include), librlx.a, librlx.so.$(RLX_VERSION) with the links
# librlx.so.0 and librlx.so, and rlx.pc for pkg-config.  Tested by
# tests/cli/test_install.sh (make test-install).
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
INSTALL_HDRS = $(sort $(PUBLIC_HDRS) $(patsubst %,include/%,$(shell sed -n 's/^[ \t]*\#[ \t]*include[ \t]*"\(.*\)".*/\1/p' $(PUBLIC_HDRS))))
.PHONY: install uninstall test-install
install: build/librlx.a build/librlx.so
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 $(INSTALL_HDRS) $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 build/librlx.a $(DESTDIR)$(LIBDIR)/librlx.a
	install -m 755 build/librlx.so $(DESTDIR)$(LIBDIR)/librlx.so.$(RLX_VERSION)
	ln -sf librlx.so.$(RLX_VERSION) $(DESTDIR)$(LIBDIR)/librlx.so.$(RLX_SOMAJOR)
	ln -sf librlx.so.$(RLX_SOMAJOR) $(DESTDIR)$(LIBDIR)/librlx.so
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))' \
	  'includedir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))' '' 'Name: rlx' \
	  'Description: RLX, a small ML runtime: tensor-op graphs, autodiff, CPU/WebGPU/WebGL2 plans' \
	  'Version: $(RLX_VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lrlx' \
	  'Libs.private: $(LDLIBS)' > $(DESTDIR)$(LIBDIR)/pkgconfig/rlx.pc
uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(notdir $(INSTALL_HDRS))) $(DESTDIR)$(LIBDIR)/pkgconfig/rlx.pc \
	  $(addprefix $(DESTDIR)$(LIBDIR)/,librlx.a librlx.so librlx.so.$(RLX_SOMAJOR) librlx.so.$(RLX_VERSION))
test-install: build/librlx.a build/librlx.so python/rlx/_constants.py
	tests/cli/test_install.sh

web/pkg/rlx_web.wasm: $(WEB_LIB_OBJ) $(WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) -o build/wasm/rlx_web.linked.wasm $(WEB_OBJ) $(WEB_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_web.linked.wasm -o $@,cp build/wasm/rlx_web.linked.wasm $@)

# The language-model module (web/runtime/llm.js loads it): src/web_llm/*.c
# with the graph, compiler, CPU executor and kernels, GGUF, tokenizer,
# sampler and src/models/llm_*.c; no WebGPU / WebGL2 backend
# (src/core/backends.c built again without them), no autodiff, and no
# vision or training ops (MODULE_FAMILIES_llm).  wasm-ld drops what the
# exports do not reach.  Its quantized matmul (k_matmul_q*.c: most of a token's
# time) gets -O3, the weight types' row kernels (gguf_quants.c: the fused
# dots and dequantizers of the K and Q4_1/Q5 types) -O2 (-Oz in the
# training module; -O3 measured no clearly faster here, 15 KB larger).
# Memory may grow to 4 GiB: the file's bytes stay in one buffer that the
# model reads in place (RLX_GGUF_WASM32_DATA_BUDGET).  The module is
# written under another name and renamed, so a test never reads half of it.
LLM_WEB_SRC := $(sort $(wildcard src/web_llm/*.c))
LLM_WEB_OBJ := $(LLM_WEB_SRC:%.c=build/wasm/%.o)
LLM_O3_OBJ  := $(patsubst %.c,build/wasm-llm/%.o,$(wildcard src/cpu/k_matmul_q*.c))
LLM_O2_OBJ  := build/wasm-llm/src/models/gguf_quants.o
LLM_LIB_OBJ := $(call families,llm,$(filter-out build/wasm/src/core/backends.o \
                 $(patsubst build/wasm-llm/%,build/wasm/%,$(LLM_O3_OBJ) $(LLM_O2_OBJ)),\
                 $(filter $(foreach d,core ir compile cpu models,build/wasm/src/$(d)/%),$(WASM_OBJ)))) \
               build/wasm-llm/src/core/backends.o $(LLM_O3_OBJ) $(LLM_O2_OBJ)
$(LLM_WEB_OBJ): WASM_CFLAGS += -Oz
build/wasm-llm/src/core/backends.o: src/core/backends.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz -DRLX_WITHOUT_WEBGPU -DRLX_WITHOUT_WEBGL -c $< -o $@
$(LLM_O3_OBJ): LLM_OPT := -O3
$(LLM_O2_OBJ): LLM_OPT := -O2
$(LLM_O3_OBJ) $(LLM_O2_OBJ): build/wasm-llm/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) $(LLM_OPT) -c $< -o $@
LLM_LDFLAGS := -Wl,--max-memory=4294967296
web/pkg/rlx_llm.wasm: $(LLM_LIB_OBJ) $(LLM_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm.linked.wasm $(LLM_WEB_OBJ) $(LLM_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_llm.linked.wasm -o $@.tmp,cp build/wasm/rlx_llm.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_llm.wasm
# The JSON Schema converter, web/pkg/rlx_json_schema.wasm (-Oz), which
# web/runtime/llm_json_schema.js loads on the first options.jsonSchema, so
# that no language-model module carries it: src/web_json_schema/exports.c,
# the converter (src/models/json_*.c), the GBNF parser it checks its output
# with (src/models/grammar*.c) and the core's errors and allocator (the
# core's objects; wasm-ld drops what the exports do not reach).
SCHEMA_WEB_OBJ := build/wasm/src/web_json_schema/exports.o
SCHEMA_LIB_OBJ := $(patsubst src/%.c,build/wasm-schema/src/%.o,$(wildcard src/models/json_*.c src/models/grammar*.c src/core/*.c))
$(SCHEMA_WEB_OBJ): WASM_CFLAGS += -Oz
$(SCHEMA_LIB_OBJ): build/wasm-schema/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz -DRLX_WITHOUT_WEBGPU -DRLX_WITHOUT_WEBGL -c $< -o $@
web/pkg/rlx_json_schema.wasm: $(SCHEMA_WEB_OBJ) $(SCHEMA_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) -o build/wasm/rlx_json_schema.linked.wasm $^
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_json_schema.linked.wasm -o $@.tmp,cp build/wasm/rlx_json_schema.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_json_schema.wasm
# The same module with the WebGPU backend, web/pkg/rlx_llm_gpu.wasm, which
# web/runtime/llm.js loads for options.backend 'webgpu' (so the CPU module
# stays as small as it is): the objects of rlx_llm.wasm, backends.c with
# WebGPU, the WebGPU lowerings, plan document and WGSL kernels (src/webgpu),
# the plan exports web/runtime/webgpu.js reads (src/web/exports_webgpu.c)
# and src/web_llm_gpu/*.c (the steps compiled for WebGPU).
LLM_GPU_WEB_OBJ := $(LLM_WEB_OBJ) $(patsubst %.c,build/wasm/%.o,src/web_llm_gpu/exports.c src/web_llm_gpu/webgpu.c src/web/exports_webgpu.c)
LLM_GPU_LIB_OBJ := $(filter-out build/wasm-llm/src/core/backends.o,$(LLM_LIB_OBJ)) build/wasm-llm-gpu/src/core/backends.o \
                   $(call families,llm,$(filter build/wasm/src/webgpu/%,$(WASM_OBJ))) build/wasm/$(WGSL_GEN:.c=.o)
$(filter build/wasm/src/web_llm_gpu/%,$(LLM_GPU_WEB_OBJ)): WASM_CFLAGS += -Oz
build/wasm-llm-gpu/src/core/backends.o: src/core/backends.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz -DRLX_WITHOUT_WEBGL -c $< -o $@
web/pkg/rlx_llm_gpu.wasm: $(LLM_GPU_LIB_OBJ) $(LLM_GPU_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_gpu.linked.wasm $(LLM_GPU_WEB_OBJ) $(LLM_GPU_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_llm_gpu.linked.wasm -o $@.tmp,cp build/wasm/rlx_llm_gpu.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_llm_gpu.wasm
# The tests' small modules (tests/node/llm_stream_webgpu.test.mjs): rlx_llm.wasm
# and rlx_llm_gpu.wasm linked with a small --max-memory, their exports.c
# built with the matching data budget, so that a model larger than the
# module's memory is a small file: the CPU one refuses it with the budget
# message, the GPU one streams it to WebGPU without holding it.
SMALL_LLM_MEMORY := 16777216
SMALL_LLM_BUDGET := 8388608
build/wasm-tests/web_llm_exports_small.o: src/web_llm/exports.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz -DRLX_LLM_MODULE_BUDGET=$(SMALL_LLM_BUDGET) -c $< -o $@
SMALL_LLM_SWAP = build/wasm-tests/web_llm_exports_small.o $(filter-out build/wasm/src/web_llm/exports.o,$(1))
build/wasm-tests/rlx_llm_small.wasm: $(LLM_LIB_OBJ) $(LLM_WEB_OBJ) build/wasm-tests/web_llm_exports_small.o
	$(WASMCC) $(WASM_LDFLAGS) -Wl,--max-memory=$(SMALL_LLM_MEMORY) -o $@ $(call SMALL_LLM_SWAP,$(LLM_WEB_OBJ)) $(LLM_LIB_OBJ)
build/wasm-tests/rlx_llm_gpu_small.wasm: $(LLM_GPU_LIB_OBJ) $(LLM_GPU_WEB_OBJ) build/wasm-tests/web_llm_exports_small.o
	$(WASMCC) $(WASM_LDFLAGS) -Wl,--max-memory=$(SMALL_LLM_MEMORY) -o $@ $(call SMALL_LLM_SWAP,$(LLM_GPU_WEB_OBJ)) $(LLM_GPU_LIB_OBJ)
wasm: build/wasm-tests/rlx_llm_small.wasm build/wasm-tests/rlx_llm_gpu_small.wasm
# Its WebGL2 build, web/pkg/rlx_llm_webgl.wasm, for options.backend 'webgl'
# (a file of its own: both GPU backends in one module came to 360,060
# bytes, and a page runs one of them): rlx_llm.wasm's objects, backends.c
# with WebGL2, the WebGL2 lowerings and plan document (src/webgl without
# the C reference executor: src/web/webgl_no_reference.c), every GLSL
# shader with placeholder twins, the plan exports web/runtime/webgl.js reads
# (src/web/exports_webgl.c) and src/web_llm_gpu/exports.c + webgl.c.
GLSL_LLM_GEN := build/gen/glsl_sources_llm.c
$(GLSL_LLM_GEN): tools/embed_sources.sh $(SUBOPS_DEF) $(OPS_DEF) $(GLSL_SRC) $(wildcard src/webgl/glsl)
	@mkdir -p $(dir $@)
	sh tools/embed_sources.sh --gzip ../../src/core/inflate.h --consts $(SUBOPS_DEF) $(OPS_DEF) glsl \
	  --twins-absent ../../src/webgl/gl.h rlx_glref_args rlx_glref_find .frag $@ rlx_glsl_source $(GLSL_SRC)
LLM_GL_WEB_OBJ := $(LLM_WEB_OBJ) $(patsubst %.c,build/wasm/%.o,src/web_llm_gpu/exports.c src/web_llm_gpu/webgl.c \
                    src/web/exports_webgl.c src/web/webgl_no_reference.c)
LLM_GL_LIB_OBJ := $(filter-out build/wasm-llm/src/core/backends.o,$(LLM_LIB_OBJ)) build/wasm-llm-gl/src/core/backends.o \
                  $(call families,llm,$(filter-out build/wasm/src/webgl/reference.o build/wasm/src/webgl/ref_%.o,\
                    $(filter build/wasm/src/webgl/%,$(WASM_OBJ)))) \
                  build/wasm/$(GLSL_LLM_GEN:.c=.o)
$(filter build/wasm/src/web_llm_gpu/%,$(LLM_GL_WEB_OBJ)): WASM_CFLAGS += -Oz
build/wasm-llm-gl/src/core/backends.o: src/core/backends.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Oz -DRLX_WITHOUT_WEBGPU -c $< -o $@
web/pkg/rlx_llm_webgl.wasm: $(LLM_GL_LIB_OBJ) $(LLM_GL_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_webgl.linked.wasm $(LLM_GL_WEB_OBJ) $(LLM_GL_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_llm_webgl.linked.wasm -o $@.tmp,cp build/wasm/rlx_llm_webgl.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_llm_webgl.wasm
# The training build, web/pkg/rlx_llm_train.wasm, which web/runtime/llm.js
# loads for loadGguf(..., { train: true }) (so rlx_llm.wasm stays as small
# as it is): rlx_llm.wasm's objects with the training ops' families
# (MODULE_FAMILIES_llmtrain), autodiff and the optimizer (src/autodiff),
# and src/web_llm_train/exports.c (LoRA fine-tuning, its data from bytes,
# the adapter written into memory) beside src/web_llm/*.c, less chat.c
# (chat templates and kept conversations: 6 KB the training builds have no
# room for; a model loaded to fine-tune does not chat).
LLM_TRAIN_WEB_OBJ := $(filter-out build/wasm/src/web_llm/chat.o,$(LLM_WEB_OBJ)) build/wasm/src/web_llm_train/exports.o
LLM_TRAIN_LIB_OBJ := $(call families,llmtrain,$(filter-out build/wasm/src/core/backends.o \
                       $(patsubst build/wasm-llm/%,build/wasm/%,$(LLM_O3_OBJ) $(LLM_O2_OBJ)),\
                       $(filter $(foreach d,core ir compile cpu models autodiff,build/wasm/src/$(d)/%),$(WASM_OBJ)))) \
                     build/wasm-llm/src/core/backends.o $(LLM_O3_OBJ) $(LLM_O2_OBJ)
build/wasm/src/web_llm_train/exports.o: WASM_CFLAGS += -Oz
web/pkg/rlx_llm_train.wasm: $(LLM_TRAIN_LIB_OBJ) $(LLM_TRAIN_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_train.linked.wasm $(LLM_TRAIN_WEB_OBJ) $(LLM_TRAIN_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_llm_train.linked.wasm -o $@.tmp,cp build/wasm/rlx_llm_train.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_llm_train.wasm

TSC := node_modules/typescript/bin/tsc
web/rlx.js web/rlx.d.ts &: web/rlx.ts web/pkg/rlx_web.d.ts
	@test -f $(TSC) || { echo "$(TSC) is missing: run make setup (npm ci)"; exit 1; }
	cd web && node ../$(TSC) --target es2022 --module esnext --moduleResolution bundler --lib es2022,dom \
	  --strict --declaration --rootDir . --outDir . rlx.ts

# Trystero (npm, pinned in package-lock.json), the WebRTC mesh of cluster.html
# (web/cluster/mesh.js), bundled once into one ES module: its dist files have
# bare imports a browser cannot resolve. A build output (gitignored).
web/vendor/trystero.js: package-lock.json
	@test -x node_modules/.bin/esbuild || { echo "node_modules/.bin/esbuild is missing: run make setup (npm ci)"; exit 1; }
	@mkdir -p $(dir $@)
	node_modules/.bin/esbuild node_modules/trystero/dist/index.mjs --bundle --format=esm --minify --log-level=warning \
	  '--banner:js=/* Trystero (MIT, github.com/dmotz/trystero) with @noble/secp256k1 (MIT), bundled from node_modules by make; do not edit */' \
	  --outfile=$@

# @huggingface/jinja (npm, pinned in package-lock.json), which renders a GGUF
# file's tokenizer.chat_template (web/runtime/llm_chat_template.js imports it
# on first use), bundled the same way with its licence on top.  A build output
# (gitignored).
web/vendor/jinja.js: package-lock.json
	@test -x node_modules/.bin/esbuild || { echo "node_modules/.bin/esbuild is missing: run make setup (npm ci)"; exit 1; }
	@mkdir -p $(dir $@)
	{ echo '/* @huggingface/jinja (github.com/huggingface/huggingface.js), bundled from node_modules by make; do not edit.'; \
	  sed 's/\*\//* \//g' node_modules/@huggingface/jinja/LICENSE; echo '*/'; \
	  node_modules/.bin/esbuild node_modules/@huggingface/jinja/dist/index.js --bundle --format=esm --minify --log-level=warning; } > $@.tmp
	mv -f $@.tmp $@

# The op cases compiled to wasm, run by tests/node/opcases.test.mjs.
WASM_TEST_OBJ := $(patsubst %.c,build/wasm/%.o,tests/c/wasm_opcases.c tests/c/wasm_gradcases.c tests/c/wasm_gpu_cases.c \
                   src/web/exports_webgpu.c $(TEST_SUPPORT))
build/wasm/tests/c/%.o: tests/c/%.c tests/c/op_case.h tests/c/grad_case.h tests/c/grad_train.h $(HDRS)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_CFLAGS) -Itests/c -c $< -o $@
build/wasm-tests/opcases.wasm: $(WASM_OBJ) $(WASM_TEST_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) -o $@ $(WASM_TEST_OBJ) $(WASM_OBJ)

# The op cases prepared for WebGL2 (tests/c/wasm_webgl.c), drawn through
# web/runtime/webgl.js in Chromium by tests/browser/webgl.test.mjs.
WEBGL_TEST_OBJ := $(patsubst %.c,build/wasm/%.o,tests/c/wasm_webgl.c tests/c/webgl_cases.c src/web/exports_webgl.c \
                    $(TEST_SUPPORT))
build/wasm/tests/c/wasm_webgl.o build/wasm/tests/c/webgl_cases.o: tests/c/webgl_cases.h
build/wasm-tests/webgl_cases.wasm: $(WASM_OBJ) $(WEBGL_TEST_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) -o $@ $(WEBGL_TEST_OBJ) $(WASM_OBJ)

# The test support (harness, references, op and grad cases) is compiled once
# per build kind and linked into every test binary.
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:tests/c/%.c=build/tests-obj/%.o)
ASAN_SUPPORT_OBJ := $(TEST_SUPPORT:tests/c/%.c=build/tests-asan-obj/%.o)
build/tests-obj/%.o: tests/c/%.c $(wildcard tests/c/*.h) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/c -c $< -o $@
build/tests-asan-obj/%.o: tests/c/%.c $(wildcard tests/c/*.h) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN_FLAGS) -Itests/c -c $< -o $@
build/tests/%: tests/c/%.c $(TEST_SUPPORT_OBJ) build/librlx.a tests/c/op_case.h tests/c/grad_case.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/c -o $@ $< $(TEST_SUPPORT_OBJ) build/librlx.a -lcmocka $(LDLIBS)
build/tests-asan/%: tests/c/%.c $(ASAN_SUPPORT_OBJ) $(ASAN_OBJ) tests/c/op_case.h tests/c/grad_case.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN_FLAGS) -Itests/c -o $@ $< $(ASAN_SUPPORT_OBJ) $(ASAN_OBJ) -lcmocka $(LDLIBS)

# The WebGL2 planner and lowerings through the C reference executor: every
# op case against the CPU (tests/c/test_webgl_plan.c with webgl_cases.c).
GL_TEST_DEPS := tests/c/test_webgl_plan.c tests/c/webgl_cases.c tests/c/webgl_cases.h tests/c/op_case.h
build/tests/test_webgl_plan: $(GL_TEST_DEPS) $(TEST_SUPPORT_OBJ) build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/c -o $@ $< tests/c/webgl_cases.c $(TEST_SUPPORT_OBJ) build/librlx.a -lcmocka $(LDLIBS)
build/tests-asan/test_webgl_plan: $(GL_TEST_DEPS) $(ASAN_SUPPORT_OBJ) $(ASAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN_FLAGS) -Itests/c -o $@ $< tests/c/webgl_cases.c $(ASAN_SUPPORT_OBJ) $(ASAN_OBJ) -lcmocka $(LDLIBS)
test-webgl: build/tests/test_webgl_plan
	build/tests/test_webgl_plan

# A build without an op family (src/core/families.h): src/webgpu/prepare.c
# built without the vision ops, linked ahead of the library, so WebGPU has
# no conv2d lowering (tests/c/test_op_families.c).
build/tests/prepare_no_vision.o: src/webgpu/prepare.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DRLX_WITHOUT_VISION_OPS -c $< -o $@
build/tests-asan/prepare_no_vision.o: src/webgpu/prepare.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN_FLAGS) -DRLX_WITHOUT_VISION_OPS -c $< -o $@
build/tests/test_op_families: tests/c/test_op_families.c build/tests/prepare_no_vision.o build/librlx.a
	$(CC) $(CFLAGS) -Itests/c -o $@ $< build/tests/prepare_no_vision.o build/librlx.a -lcmocka $(LDLIBS)
build/tests-asan/test_op_families: tests/c/test_op_families.c build/tests-asan/prepare_no_vision.o $(ASAN_OBJ)
	$(CC) $(CFLAGS) -O1 $(SAN_FLAGS) -Itests/c -o $@ $< build/tests-asan/prepare_no_vision.o \
	  $(filter-out build/asan/src/webgpu/prepare.o,$(ASAN_OBJ)) -lcmocka $(LDLIBS)

# Native reference outputs of every op case, compared against wasm in Node.
build/tests/opcases_native.bin: build/tests/dump_opcases
	build/tests/dump_opcases $@
build/tests/dump_opcases: tests/c/dump_opcases.c $(TEST_SUPPORT_OBJ) build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/c -o $@ $< $(TEST_SUPPORT_OBJ) build/librlx.a $(LDLIBS)
# Native reference outputs of the model entry points (MLP, transformer,
# vision), compared against web/pkg/rlx_web.js in Node.
build/tests/models_native.json: build/tests/dump_models
	build/tests/dump_models $@
build/tests/dump_models: tests/c/dump_models.c build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< build/librlx.a $(LDLIBS)

# The rlx command-line tool (train, info, bench) on the public API.
CLI_SRC := tools/rlx_cli.c $(sort $(wildcard tools/cli_*.c))
build/rlx: $(CLI_SRC) tools/cli.h build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(CLI_SRC) build/librlx.a $(LDLIBS)

# The Fashion-MNIST subset for the browser (format: tools/make_subset.c).
build/make_subset: tools/make_subset.c build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< build/librlx.a $(LDLIBS)
web/data/fashion-mnist-%.bin: build/make_subset
	@mkdir -p $(dir $@)
	build/make_subset $* $@

# Small GGUF language models for the tests (tools/make_test_lm.c): every
# arch x weight type in build/lm/, plus a llama with tied output; llama-ref
# rewrites tests/llama_ref/expected/ with llama.cpp (node-llama-cpp, an npm
# package of its own, installed on demand by tests/llama_ref/regenerate.sh).
LM_ARCHS := llama qwen2 qwen3
LM_TYPES := f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k
# transformer-<type>: the transformer of rlx_models.h exported by rlx export-gguf.
LM_FIXTURES := $(foreach a,$(LM_ARCHS),$(foreach t,$(LM_TYPES),build/lm/$(a)-$(t).gguf)) build/lm/llama-tied-q8_0.gguf \
               build/lm/transformer-f32.gguf build/lm/transformer-q8_0.gguf
.PHONY: lm-fixtures llama-ref
build/make_test_lm: tools/make_test_lm.c tools/make_test_lm_vocab.c tools/make_test_lm.h build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ tools/make_test_lm.c tools/make_test_lm_vocab.c build/librlx.a $(LDLIBS)
build/gguf_split: tools/gguf_split.c tools/gguf_split.h build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ tools/gguf_split.c build/librlx.a $(LDLIBS)
build/tests/test_llm_split: tools/gguf_split.h
build/lm/llama-tied-%.gguf: build/make_test_lm tests/llm/corpus.txt
	@mkdir -p $(dir $@)
	build/make_test_lm --arch llama --type $* --tied --out $@
build/lm/transformer-%.gguf: build/rlx
	@mkdir -p $(dir $@)
	build/rlx export-gguf --type $* --out $@
build/lm/%.gguf: build/make_test_lm tests/llm/corpus.txt
	@mkdir -p $(dir $@)
	build/make_test_lm --arch $(firstword $(subst -, ,$*)) --type $(lastword $(subst -, ,$*)) --out $@
lm-fixtures: $(LM_FIXTURES)
# The test models generate.html offers, on the served web/ (web/data/ is
# gitignored); make web/data/lm/NAME.gguf puts any other of build/lm/ there.
LM_WEB_FIXTURES := $(foreach n,llama-q4_0 qwen2-q8_0 qwen3-q4_k,web/data/lm/$(n).gguf)
.PHONY: lm-web-fixtures
lm-web-fixtures: $(LM_WEB_FIXTURES)
web/data/lm/%.gguf: build/lm/%.gguf
	@mkdir -p $(dir $@)
	cp $< $@
# The test corpus, the training text cluster.html's fine-tuning offers.
web/data/lm/corpus.txt: tests/llm/corpus.txt
	@mkdir -p $(dir $@)
	cp $< $@
all: $(LM_WEB_FIXTURES) web/data/lm/corpus.txt
test-node: lm-fixtures build/rlx build/gguf_split
test-webgpu: lm-fixtures
test-browser: $(LM_WEB_FIXTURES) web/data/lm/corpus.txt $(LM_FIXTURES) build/rlx
llama-ref:
	tests/llama_ref/regenerate.sh

setup:
	@tools/setup.sh

# What make test builds is built on every core (TEST_JOBS, unless make was
# given -j); the parts, and the tests in each, still run one after another.
TEST_JOBS ?= $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
# A part that runs past PART_TIMEOUT seconds is stopped and fails by name
# (a hang costs minutes, not the whole CI run).
PART_TIMEOUT ?= 1800
test: setup
	@$(MAKE) $(TEST_JOBS) --no-print-directory all
	@set -e; for t in $(TEST_PARTS); do s=$$(date +%s); rc=0; \
	  timeout -k 20 $(PART_TIMEOUT) $(MAKE) $(TEST_JOBS) --no-print-directory $$t || rc=$$?; \
	  if [ $$rc = 124 ] || [ $$rc = 137 ]; then echo "== $$t ran past $(PART_TIMEOUT) s and was stopped"; exit 1; fi; \
	  if [ $$rc != 0 ]; then echo "== $$t failed"; exit 1; fi; \
	  echo "== $$t passed in $$(( $$(date +%s) - s )) s"; done

# Every part of make test, in order; each prints how long it took.
TEST_PARTS := test-native test-asan test-fuzz test-node test-webgpu test-cli test-browser test-python test-examples test-install

# Each C test binary is a target of its own (run-native-NAME, run-asan-NAME),
# so make's -j runs two at a time (the tests are single-threaded but for the
# thread pool's); a test's output is printed whole when it ends.
# $(call run_test,BINARY,ENV)
define run_test
@out=$$($(2) $(1) 2>&1); rc=$$?; printf '== %s\n%s\n' "$(1)" "$$out"; \
  if [ $$rc != 0 ]; then echo "== $(1) failed (exit $$rc)"; exit 1; fi
endef
run-native-%: build/tests/% $(LM_FIXTURES)
	$(call run_test,$<,)
run-asan-%: build/tests-asan/% $(LM_FIXTURES)
	$(call run_test,$<,ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1)

test-native: $(TEST_BINS:build/tests/%=run-native-%) test-subops test-tsan

# The thread pool's tests (tests/c/test_pool.c, -DPOOL_ONLY) over its own
# files (src/core/pool.c, core.c, src/cpu/scratch.c) under ThreadSanitizer.
TSAN_CC ?= clang
TSAN_SRC := tests/c/test_pool.c src/core/pool.c src/core/core.c src/cpu/scratch.c
.PHONY: test-tsan
build/tests-tsan/test_pool: $(TSAN_SRC) src/core/pool.h src/core/pool_loop.h src/core/core.h src/cpu/kernels.h
	@mkdir -p $(dir $@)
	$(TSAN_CC) -std=c11 -O1 -g -fsanitize=thread -Iinclude -D_POSIX_C_SOURCE=200809L -DPOOL_ONLY -o $@ $(TSAN_SRC) \
	  -lcmocka -lpthread
test-tsan: build/tests-tsan/test_pool
	TSAN_OPTIONS=halt_on_error=1 build/tests-tsan/test_pool

# No literal sub-op number in a shader or C twin (src/core/subops.h).
.PHONY: test-subops
test-subops:
	tests/cli/test_subops.sh

test-asan: $(ASAN_BINS:build/tests-asan/%=run-asan-%)

# Node tests; the ones that need a WebGPU device (file names with "webgpu")
# run in test-webgpu.
NODE_TESTS   := $(sort $(wildcard tests/node/*.test.mjs))
WEBGPU_TESTS := $(filter %webgpu.test.mjs %webgpu_ops.test.mjs,$(NODE_TESTS))
# $(call node_test,LOG,SECONDS,FILES[,ENV,NODE_FLAGS]): node's test runner
# over FILES, each file stopped (and failed by name) after SECONDS; dots on
# the terminal (failures at the end), the spec report with every test's
# output in build/logs/LOG.log.
define node_test
@mkdir -p build/logs
$(4) node $(5) --test --test-timeout=$(2)000 --test-reporter=dot --test-reporter-destination=stdout \
  --test-reporter=spec --test-reporter-destination=build/logs/$(1).log $(3) || \
  { echo "(the whole report: build/logs/$(1).log)"; exit 1; }
endef
# test-node runs TEST_CONCURRENCY files at a time (node's default is one
# fewer than the cores: one here); its tests hold on a loaded machine, and
# many of them wait on timers more than they compute.  test-webgpu (bound
# by SwiftShader's compiles: two at a time measured no faster) and
# test-browser run one file at a time.
TEST_CONCURRENCY ?= 2
test-node: wasm sdk build/tests/opcases_native.bin build/tests/models_native.json web/vendor/jinja.js
	$(call node_test,node,600,$(filter-out $(WEBGPU_TESTS),$(NODE_TESTS)),,--test-concurrency=$(TEST_CONCURRENCY))
	$(call node_test,node-relaxed,600,$(RELAXED_TESTS),RLX_TEST_SIMD=relaxed,$(NODE_RELAXED_FLAG) --test-concurrency=$(TEST_CONCURRENCY))

# The op cases and the training steps on WebGPU (web/runtime/webgpu.js on
# Dawn for Node; Chromium's SwiftShader as the Vulkan driver when present)
# against the CPU: every RLX_CASE_STRIDE-th op case (test-browser runs the
# others on the same shaders in Chromium, whose two browsers take about a
# third of Dawn's time per case here: 0.38 s against 1.16 s;
# RLX_CASE_STRIDE=1: all in both).
# RLX_CASES=substring runs only the matching op cases.
SWIFTSHADER_ICD := $(wildcard /usr/lib/chromium/vk_swiftshader_icd.json)
DAWN_ENV := $(if $(SWIFTSHADER_ICD),LD_LIBRARY_PATH=/usr/lib/chromium$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} \
            VK_ICD_FILENAMES=$(SWIFTSHADER_ICD))
RLX_CASE_STRIDE ?= 64
test-webgpu: wasm sdk
	$(call node_test,webgpu,1200,$(WEBGPU_TESTS),$(DAWN_ENV) RLX_CASE_STRIDE=$(RLX_CASE_STRIDE))

# The pages in Debian's chromium (playwright-core) against tools/serve.py.
test-browser: wasm sdk build/wasm-tests/webgl_cases.wasm web/vendor/jinja.js
	$(call node_test,browser,1200,tests/browser/,RLX_CASE_STRIDE=$(RLX_CASE_STRIDE))

# The CLI: argument handling, a short run, the Fashion-MNIST accuracy
# targets, LoRA fine-tuning and perplexity, adapters merged (export-lora),
# and the language models (with LoRA adapters too) against llama.cpp's
# answers.
test-cli: build/rlx build/gguf_split $(LM_FIXTURES)
	tests/cli/test_cli.sh
	tests/cli/test_chat.sh
	tests/cli/accuracy.sh
	tests/cli/test_finetune.sh
	tests/cli/test_export_lora.sh
	node tests/cli/llm_ref.mjs
	node tests/cli/llm_lora_ref.mjs

# The Python bindings (python/rlx) over build/librlx.so (the tests find the
# package in python/ themselves).
test-python: build/librlx.so python/rlx/_constants.py $(LM_FIXTURES)
	$(PYTHON) -m unittest discover -s tests/python -v

# The worked examples (the same classifier in C, Python and JS); each checks
# that its first loss is ln(10) and that training lowered the loss of held-out
# images, and exits 1 if not: at the default 100 steps, at 20, and with
# --lr 0, where nothing is learned and the check must fail (example_fails).
# The Python ones use python/rlx when the package is not installed.
build/examples/%: examples/c/%.c build/librlx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< build/librlx.a $(LDLIBS)
example_fails = @out=$$($(1) 2>&1); rc=$$?; \
  if [ $$rc = 1 ] && printf '%s\n' "$$out" | grep -q '^FAIL: the loss did not fall'; then \
    echo "ok: $(1) fails its check"; \
  else printf '%s\n' "$$out"; echo "$(1) exited $$rc, want 1 and 'FAIL: the loss did not fall'"; exit 1; fi
test-examples: build/examples/classifier build/examples/generate build/librlx.so python/rlx/_constants.py $(LM_FIXTURES)
	build/examples/classifier
	build/examples/classifier --steps 20
	$(call example_fails,build/examples/classifier --steps 5 --lr 0)
	$(PYTHON) examples/python/classifier.py
	$(PYTHON) examples/python/classifier.py --steps 20
	$(call example_fails,$(PYTHON) examples/python/classifier.py --steps 5 --lr 0)
	build/examples/generate
	$(PYTHON) examples/python/generate.py
	@$(MAKE) --no-print-directory test-examples-js

# The same classifier described with the JS SDK (web/rlx.js) in Node.
test-examples-js: wasm sdk $(LM_FIXTURES) web/vendor/jinja.js
	node examples/js/classifier.mjs
	node examples/js/classifier.mjs --steps 20
	$(call example_fails,node examples/js/classifier.mjs --steps 5 --lr 0)
	node examples/js/generate.mjs

# The relaxed-SIMD builds of the wasm modules (make wasm builds them too).
include tools/relaxed_simd.mk
# The threaded builds of the language-model module.
include tools/wasm_threads.mk
include tools/llm_train_gpu.mk
-include bench/bench.mk
# libFuzzer targets: make fuzz, make test-fuzz (tests/fuzz/fuzz.mk).
-include tests/fuzz/fuzz.mk

serve: setup
	@$(MAKE) --no-print-directory all
	$(PYTHON) tools/serve.py $(SERVE_ARGS)

# The static site (a Hugging Face static Space): the files web/'s pages really
# load, found by walking their references, plus README.md (the Space card).
site: all
	$(PYTHON) tools/build_site.py --out build/site

clean:
	rm -rf build web/pkg/*.wasm web/data web/runtime/constants.js python/rlx/_constants.py
