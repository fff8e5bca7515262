/* cache.c - a tiny LRU of compiled sessions keyed by strings. */
#include "cache.h"

#include <string.h>

#include "../core/core.h"

#define CACHE_CAPACITY 24

typedef struct {
  char *key;
  rlx_session *session;
  uint64_t used; /* last use tick */
} cache_entry;

static cache_entry entries[CACHE_CAPACITY];
static uint64_t tick;

rlx_session *rlx_cache_get(const char *key) {
  for (int i = 0; i < CACHE_CAPACITY; i++)
    if (entries[i].key && strcmp(entries[i].key, key) == 0) {
      entries[i].used = ++tick;
      return entries[i].session;
    }
  return NULL;
}

static void drop(cache_entry *e) {
  rlx_strfree(e->key);
  rlx_session_free(e->session);
  memset(e, 0, sizeof *e);
}

rlx_status rlx_cache_put(const char *key, rlx_session *s) {
  int slot = 0;
  for (int i = 0; i < CACHE_CAPACITY; i++) {
    if (entries[i].key && strcmp(entries[i].key, key) == 0) {
      slot = i;
      break;
    }
    if (!entries[i].key || entries[i].used < entries[slot].used) slot = i;
    if (!entries[slot].key) break;
  }
  char *copy = rlx_strdup(key);
  if (!copy) {
    rlx_session_free(s);
    return rlx_error(RLX_ERR_NO_MEMORY, "out of memory caching a session");
  }
  if (entries[slot].key) drop(&entries[slot]);
  entries[slot] = (cache_entry){copy, s, ++tick};
  return RLX_OK;
}

int32_t rlx_cache_size(void) {
  int32_t n = 0;
  for (int i = 0; i < CACHE_CAPACITY; i++) n += entries[i].key != NULL;
  return n;
}

void rlx_models_clear_cache(void) {
  for (int i = 0; i < CACHE_CAPACITY; i++)
    if (entries[i].key) drop(&entries[i]);
}
