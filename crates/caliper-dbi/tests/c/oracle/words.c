#include "parts.h"
#include <ctype.h>

/* Small enough to be expanded inline into count_words, and called through
 * a pointer as well: only the calls are calls. */
static inline int is_separator(int c) { return c == ' ' || c == '\n' || c == ','; }
int (*volatile separator)(int) = is_separator;

static int word_length(const char *text) {
    int n = 0;
    while (text[n] && !is_separator((unsigned char)text[n])) n++;
    return n;
}

int count_words(const char *text, int *longest) {
    int words = 0;
    *longest = 0;
    for (const char *p = text; *p;) {
        if (separator((unsigned char)*p)) {
            p++;
            continue;
        }
        int n = word_length(p);
        if (n > *longest) *longest = n;
        words++;
        p += n;
    }
    return words;
}
