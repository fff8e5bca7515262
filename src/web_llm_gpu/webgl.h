/* webgl.h - what the WebGL2 builds of the language-model modules share
 * (src/web_llm_gpu/webgl.c; src/web_llm_train_gpu/webgl.c uses it): a
 * session compiled for WebGL2 made ready for web/runtime/webgl.js. */
#ifndef RLX_WEB_LLM_WEBGL_H
#define RLX_WEB_LLM_WEBGL_H

#include "rlx.h"

/* 1 when max_width (the widest texture; 0: WebGL2's guaranteed 2048) is
 * >= 0, else 0 with an error naming fn. */
int llm_webgl_width_ok(const char *fn, int32_t max_width);
/* s prepared again for textures at most max_width wide (when > 0) and its
 * host arena given back (these modules have no C reference executor, the
 * only user of it: the activations live in textures); NULL with
 * rlx_last_error() after freeing s when that fails. */
rlx_session *llm_webgl_finish(rlx_session *s, int32_t max_width);

#endif
