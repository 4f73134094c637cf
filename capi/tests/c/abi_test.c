/* abi_test.c: libtetrad's C ABI against results of the Rust API.
 *
 *   abi_test CASES
 *
 * CASES (written by capi/tests/abi.rs) has one case a line; the files it names hold what the
 * Rust API produced (little-endian floats, raw bytes). Each case runs through the C ABI and
 * must give the same bytes, bit for bit, or the same refusal class. The checks every build
 * makes regardless of the cases (NULL pointers, lengths, classes and messages, version) run
 * first. Exits 0 and prints "abi_test: all N cases passed" only if every check passed. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tetrad.h"

static int failures = 0;

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                             \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, " [last class %s]\n", tetrad_last_class());                      \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (unsigned char *)malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The status and class of the last call are the expected ones. */
static int refused_as(int32_t st, const char *class) {
    if (strcmp(class, "OK") == 0) return st == TETRAD_OK && strcmp(tetrad_last_class(), "OK") == 0;
    return st == TETRAD_REFUSED && strcmp(tetrad_last_class(), class) == 0;
}

static tetrad_container *open_c(const char *path) {
    tetrad_container *c = NULL;
    int32_t st = tetrad_container_open(path, strlen(path), &c);
    CHECK(st == TETRAD_OK && c != NULL, "open %s", path);
    return c;
}

static void fixed_checks(void) {
    tetrad_container *c = (tetrad_container *)1;
    tetrad_tensor *t = NULL;
    char msg[16];
    size_t full;
    uint8_t byte = 0;
    size_t written = 0;
    uint64_t n64 = 0;
    float y[1];

    CHECK(tetrad_version_number() == TETRAD_VERSION_NUMBER, "version number");
    CHECK(strcmp(tetrad_version_string(), TETRAD_VERSION_STRING) == 0, "version string");

    /* NULL with a nonzero length is refused by name; the out handle is cleared. */
    CHECK(refused_as(tetrad_container_open(NULL, 4, &c), "E_NULL") && c == NULL, "open NULL path");
    CHECK(refused_as(tetrad_container_open("x", 1, NULL), "E_NULL"), "open NULL out");
    CHECK(refused_as(tetrad_container_open("", 0, &c), "E_ARGUMENT"), "open empty path");
    CHECK(refused_as(tetrad_tensor_prepare(NULL, "w", 1, 1, 1, &t), "E_NULL") && t == NULL,
          "prepare NULL container");
    CHECK(refused_as(tetrad_tensor_decode(NULL, &byte, 1), "E_NULL"), "decode NULL tensor");
    CHECK(refused_as(tetrad_tensor_matmul_f32(NULL, NULL, 0, 0, y, 1, 1), "E_NULL"), "matmul NULL");
    CHECK(tetrad_tensor_format(NULL) == NULL && tetrad_tensor_decoded_len(NULL) == 0, "NULL info");
    tetrad_tensor_free(NULL);
    tetrad_container_free(NULL);

    /* Messages: snprintf-style length, truncated and NUL-terminated copies. */
    tetrad_container_open(NULL, 4, &c);
    full = tetrad_last_message(NULL, 0);
    CHECK(full > 0, "message length");
    CHECK(tetrad_last_message(msg, sizeof msg) == full, "message length again");
    CHECK(strlen(msg) == (full < sizeof msg ? full : sizeof msg - 1), "message truncated");
    CHECK(tetrad_cfs1_bound(0) == 73, "cfs1 bound");
    CHECK(tetrad_cfs1_compress(NULL, 0, NULL, 0, &written) == TETRAD_REFUSED &&
              strcmp(tetrad_last_class(), "E_DST_TOO_SMALL") == 0,
          "cfs1 empty dst");
    CHECK(strcmp(tetrad_last_class(), "E_DST_TOO_SMALL") == 0, "class is kept until the next call");
    CHECK(tetrad_cfs1_bound(5) == 78 && tetrad_last_message(NULL, 0) > 0, "value calls leave the last error");
    CHECK(refused_as(tetrad_cfs1_decoded_len(&byte, 1, &n64), "E_SHORT"), "cfs1 1 byte");
    CHECK(refused_as(tetrad_cfs1_decoded_len(&byte, 1, NULL), "E_NULL"), "cfs1 NULL raw_len");
    CHECK(tetrad_last_message(NULL, 0) > 0, "message after refusal");
    CHECK(refused_as(tetrad_rans64_encode(&byte, 1, 11, NULL, 0, &written), "E_CHUNK_SHIFT"),
          "rans64 shift 11");
    CHECK(refused_as(tetrad_rans64_encode(&byte, 1, 27, NULL, 0, &written), "E_CHUNK_SHIFT"),
          "rans64 shift 27");
    CHECK(tetrad_rans64_bound(1, 12) > 1, "rans64 bound");
    CHECK(refused_as(tetrad_rans64_decoded_len(NULL, 0, &n64), "E_TRUNCATED") ||
              tetrad_last_class()[0] == 'E',
          "rans64 empty blob");
    CHECK(refused_as(tetrad_quantize_acts(NULL, 2, 1, 2, NULL, 0, NULL, 0), "E_NULL"), "quantize NULL");
    {
        float x[4] = {1.0f, -2.0f, 0.5f, 127.0f};
        int8_t q[4];
        float sc[1];
        CHECK(tetrad_quantize_acts(x, 4, 1, 4, q, 4, sc, 1) == TETRAD_OK, "quantize");
        CHECK(q[3] == 127 && sc[0] == 1.0f && q[1] == -2, "quantize values");
        CHECK(strcmp(tetrad_last_class(), "OK") == 0 && tetrad_last_message(NULL, 0) == 0, "ok clears");
        x[1] = INFINITY;
        CHECK(refused_as(tetrad_quantize_acts(x, 4, 1, 4, q, 4, sc, 1), "E_KERNEL_NONFINITE_ACTIVATION"),
              "quantize inf");
        CHECK(refused_as(tetrad_quantize_acts(x, 4, 1, 3, q, 4, sc, 1), "E_KERNEL_LENGTH"), "quantize len");
    }
}

