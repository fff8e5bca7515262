/* backends.c - the registration point of the device backends: the one
 * file of the library that names every backend (each defines its table,
 * src/compile/backend.h, next to its code).  rlx_compile finds a device's
 * backend here.  A build may leave a backend out by defining
 * RLX_WITHOUT_<NAME> (RLX_WITHOUT_WEBGPU, RLX_WITHOUT_WEBGL); compiling for
 * it then reports RLX_ERR_UNSUPPORTED.  (The browser module keeps the
 * WebGL2 backend but not its C reference executor: src/web/
 * webgl_no_reference.c makes its runs report RLX_ERR_UNSUPPORTED.) */
#include "../compile/backend.h"

extern const rlx_backend rlx_backend_cpu;    /* src/cpu/executor.c */
#ifndef RLX_WITHOUT_WEBGPU
extern const rlx_backend rlx_backend_webgpu; /* src/webgpu/backend.c */
#endif
#ifndef RLX_WITHOUT_WEBGL
extern const rlx_backend rlx_backend_webgl;  /* src/webgl/backend.c */
#endif

static const rlx_backend *const backends[] = {
    [RLX_DEVICE_CPU] = &rlx_backend_cpu,
#ifndef RLX_WITHOUT_WEBGPU
    [RLX_DEVICE_WEBGPU] = &rlx_backend_webgpu,
#endif
#ifndef RLX_WITHOUT_WEBGL
    [RLX_DEVICE_WEBGL] = &rlx_backend_webgl,
#endif
};

#define N_DEVICES 3 /* rlx_device has CPU, WEBGPU, WEBGL */

const rlx_backend *rlx_backend_for(rlx_device d, int *known) {
  int i = (int)d;
  *known = i >= 0 && i < N_DEVICES;
  if (!*known || i >= (int)(sizeof backends / sizeof backends[0])) return NULL;
  return backends[i];
}
