# llm_train_gpu.mk - the GPU builds of the language-model training module
# (included by the Makefile, after rlx_llm_train.wasm's rules): the WebGPU
# build web/pkg/rlx_llm_train_gpu.wasm and the WebGL2 build
# rlx_llm_train_webgl.wasm, which web/runtime/llm_finetune_webgpu.js and
# llm_finetune_webgl.js load to run LoRA training steps on the device.
# Each is rlx_llm_train.wasm's objects (training families, autodiff,
# src/web_llm_train/) plus what rlx_llm_gpu.wasm / rlx_llm_webgl.wasm add
# (the backend, its lowerings with the training families, its kernels, the
# plan exports and the generation steps of src/web_llm_gpu/), and
# src/web_llm_train_gpu/ (the fine-tuning sessions compiled for the device).
LLM_TRAIN_GPU_WEB_OBJ := $(LLM_TRAIN_WEB_OBJ) $(patsubst %.c,build/wasm/%.o,src/web_llm_gpu/exports.c \
                           src/web_llm_gpu/webgpu.c src/web/exports_webgpu.c src/web_llm_train_gpu/exports.c \
                           src/web_llm_train_gpu/webgpu.c)
LLM_TRAIN_GPU_LIB_OBJ := $(filter-out build/wasm-llm/src/core/backends.o,$(LLM_TRAIN_LIB_OBJ)) \
                         build/wasm-llm-gpu/src/core/backends.o \
                         $(call families,llmtrain,$(filter build/wasm/src/webgpu/%,$(WASM_OBJ))) build/wasm/$(WGSL_GEN:.c=.o)
$(filter build/wasm/src/web_llm_train_gpu/%,$(LLM_TRAIN_GPU_WEB_OBJ)): WASM_CFLAGS += -Oz
web/pkg/rlx_llm_train_gpu.wasm: $(LLM_TRAIN_GPU_LIB_OBJ) $(LLM_TRAIN_GPU_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_train_gpu.linked.wasm $(LLM_TRAIN_GPU_WEB_OBJ) \
	  $(LLM_TRAIN_GPU_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_llm_train_gpu.linked.wasm -o $@.tmp,cp build/wasm/rlx_llm_train_gpu.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_llm_train_gpu.wasm

LLM_TRAIN_GL_WEB_OBJ := $(LLM_TRAIN_WEB_OBJ) $(patsubst %.c,build/wasm/%.o,src/web_llm_gpu/exports.c \
                          src/web_llm_gpu/webgl.c src/web/exports_webgl.c src/web/webgl_no_reference.c \
                          src/web_llm_train_gpu/exports.c src/web_llm_train_gpu/webgl.c)
LLM_TRAIN_GL_LIB_OBJ := $(filter-out build/wasm-llm/src/core/backends.o,$(LLM_TRAIN_LIB_OBJ)) \
                        build/wasm-llm-gl/src/core/backends.o \
                        $(call families,llmtrain,$(filter-out build/wasm/src/webgl/reference.o build/wasm/src/webgl/ref_%.o,\
                          $(filter build/wasm/src/webgl/%,$(WASM_OBJ)))) \
                        build/wasm/$(GLSL_LLM_GEN:.c=.o)
$(filter build/wasm/src/web_llm_train_gpu/%,$(LLM_TRAIN_GL_WEB_OBJ)): WASM_CFLAGS += -Oz
web/pkg/rlx_llm_train_webgl.wasm: $(LLM_TRAIN_GL_LIB_OBJ) $(LLM_TRAIN_GL_WEB_OBJ)
	@mkdir -p $(dir $@)
	$(WASMCC) $(WASM_LDFLAGS) $(LLM_LDFLAGS) -o build/wasm/rlx_llm_train_webgl.linked.wasm $(LLM_TRAIN_GL_WEB_OBJ) \
	  $(LLM_TRAIN_GL_LIB_OBJ)
	$(if $(WASM_OPT),$(WASM_OPT) $(WASM_OPT_FLAGS) build/wasm/rlx_llm_train_webgl.linked.wasm -o $@.tmp,cp build/wasm/rlx_llm_train_webgl.linked.wasm $@.tmp)
	mv -f $@.tmp $@
wasm: web/pkg/rlx_llm_train_webgl.wasm