static int same_floats(const float *a, const unsigned char *b, size_t n) {
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* One thread's share of the concurrent use of a tensor: a product, compared with the
 * expected one, and a refusal whose class must be this thread's own. */
struct job {
    const tetrad_tensor *t;
    const float *x;
    size_t x_len, s, o;
    const unsigned char *want;
    int ok;
};

static void *job_run(void *arg) {
    struct job *j = (struct job *)arg;
    float *y = (float *)malloc(j->s * j->o * sizeof(float));
    int k;
    j->ok = 1;
    for (k = 0; k < 4; k++) {
        if (tetrad_tensor_matmul_f32(j->t, j->x, j->x_len, j->s, y, j->s * j->o, 1) != TETRAD_OK ||
            memcmp(y, j->want, j->s * j->o * sizeof(float)) != 0 || strcmp(tetrad_last_class(), "OK") != 0)
            j->ok = 0;
        if (tetrad_tensor_decode(j->t, NULL, 1) != TETRAD_REFUSED || strcmp(tetrad_last_class(), "E_NULL") != 0)
            j->ok = 0;
    }
    free(y);
    return NULL;
}

static void tensor_case(char *path, char *name, uint64_t o, uint64_t i, const char *format, size_t s,
                        const char *xf, const char *y32f, const char *y8f, const char *decf,
                        const char *qf, const char *scf) {
    size_t xl, y32l, y8l, decl, ql, scl;
    unsigned char *x = read_file(xf, &xl), *y32 = read_file(y32f, &y32l), *y8 = read_file(y8f, &y8l);
    unsigned char *dec = read_file(decf, &decl), *qr = read_file(qf, &ql), *scr = read_file(scf, &scl);
    tetrad_container *c = open_c(path);
    tetrad_tensor *t = NULL;
    float *y = (float *)malloc(s * o * sizeof(float));
    uint8_t *out = (uint8_t *)malloc(decl + 1);
    int8_t *q = (int8_t *)malloc(s * i);
    float *sc = (float *)malloc(s * sizeof(float));

    CHECK(tetrad_tensor_prepare(c, name, strlen(name), o, i, &t) == TETRAD_OK, "prepare %s", path);
    /* The tensor keeps its container alive: free the container first. */
    tetrad_container_free(c);
    CHECK(strcmp(tetrad_tensor_format(t), format) == 0, "%s: format %s", path, tetrad_tensor_format(t));
    CHECK(tetrad_tensor_decoded_len(t) == decl, "%s: decoded len", path);
    CHECK(tetrad_tensor_decode(t, out, decl) == TETRAD_OK && memcmp(out, dec, decl) == 0, "%s: decode", path);
    CHECK(refused_as(tetrad_tensor_decode(t, out, decl + 1), "E_OUTPUT_LEN"), "%s: decode len", path);
    CHECK(refused_as(tetrad_tensor_decode(t, NULL, decl), "E_NULL"), "%s: decode NULL", path);
    for (size_t threads = 0; threads <= 3; threads++) {
        memset(y, 0xFF, s * o * sizeof(float));
        CHECK(tetrad_tensor_matmul_f32(t, (const float *)x, xl / 4, s, y, s * o, threads) == TETRAD_OK,
              "%s: matmul f32", path);
        CHECK(same_floats(y, y32, s * o), "%s: f32 product differs from Rust's (threads %zu)", path, threads);
    }
    {
        /* Four threads share the tensor; each sees its own results and its own last error. */
        pthread_t th[4];
        struct job jobs[4];
        int k;
        for (k = 0; k < 4; k++) {
            jobs[k].t = t, jobs[k].x = (const float *)x, jobs[k].x_len = xl / 4;
            jobs[k].s = s, jobs[k].o = (size_t)o, jobs[k].want = y32, jobs[k].ok = 0;
            CHECK(pthread_create(&th[k], NULL, job_run, &jobs[k]) == 0, "pthread_create");
        }
        for (k = 0; k < 4; k++) {
            pthread_join(th[k], NULL);
            CHECK(jobs[k].ok, "%s: thread %d saw a wrong product or another thread's error", path, k);
        }
    }
    memset(y, 0xFF, s * o * sizeof(float));
    CHECK(tetrad_tensor_matmul_q8(t, (const float *)x, xl / 4, s, y, s * o, 2) == TETRAD_OK, "%s: matmul q8", path);
    CHECK(same_floats(y, y8, s * o), "%s: int8 product differs from Rust's", path);
    CHECK(tetrad_quantize_acts((const float *)x, xl / 4, s, (size_t)i, q, s * i, sc, s) == TETRAD_OK &&
              memcmp(q, qr, ql) == 0 && memcmp(sc, scr, scl) == 0,
          "%s: quantized activations differ from Rust's", path);
    CHECK(tetrad_tensor_matmul_f32(t, (const float *)x, xl / 4 - 1, s, y, s * o, 1) == TETRAD_REFUSED,
          "%s: short x", path);
    CHECK(tetrad_tensor_matmul_f32(t, (const float *)x, xl / 4, s, y, s * o - 1, 1) == TETRAD_REFUSED,
          "%s: short y", path);
    CHECK(refused_as(tetrad_tensor_matmul_q8(t, (const float *)x, xl / 4 - 1, s, y, s * o, 1), "E_KERNEL_LENGTH"),
          "%s: q8 short x", path);
    CHECK(refused_as(tetrad_tensor_matmul_f32(t, NULL, xl / 4, s, y, s * o, 1), "E_NULL"), "%s: NULL x", path);
    tetrad_tensor_free(t);
    free(x), free(y32), free(y8), free(dec), free(qr), free(scr), free(y), free(out), free(q), free(sc);
}

static void codec_cases(const char *kind, char **f, int nf) {
    if (strcmp(kind, "cfs1") == 0 && nf >= 2) {
        size_t sl, bl, written = 0;
        unsigned char *src = read_file(f[0], &sl), *blob = read_file(f[1], &bl);
        size_t cap = tetrad_cfs1_bound(sl);
        uint8_t *dst = (uint8_t *)malloc(cap), *back = (uint8_t *)malloc(sl + 8);
        uint64_t raw = 0;
        CHECK(tetrad_cfs1_compress(src, sl, dst, cap, &written) == TETRAD_OK && written == bl &&
                  memcmp(dst, blob, bl) == 0,
              "cfs1 compress of %zu bytes differs from Rust's", sl);
        CHECK(refused_as(tetrad_cfs1_compress(src, sl, dst, cap - 1, &written), "E_DST_TOO_SMALL"), "cfs1 cap");
        CHECK(tetrad_cfs1_decoded_len(blob, bl, &raw) == TETRAD_OK && raw == sl, "cfs1 raw len");
        memset(back, 0xEE, sl + 8);
        CHECK(tetrad_cfs1_decompress(blob, bl, back, sl + 8, &written) == TETRAD_OK && written == sl &&
                  memcmp(back, src, sl) == 0 && back[sl] == 0xEE,
              "cfs1 round trip of %zu bytes", sl);
        CHECK(tetrad_cfs1_decompress(blob, bl, back, sl, NULL) == TETRAD_OK, "cfs1 NULL written");
        free(src), free(blob), free(dst), free(back);
    } else if (strcmp(kind, "rans64") == 0 && nf >= 3) {
        size_t sl, bl, written = 0;
        unsigned char *src = read_file(f[0], &sl), *blob = read_file(f[2], &bl);
        uint32_t shift = (uint32_t)strtoul(f[1], NULL, 10);
        size_t cap = tetrad_rans64_bound(sl, shift);
        uint8_t *dst = (uint8_t *)malloc(cap), *back = (uint8_t *)malloc(sl);
        uint64_t n = 0;
        CHECK(tetrad_rans64_encode(src, sl, shift, dst, cap, &written) == TETRAD_OK && written == bl &&
                  memcmp(dst, blob, bl) == 0,
              "rans64 encode of %zu bytes (shift %u) differs from Rust's", sl, shift);
        CHECK(tetrad_rans64_decoded_len(blob, bl, &n) == TETRAD_OK && n == sl, "rans64 decoded len");
        CHECK(tetrad_rans64_decode(blob, bl, back, sl) == TETRAD_OK && memcmp(back, src, sl) == 0,
              "rans64 round trip of %zu bytes", sl);
        free(src), free(blob), free(dst), free(back);
    }
}

int main(int argc, char **argv) {
    char line[8192];
    int cases = 0;
    FILE *f;
    if (argc != 2) {
        fprintf(stderr, "usage: abi_test CASES\n");
        return 2;
    }
    fixed_checks();
    f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    while (fgets(line, sizeof line, f)) {
        char *w[16];
        int n = 0;
        char *tok = strtok(line, " \n");
        while (tok && n < 16) {
            w[n++] = tok;
            tok = strtok(NULL, " \n");
        }
        if (n == 0) continue;
        cases++;
        if (strcmp(w[0], "tensor") == 0 && n == 13) {
            tensor_case(w[1], w[2], strtoull(w[3], NULL, 10), strtoull(w[4], NULL, 10), w[5],
                        (size_t)strtoull(w[6], NULL, 10), w[7], w[8], w[9], w[10], w[11], w[12]);
        } else if (strcmp(w[0], "prepare_refused") == 0 && n == 6) {
            tetrad_container *c = open_c(w[1]);
            tetrad_tensor *t = (tetrad_tensor *)1;
            CHECK(refused_as(tetrad_tensor_prepare(c, w[2], strlen(w[2]), strtoull(w[3], NULL, 10),
                                                   strtoull(w[4], NULL, 10), &t),
                             w[5]) &&
                      t == NULL,
                  "prepare %s %s [%s, %s] should be refused %s", w[1], w[2], w[3], w[4], w[5]);
            tetrad_container_free(c);
        } else if (strcmp(w[0], "corrupt") == 0 && n == 7) {
            tetrad_container *c = open_c(w[1]);
            tetrad_tensor *t = NULL;
            uint64_t o = strtoull(w[3], NULL, 10), i = strtoull(w[4], NULL, 10);
            float *x = (float *)calloc(3 * i, sizeof(float)), *y = (float *)malloc(3 * o * sizeof(float));
            uint8_t *out;
            CHECK(tetrad_tensor_prepare(c, w[2], strlen(w[2]), o, i, &t) == TETRAD_OK, "prepare corrupt");
            out = (uint8_t *)malloc(tetrad_tensor_decoded_len(t));
            CHECK(refused_as(tetrad_tensor_decode(t, out, tetrad_tensor_decoded_len(t)), w[5]),
                  "corrupt %s decode: %s", w[1], w[5]);
            CHECK(refused_as(tetrad_tensor_matmul_f32(t, x, 3 * i, 3, y, 3 * o, 1), w[6]),
                  "corrupt %s matmul: %s", w[1], w[6]);
            tetrad_tensor_free(t);
            tetrad_container_free(c);
            free(x), free(y), free(out);
        } else if (strcmp(w[0], "open_refused") == 0 && n == 3) {
            tetrad_container *c = (tetrad_container *)1;
            CHECK(refused_as(tetrad_container_open(w[1], strlen(w[1]), &c), w[2]) && c == NULL,
                  "open %s should be refused %s", w[1], w[2]);
        } else if (strcmp(w[0], "cfs1_refused") == 0 && n == 4) {
            size_t bl, cap = (size_t)strtoull(w[2], NULL, 10), written = 0;
            unsigned char *blob = read_file(w[1], &bl);
            uint8_t *dst = (uint8_t *)malloc(cap + 1);
            CHECK(refused_as(tetrad_cfs1_decompress(blob, bl, dst, cap, &written), w[3]),
                  "cfs1 %s into %zu should be refused %s", w[1], cap, w[3]);
            free(blob), free(dst);
        } else if (strcmp(w[0], "rans64_refused") == 0 && n == 4) {
            size_t bl, len = (size_t)strtoull(w[2], NULL, 10);
            unsigned char *blob = read_file(w[1], &bl);
            uint8_t *dst = (uint8_t *)malloc(len + 1);
            CHECK(refused_as(tetrad_rans64_decode(blob, bl, dst, len), w[3]),
                  "rans64 %s into %zu should be refused %s", w[1], len, w[3]);
            free(blob), free(dst);
        } else if (strcmp(w[0], "cfs1") == 0 || strcmp(w[0], "rans64") == 0) {
            codec_cases(w[0], w + 1, n - 1);
        } else {
            fprintf(stderr, "unknown case: %s (%d words)\n", w[0], n);
            failures++;
        }
    }
    fclose(f);
    if (failures) {
        fprintf(stderr, "abi_test: %d checks failed\n", failures);
        return 1;
    }
    printf("abi_test: all %d cases passed\n", cases);
    return 0;
}
