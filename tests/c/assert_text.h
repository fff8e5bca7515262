/* assert_text.h - cmocka assertion that a message contains a phrase,
 * printing both when it does not (include after <cmocka.h>). */
#ifndef RLX_TEST_ASSERT_TEXT_H
#define RLX_TEST_ASSERT_TEXT_H
#include <string.h>

#define assert_contains(hay, needle)                                              \
  do {                                                                            \
    if (!strstr((hay), (needle))) {                                               \
      print_error("expected \"%s\" in message: %s\n", (needle), (hay));          \
      fail();                                                                     \
    }                                                                             \
  } while (0)

#endif
