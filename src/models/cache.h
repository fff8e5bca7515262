/* cache.h - compiled sessions cached by a configuration key, so model entry
 * points called repeatedly with the same shapes compile once.  Least
 * recently used entries are evicted beyond a small capacity. */
#ifndef RLX_MODELS_CACHE_H
#define RLX_MODELS_CACHE_H

#include "rlx_models.h"

/* The session cached under key, or NULL.  The cache keeps ownership. */
rlx_session *rlx_cache_get(const char *key);
/* Caches s under key (ownership passes to the cache; on failure s is freed
 * and an error returned). */
rlx_status rlx_cache_put(const char *key, rlx_session *s);
/* Entries currently cached (for tests). */
int32_t rlx_cache_size(void);

#endif
