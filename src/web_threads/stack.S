# stack.S - rlx_wasm_set_stack_pointer(top): points this instance's
# __stack_pointer (a global of each instance, set by wasm-ld to the main
# stack's top) at a Worker's own stack (src/core/pool_wasm.c carves them);
# web/runtime/thread_worker.js calls it before anything else runs there.
.globaltype __stack_pointer, i32

.globl rlx_wasm_set_stack_pointer
.type rlx_wasm_set_stack_pointer,@function
rlx_wasm_set_stack_pointer:
  .functype rlx_wasm_set_stack_pointer (i32) -> ()
  local.get 0
  global.set __stack_pointer
  end_function
.export_name rlx_wasm_set_stack_pointer, rlx_wasm_set_stack_pointer
