/* newlib-nano's printf family has no C99 length modifiers: "%zu" comes out as "zu", and
 * ExecuTorch's log lines use %zu and %zd for every size and index. The link wraps vsnprintf
 * and snprintf (-Wl,--wrap=...): a format with z, t or j is rewritten for nano first (size_t
 * and ptrdiff_t are int-wide on this ABI, so "%zu" becomes "%u"; intmax_t is long long, "%jd"
 * becomes "%lld"), then handed to newlib. Formats without them pass through untouched. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

int __real_vsnprintf(char *buf, size_t size, const char *fmt, va_list args);
int __wrap_vsnprintf(char *buf, size_t size, const char *fmt, va_list args);
int __wrap_snprintf(char *buf, size_t size, const char *fmt, ...);

#define FORMAT_CAP 512

static const char *for_nano(const char *fmt, char *out) {
    size_t n = 0;
    int rewritten = 0;
    for (const char *p = fmt; *p; p++) {
        if (n + 3 >= FORMAT_CAP) return fmt; /* too long to rewrite: print it as it is */
        out[n++] = *p;
        if (*p != '%') continue;
        p++;
        while (*p && (*p == '-' || *p == '+' || *p == ' ' || *p == '#' || *p == '0' ||
                      *p == '.' || *p == '*' || (*p >= '1' && *p <= '9'))) {
            if (n + 3 >= FORMAT_CAP) return fmt;
            out[n++] = *p++;
        }
        if (*p == 'z' || *p == 't') {
            rewritten = 1; /* int-wide on arm-none-eabi */
        } else if (*p == 'j') {
            out[n++] = 'l';
            out[n++] = 'l';
            rewritten = 1;
        } else if (*p) {
            out[n++] = *p;
        } else {
            break;
        }
    }
    out[n] = '\0';
    return rewritten ? out : fmt;
}

int __wrap_vsnprintf(char *buf, size_t size, const char *fmt, va_list args) {
    char rewritten[FORMAT_CAP];
    return __real_vsnprintf(buf, size, for_nano(fmt, rewritten), args);
}

int __wrap_snprintf(char *buf, size_t size, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int n = __wrap_vsnprintf(buf, size, fmt, args);
    va_end(args);
    return n;
}
